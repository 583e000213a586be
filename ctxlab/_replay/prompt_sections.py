"""What a summary prompt asks for, read from its text: the sections and the length limits.

Summary prompts name their sections in many notations: markdown headings (Deep Agents'
`## SESSION INTENT`), `<section name=...>` tags, upper-case fields with a bracketed description
(OpenHands' `USER_CONTEXT: (...)`), numbered or bulleted labelled items (Claude Code's
`1. Primary Request and Intent:`, Codex's `- Goal / user objective`); and they cap the answer
("at most 5 bullets", "under 200 words", per section or in total). `outline(prompt)` reads
both, so the offline `Extractive` summariser can answer any prompt in the prompt's own
notation and within its limits, and two prompts give two different summaries without a model.
Each section also says which of `Extractive`'s extractors fills it, by keywords in its title.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

_HEADING = re.compile(r"^[ \t]*(#{1,6})[ \t]+(.+?)[ \t#]*$", re.M)
_TAG = re.compile(r"<section\s+(?:name|title)\s*=\s*[\"']([^\"'\n]+)[\"']\s*/?>", re.I)
_ITEM = re.compile(
    r"^([ \t]*)(\d+[.)]|[-*•])[ \t]+(\*\*)?([A-Z][\w &/'(),-]{0,80}?)(?(3)\*\*)"
    r"[ \t]*(?::|[ \t][-–—][ \t]|$)",
    re.M,
)
"""A labelled list item: `1. Pending Tasks: ...`, `- **Goal** - ...`, or a bare short item such
as Codex's `- What remains to be done (clear next steps)` (commas and brackets allowed)."""
_ITEM_WORDS = 10
"""Longest item title read as a section name; longer items are instructions, not sections."""
_FIELD = re.compile(r"^[ \t]*([A-Z][A-Z0-9_]{2,}):[ \t]*[({]+([^\n]*)", re.M)
"""An upper-case field with its description in brackets, as OpenHands' and JetBrains' prompts
ask: `USER_CONTEXT: (Preserve essential user requirements...)`, `TESTS: {Failing cases...}`.
A field with text after it (`USER_CONTEXT: Fix FITS...`) is an example answer, not an ask."""
_EXAMPLE = re.compile(r"<example>.*?</example>", re.S | re.I)
"""Worked examples inside a prompt (Inspect's and Claude Code's): they show an answer or other
instructions, and their headings and numbered lines are not the sections asked for."""
_NUMBER_WORDS = (
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty"
).split()
_COUNT = r"(\d+|" + "|".join(_NUMBER_WORDS) + r")"
_UNIT = r"(words?|bullets?(?:[ -]points?)?|points?|items?|lines?)"
_CAP = re.compile(
    rf"\b(at most|no more than|up to|maximum of|max\.?|within|under|fewer than|less than)\s+"
    rf"{_COUNT}\s+{_UNIT}|\b{_COUNT}\s+{_UNIT}\s+or\s+(?:fewer|less)\b",
    re.I,
)
_PER_SECTION = re.compile(r"\b(?:per|each|every)\s+(?:section|heading)\b", re.I)

_KEYWORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("questions", ("question", "unknown", "unclear", "clarif")),
    (
        "next",
        ("next", "todo", "to do", "remaining", "pending", "open", "follow", "plan", "tracking"),
    ),
    ("errors", ("error", "fail", "problem", "issue", "bug", "exception", "fix")),
    ("users", ("user message", "all user", "human message", "preference", "constraint")),
    ("said", ("done", "complet", "progress", "accomplish")),
    (
        "intent",
        ("intent", "goal", "task", "objective", "request", "purpose", "aim", "user context"),
    ),
    ("changes", ("change", "modif", "written", "edited", "created")),
    ("artifacts", ("artifact", "file", "path", "resource", "code", "document")),
    (
        "identifiers",
        ("identifier", "number", "value", "name", "variable", "symbol", "concept", "data"),
    ),
    ("tools", ("tool", "command", "action")),
    ("said", ("decision", "summary", "context", "current", "work", "state", "status", "finding")),
)
"""Heading keywords -> extractor, first match wins: specific asks ("pending tasks", "open
questions", "problem solving") must beat the generic words they contain ("task", "open").
"tracking", "user context", "constraints/preferences" and "critical data" are the upstream
prompts' own asks (OpenHands' TASK_TRACKING and USER_CONTEXT, Codex's handoff list)."""


def _extractor(title: str) -> str | None:
    """The extractor a section title asks for, by keyword; None if no keyword matches."""
    low = title.lower()
    return next((kind for kind, words in _KEYWORDS if any(w in low for w in words)), None)


@dataclass(frozen=True)
class Section:
    """One section the prompt asks for, written back in the prompt's own notation."""

    title: str
    header: str
    """The line that opens the section: `## GOAL`, `1. Goal:` or `<section name="Goal">`."""
    extractor: str
    """What fills it (`"intent"`, `"errors"`, ...; `_KEYWORDS` maps titles to these)."""
    footer: str = ""


@dataclass(frozen=True)
class Outline:
    """What a prompt asks for: its sections and length limits (None = no limit)."""

    sections: tuple[Section, ...]
    bullets: int | None = None
    words: int | None = None
    per_section: bool = False

    def share(self, total: int | None, index: int) -> int | None:
        """Section `index`'s part of a limit: the whole if the prompt says "per section", else an
        even split (earlier sections get the remainder) so the summary as a whole obeys it."""
        if total is None or self.per_section:
            return total
        n = len(self.sections)
        return total // n + (index < total % n)


def sections(prompt: str) -> tuple[Section, ...]:
    """The sections `prompt` names: markdown headings (the deepest level used twice or more,
    so a `# Output format` title above `## GOAL`, `## FILES` is skipped), else
    `<section name=...>` tags, else upper-case fields with a bracketed description
    (`USER_CONTEXT: (...)`, each once), else a list of labelled items (`1. Goal: ...`) at the
    list's outermost indentation, so an indented sub-list of things to think about is not taken
    for the sections; empty when none of them maps to a known extractor, so the caller can fall
    back to another prompt's sections. `<example>` blocks are ignored: they show answers (or
    other prompts), not what this prompt asks for."""
    prompt = _EXAMPLE.sub("", prompt)
    headings = _HEADING.findall(prompt)
    levels = sorted({len(h) for h, _ in headings if sum(len(g) == len(h) for g, _ in headings) > 1})
    fields: dict[str, str] = {}
    for label, rest in _FIELD.findall(prompt):
        fields.setdefault(label, rest)
    if headings:
        chosen = [(h, t) for h, t in headings if not levels or len(h) == levels[-1]]
        found = tuple(Section(t, f"{h} {t}", _extractor(t) or "said") for h, t in chosen)
    elif tags := _TAG.findall(prompt):
        found = tuple(
            Section(t, f'<section name="{t}">', _extractor(t) or "said", "</section>") for t in tags
        )
    elif len(fields) > 1:
        found = tuple(
            Section(f, f"{f}:", _extractor(f.replace("_", " ")) or _extractor(fields[f]) or "said")
            for f in fields
        )
        return found if any(_extractor(s.title.replace("_", " ")) for s in found) else ()
    else:
        items = [
            (len(i.expandtabs(4)), m, t.strip())
            for i, m, _, t in _ITEM.findall(prompt)
            if len(t.split()) <= _ITEM_WORDS
        ]
        outer = min((depth for depth, _, _ in items), default=0)
        found = tuple(
            Section(t, f"{n}. {t}:" if m[0].isdigit() else f"- {t}:", _extractor(t) or "said")
            for n, (_, m, t) in enumerate(((d, m, t) for d, m, t in items if d == outer), 1)
        )
        found = found if len(found) > 1 else ()
    return found if any(_extractor(s.title) for s in found) else ()


def _count(word: str) -> int:
    return int(word) if word.isdigit() else _NUMBER_WORDS.index(word.lower())


@lru_cache(maxsize=256)
def outline(prompt: str, fallback: str | None = None) -> Outline:
    """The sections and limits `prompt` asks for; the sections of `fallback` when `prompt` names
    none (`Extractive` falls back to Deep Agents' prompt). Cached: replays send the same
    template at every summarisation point."""
    found = sections(prompt) or (sections(fallback) if fallback else ())
    caps: dict[str, int] = {}
    per_section = False
    for cap in _CAP.finditer(prompt):
        how = cap.group(1)
        count, unit = cap.group(2, 3) if how else cap.group(4, 5)
        strict = how is not None and how.lower() in ("under", "fewer than", "less than")
        n = _count(count) - strict
        caps.setdefault("words" if unit.lower().startswith("word") else "bullets", n)
        sentence = re.split(r"[.\n]", prompt[cap.end() :], maxsplit=1)[0]
        per_section = per_section or bool(_PER_SECTION.search(cap.group(0) + sentence))
    return Outline(found, caps.get("bullets"), caps.get("words"), per_section)


__all__ = ["Outline", "Section", "outline", "sections"]
