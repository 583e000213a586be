"""`Retention(*replays)`: what each policy kept of one trace's facts, side by side.

`Compare` answers which policy keeps the context smallest; this widget answers what each one
lost on the way. Give it replays of one trace (each is evaluated with `ctxlab.evaluate`, with
`model` and `judge` when given) or evaluations already made. It shows `plots.retention` (survival
by category per policy, the facts the recorded agent needed again after eviction by where they
were then, and probe score against its full-context ceiling), a headline table per policy, and
the needed-but-lost facts themselves for the policy picked. Shares or counts is a toggle; the
Export button writes the figure as PNG, SVG, PDF or HTML.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as W
import polars as pl

from ctxlab import plots
from ctxlab._evaluate.evaluation import Evaluation, evaluate
from ctxlab._replay.replay import Replay
from ctxlab._view.escape import esc
from ctxlab._view.palette import FACT_STATUS_COLORS
from ctxlab._view.plots.retention import labels_for, probe_means
from ctxlab._view.widgets._common import ExportBar, figure_widget, update_in_place
from ctxlab._view.widgets.fit import scrolls_sideways

if TYPE_CHECKING:
    from langchain_core.language_models.chat_models import BaseChatModel


def headline_html(evaluations: Sequence[Evaluation], labels: Sequence[str]) -> str:
    """One row per policy: facts, evicted, only in a file (recoverable by `read_file`), lost,
    needed again, needed-but-lost, and the mean probe score beside its ceiling when run."""
    head = "".join(
        f"<th>{h}</th>"
        for h in (
            "policy",
            "facts",
            "evicted",
            "only in a file",
            "lost",
            "needed again",
            "needed but lost",
            "probe score / ceiling",
        )
    )
    rows = []
    for ev, label in zip(evaluations, labels, strict=True):
        facts = ev.facts
        score, ceiling, count = probe_means(ev.probes)
        probes = (
            f"{score:.2f} / {ceiling:.2f} ({count})"
            if score is not None and ceiling is not None
            else (f"{score:.2f} ({count})" if score is not None else "not run")
        )
        cells = [
            esc(label, 80),
            str(facts.height),
            str(facts["evicted_turn"].is_not_null().sum()),
            str((facts["status"] == "file").sum()),
            str((facts["status"] == "lost").sum()),
            str(facts["needed_turn"].is_not_null().sum()),
            f"<b style='color:{FACT_STATUS_COLORS['lost']}'>{ev.needed_lost}</b>",
            probes,
        ]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (
        "<table class='ctx-retention-table' style='font-size:13px'>"
        f"<tr>{head}</tr>{''.join(rows)}</table>"
    )


def needed_lost_html(evaluation: Evaluation, label: str, limit: int = 40) -> str:
    """The facts `evaluation`'s recorded agent used again after eviction but that were lost by
    then: the compactions that would have hurt. Escaped; the first `limit` shown."""
    lost = evaluation.facts.filter(pl.col("status_when_needed") == "lost").sort(
        "needed_turn", "message"
    )
    rows = [
        f"<tr><td>{esc(r['category'])}</td><td><code>{esc(r['fact'], 120)}</code></td>"
        f"<td>{r['first_turn']}</td><td>{r['evicted_turn']}</td><td>{r['needed_turn']}</td></tr>"
        for r in lost.head(limit).iter_rows(named=True)
    ]
    more = f"<div>… {lost.height - limit} more</div>" if lost.height > limit else ""
    if not rows:
        return (
            f"<div class='ctx-needed-lost' data-count='0'><b>{esc(label, 80)}</b>: no fact "
            "the recorded agent needed again was lost</div>"
        )
    return (
        f"<div class='ctx-needed-lost' data-count='{lost.height}'><b>{esc(label, 80)}</b>: "
        f"{lost.height} facts needed again after eviction, lost by then"
        "<table style='font-size:12px'><tr><th>category</th><th>fact</th><th>first seen</th>"
        f"<th>evicted</th><th>needed</th></tr>{''.join(rows)}</table>{more}</div>"
    )


class Retention(W.VBox):
    """Fact survival of several policies on one trace: `Retention(replay_a, replay_b, ...)`
    (evaluated here, with `model`/`judge` for probes) or `Retention(evaluation_a, ...)`.
    Evaluations of different traces raise `ValueError`, as does an empty call."""

    def __init__(
        self,
        *items: Replay | Evaluation,
        labels: Sequence[str] | None = None,
        model: BaseChatModel | None = None,
        judge: BaseChatModel | None = None,
        probes: str | Sequence[str] = "auto",
    ) -> None:
        if len(items) == 1 and isinstance(items[0], list | tuple):
            items = tuple(items[0])
        if not items:
            raise ValueError("Retention needs at least one replay or evaluation")
        self.evaluations = [self._evaluated(i, model, judge, probes) for i in items]
        traces = {ev.trace_id for ev in self.evaluations}
        if len(traces) > 1:
            raise ValueError(
                "Retention compares policies on one trace; got traces "
                + ", ".join(repr(t) for t in sorted(traces))
            )
        self.labels = labels_for(self.evaluations, labels)
        self.shares = W.ToggleButtons(
            options=[("share of each category", True), ("count of facts", False)],
            value=True,
            tooltips=["facts of each category by where they are", "the same as counts"],
            style={"button_width": "auto"},  # each label whole, however long
        )
        self.shares.add_class("ctx-retention-shares")
        self.figure = figure_widget(self._figure(), "ctx-retention-chart")
        self.table = W.HTML(headline_html(self.evaluations, self.labels), layout=scrolls_sideways())
        self.table.add_class("ctx-retention-headline")
        self.policy = W.Dropdown(
            options=[(label, i) for i, label in enumerate(self.labels)],
            value=0,
            description="lost by",
            layout=W.Layout(width="520px"),
        )
        self.policy.add_class("ctx-retention-policy")
        self.lost = W.HTML(layout=scrolls_sideways())
        self.lost.add_class("ctx-retention-lost")
        self.exporter = ExportBar(lambda: self.figure, "retention")
        self.shares.observe(lambda _: self.redraw(), names="value")
        self.policy.observe(lambda _: self._show_lost(), names="value")
        self._show_lost()
        super().__init__(
            [self.shares, self.figure, self.table, self.policy, self.lost, self.exporter]
        )
        self.add_class("ctx-retention")

    @staticmethod
    def _evaluated(item: Any, model: Any, judge: Any, probes: str | Sequence[str]) -> Evaluation:
        if isinstance(item, Replay):
            return evaluate(item, model=model, judge=judge, probes=probes)
        return item

    def _figure(self) -> Any:
        return plots.retention(self.evaluations, labels=self.labels, shares=self.shares.value)

    def _show_lost(self) -> None:
        i = self.policy.value
        self.lost.value = needed_lost_html(self.evaluations[i], self.labels[i])

    def redraw(self) -> None:
        """Redraw the figure for the shares/counts toggle, in place."""
        fig = self._figure()
        update_in_place(self.figure, fig)
        axes = {k: v for k, v in fig.layout.to_plotly_json().items() if k.startswith("yaxis")}
        self.figure.update_layout(axes)

    def export(self, path: Any) -> Any:
        """Write the figure (PNG, SVG, PDF or HTML by suffix)."""
        return self.exporter.export(path)
