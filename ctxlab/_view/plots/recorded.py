"""What the recording itself says, drawn over a replay's curves: the input tokens the provider
reported per call, and where the recorded harness compacted (`ctxlab._ingest.recorded`).

A replay is a model of a harness; these traces let a reader see at a glance where the model
and the recording part (`ctxlab check-replay` gives the numbers). They are plain traces, not
layout shapes, so widgets that replace shapes (the scrubber's cursor) or update traces in
place keep them.
"""

from __future__ import annotations

import plotly.graph_objects as go

from ctxlab._ingest.recorded import recorded_compactions
from ctxlab._trace import RecordedCompaction, Trace
from ctxlab._view.escape import esc
from ctxlab._view.palette import RECORDED_COLOR

RECORDED_LINE = "recorded input tokens"
RECORDED_POINTS = "recorded compaction"
COLOR = RECORDED_COLOR
SUMMARY_CHARS = 300
"""How much of a recorded summary a hover label shows."""


def recorded_input(trace: Trace, *, cumulative: bool = False) -> list[int | None]:
    """The provider's input tokens per call (None where not recorded); running totals over
    the recorded ones when `cumulative`."""
    values = [t.input_tokens for t in trace.turns]
    if not cumulative:
        return values
    total, out = 0, []
    for v in values:
        total += v or 0
        out.append(total if v is not None else None)
    return out


def _hover(c: RecordedCompaction) -> str:
    trigger = esc(c.trigger or "trigger unknown")
    parts = [f"<b>recorded {esc(c.kind)}</b> ({trigger}) at turn {c.turn}"]
    if c.pre_tokens is not None or c.post_tokens is not None:
        pre = f"{c.pre_tokens:,}" if c.pre_tokens is not None else "?"
        post = f"{c.post_tokens:,}" if c.post_tokens is not None else "?"
        parts.append(f"{pre} → {post} tokens")
    if c.summary:
        parts.append(f"summary: {esc(c.summary, SUMMARY_CHARS)}")
    return "<br>".join(parts)


def recorded_traces(
    trace: Trace | None, *, cumulative: bool = False, top: float | None = None
) -> list[go.Scatter]:
    """The recorded per-call input tokens (a line) and the recorded compactions (a vertical
    dotted line from 0 to `top` and a marker each, hover for tokens and summary), as far as
    `trace` has them; `[]` without a trace or anything recorded.

    Markers sit on the tokens before the compaction (`pre_tokens`, or the recorded line at the
    previous call in `cumulative` mode); manual compactions are open diamonds.
    """
    if trace is None:
        return []
    out: list[go.Scatter] = []
    line = recorded_input(trace, cumulative=cumulative)
    known = [v for v in line if v is not None]
    if known:
        out.append(
            go.Scatter(
                x=list(range(len(line))),
                y=line,
                name=RECORDED_LINE,
                mode="lines",
                line={"color": COLOR, "width": 1.5},
                hovertemplate="recorded input: %{y:,}<extra>turn %{x}</extra>",
            )
        )
    events = recorded_compactions(trace)
    if not events:
        return out

    def level(c: RecordedCompaction) -> float | None:
        before = line[c.turn - 1] if 0 < c.turn <= len(line) else None
        return before if cumulative or c.pre_tokens is None else c.pre_tokens

    levels = [level(c) for c in events]
    height = max([top or 0, *known, *(v for v in levels if v is not None)]) or 1
    xs: list[int | None] = []
    ys: list[float | None] = []
    for c in events:
        xs += [c.turn, c.turn, None]
        ys += [0, height, None]
    out.append(
        go.Scatter(
            x=xs,
            y=ys,
            name=RECORDED_POINTS,
            mode="lines",
            line={"color": COLOR, "width": 1, "dash": "dot"},
            hoverinfo="skip",
            legendgroup=RECORDED_POINTS,
            showlegend=False,
        )
    )
    manual = [c.trigger == "manual" for c in events]
    out.append(
        go.Scatter(
            x=[c.turn for c in events],
            y=[v if v is not None else height for v in levels],
            name=RECORDED_POINTS,
            mode="markers",
            marker={
                "symbol": ["diamond-open" if m else "diamond" for m in manual],
                "size": 12,
                "color": COLOR,
                "line": {"width": 1.5, "color": COLOR},
            },
            hovertext=[_hover(c) for c in events],
            hoverinfo="text",
            legendgroup=RECORDED_POINTS,
        )
    )
    return out


__all__ = ["RECORDED_LINE", "RECORDED_POINTS", "recorded_input", "recorded_traces"]
