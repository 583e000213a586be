"""`Scrubber(replay, trace)`: walk through a replay turn by turn.

A turn slider with a play button drives three views that update in place: the context-tokens
chart (a FigureWidget: stacked kinds, baseline, window/trigger lines, a marker per event, the
recording's own input tokens and compactions when the trace has them, the billed tokens with
markers where the policy's count and the bill part about its trigger or window
(`ctxlab._view.plots.billed`), and a cursor on the current turn; zoom to the data and a log scale
above it), the context strip (one block per message, sized by tokens, coloured by status,
hover for before/after; pick a block for its full text) and the list of events so far.
Clicking a point on the chart jumps to that turn.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import ipywidgets as W
import plotly.graph_objects as go

from ctxlab import plots
from ctxlab._replay.replay import Replay
from ctxlab._replay.timeline import Block, Timeline, block_detail, events_html, strip_html
from ctxlab._trace import Trace
from ctxlab._view.event_cards import EventCards
from ctxlab._view.widgets._common import (
    ExportBar,
    YAxis,
    after_redraw,
    figure_widget,
    metrics,
    readout_html,
    token_metrics,
)
from ctxlab.plots import esc

if TYPE_CHECKING:
    from ctxlab._evaluate.evaluation import Evaluation


def cursor_trace(replay: Replay, turn: int) -> go.Scatter:
    """The current-turn marker: the last trace of the scrubber's chart."""
    row = replay.turns.row(turn, named=True)
    return go.Scatter(
        x=[turn],
        y=[row["context_tokens"]],
        mode="markers",
        name="current turn",
        marker={"symbol": "circle-open", "size": 16, "color": "#000000", "line": {"width": 2.5}},
        hovertemplate="turn %{x}: %{y:,} tokens<extra></extra>",
        showlegend=False,
    )


def cursor_shape(turn: int) -> dict[str, Any]:
    """A vertical line at the current turn (layout shape, full height)."""
    return {
        "type": "line",
        "xref": "x",
        "yref": "paper",
        "x0": turn,
        "x1": turn,
        "y0": 0,
        "y1": 1,
        "line": {"color": "#555555", "width": 1, "dash": "dot"},
    }


def title_at(replay: Replay, turn: int, trace: Trace | None = None) -> str:
    """Chart title naming the turn, its tokens, the policy and the trace (`trace`, else the
    replay's: `plots.trace_name`); the browser test reads it."""
    row = replay.turns.row(turn, named=True)
    name = plots.trace_name(trace, replay.trace_id, 48) if trace else plots.replay_name(replay, 48)
    billed = row.get("billed_tokens")
    paid = f", billed {billed:,} ({esc(replay.billing_method)})" if billed is not None else ""
    # Two lines, each within the chart's width: on one, the trace's name ran off its edge.
    return (
        f"turn {turn}: {row['context_tokens']:,} tokens "
        f"(baseline {row['baseline_tokens']:,}{paid})<br>{esc(replay.policy)} on {esc(name)}"
    )


PENDING_CARD = (
    "<div class='ctx-event-card-none'>finding what each compaction dropped "
    "(shown in a moment)</div>"
)
"""The card box's content until the event cards are computed (just after the first draw)."""


class Scrubber(W.VBox):
    """Scrub `replay` turn by turn. The replay carries its trace and policy, so
    `Scrubber(replay)` shows per-message content; `trace` and `policy` override them (without
    any trace the strip shows one block per kind).

    `lines` are horizontal levels for the chart (default `plots.thresholds(policy, trace)`).
    The strip shows the summaries the model read, as the replay's `summarize` events kept
    them; `summaries` replaces them (one text per `summarize` event, in order).

    The event card of the latest compaction (`ctxlab._view.event_cards`) shows what it dropped:
    from `evaluation` (an `ctxlab.Evaluation` of this replay, with probes if run), else Tier 1.
    The cards, and the cost in the readout (the replay's bill), are computed once the scrubber
    is first drawn (`after_redraw`: in a kernel the chart appears first). Following every fact
    through the replay was most of what building a scrubber cost (0.7 s at 1,000 turns, 6.1 s
    at 10,000; 0.05 and 0.23 s to the first draw now, `bench.bench_widgets`). A turn shown
    before then says its card is on the way.

    A replay without turns, or a `trace` it does not replay, raises `ValueError`.
    """

    def __init__(
        self,
        replay: Replay,
        trace: Trace | None = None,
        *,
        lines: Mapping[str, int] | None = None,
        policy: Any = None,
        summaries: Sequence[str] = (),
        turn: int | None = None,
        play_interval_ms: int = 300,
        evaluation: Evaluation | None = None,
    ) -> None:
        plots.same_trace([replay], trace, "Scrubber")
        if replay.turns.height == 0:
            raise ValueError(
                f"Scrubber: the replay of trace {replay.trace_id!r} has no turns (the trace "
                "records no model call): nothing to scrub"
            )
        self.replay = replay
        trace = trace if trace is not None else replay.trace
        policy = policy if policy is not None else replay.source_policy
        self.trace = trace
        if lines is None and policy is not None and trace is not None:
            lines = plots.thresholds(policy, trace)
        self.lines = dict(lines or {})
        texts: Sequence[str | None] = summaries or [
            e.summary for e in replay.event_list if e.kind == "summarize"
        ]
        self.timeline = Timeline(replay, trace, texts)
        n = replay.turns.height
        start = n - 1 if turn is None else max(0, min(turn, n - 1))
        self.slider = W.IntSlider(
            value=start,
            min=0,
            max=n - 1,
            description="turn",
            continuous_update=True,
            layout=W.Layout(width="600px"),
        )
        self.slider.add_class("ctx-turn")
        self.play = W.Play(
            value=start, min=0, max=n - 1, interval=play_interval_ms, description="play"
        )
        W.jslink((self.play, "value"), (self.slider, "value"))
        self.yaxis = YAxis(self._relayout)
        self._billed = plots.billed_trace_dicts(replay)
        self._traces = [
            *plots.context_trace_dicts(replay, lines=self.lines, recorded=trace),
            *self._billed,
        ]
        self.figure = figure_widget(self._figure(start), "ctx-chart")
        for trace_ in self.figure.data[:-1]:
            trace_.on_click(self._clicked)
        self.strip = W.HTML()
        self.strip.add_class("ctx-strip")
        self.block = W.Dropdown(description="block", layout=W.Layout(width="520px"))
        self.block.add_class("ctx-block-pick")
        self.detail = W.HTML()
        self.detail.add_class("ctx-detail-box")
        self.events = W.HTML()
        self.events.add_class("ctx-event-list")
        self.cards = EventCards(replay, evaluation)
        self._cards_due = True  # until just after the first draw
        self.card = W.HTML()
        self.card.add_class("ctx-event-card-box")
        self.readout = W.HTML(readout_html(token_metrics(replay)))  # cost: `_first_drawn`
        self.exporter = ExportBar(lambda: self.figure, f"context_{replay.policy}")
        self._blocks: list[Block] = []
        self.slider.observe(lambda c: self.show(c["new"]), names="value")
        self.block.observe(lambda c: self._pick(c["new"]), names="value")
        self.show(start, force=True)
        after_redraw(self._first_drawn)
        super().__init__(
            [
                W.HBox([self.play, self.slider]),
                self.readout,
                self.yaxis,
                self.figure,
                self.strip,
                self.block,
                self.detail,
                self.card,
                self.events,
                self.exporter,
            ]
        )
        self.add_class("ctx-scrubber")

    def _figure(self, turn: int) -> go.Figure:
        fig = plots.context_tokens(self.replay, lines=self.lines, recorded=self.trace)
        fig.add_traces(self._billed)  # trace dicts, validated once here
        fig.add_trace(cursor_trace(self.replay, turn))
        fig.update_layout(
            title_text=title_at(self.replay, turn, self.trace),
            shapes=[cursor_shape(turn)],
            margin_t=80,  # the title's two lines
        )
        fig.plotly_relayout(self.yaxis.relayout(self._traces))
        return fig

    def _relayout(self) -> None:
        """Apply the y-axis controls (zoom, log scale) to the chart."""
        self.figure.plotly_relayout(self.yaxis.relayout(self._traces))

    @property
    def turn(self) -> int:
        """The turn shown."""
        return int(self.slider.value)

    def show(self, turn: int, *, force: bool = False) -> None:
        """Move every view to `turn` (the slider calls this; so can code)."""
        if not force and turn != self.slider.value:
            self.slider.value = turn  # re-enters through the observer
            return
        cursor = cursor_trace(self.replay, turn)
        with self.figure.batch_update():
            self.figure.data[-1].x = cursor.x
            self.figure.data[-1].y = cursor.y
            self.figure.layout.title.text = title_at(self.replay, turn, self.trace)
            self.figure.layout.shapes = [cursor_shape(turn)]
        self._blocks = self.timeline.blocks(turn)
        self.strip.value = strip_html(self._blocks, turn)
        self.events.value = events_html(self.replay, turn)
        self.card.value = PENDING_CARD if self._cards_due else self.cards.html(turn)
        options = [
            (f"{i}: {b.role[:60]} · {b.status} · {b.tokens:,} tok", i)
            for i, b in enumerate(self._blocks)
        ]
        keep = self.block.value if isinstance(self.block.value, int) else None
        self.block.options = options
        self.block.value = (
            keep
            if keep is not None and keep < len(options)
            else (len(options) - 1 if options else None)
        )
        self._pick(self.block.value)

    def _first_drawn(self) -> None:
        """What waits for the first draw: the cost (priced on the replay's bill) and the
        event cards (Tier 1, when no evaluation was given), then the current turn's card."""
        self.readout.value = readout_html(metrics(self.replay, self.trace))
        self._cards_due = False
        self.card.value = self.cards.html(self.turn)

    def _pick(self, index: int | None) -> None:
        block = self._blocks[index] if index is not None and index < len(self._blocks) else None
        self.detail.value = block_detail(block)

    def _clicked(self, trace: Any, points: Any, state: Any) -> None:
        if points.xs:
            self.slider.value = int(points.xs[0])

    def export(self, path: Any) -> Any:
        """Write the chart (PNG, SVG, PDF or HTML by suffix)."""
        return self.exporter.export(path)
