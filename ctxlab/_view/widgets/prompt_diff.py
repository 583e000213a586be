"""`PromptDiff(trace, prompt_a, prompt_b, summarizer=...)`: two summary prompts, one slice.

Pick a summarisation point (where the policy summarised this trace), run both prompts on the
same slice of history and compare: the two summaries side by side with word-level diff
highlighting, their token counts, and which paths, identifiers and numbers from the slice each
one kept (what an agent needs to resume work). Prompts are editable text areas; "Run" reruns.

Fact survival (Tier 1, `ctxlab._evaluate.facts`): the typed facts the slice mentions (goal,
instructions, todos, paths, commands, errors, numbers, identifiers, URLs) and which of them
each summary keeps verbatim, by category; the chart shows them or the anchors. With `model`,
each summary is also probed (`ctxlab.evaluate` at the point's turn, the policy replayed with
that summary): mean probe score beside its full-context ceiling.

Offline by default with the `Extractive` summariser, which fills the sections each prompt asks
for (its `## HEADING`s) from the conversation itself, so two prompts with different sections
differ offline too. Pass any LangChain chat model through `ctxlab.summarizers.LLM(model)` to
compare prompts as a model reads them, or `summarizer=(a, b)` to compare two summarisers.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import ipywidgets as W
import plotly.graph_objects as go
import polars as pl
from langchain_core.messages import BaseMessage, SystemMessage

from ctxlab import plots
from ctxlab._cost import tokens as tk
from ctxlab._evaluate.evaluation import evaluate
from ctxlab._evaluate.facts import CATEGORIES, Fact, Haystack, extract, message_text
from ctxlab._messages import AUTO, chars_per_token, readable_text, summary_message
from ctxlab._replay.policies.catalog import get
from ctxlab._replay.prompt_template import checked_prompt
from ctxlab._replay.replay import replay
from ctxlab._trace import Trace
from ctxlab._view.escape import esc
from ctxlab._view.plots.retention import probe_means
from ctxlab._view.widgets._common import ExportBar, figure_widget
from ctxlab._view.widgets.fit import scrolls_sideways
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import DEFAULT_PROMPT, Extractive, Fixed, Summarizer

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel

_PATH = re.compile(r"(?<![\w/])(?:/[\w.\-]+)+/?|\b[\w.\-]+/[\w.\-/]+\.\w+")
_IDENT = re.compile(r"\b(?:[A-Za-z_]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*|\w+\.\w+\(\))\b")
_NUMBER = re.compile(r"(?<![\w.])\d+(?:[.,]\d+)*(?![\w])")


def anchors(text: str) -> dict[str, set[str]]:
    """Paths, identifiers and numbers (2+ digits) in `text`: what a summary should carry."""
    paths = {p.rstrip("/.") for p in _PATH.findall(text) if len(p) > 2}
    idents = {i for i in _IDENT.findall(text) if len(i) >= 4}
    numbers = {n for n in _NUMBER.findall(text) if len(n.replace(",", "").replace(".", "")) >= 2}
    return {"paths": paths, "identifiers": idents - paths, "numbers": numbers}


def kept(slice_anchors: dict[str, set[str]], summary: str) -> dict[str, set[str]]:
    """Which of the slice's anchors appear verbatim in `summary`."""
    return {k: {a for a in v if a in summary} for k, v in slice_anchors.items()}


def word_diff(a: str, b: str) -> tuple[str, str]:
    """Both texts as escaped HTML, with words only in A struck red and only in B green."""
    ta, tb = re.split(r"(\s+)", a), re.split(r"(\s+)", b)
    out_a: list[str] = []
    out_b: list[str] = []
    matcher = difflib.SequenceMatcher(None, ta, tb, autojunk=False)
    for op, i1, i2, j1, j2 in matcher.get_opcodes():
        sa, sb = esc("".join(ta[i1:i2])), esc("".join(tb[j1:j2]))
        if op == "equal":
            out_a.append(sa)
            out_b.append(sb)
            continue
        if sa:
            out_a.append(f"<del class='ctx-del' style='background:#F5C6B8'>{sa}</del>")
        if sb:
            out_b.append(f"<ins class='ctx-ins' style='background:#BFE6D8'>{sb}</ins>")
    return "".join(out_a), "".join(out_b)


@dataclass(frozen=True)
class Point:
    """A summarisation point: the turn and the full-history positions summarised there."""

    turn: int | None
    messages: tuple[int, ...]
    source: str
    policy: Any = field(default=None, compare=False)
    """The policy that summarises here (None for a manual point): probes replay it."""

    def label(self) -> str:
        where = f"turn {self.turn}" if self.turn is not None else "manual"
        span = f"{self.messages[0]}–{self.messages[-1]}" if self.messages else "none"
        return f"{where}: messages {span} ({len(self.messages)}) · {self.source}"


POINT_CHARS = 100
"""How many characters of a point's label the dropdown shows: what a 1,000-pixel notebook
column fits beside the "point" description in the browser's default font (checked by
tests/test_browser.py); longer labels end in "…", whole in the tooltip."""


def clipped(text: str, chars: int) -> str:
    """`text` cut to `chars` characters, the last one "…" when it was longer."""
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"


def summarisation_points(trace: Trace, policy: Any = None) -> list[Point]:
    """Where `policy` (a policy or a registered name; default Deep Agents) summarises `trace`;
    if it never does, where stress mode at 25% (then 10%) would; failing that, the first half
    and three quarters of the history. A given policy that refuses `trace` raises `ValueError`."""
    if isinstance(policy, str):
        policy = get(policy)
    candidates = [policy or DeepAgents()]
    if policy is None:
        candidates += [DeepAgents(stress=0.25), DeepAgents(stress=0.1)]
    for cand in candidates:
        try:
            result = replay(trace, cand)
        except (TypeError, ValueError) as exc:
            if policy is not None:
                raise ValueError(
                    f"PromptDiff: policy {cand.name!r} cannot replay trace "
                    f"{trace.trace_id!r}: {exc}"
                ) from None
            continue
        points = [
            Point(e.turn, tuple(e.messages), f"{cand.name} {_short(cand.params())}", cand)
            for e in result.event_list
            if e.kind == "summarize" and e.messages
        ]
        if points:
            return points
    first = 1 if trace.messages and isinstance(trace.messages[0], SystemMessage) else 0
    n = len(trace.messages)
    return [
        Point(None, tuple(range(first, max(first + 1, n * q // 4))), f"first {q}/4 of history")
        for q in (2, 3)
    ]


def _short(params: dict[str, Any]) -> str:
    shown = {k: v for k, v in params.items() if v not in (AUTO, None, "trace")}
    return ", ".join(f"{k}={v}" for k, v in list(shown.items())[:2])


@dataclass
class Side:
    """One summary and what it kept: anchors (`kept`) and Tier 1 facts by category."""

    summary: str
    tokens: int
    kept: dict[str, set[str]]
    facts: dict[str, list[str]] = field(default_factory=dict)
    error: str | None = None
    """Why this side has no summary (a refused prompt, a model that failed), else None."""


_PRE = "white-space:pre-wrap;font-size:12px;border:1px solid #ccc;padding:6px;margin:0"


def _summary_html(label: str, side: Side, diffed: str) -> str:
    """One side's summary panel: its tokens and diffed text, or its error (escaped), said in
    red; an empty summary is said to be empty."""
    if side.error is not None:
        return (
            f"<b>{label}</b>: no summary<div class='ctx-summary-error' style='{_PRE};"
            f"color:#B22222'>{esc(side.error)}</div>"
        )
    note = " (the summariser returned nothing)" if not side.summary else ""
    return f"<b>{label}</b>: {side.tokens:,} tokens{note}<div style='{_PRE}'>{diffed}</div>"


class PromptDiff(W.VBox):
    """Compare two summary prompts (or two summarisers) on the same slice of `trace`: the
    summaries, the anchors and Tier 1 facts each keeps, and with `model` (any LangChain chat
    model; `judge` grades free-text probes) each summary's probe scores beside the ceiling."""

    def __init__(
        self,
        trace: Trace,
        prompt_a: str = DEFAULT_PROMPT,
        prompt_b: str | None = None,
        *,
        summarizer: Summarizer | Sequence[Summarizer] | None = None,
        policy: Any = None,
        points: Sequence[Point] | None = None,
        model: BaseChatModel | None = None,
        judge: BaseChatModel | None = None,
        cache: Any = None,
    ) -> None:
        self.trace = trace
        self.model = model
        self.judge = judge
        self.cache = cache
        """Where probe answers are kept (`ctxlab.evaluate`'s `cache`: a store or its path;
        default in memory for this process), so a rerun asks only the calls that failed."""
        self._trace_facts: list[Fact] | None = None
        self.slice_facts: list[Fact] = []
        """The Tier 1 facts the chosen slice mentions (`ctxlab._evaluate.facts`), set by `run`."""
        self.probes: tuple[pl.DataFrame, pl.DataFrame] | None = None
        """Each summary's probes at the point's turn, when a `model` was given."""
        self._found: dict[str, set[str]] | None = None
        if summarizer is None:
            self.summarizers: tuple[Any, Any] = (Extractive(), Extractive())
        elif isinstance(summarizer, list | tuple):
            self.summarizers = (summarizer[0], summarizer[1])
        else:
            self.summarizers = (summarizer, summarizer)
        self.points = list(points) if points is not None else summarisation_points(trace, policy)
        self.cpt = chars_per_token(trace.model, trace.provider)
        # A native dropdown cannot wrap: it takes the column's width, each option is cut to
        # what that width shows (`POINT_CHARS`), and the chosen point's whole label is its
        # tooltip.
        self.point = W.Dropdown(
            options=[(clipped(p.label(), POINT_CHARS), i) for i, p in enumerate(self.points)],
            value=0 if self.points else None,
            description="point",
            layout=W.Layout(width="auto"),  # the column's width, less the widget's margins
        )
        self.point.add_class("ctx-point")
        self._tip_point()
        self.point.observe(lambda _: self._tip_point(), names="value")
        area = W.Layout(width="49%", height="140px")
        self.prompt_a = W.Textarea(value=prompt_a, description="prompt A", layout=area)
        self.prompt_b = W.Textarea(
            value=prompt_b if prompt_b is not None else prompt_a,
            description="prompt B",
            layout=area,
        )
        self.prompt_a.add_class("ctx-prompt-a")
        self.prompt_b.add_class("ctx-prompt-b")
        self.run_button = W.Button(description="Run both", icon="play")
        self.run_button.add_class("ctx-run")
        self.summary_a = W.HTML()
        self.summary_b = W.HTML()
        self.summary_a.add_class("ctx-summary-a")
        self.summary_b.add_class("ctx-summary-b")
        self.anchors = W.HTML(layout=scrolls_sideways())
        self.anchors.add_class("ctx-anchors")
        self.fact_table = W.HTML(layout=scrolls_sideways())
        self.fact_table.add_class("ctx-fact-survival")
        self.probe_table = W.HTML(layout=scrolls_sideways())
        self.probe_table.add_class("ctx-prompt-probes")
        self.view = W.ToggleButtons(
            options=[("anchors", "anchors"), ("facts (Tier 1)", "facts")],
            value="anchors",
            style={"button_width": "auto"},
        )
        self.view.add_class("ctx-diff-view")
        self.sides: tuple[Side, Side] | None = None
        self.figure = figure_widget(self._bars(), "ctx-diff-chart")
        self.exporter = ExportBar(lambda: self.figure, "prompt_diff")
        self.run_button.on_click(lambda _: self.run())
        self.point.observe(lambda _: self.run(), names="value")
        self.view.observe(lambda _: self._redraw(), names="value")
        half = W.Layout(width="49%")
        self.summary_a.layout = half
        self.summary_b.layout = half
        super().__init__(
            [
                self.point,
                W.HBox([self.prompt_a, self.prompt_b]),
                self.run_button,
                W.HBox([self.summary_a, self.summary_b]),
                self.anchors,
                self.fact_table,
                self.probe_table,
                self.view,
                self.figure,
                self.exporter,
            ]
        )
        self.add_class("ctx-prompt-diff")
        self.run()

    def _tip_point(self) -> None:
        """The chosen point's whole label as the dropdown's tooltip."""
        value = self.point.value
        self.point.tooltip = self.points[value].label() if value is not None else None

    def slice(self) -> list[BaseMessage]:
        """The messages summarised at the chosen point."""
        if self.point.value is None:
            return []
        point = self.points[self.point.value]
        return [self.trace.messages[p] for p in point.messages if p < len(self.trace.messages)]

    def run(self) -> tuple[Side, Side]:
        """Summarise the slice with both prompts and redraw (the Run button calls this)."""
        messages = self.slice()
        source = "\n".join(readable_text(m) for m in messages)
        found = anchors(source)
        self.slice_facts = self._slice_facts(messages)
        sides = []
        for summarizer, prompt in zip(
            self.summarizers, (self.prompt_a.value, self.prompt_b.value), strict=True
        ):
            try:  # one side failing (a bad prompt, a model error) keeps the other's summary
                checked_prompt(prompt)
                text = summarizer.summarize(messages, prompt=prompt).strip() if messages else ""
                error = None
            except Exception as exc:  # noqa: BLE001 - shown on its side, never lost silently
                text, error = "", f"{type(exc).__name__}: {exc}"
            tokens = tk.count_tokens([summary_message(text)], chars_per_token=self.cpt)
            facts = facts_kept(self.slice_facts, text)
            sides.append(Side(text, tokens, kept(found, text), facts, error))
        a, b = sides
        self.sides = (a, b)
        self._found = found
        html_a, html_b = word_diff(a.summary, b.summary)
        self.summary_a.value = _summary_html("A", a, html_a)
        self.summary_b.value = _summary_html("B", b, html_b)
        self.anchors.value = _anchors_html(found, a.kept, b.kept, len(messages))
        in_slice = by_category(self.slice_facts)
        self.fact_table.value = _kept_html(
            in_slice,
            {k: set(v) for k, v in a.facts.items()},
            {k: set(v) for k, v in b.facts.items()},
            list(in_slice),
            "ctx-fact-table",
            f"<b>Facts</b> (Tier 1) the slice mentions: {len(self.slice_facts)}",
        )
        self.probes = self._probe(a, b)
        self.probe_table.value = self._probes_html()
        self._redraw()
        return a, b

    def _slice_facts(self, messages: Sequence[BaseMessage]) -> list[Fact]:
        """The trace's facts (extracted once) that the slice's messages mention."""
        if self._trace_facts is None:
            self._trace_facts = extract(self.trace)
        text = Haystack("\n".join(message_text(m) for m in messages))
        return [f for f in self._trace_facts if f in text]

    def _probe(self, a: Side, b: Side) -> tuple[pl.DataFrame, pl.DataFrame] | None:
        """Each summary probed at the point's turn: the point's policy replayed with that
        summary (`Fixed`) and evaluated there with `model` (and `judge`). None without a model
        or for a manual point (no policy summarises there)."""
        point = self.points[self.point.value] if self.point.value is not None else None
        if self.model is None or point is None or point.turn is None or point.policy is None:
            return None
        out = []
        for side in (a, b):
            result = replay(self.trace, point.policy, Fixed(side.summary))
            found = evaluate(
                result, model=self.model, judge=self.judge, turns=[point.turn], cache=self.cache
            )
            out.append(found.probes)
        return out[0], out[1]

    def _probes_html(self) -> str:
        if self.probes is None:
            if self.model is None:
                return (
                    "<div style='color:#777'>probes: pass <code>model=</code> (any LangChain "
                    "chat model) to ask each summary questions the slice answers</div>"
                )
            return "<div style='color:#777'>probes: this point has no replayed turn</div>"
        cells = []
        for label, frame in zip("AB", self.probes, strict=True):
            score, ceiling, count = probe_means(frame)
            shown = (
                f"{score:.2f} vs ceiling {ceiling:.2f}"
                if score is not None and ceiling is not None
                else "no probe scored"
            )
            failed = int(frame["error"].is_not_null().sum()) if "error" in frame.columns else 0
            if failed:  # their scores are null; "Run both" again asks only these calls
                shown += f" ({failed} failed: run again to retry them)"
            cells.append(f"<td><b>{label}</b></td><td>{count}</td><td>{esc(shown)}</td>")
        rows = "".join(f"<tr>{c}</tr>" for c in cells)
        return (
            "<table class='ctx-probe-table' style='font-size:12px'><tr><th>summary</th>"
            f"<th>probes</th><th>mean score</th></tr>{rows}</table>"
        )

    def _redraw(self) -> None:
        update = self._bars()
        with self.figure.batch_update():
            for old, new in zip(self.figure.data, update.data, strict=True):
                old.y = new.y
                old.x = new.x
            self.figure.layout.title.text = update.layout.title.text

    def _bars(self) -> go.Figure:
        """Kept by A, kept by B and in the slice, per anchor kind or per fact category."""
        kept_a: Mapping[str, Collection[str]]  # facts by category, or anchors by kind
        kept_b: Mapping[str, Collection[str]]
        if self.view.value == "facts":
            in_slice = {k: set(v) for k, v in by_category(self.slice_facts).items()}
            cats = list(in_slice)
            kept_a = self.sides[0].facts if self.sides else {}
            kept_b = self.sides[1].facts if self.sides else {}
            what = "Facts"
        else:
            in_slice = self._found or {}
            cats = ["paths", "identifiers", "numbers"]
            kept_a = self.sides[0].kept if self.sides else {}
            kept_b = self.sides[1].kept if self.sides else {}
            what = "Anchors"
        totals = [len(in_slice.get(c, ())) for c in cats]
        fig = go.Figure()
        for label, side_kept, color in (
            ("A", kept_a, plots.OKABE_ITO["blue"]),
            ("B", kept_b, plots.OKABE_ITO["vermillion"]),
        ):
            fig.add_trace(
                go.Bar(
                    x=cats,
                    y=[len(side_kept.get(c, ())) for c in cats],
                    name=f"kept by {label}",
                    marker_color=color,
                )
            )
        fig.add_trace(
            go.Bar(
                x=cats,
                y=totals,
                name="in the slice",
                marker_color=plots.OKABE_ITO["grey"],
                opacity=0.5,
            )
        )
        a_tok = self.sides[0].tokens if self.sides else 0
        b_tok = self.sides[1].tokens if self.sides else 0
        fig.update_layout(barmode="group")
        fig.update_yaxes(title_text="count", tickformat=",d")  # 1,200 as the tables print it
        return plots.style(
            fig,
            title=f"{what} kept (A {a_tok:,} tokens, B {b_tok:,} tokens)",
            width=700,
            height=380,
        )

    def export(self, path: Any) -> Any:
        """Write the chart shown, anchors or facts (PNG, SVG, PDF or HTML by suffix)."""
        return self.exporter.export(path)


def by_category(facts: Sequence[Fact]) -> dict[str, list[str]]:
    """Fact texts grouped by category, categories in `ctxlab._evaluate.facts.CATEGORIES` order."""
    out: dict[str, list[str]] = {c: [] for c in CATEGORIES}
    for f in facts:
        out.setdefault(f.category, []).append(f.text)
    return {c: v for c, v in out.items() if v}


def facts_kept(facts: Sequence[Fact], summary: str) -> dict[str, list[str]]:
    """Which of `facts` `summary` holds verbatim (`ctxlab._evaluate.facts.mentions`), by
    category."""
    text = Haystack(summary)
    return by_category([f for f in facts if f in text])


def _anchors_html(
    found: dict[str, set[str]], a: dict[str, set[str]], b: dict[str, set[str]], n: int
) -> str:
    return _kept_html(
        found,
        a,
        b,
        ["paths", "identifiers", "numbers"],
        "ctx-anchor-table",
        f"<b>Slice:</b> {n} messages",
    )


def _kept_html(
    found: dict[str, Any],
    a: dict[str, set[str]],
    b: dict[str, set[str]],
    kinds: Sequence[str],
    css: str,
    caption: str,
) -> str:
    """What each side kept of `found`, one row per kind, every item escaped."""
    rows = []
    for kind in kinds:
        found_kind, in_a, in_b = set(found[kind]), a.get(kind, set()), b.get(kind, set())
        both = sorted(in_a & in_b)
        only_a = sorted(in_a - in_b)
        only_b = sorted(in_b - in_a)
        lost = sorted(found_kind - in_a - in_b)

        def show(items: list[str], limit: int = 12) -> str:
            text = ", ".join(f"<code>{esc(i, 80)}</code>" for i in items[:limit])
            return text + (f" … (+{len(items) - limit})" if len(items) > limit else "")

        rows.append(
            f"<tr><td><b>{esc(kind)}</b></td><td>{len(found_kind)}</td><td>{len(in_a)}</td>"
            f"<td>{len(in_b)}</td><td>{show(both)}</td><td>{show(only_a)}</td>"
            f"<td>{show(only_b)}</td><td>{show(lost, 8)}</td></tr>"
        )
    return (
        f"<div>{caption}</div><table class='{css}' "
        "style='font-size:12px'><tr><th></th><th>in slice</th><th>kept A</th><th>kept B</th>"
        "<th>both</th><th>only A</th><th>only B</th><th>neither</th></tr>"
        + "".join(rows)
        + "</table>"
    )
