"""Plotly figure builders for replays and sweeps, styled for papers.

Every builder takes frames/replays and returns a `plotly.graph_objects.Figure`; nothing here
reads files, runs replays or keeps state, so the same figure comes out of a notebook, a widget
(which copies it into a `FigureWidget` and updates it in place) and the CLI. Figures use a
sans-serif font at readable sizes, a white background and the Okabe-Ito palette
(`ctxlab.palette`). Writing them to files is `ctxlab.plots.exporter`'s job.

Trace text is untrusted: every string taken from a trace or replay that ends up in hover text
or a legend goes through `esc` (plotly renders a subset of HTML in hover labels).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import plotly.graph_objects as go
import polars as pl

from ctxlab.escape import esc
from ctxlab.message_facts import KINDS
from ctxlab.palette import (
    DEFAULT_EVENT_STYLE,
    EVENT_STYLE,
    FONT,
    KIND_COLORS,
    KIND_LABELS,
    OKABE_ITO,
    SERIES_COLORS,
    SERIES_DASHES,
)
from ctxlab.plots.annotations import default_labels
from ctxlab.plots.checks import same_trace
from ctxlab.plots.recorded import recorded_traces

if TYPE_CHECKING:
    from ctxlab.replay import Replay
    from ctxlab.trace import Trace


def style(
    fig: go.Figure, *, title: str | None = None, width: int = 900, height: int = 480
) -> go.Figure:
    """Apply the paper style in place (and return the figure, for chaining)."""
    fig.update_layout(
        template="simple_white",
        font={"family": FONT, "size": 14, "color": "#222222"},
        title={"text": title, "x": 0.01, "xanchor": "left", "font": {"size": 16}}
        if title
        else None,
        width=width,
        height=height,
        margin={"l": 70, "r": 20, "t": 60 if title else 30, "b": 60},
        legend={
            "font": {"size": 12},
            "orientation": "h",
            "yanchor": "top",
            "y": -0.16,
            "x": 0,
            "xanchor": "left",
            "bgcolor": "rgba(255,255,255,0.8)",
        },
        hoverlabel={"font": {"family": FONT, "size": 12}},
        paper_bgcolor="white",
        plot_bgcolor="white",
    )
    fig.update_xaxes(showgrid=False, ticks="outside", zeroline=False)
    fig.update_yaxes(showgrid=True, gridcolor="#E5E5E5", ticks="outside", zeroline=False)
    return fig


def _event_hover(row: Mapping[str, Any]) -> str:
    before, after = row.get("tokens_before"), row.get("tokens_after")
    parts = [f"<b>{esc(row['kind'])}</b> at turn {row['turn']}"]
    if before is not None and after is not None:
        parts.append(f"{before:,} → {after:,} tokens")
    msgs = row.get("messages") or []
    if msgs:
        shown = ", ".join(str(m) for m in msgs[:8]) + (" …" if len(msgs) > 8 else "")
        parts.append(f"messages {shown}")
    if row.get("file_path"):
        parts.append(f"file {esc(row['file_path'], 120)}")
    if row.get("reason"):
        parts.append(f"reason {esc(row['reason'], 120)}")
    return "<br>".join(parts)


def event_markers(replay: Replay, *, y: str = "context_tokens") -> list[go.Scatter]:
    """One marker trace per event kind, at each event's turn and the turn's `y` value."""
    events = replay.events
    if events.is_empty():
        return []
    turns = replay.turns.select("turn", y)
    joined = events.join(turns, on="turn", how="left")
    traces = []
    for kind in sorted(set(joined["kind"].to_list())):
        rows = joined.filter(pl.col("kind") == kind).to_dicts()
        symbol, color = EVENT_STYLE.get(kind, DEFAULT_EVENT_STYLE)
        traces.append(
            go.Scatter(
                x=[r["turn"] for r in rows],
                y=[r[y] if r[y] is not None else r["tokens_before"] for r in rows],
                mode="markers",
                name=f"event: {kind}",
                marker={
                    "symbol": symbol,
                    "size": 11,
                    "color": color,
                    "line": {"width": 1.2, "color": "#222222"},
                },
                hovertext=[_event_hover(r) for r in rows],
                hoverinfo="text",
                legendgroup="events",
            )
        )
    return traces


def context_traces(
    replay: Replay,
    *,
    lines: Mapping[str, int] | None = None,
    baseline: bool = True,
    events: bool = True,
    recorded: Trace | None = None,
) -> list[go.Scatter]:
    """The traces of `context_tokens`, without layout: what a live widget swaps in place.
    A `recorded` trace that is not the replay's raises `ValueError`."""
    same_trace([replay], recorded, "context_tokens")
    turns = replay.turns
    x = turns["turn"].to_numpy()
    out: list[go.Scatter] = _kind_areas(turns, "context", "%{y:,}")
    if baseline:
        out.append(
            go.Scatter(
                x=x,
                y=turns["baseline_tokens"].to_numpy(),
                name="uncompacted baseline",
                mode="lines",
                line={"color": OKABE_ITO["black"], "width": 2, "dash": "dash"},
                hovertemplate="baseline: %{y:,}<extra>turn %{x}</extra>",
            )
        )
    dashes = {"window": "solid", "trigger": "dash", "budget": "dot"}
    for label, level in (lines or {}).items():
        out.append(
            go.Scatter(
                x=[int(x[0]) if len(x) else 0, int(x[-1]) if len(x) else 1],
                y=[level, level],
                name=f"{label} {level:,}",
                mode="lines",
                line={
                    "color": OKABE_ITO["vermillion"],
                    "width": 1.5,
                    "dash": dashes.get(label, "dashdot"),
                },
                hoverinfo="name",
            )
        )
    if events:
        out.extend(event_markers(replay))
    if recorded is not None:
        top = max(turns["context_tokens"].max() or 0, turns["baseline_tokens"].max() or 0)
        out.extend(recorded_traces(recorded, top=top))
    return out


def context_tokens(
    replay: Replay,
    *,
    lines: Mapping[str, int] | None = None,
    baseline: bool = True,
    events: bool = True,
    recorded: Trace | None = None,
    title: str | None = None,
    width: int = 900,
    height: int = 560,
) -> go.Figure:
    """Context tokens per turn, stacked by kind, against the uncompacted baseline.

    `lines` maps labels to token levels drawn as horizontal lines (use `thresholds(policy,
    trace)` for window / trigger / budget). A marker per event sits on the turn it happened.
    `recorded` (the replayed trace) adds what the recording says: its per-call input tokens
    and its own compactions (`ctxlab.plots.recorded`). Trace order is fixed (kinds, baseline,
    lines, events, recorded) so widgets can update in place.
    """
    fig = go.Figure(
        context_traces(replay, lines=lines, baseline=baseline, events=events, recorded=recorded)
    )
    fig.update_xaxes(title_text="turn (model call)")
    fig.update_yaxes(title_text="context tokens", tickformat="~s", rangemode="tozero")
    return style(
        fig,
        title=title or f"{esc(replay.policy)} on {esc(replay.trace_id[:36])}",
        width=width,
        height=height,
    )


def _kind_areas(
    turns: Any, stackgroup: str, value: str, *, groupnorm: str | None = None
) -> list[go.Scatter]:
    """One stacked area per token kind; `groupnorm` (set on the first) stacks to 100%."""
    x = turns["turn"].to_numpy()
    return [
        go.Scatter(
            x=x,
            y=turns[f"{kind}_tokens"].to_numpy(),
            name=KIND_LABELS[kind],
            mode="lines",
            line={"width": 0.5, "color": KIND_COLORS[kind]},
            fillcolor=KIND_COLORS[kind],
            stackgroup=stackgroup,
            groupnorm=groupnorm if kind == KINDS[0] else None,
            hovertemplate=f"{KIND_LABELS[kind]}: {value}<extra>turn %{{x}}</extra>",
        )
        for kind in KINDS
    ]


def composition(
    replay: Replay, *, title: str | None = None, width: int = 900, height: int = 420
) -> go.Figure:
    """Share of each kind in the request, per turn (100% stacked): what the context is made of."""
    fig = go.Figure(_kind_areas(replay.turns, "share", "%{y:.1f}%", groupnorm="percent"))
    fig.update_xaxes(title_text="turn (model call)")
    fig.update_yaxes(title_text="share of request (%)", range=[0, 100])
    return style(fig, title=title or "Context composition", width=width, height=height)


def events_timeline(
    replay: Replay, *, title: str | None = None, width: int = 900, height: int = 320
) -> go.Figure:
    """Events by kind along the turns; marker area shows the tokens each event removed."""
    events = replay.events
    fig = go.Figure()
    n_turns = replay.turns.height
    kinds = sorted(set(events["kind"].to_list())) if not events.is_empty() else []
    for kind in kinds:
        rows = events.filter(pl.col("kind") == kind).to_dicts()
        saved = [
            max(0, (r["tokens_before"] or 0) - (r["tokens_after"] or 0))
            if r["tokens_after"] is not None
            else 0
            for r in rows
        ]
        symbol, color = EVENT_STYLE.get(kind, DEFAULT_EVENT_STYLE)
        fig.add_trace(
            go.Scatter(
                x=[r["turn"] if r["turn"] is not None else n_turns for r in rows],
                y=[kind] * len(rows),
                mode="markers",
                name=kind,
                marker={
                    "symbol": symbol,
                    "color": color,
                    "size": [8 + min(22, (s / 1000) ** 0.5 * 3) for s in saved],
                    "line": {"width": 1, "color": "#222222"},
                },
                hovertext=[_event_hover(r) for r in rows],
                hoverinfo="text",
            )
        )
    fig.update_xaxes(title_text="turn (model call)", range=[-1, max(n_turns, 1)])
    fig.update_yaxes(title_text=None, type="category", categoryorder="array", categoryarray=kinds)
    fig.update_layout(showlegend=False)
    return style(fig, title=title or f"Events ({events.height})", width=width, height=height)


def comparison(
    replays: Sequence[Replay],
    *,
    labels: Sequence[str] | None = None,
    metric: str = "context_tokens",
    cumulative: bool = False,
    baseline: bool = True,
    recorded: Trace | None = None,
    title: str | None = None,
    width: int = 900,
    height: int = 480,
) -> go.Figure:
    """Several replays' curves overlaid (one colour and dash each), with the first's baseline;
    `recorded` (the trace they replay) adds its recorded input tokens and compactions.
    Replays of different traces, or a `recorded` trace they do not replay, raise `ValueError`."""
    same_trace(replays, recorded, "comparison")
    labels = list(labels) if labels is not None else default_labels(replays)
    if len(labels) != len(replays):
        raise ValueError(f"comparison: {len(labels)} labels for {len(replays)} replays")
    fig = go.Figure()
    for i, (r, label) in enumerate(zip(replays, labels, strict=True)):
        y = r.turns[metric]
        if cumulative:
            y = y.cum_sum()
        fig.add_trace(
            go.Scatter(
                x=r.turns["turn"].to_list(),
                y=y.to_list(),
                name=esc(label, 60),
                mode="lines",
                line={
                    "color": SERIES_COLORS[i % len(SERIES_COLORS)],
                    "width": 2,
                    "dash": SERIES_DASHES[i % len(SERIES_DASHES)],
                },
                hovertemplate=f"{esc(label, 60)}: %{{y:,}}<extra>turn %{{x}}</extra>",
            )
        )
    if baseline and replays:
        y = replays[0].turns["baseline_tokens"]
        if cumulative:
            y = y.cum_sum()
        fig.add_trace(
            go.Scatter(
                x=replays[0].turns["turn"].to_list(),
                y=y.to_list(),
                name="uncompacted baseline",
                mode="lines",
                line={"color": OKABE_ITO["grey"], "width": 1.5, "dash": "dot"},
                hovertemplate="baseline: %{y:,}<extra>turn %{x}</extra>",
            )
        )
    if recorded is not None:
        top = max((max((v for v in t.y if v is not None), default=0) for t in fig.data), default=0)
        fig.add_traces(recorded_traces(recorded, cumulative=cumulative, top=top))
    fig.update_xaxes(title_text="turn (model call)")
    what = "cumulative input tokens" if cumulative else metric.replace("_", " ")
    fig.update_yaxes(title_text=what, tickformat="~s", rangemode="tozero")
    return style(fig, title=title or f"Policies compared: {what}", width=width, height=height)


def sweep_heatmap(
    frame: pl.DataFrame,
    x: str,
    y: str,
    z: str = "cumulative_input_tokens",
    *,
    agg: str = "mean",
    title: str | None = None,
    width: int = 700,
    height: int = 480,
) -> go.Figure:
    """A sweep result frame (`ctxlab.sweep(...)`) as a heatmap of `z` over two grid columns.

    Cells over several traces are aggregated with `agg` (`mean`, `median`, `sum`, `max`,
    `min`); axes keep the order values first appear in, which is the grid's order.
    """
    if x not in frame.columns or y not in frame.columns or z not in frame.columns:
        raise ValueError(f"sweep frame needs columns {x!r}, {y!r}, {z!r}; has {frame.columns}")
    value = getattr(pl.col(z), agg)()
    grouped = frame.group_by([x, y], maintain_order=True).agg(value.alias(z))
    xs = list(dict.fromkeys(frame[x].cast(pl.Utf8).to_list()))
    ys = list(dict.fromkeys(frame[y].cast(pl.Utf8).to_list()))
    cells = {(str(r[x]), str(r[y])): r[z] for r in grouped.to_dicts()}
    matrix = [[cells.get((xv, yv)) for xv in xs] for yv in ys]
    text = [[f"{v:,.0f}" if v is not None else "" for v in row] for row in matrix]
    fig = go.Figure(
        go.Heatmap(
            x=[esc(v) for v in xs],
            y=[esc(v) for v in ys],
            z=matrix,
            text=text,
            texttemplate="%{text}",
            colorscale="Viridis",
            reversescale=True,
            colorbar={"title": {"text": z.replace("_", " ")}},
            hovertemplate=f"{esc(x)}=%{{x}}<br>{esc(y)}=%{{y}}<br>{esc(z)}=%{{z:,.0f}}<extra></extra>",
        )
    )
    fig.update_xaxes(title_text=x, type="category")
    fig.update_yaxes(title_text=y, type="category", showgrid=False)
    return style(
        fig, title=title or f"Sweep: {agg} {z.replace('_', ' ')}", width=width, height=height
    )


__all__ = [
    "comparison",
    "composition",
    "context_tokens",
    "context_traces",
    "event_markers",
    "events_timeline",
    "style",
    "sweep_heatmap",
]
