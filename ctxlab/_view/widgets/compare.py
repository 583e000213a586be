"""`Compare(*replays)`: several policies' curves overlaid, and a metrics table.

For the question after scrubbing one replay: which policy (or which sweep cell) keeps the
context smallest for the same trace, at what cost in events. The metric toggle switches
between per-turn context, cumulative input tokens (what a provider bills) and the cache writes
by cause (`ctxlab.plots.cache_writes`: what each policy's compactions cost in cache rewrites).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import ipywidgets as W

from ctxlab import plots
from ctxlab._evaluate.metrics import needed_lost
from ctxlab._replay.replay import Replay
from ctxlab._trace import Trace
from ctxlab._view.escape import esc
from ctxlab._view.widgets._common import ExportBar, figure_widget, metrics, update_in_place
from ctxlab._view.widgets.fit import scrolls_sideways

CACHE_WRITES = "cache_writes"
"""The metric toggle's value that shows cache writes by cause."""
PAD = "padding:2px 8px"
"""Room between the metrics table's columns: unpadded, its headers ran into each other
("saved events summaries needed lost")."""


def metrics_table_html(
    replays: Sequence[Replay], labels: Sequence[str], trace: Trace | None = None
) -> str:
    """One row per replay: peak, cumulative, saved vs baseline, events, needed-but-lost facts
    (`ctxlab._evaluate.metrics.needed_lost`) and cost if known."""
    rows = [metrics(r, trace) for r in replays]
    lost = [needed_lost(r, trace) for r in replays]
    cost_keys = sorted({k for m in rows for k in m if k.startswith("cost")})
    head = "".join(
        f"<th style='{PAD}'>{esc(h)}</th>"
        for h in [
            "replay",
            "peak",
            "cumulative",
            "saved",
            "events",
            "summaries",
            "needed lost",
            *[k.replace("_", " ") for k in cost_keys],
        ]
    )
    body = []
    for label, m, n in zip(labels, rows, lost, strict=True):
        cells = [
            esc(label, 80),
            f"{m['peak']:,}",
            f"{m['cumulative']:,}",
            f"{m['saved']:.0%}",
            f"{m['events']:,}",
            f"{m['events_by_kind'].get('summarize', 0):,}",
            "" if n is None else f"{n:,}",
            *[f"${m[k]:,.2f}" if isinstance(m.get(k), float) else "" for k in cost_keys],
        ]
        body.append("<tr>" + "".join(f"<td style='{PAD}'>{c}</td>" for c in cells) + "</tr>")
    return (
        f"<table class='ctx-metrics' style='font-size:13px'><tr>{head}</tr>{''.join(body)}</table>"
    )


class Compare(W.VBox):
    """Overlaid curves of `replays` (same trace, different policies) and a metrics table.
    Replays of different traces, or a `trace` they do not replay, raise `ValueError`.

    The chart also draws what the recording says (`trace`, else the first replay's): its
    per-call input tokens and its own compactions, when it has them."""

    def __init__(
        self,
        *replays: Replay,
        labels: Sequence[str] | None = None,
        trace: Trace | None = None,
    ) -> None:
        if len(replays) == 1 and isinstance(replays[0], list | tuple):
            replays = tuple(replays[0])
        if not replays:
            raise ValueError("Compare needs at least one replay")
        plots.same_trace(replays, trace, "Compare")
        self.replays = list(replays)
        self.labels = list(labels) if labels is not None else plots.default_labels(self.replays)
        if len(self.labels) != len(self.replays):
            raise ValueError(f"Compare: {len(self.labels)} labels for {len(self.replays)} replays")
        if len(set(self.labels)) < len(self.labels):
            self.labels = [f"{i}: {label}" for i, label in enumerate(self.labels)]
        self.trace = trace
        self.metric = W.ToggleButtons(
            options=[
                ("context per turn", "context"),
                ("cumulative", "cumulative"),
                ("cache writes by cause", CACHE_WRITES),
            ],
            value="context",
            tooltips=[
                "context tokens of each request",
                "input tokens summed over the calls",
                "cache-write tokens by what caused them",
            ],
            style={"button_width": "auto"},  # each label whole, however long
        )
        self.metric.add_class("ctx-metric")
        self._bars = False
        self.figure = figure_widget(self._figure(), "ctx-compare-chart")
        self.table = W.HTML(
            metrics_table_html(self.replays, self.labels, trace), layout=scrolls_sideways()
        )
        self.table.add_class("ctx-compare-table")
        self.exporter = ExportBar(lambda: self.figure, "compare")
        self.metric.observe(lambda _: self.redraw(), names="value")
        super().__init__([self.metric, self.figure, self.table, self.exporter])
        self.add_class("ctx-compare")

    def _figure(self) -> Any:
        if self.metric.value == CACHE_WRITES:
            return plots.cache_writes(self._with_traces(), labels=self.labels)
        return plots.comparison(
            self.replays,
            labels=self.labels,
            cumulative=self.metric.value == "cumulative",
            recorded=self.trace if self.trace is not None else self.replays[0].trace,
        )

    def _with_traces(self) -> list[Replay]:
        """The replays, each carrying the trace (the cache simulation reads its turns)."""
        return [
            r
            if r.trace is not None or self.trace is None
            else dataclasses.replace(r, trace=self.trace)
            for r in self.replays
        ]

    def redraw(self) -> None:
        """Redraw the chart for the chosen metric: the curves in place; a new chart when
        switching to or from the cache-write bars (another kind of chart, other axes)."""
        fig = self._figure()
        bars = self.metric.value == CACHE_WRITES
        if bars or self._bars:
            self._bars = bars
            self.figure = figure_widget(fig, "ctx-compare-chart")
            self.children = (self.metric, self.figure, self.table, self.exporter)
            return
        update_in_place(self.figure, fig, layout={"yaxis.title.text": fig.layout.yaxis.title.text})

    def export(self, path: Any) -> Any:
        """Write the chart (PNG, SVG, PDF or HTML by suffix)."""
        return self.exporter.export(path)
