"""`PromptDiff(trace, prompt_a, prompt_b, summarizer=...)`: two summary prompts, one slice.

Pick a summarisation point (where the policy summarised this trace), run both prompts on the
same slice of history and compare: the two summaries side by side with word-level diff
highlighting, their token counts, and which paths, identifiers and numbers from the slice each
one kept (what an agent needs to resume work). Prompts are editable text areas; "Run" reruns.

Offline by default with the `Extractive` summariser, which fills the sections each prompt asks
for (its `## HEADING`s) from the conversation itself, so two prompts with different sections
differ offline too. Pass any LangChain chat model through `ctxlab.summarizers.LLM(model)` to
compare prompts as a model reads them, or `summarizer=(a, b)` to compare two summarisers.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import ipywidgets as W
import plotly.graph_objects as go
from langchain_core.messages import BaseMessage, SystemMessage

from ctxlab import plots
from ctxlab import tokens as tk
from ctxlab.escape import esc
from ctxlab.message_facts import AUTO, chars_per_token, readable_text, summary_message
from ctxlab.policies import DeepAgents
from ctxlab.policies.catalog import get
from ctxlab.replay import replay
from ctxlab.summarizers import DEFAULT_PROMPT, Extractive, Summarizer
from ctxlab.trace import Trace
from ctxlab.widgets._common import ExportBar, figure_widget

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

    def label(self) -> str:
        where = f"turn {self.turn}" if self.turn is not None else "manual"
        span = f"{self.messages[0]}–{self.messages[-1]}" if self.messages else "none"
        return f"{where}: messages {span} ({len(self.messages)}) · {self.source}"


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
            Point(e.turn, tuple(e.messages), f"{cand.name} {_short(cand.params())}")
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
    """One summary and what it kept."""

    summary: str
    tokens: int
    kept: dict[str, set[str]]


class PromptDiff(W.VBox):
    """Compare two summary prompts (or two summarisers) on the same slice of `trace`."""

    def __init__(
        self,
        trace: Trace,
        prompt_a: str = DEFAULT_PROMPT,
        prompt_b: str | None = None,
        *,
        summarizer: Summarizer | Sequence[Summarizer] | None = None,
        policy: Any = None,
        points: Sequence[Point] | None = None,
    ) -> None:
        self.trace = trace
        if summarizer is None:
            self.summarizers: tuple[Any, Any] = (Extractive(), Extractive())
        elif isinstance(summarizer, list | tuple):
            self.summarizers = (summarizer[0], summarizer[1])
        else:
            self.summarizers = (summarizer, summarizer)
        self.points = list(points) if points is not None else summarisation_points(trace, policy)
        self.cpt = chars_per_token(trace.model, trace.provider)
        self.point = W.Dropdown(
            options=[(p.label(), i) for i, p in enumerate(self.points)],
            value=0 if self.points else None,
            description="point",
            layout=W.Layout(width="700px"),
        )
        self.point.add_class("ctx-point")
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
        self.anchors = W.HTML()
        self.anchors.add_class("ctx-anchors")
        self.sides: tuple[Side, Side] | None = None
        self.figure = figure_widget(self._bars(None), "ctx-diff-chart")
        self.exporter = ExportBar(lambda: self.figure, "prompt_diff")
        self.run_button.on_click(lambda _: self.run())
        self.point.observe(lambda _: self.run(), names="value")
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
                self.figure,
                self.exporter,
            ]
        )
        self.add_class("ctx-prompt-diff")
        self.run()

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
        sides = []
        for summarizer, prompt in zip(
            self.summarizers, (self.prompt_a.value, self.prompt_b.value), strict=True
        ):
            text = summarizer.summarize(messages, prompt=prompt).strip() if messages else ""
            tokens = tk.count_tokens([summary_message(text)], chars_per_token=self.cpt)
            sides.append(Side(text, tokens, kept(found, text)))
        a, b = sides
        self.sides = (a, b)
        html_a, html_b = word_diff(a.summary, b.summary)
        pre = "white-space:pre-wrap;font-size:12px;border:1px solid #ccc;padding:6px;margin:0"
        self.summary_a.value = f"<b>A</b>: {a.tokens:,} tokens<div style='{pre}'>{html_a}</div>"
        self.summary_b.value = f"<b>B</b>: {b.tokens:,} tokens<div style='{pre}'>{html_b}</div>"
        self.anchors.value = _anchors_html(found, a.kept, b.kept, len(messages))
        update = self._bars(found)
        with self.figure.batch_update():
            for old, new in zip(self.figure.data, update.data, strict=True):
                old.y = new.y
                old.x = new.x
            self.figure.layout.title.text = update.layout.title.text
        return a, b

    def _bars(self, found: dict[str, set[str]] | None) -> go.Figure:
        cats = ["paths", "identifiers", "numbers"]
        totals = [len(found[c]) if found else 0 for c in cats]
        fig = go.Figure()
        for label, side, color in (
            ("A", self.sides[0] if self.sides else None, plots.OKABE_ITO["blue"]),
            ("B", self.sides[1] if self.sides else None, plots.OKABE_ITO["vermillion"]),
        ):
            fig.add_trace(
                go.Bar(
                    x=cats,
                    y=[len(side.kept[c]) if side else 0 for c in cats],
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
        fig.update_yaxes(title_text="count")
        return plots.style(
            fig,
            title=f"Anchors kept (A {a_tok:,} tokens, B {b_tok:,} tokens)",
            width=700,
            height=380,
        )

    def export(self, path: Any) -> Any:
        """Write the anchors chart (PNG, SVG, PDF or HTML by suffix)."""
        return self.exporter.export(path)


def _anchors_html(
    found: dict[str, set[str]], a: dict[str, set[str]], b: dict[str, set[str]], n: int
) -> str:
    rows = []
    for kind in ("paths", "identifiers", "numbers"):
        both = sorted(a[kind] & b[kind])
        only_a = sorted(a[kind] - b[kind])
        only_b = sorted(b[kind] - a[kind])
        lost = sorted(found[kind] - a[kind] - b[kind])

        def show(items: list[str], limit: int = 12) -> str:
            text = ", ".join(f"<code>{esc(i, 80)}</code>" for i in items[:limit])
            return text + (f" … (+{len(items) - limit})" if len(items) > limit else "")

        rows.append(
            f"<tr><td><b>{kind}</b></td><td>{len(found[kind])}</td><td>{len(a[kind])}</td>"
            f"<td>{len(b[kind])}</td><td>{show(both)}</td><td>{show(only_a)}</td>"
            f"<td>{show(only_b)}</td><td>{show(lost, 8)}</td></tr>"
        )
    return (
        f"<div><b>Slice:</b> {n} messages</div><table class='ctx-anchor-table' "
        "style='font-size:12px'><tr><th></th><th>in slice</th><th>kept A</th><th>kept B</th>"
        "<th>both</th><th>only A</th><th>only B</th><th>neither</th></tr>"
        + "".join(rows)
        + "</table>"
    )
