"""Where each fact of a trace is, turn by turn, under a replay: in the request verbatim, only in
a summary, only in the policy's files, or lost; and whether the recorded agent used it again
after it left the request.

A fact's status can change only when a message holding it joins the request, when an event
changes what a message says (offload, truncation, masking) or removes it (summary, drop), when
the summary changes and when a file is written. So no request is rebuilt per turn: each message
that holds a fact gets the turns where its form changes (from the replay's events, as
`ctxlab._replay.requests` rebuilds them), its text is checked once per distinct form, and the
statuses
follow as turn intervals. Texts are searched for all facts at once (Aho-Corasick, polars'
`extract_many`) on `ctxlab._evaluate.facts.normalise`d text and confirmed with
`ctxlab._evaluate.facts.mentions`'s
own test.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING
from xml.sax.saxutils import unescape

import numpy as np
import polars as pl

from ctxlab._evaluate.facts import (
    CATEGORIES,
    Fact,
    bounded,
    keys,
    mentions_normalised,
    message_text,
)
from ctxlab._replay.requests import ABSENT, Requests
from ctxlab._weak_memo import WeakMemo

if TYPE_CHECKING:
    from ctxlab._replay.replay import Replay
    from ctxlab._trace import Trace

STATUSES = ("context", "summary", "file", "lost")
"""A fact's status at a turn, best first: verbatim in the request outside summaries; only in a
summary or another inserted message; only in the replay's virtual files (a `read_file` would
recover it); nowhere the agent could read it."""

FACT_SCHEMA = {
    "fact": pl.String,
    "category": pl.String,
    "message": pl.Int64,
    "first_turn": pl.Int64,
    "evicted_turn": pl.Int64,
    "needed_turn": pl.Int64,
    "status": pl.String,
    "status_when_needed": pl.String,
}
"""Columns of `follow`'s frame."""

SURVIVAL_SCHEMA = {
    "category": pl.String,
    **{name: pl.Int64 for name in ("total", *STATUSES, "needed", "needed_lost")},
}
"""Columns of `survival_table`'s frame."""


SPACE = r"[\s\x1c-\x1f]+"
"""A run of the characters `str.split()` splits on (`str.isspace`), in polars' regex syntax."""


def normalised(texts: Sequence[str]) -> pl.Series:
    """`ctxlab._evaluate.facts.normalise` of many texts at once, in polars (whitespace runs to one
    space,
    ends stripped): the same strings, without a Python pass over megabytes of history."""
    series = pl.Series(texts, dtype=pl.String)
    return series.str.replace_all(SPACE, " ").str.strip_chars(" ")


HISTORY_MARK = "<message type="
"""How a file of messages rendered by LangChain's `get_buffer_string(format="xml")` starts
each message (deepagents' history files, the catalogue's `write_history`)."""

_TOOL_CALL = re.compile(r"<tool_call id=(?:\"[^\"]*\"|'[^']*') name=\"([^\"]*)\">(.*?)</tool_call>")


def _periodic(key: str) -> bool:
    """Does `key` overlap itself by more than half (a period at most half its length)?"""
    return any(key[p:] == key[:-p] for p in range(1, len(key) // 2 + 1))


def _ends(key: str) -> tuple[bool, bool, bool]:
    """Which of `_fits`'s boundary rules a key is under: it starts with a word character; it
    starts with `/`; it ends with a word character."""
    return (
        key[:1].isalnum() or key[:1] == "_",
        key[:1] == "/",
        key[-1:].isalnum() or key[-1:] == "_",
    )


def file_view(text: str) -> str:
    """A virtual file's text as facts are looked for in it. A history file renders messages as
    XML: text escaped (`&lt;`), each tool call as `<tool_call id=.. name="ls">{"path": "/"}
    </tool_call>`; reading it back gives the call `ls({"path": "/"})` that `ctxlab._evaluate.facts`
    names a command by, and the text unescaped. Other files are searched as they are."""
    if HISTORY_MARK not in text:
        return text
    return unescape(_TOOL_CALL.sub(r"\1(\2)", text))


LONG_TEXT = 20_000
"""Characters above which matches are confirmed at their offsets, not by scanning the text
once per candidate fact."""

_PATH_BEFORE = np.array([ord(c) for c in "/.-~"], dtype=np.uint32)
"""Characters a path fact may not follow (it would continue a longer path)."""
_JOINERS = np.array([ord(c) for c in "./-"], dtype=np.uint32)
"""Characters that join a fact ending in a word character to a following word character."""
_ESCAPES = np.array([ord("n"), ord("t")], dtype=np.uint32)


@cache
def _offsets_in_bytes() -> bool:
    """Whether this polars' `str.find_many` gives UTF-8 byte offsets (polars 1.x to 2.1) or
    character offsets (2.2 on): asked once of polars itself, since `polars>=1.0` admits both
    and a match confirmed at the wrong offset is a fact silently missed."""
    return pl.Series(["\u00e9a"]).str.find_many(["a"])[0].to_list() == [2]


class Finder:
    """Which facts a text holds, for many texts at once: the texts are normalised and searched
    for every fact's `ctxlab._evaluate.facts.keys` in one Aho-Corasick pass (overlapping
    matches, so a fact inside another is found too); each candidate is then confirmed by
    `ctxlab._evaluate.facts.mentions_normalised`, so a hit is exactly what `mentions` says."""

    def __init__(self, facts: Sequence[Fact]) -> None:
        self.facts = facts
        self.index: dict[str, list[int]] = {}
        for i, fact in enumerate(facts):
            for key in keys(fact):
                if key:
                    self.index.setdefault(key, []).append(i)
        self.patterns = [key for key in self.index if not _periodic(key)]
        self.runs = [key for key in self.index if _periodic(key)]
        """Keys that repeat themselves (`========`, `abab...`): searched on their own, since
        in a run of their pattern they overlap themselves at nearly every character, and an
        overlapping Aho-Corasick pass copies each of those matches out (a 300-character key
        in a 240,000-character run: 72 MB)."""

    def find(self, texts: Sequence[str]) -> list[set[int]]:
        """For each text, the indices of the facts it holds."""
        out: list[set[int]] = [set() for _ in texts]
        if not texts or not self.index:
            return out
        norm = normalised(texts)
        self._find_runs(norm, out)
        if not self.patterns:
            return out
        found = norm.str.extract_many(self.patterns, overlapping=True)
        hit = found.list.len().gt(0)
        long = hit & norm.str.len_chars().gt(LONG_TEXT)
        rows = (hit & ~long).arg_true().to_list()
        index, facts = self.index, self.facts
        hay = norm.gather(rows).to_list()
        # each distinct key once: a run of one character matches a key at every offset
        for row, text, matched in zip(
            rows, hay, found.gather(rows).list.unique().to_list(), strict=True
        ):
            candidates = {i for key in matched for i in index[key]}
            out[row] |= {i for i in candidates if mentions_normalised(text, facts[i])}
        for row in long.arg_true().to_list():
            text = norm[row]
            matches = pl.DataFrame(
                {
                    "key": found[row],
                    "at": norm.slice(row, 1).str.find_many(self.patterns, overlapping=True)[0],
                }
            )
            out[row] |= self._confirm(text, matches)
        return out

    def _find_runs(self, norm: pl.Series, out: list[set[int]]) -> None:
        """Add to `out` the facts of the self-repeating keys (`runs`): the texts holding each
        are found in polars, then `bounded`'s one linear scan decides."""
        for key in self.runs:
            rows = norm.str.contains(key, literal=True).arg_true().to_list()
            for row, text in zip(rows, norm.gather(rows).to_list(), strict=True):
                if bounded(text, key):
                    out[row].update(self.index[key])

    def _confirm(self, text: str, matches: pl.DataFrame) -> set[int]:
        """`mentions_normalised` for the facts matched in a long text (`matches`: each `key`
        and `at`, its offset in bytes or characters, as this polars gives it), in time linear
        in the text and the number of matches: `_fits`'s boundary rules are applied to every
        match at once, on the text's code points (numpy), instead of once per match in Python
        (a run of one character matches a key at every offset: 30 µs a character that way)."""
        cps = np.frombuffer(text.encode("utf-32-le"), dtype=np.uint32)
        size = len(cps)
        distinct, where = np.unique(cps, return_inverse=True)
        word = np.array([chr(c).isalnum() or c == 0x5F for c in distinct.tolist()], dtype=bool)
        word = np.append(word[where], False)  # one past the end: not a word character
        cps = np.append(cps, np.uint32(0))
        keys = matches["key"].unique().to_list()
        shapes = pl.DataFrame(
            [(k, len(k), *_ends(k)) for k in keys],
            schema=["key", "chars", "word_start", "path_start", "word_end"],
            orient="row",
        )
        rows = matches.join(shapes, on="key", how="left")
        at = rows["at"].to_numpy().astype(np.int64)
        if _offsets_in_bytes() and len(text.encode()) != size:  # bytes to characters
            data = np.frombuffer(text.encode(), dtype=np.uint8)
            at = np.searchsorted(np.flatnonzero((data & 0xC0) != 0x80), at)
        end = at + rows["chars"].to_numpy()
        before = cps[np.maximum(at - 1, 0)]
        escaped = (at >= 2) & np.isin(before, _ESCAPES) & (cps[np.maximum(at - 2, 0)] == 0x5C)
        glued = word[np.maximum(at - 1, 0)]
        start_bad = (
            (at > 0)
            & ~escaped
            & (
                (rows["word_start"].to_numpy() & glued)
                | (rows["path_start"].to_numpy() & (glued | np.isin(before, _PATH_BEFORE)))
            )
        )
        joined = np.isin(cps[np.minimum(end, size)], _JOINERS) & word[np.minimum(end + 1, size)]
        end_bad = (
            (end < size) & rows["word_end"].to_numpy() & (word[np.minimum(end, size)] | joined)
        )
        fitting = rows.filter(pl.Series(~(start_bad | end_bad)))["key"].unique().to_list()
        return {i for key in fitting for i in self.index[key]}

    def one(self, text: str) -> set[int]:
        return self.find([text])[0]


@dataclass
class _Spans:
    """Disjoint inclusive turn intervals, sorted after `close()`."""

    parts: list[tuple[int, int]]

    def close(self) -> _Spans:
        merged: list[tuple[int, int]] = []
        for a, b in sorted(self.parts):
            if merged and a <= merged[-1][1] + 1:
                if b > merged[-1][1]:
                    merged[-1] = (merged[-1][0], b)
            else:
                merged.append((a, b))
        self.parts = merged
        self.starts = [a for a, _ in merged]
        return self

    def holds(self, turn: int) -> bool:
        i = bisect_right(self.starts, turn) - 1
        return i >= 0 and self.parts[i][1] >= turn

    def first_gap(self, turn: int, last: int) -> int | None:
        """First turn >= `turn` (and <= `last`) not in the spans, None if there is none."""
        i = bisect_right(self.starts, turn) - 1
        t = turn
        if i < 0 or self.parts[i][1] < t:
            return t
        while i < len(self.parts) and self.parts[i][0] <= t:
            t = self.parts[i][1] + 1
            i += 1
        return t if t <= last else None


class TraceIndex:
    """What every replay of one trace shares: the facts, their finder, and which facts each
    recorded message holds (`held[p]`). Built once per trace and list of facts (`index`), so
    evaluating every preset on a trace searches its messages once. It holds no reference to
    the trace (it is remembered per live trace, `_INDEXES`)."""

    def __init__(self, trace: Trace, facts: Sequence[Fact]) -> None:
        self.facts = tuple(facts)
        self.finder = Finder(self.facts)
        self.held = self.finder.find([message_text(m) for m in trace.messages])


_INDEXES: WeakMemo[TraceIndex] = WeakMemo()
"""Per live trace: the `TraceIndex` of the facts last asked about (a sweep evaluates one trace
under many policies, then moves on)."""


def index(trace: Trace, facts: Sequence[Fact]) -> TraceIndex:
    """The `TraceIndex` of `trace` and `facts`, reused while the same trace object and the same
    facts are asked about."""
    found = _INDEXES.get(trace)
    facts = tuple(facts)
    if found is None or found.facts != facts:
        found = _INDEXES.put(trace, TraceIndex(trace, facts))
    return found


class Survival:
    """The statuses of a list of facts under one replay (see the module docstring)."""

    def __init__(self, replay: Replay, facts: Sequence[Fact], requests: Requests | None = None):
        self.replay = replay
        self.requests = requests or Requests(replay)
        plan = self.requests
        shared = index(plan.trace, facts)
        self.facts = shared.facts
        self.finder = shared.finder
        self.held = shared.held
        """`held[p]`: facts message `p` holds as recorded."""
        self.positions = plan.positions
        self.last = len(self.positions) - 1
        self.truncated_turns: dict[int, list[int]] = {}
        for turn, ps in plan.truncated.items():
            for p in ps:
                if self.held[p]:
                    self.truncated_turns.setdefault(p, []).append(turn)
        self._texts: dict[object, str] = {}
        """Texts to search, by key; searched together in one pass (`_search`). A key names an
        event or summary by `id()`: not a cache of a trace, but this object's own table of
        the replay's events, which the replay holds for as long as this object lives."""
        segments = self._segments()
        summaries = self._summary_segments()
        writes = self._writes()
        found = dict(zip(self._texts, self.finder.find(list(self._texts.values())), strict=True))
        self.context = [_Spans([]) for _ in self.facts]
        for p, start, end, key in segments:
            shown = self.held[p] if key is None else self.held[p] & found[key]
            for i in shown:
                self.context[i].parts.append((start, end))
        self.summary = [_Spans([]) for _ in self.facts]
        for start, end, shown_keys in summaries:
            for i in set().union(*(found[k] for k in shown_keys)):
                self.summary[i].parts.append((start, end))
        for spans in (*self.context, *self.summary):
            spans.close()
        self.file_turn: list[int | None] = [None] * len(self.facts)
        """Per fact, the first turn from which a virtual file holds it."""
        for turn, path, candidates in writes:
            for i in candidates & found[("file", path)]:
                first = self.file_turn[i]
                if first is None or turn < first:
                    self.file_turn[i] = turn

    def _breaks(self, p: int, enter: int) -> list[int]:
        """Turns from `enter` at which message `p`'s form in the request may change."""
        plan = self.requests
        points = {enter}
        for change in plan.changes.get(p, ()):
            points.add(max(enter, change.turn))
            if change.until is not None:
                points.add(change.until + 1)
        for t in self.truncated_turns.get(p, ()):
            if t >= enter:
                points.update((t, t + 1))
        return sorted(t for t in points if t <= self.last)

    def _segments(self) -> list[tuple[int, int, int, object]]:
        """For each message holding facts, the turn spans of each form it is sent in, with the
        key of the form's text (None: sent as recorded, holding all its facts); absent spans
        are left out."""
        plan = self.requests
        out: list[tuple[int, int, int, object]] = []
        for p, held in enumerate(self.held):
            if not held:
                continue
            enter = bisect_right(self.positions, p)
            if enter > self.last:
                continue
            breaks = self._breaks(p, enter)
            for k, start in enumerate(breaks):
                end = breaks[k + 1] - 1 if k + 1 < len(breaks) else self.last
                status, event = plan.status(p, start)
                if status in ABSENT:
                    continue
                key = None
                if status != "kept" or p in plan.base:
                    key = (p, status, id(event) if status != "truncated" else 0)
                    if key not in self._texts:
                        self._texts[key] = message_text(plan.form(p, status, event, start))
                out.append((p, start, end, key))
        return out

    def _summary_segments(self) -> list[tuple[int, int, list[object]]]:
        """Turn spans with the keys of the summaries the request holds over each."""
        plan = self.requests
        points = {c.turn for c in plan.summaries} | {c.turn + 1 for c in plan.summaries}
        points |= {c.until + 1 for c in plan.summaries if c.until is not None}
        ordered = sorted(t for t in points if t <= self.last)
        out = []
        for k, start in enumerate(ordered):
            end = ordered[k + 1] - 1 if k + 1 < len(ordered) else self.last
            keys: list[object] = []
            for change in plan.summaries_at(start):
                key = ("summary", id(change))
                if key not in self._texts:
                    self._texts[key] = message_text(plan.summary_message(change))
                keys.append(key)
            if keys:
                out.append((start, end, keys))
        return out

    def _writes(self) -> list[tuple[int, str, set[int]]]:
        """File writes as (turn, path, facts of the messages written): a fact is in a file from
        the write of a message holding it, if the file's text holds it (a history file renders
        messages as XML; what truncated arguments dropped is not there)."""
        files = self.replay.files
        out = []
        for event in self.replay.event_list:
            path = event.file_path
            if event.turn is None or path is None or path not in files:
                continue
            candidates: set[int] = set()
            for p in event.messages:
                if 0 <= p < len(self.held):
                    candidates |= self.held[p]
            if not candidates:
                continue
            if ("file", path) not in self._texts:
                self._texts[("file", path)] = file_view(files[path])
            out.append((event.turn, path, candidates))
        return out

    def status(self, i: int, turn: int) -> str:
        """Status (`STATUSES`) of fact `i` at `turn`."""
        if self.context[i].holds(turn):
            return "context"
        if self.summary[i].holds(turn):
            return "summary"
        file_turn = self.file_turn[i]
        if file_turn is not None and file_turn <= turn:
            return "file"
        return "lost"

    def rows(self) -> Iterable[tuple]:
        """One row per fact that some request could hold (its first message is before the
        last model call): see `follow`."""
        positions, last = self.positions, self.last
        outputs = {
            positions[t]: t
            for t, turn in enumerate(self.requests.trace.turns)
            if turn.output is not None and t <= last
        }
        needed_at: dict[int, list[int]] = {}
        for p, t in outputs.items():
            for i in self.held[p]:
                needed_at.setdefault(i, []).append(t)
        for i, fact in enumerate(self.facts):
            first = bisect_right(positions, fact.message)
            if first > last:
                continue
            evicted = self.context[i].first_gap(first, last)
            needed = None
            if evicted is not None:
                turns = sorted(needed_at.get(i, ()))
                k = bisect_left(turns, evicted)
                needed = turns[k] if k < len(turns) else None
            yield (
                fact.text,
                fact.category,
                fact.message,
                first,
                evicted,
                needed,
                self.status(i, last),
                None if needed is None else self.status(i, needed),
            )


def follow(replay: Replay, facts: Sequence[Fact]) -> pl.DataFrame:
    """One row per fact: `fact`, `category`, `message` (full-history position of its first
    appearance), `first_turn` (first request holding that message), `evicted_turn` (first turn
    from `first_turn` whose request does not hold the fact verbatim outside summaries, null if
    never), `needed_turn` (first turn from `evicted_turn` whose recorded output, text or
    tool-call arguments, mentions it: that output was written from a request without it;
    null if none), `status` at the last turn and `status_when_needed` at `needed_turn`
    (`STATUSES`).

    Facts first appearing in the last recorded output (or later) are left out: no request
    holds them. Needs `replay.trace`.
    """
    if not replay.calls:
        return pl.DataFrame(schema=FACT_SCHEMA)
    rows = list(Survival(replay, facts).rows())
    return pl.DataFrame(rows, schema=FACT_SCHEMA, orient="row")


def survival_table(facts: pl.DataFrame) -> pl.DataFrame:
    """Survival by category from `follow`'s frame: one row per category (`CATEGORIES` order,
    those without facts left out) counting facts by status at the last turn, the facts the
    recorded agent `needed` after eviction, and of those the `needed_lost` (status `lost` when
    needed: the evictions that would have hurt)."""
    counts: dict[str, dict[str, int]] = {}
    columns = ("category", "status", "needed_turn", "status_when_needed")
    for category, status, needed, when in zip(*(facts[c].to_list() for c in columns), strict=True):
        row = counts.setdefault(category, dict.fromkeys(SURVIVAL_SCHEMA, 0))
        row["total"] += 1
        row[status] += 1
        row["needed"] += needed is not None
        row["needed_lost"] += when == "lost"
    rows = [{**counts[c], "category": c} for c in CATEGORIES if c in counts]
    return pl.DataFrame(rows, schema=SURVIVAL_SCHEMA)


__all__ = [
    "FACT_SCHEMA",
    "STATUSES",
    "SURVIVAL_SCHEMA",
    "Finder",
    "Survival",
    "TraceIndex",
    "file_view",
    "follow",
    "index",
    "normalised",
    "survival_table",
]
