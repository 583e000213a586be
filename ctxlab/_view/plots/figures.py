"""Plotly figure builders for replays and sweeps, styled for papers.

Every builder takes frames/replays and returns a `plotly.graph_objects.Figure`; nothing here
reads files, runs replays or keeps state, so the same figure comes out of a notebook, a widget
(which copies it into a `FigureWidget` and updates it in place) and the CLI. Figures use a
sans-serif font at readable sizes, a white background and the Okabe-Ito palette
(`ctxlab._view.palette`). Writing them to files is `ctxlab._view.plots.exporter`'s job.

Speed: plotly validates every property it is given, and the whole `simple_white` template
(every trace type's defaults) costs more to validate than a 1,000-turn chart's data. Builders
therefore assemble plain dicts (numbers as numpy arrays, which the widget sends as binary
buffers) and validate them once, in `go.Figure`, against `paper_template()`: simple_white
restricted to the layout and the trace types ctxlab draws (same look, a quarter of the cost).
Widgets reuse the dicts to update their `FigureWidget` in place without building a figure.

Trace text is untrusted: every string taken from a trace or replay that ends up in hover text,
a legend or a title goes through `esc` (plotly renders a subset of HTML in labels).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from functools import cache, lru_cache
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import polars as pl

from ctxlab._messages import KINDS
from ctxlab._replay.policies.base import Event
from ctxlab._replay.why import why
from ctxlab._store.schema import int_max
from ctxlab._view.escape import esc
from ctxlab._view.palette import (
    BASELINE_COLOR,
    DEFAULT_EVENT_STYLE,
    EVENT_STYLE,
    FONT,
    KIND_COLORS,
    KIND_LABELS,
    REFERENCE_COLOR,
    REFERENCE_DASHES,
    SERIES_COLORS,
    SERIES_DASHES,
)
from ctxlab._view.plots.annotations import default_labels, replay_name
from ctxlab._view.plots.guards import same_trace
from ctxlab._view.plots.recorded import recorded_traces

if TYPE_CHECKING:
    from ctxlab._replay.replay import Counted, Replay
    from ctxlab._trace import Trace

_TEMPLATE_LAYOUT = (
    "autotypenumbers",
    "colorway",
    "font",
    "hovermode",
    "hoverlabel",
    "paper_bgcolor",
    "plot_bgcolor",
    "xaxis",
    "yaxis",
)
"""The parts of simple_white's layout a 2-D cartesian chart with explicit colour scales reads."""

_TEMPLATE_TRACES = {"bar": None, "heatmap": ("colorbar",)}
"""Trace defaults ctxlab's figures use (None: all of them): bars (`PromptDiff`) and the
heatmap's colour bar (its colour scale is always given). Scatter defaults only style pattern
fills, which no figure draws."""


@cache
def paper_template() -> go.layout.Template:
    """plotly's `simple_white` restricted to what ctxlab draws (see the module docstring)."""
    full = pio.templates["simple_white"].to_plotly_json()
    return go.layout.Template(
        layout={k: v for k, v in full["layout"].items() if k in _TEMPLATE_LAYOUT},
        data={
            kind: [
                {k: v for k, v in entry.items() if keep is None or k in (*keep, "type")}
                for entry in full["data"][kind]
            ]
            for kind, keep in _TEMPLATE_TRACES.items()
        },
    )


@cache
def _white_layout() -> dict[str, Any]:
    """`paper_template()`'s layout as a plain dict (read-only: merged into new dicts)."""
    return paper_template().layout.to_plotly_json()


def _merged(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """`base` with `top` laid over it, nested dicts merged (new dicts; neither is changed)."""
    out = dict(base)
    for key, value in top.items():
        below = out.get(key)
        if isinstance(below, Mapping) and isinstance(value, Mapping):
            value = _merged(below, value)
        out[key] = value
    return out


def paper_layout(
    *,
    title: str | None = None,
    width: int = 900,
    height: int = 480,
    xaxis: Mapping[str, Any] | None = None,
    yaxis: Mapping[str, Any] | None = None,
    legend_beside: bool | None = None,
) -> dict[str, Any]:
    """The paper style as a layout dict, axes' own settings merged in: what `style` applies,
    with `paper_template()`'s layout written out and plotly's empty `none` template, which
    draws the same for the scatter charts built from it and validates in a third of the time
    (no template to copy). The legend goes where `legend_layout` puts it."""
    own: dict[str, Any] = {
        "font": {"family": FONT, "size": 14, "color": "#222222"},
        "width": width,
        "height": height,
        "margin": {"l": 70, "r": 20, "t": 60 if title else 30, "b": 60},
        "legend": legend_layout(width, beside=legend_beside),
        "hoverlabel": {"font": {"family": FONT, "size": 12}},
        "paper_bgcolor": "white",
        "plot_bgcolor": "white",
        "xaxis": {"showgrid": False, "ticks": "outside", "zeroline": False, **(xaxis or {})},
        "yaxis": {
            "showgrid": True,
            "gridcolor": "#E5E5E5",
            "ticks": "outside",
            "zeroline": False,
            **(yaxis or {}),
        },
    }
    if title:
        own["title"] = {
            "text": fitted_title(title, width),
            "x": 0.01,
            "xanchor": "left",
            "font": {"size": 16},
        }
    return {**_merged(_white_layout(), own), "template": "none"}


NARROW = 700
"""Figures narrower than this (a single paper column) get a smaller legend font."""

WIDE = 1000
"""Figures at least this wide (a double paper column, 7 in at 150 dpi) get their legend beside
the plot, not under it: a wide, short figure has width to spare and no height to spare."""


def own_legend_groups(data: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """`data` with each trace that has no legend group put in one of its own (new dicts for
    those): what lets a horizontal legend flow (`legend_layout`). A group of one toggles just
    its trace, as an ungrouped entry does. A figure with no group at all would, in grouped
    order, stack every entry in one column."""
    return [
        d if d.get("legendgroup") else {**d, "legendgroup": f"#{i}"} for i, d in enumerate(data)
    ]


def legend_layout(width: int, *, beside: bool | None = None) -> dict[str, Any]:
    """Where a `width`-pixel figure's legend goes, so the plot keeps most of the figure.

    Beside the plot, one entry a line (`beside`; by default when `width >= WIDE`): under a
    double-column figure the context chart's 13 entries took four rows of its 460 px. Else
    under the x-axis title, in the bottom margin (which grows to hold it; a legend placed in
    plot fractions sat on the axis title at some heights), entries flowing in rows each as
    wide as its own text. plotly lays a horizontal legend out that way only by legend group
    (`traceorder: grouped`, each group as wide as its widest entry); ungrouped, every entry
    gets the widest one's width, and at a single column's 525 px that made the context
    chart's legend two entries a row, seven rows, 35% of the figure's height. So every trace
    is its own legend group unless it shares one on purpose (`own_legend_groups`); the
    order is still `legendrank`'s. The legend may be as wide as the plot area (plotly's
    limit for a legend at x = 0), so the figure's left margin stays free of it."""
    common = {
        "font": {"size": 12 if width >= NARROW else 10},
        "traceorder": "grouped",
        "tracegroupgap": 0,
        "bgcolor": "rgba(255,255,255,0.8)",
    }
    if beside if beside is not None else width >= WIDE:
        return {
            **common,
            "orientation": "v",
            "xref": "paper",  # a figure restyled from a narrow one has `container` here
            "yref": "paper",
            "yanchor": "top",
            "y": 1,
            "x": 1.01,
            "xanchor": "left",
        }
    return {
        **common,
        "orientation": "h",
        "xref": "container",
        "yref": "container",
        "yanchor": "bottom",
        "y": 0,
        "x": 0,
        "xanchor": "left",
    }


TITLE_CHAR_PX = 8.6
"""Average width of a 16 px title character in the paper font (DejaVu Sans), in pixels."""


def fitted_title(title: str, width: int) -> str:
    """`title` cut with "…" to what a `width`-pixel figure shows on one line (a title wider than
    the figure is clipped at its edge, mid-word, in an export); escaped entities (`&amp;`) count
    as one character and are never cut; a title with markup (`<br>`) is left as laid out."""
    if "<" in title:
        return title
    room = max(10, int((width - 30) / TITLE_CHAR_PX))
    out, seen, i = [], 0, 0
    while i < len(title) and seen < room - 1:
        end = title.find(";", i, i + 8) if title[i] == "&" else -1
        j = end + 1 if end > 0 else i + 1
        out.append(title[i:j])
        seen, i = seen + 1, j
    rest = title[i:]
    if not rest or (seen < room and len(rest) == 1):
        return title
    return "".join(out).rstrip() + "…"


def style(
    fig: go.Figure,
    *,
    title: str | None = None,
    width: int = 900,
    height: int = 480,
    legend_beside: bool | None = None,
) -> go.Figure:
    """Apply the paper style in place (and return the figure, for chaining)."""
    layout = paper_layout(title=title, width=width, height=height, legend_beside=legend_beside)
    for i, trace in enumerate(fig.data):
        if not trace.legendgroup:
            trace.legendgroup = f"#{i}"  # see own_legend_groups
    xaxis, yaxis = layout.pop("xaxis"), layout.pop("yaxis")
    fig.update_layout({**layout, "template": paper_template()})
    fig.update_xaxes(xaxis)
    fig.update_yaxes(yaxis)
    return fig


def numbers(values: Any) -> np.ndarray:
    """A column of counts as the array a widget sends as a binary buffer: int32 when it fits
    (plotly's serializer turns int64 arrays into JSON lists), float64 otherwise."""
    array = values.to_numpy() if hasattr(values, "to_numpy") else np.asarray(values)
    if array.dtype.kind in "iu" and (
        not len(array) or (array.min() >= -(2**31) and array.max() < 2**31)
    ):
        return array.astype(np.int32)
    return array.astype(np.float64)


def _event_hover(row: Mapping[str, Any]) -> str:
    """The hover label of an event given as a mapping (a row of `Replay.events`)."""
    return _hover_of(
        (
            row["kind"],
            row["turn"],
            row.get("tokens_before"),
            row.get("tokens_after"),
            tuple(row.get("messages") or ()),
            row.get("file_path"),
            row.get("reason"),
        )
    )


def event_marker_dicts(
    replay: Replay | Counted, *, y: str = "context_tokens", kinds: Sequence[str] = ()
) -> list[dict[str, Any]]:
    """`event_markers` as plain trace dicts (not validated), read from the replay's events
    (no frame built): a live move redraws hundreds of markers.

    `kinds`: event kinds that get a trace even when this replay has none of them (empty, out
    of the legend), so a live chart keeps the same traces from move to move and is updated in
    place instead of rebuilt (a slider that turns offloads on and off did that at every move)."""
    events = replay.event_list
    if not events and not kinds:
        return []
    by_kind: dict[str, list[Event]] = {kind: [] for kind in kinds}
    for e in events:
        by_kind.setdefault(e.kind, []).append(e)
    level: dict[int | None, Any] = {}  # no turn: the event came after the last call
    if events:
        from ctxlab._replay.replay import Replay  # at run time: a `Counted` has counts only

        turns = (
            replay.turns
            if isinstance(replay, Replay) and y not in replay.counts.columns
            else replay.counts
        )
        level = dict(zip(turns["turn"].to_list(), turns[y].to_list(), strict=True))
    traces = []
    for kind in sorted(by_kind):
        rows = by_kind[kind]
        symbol, color = EVENT_STYLE.get(kind, DEFAULT_EVENT_STYLE)
        at = [e.turn for e in rows]
        dense = len(rows) > DENSE_EVENTS
        if dense:  # a rug along the x axis: one tick a turn, not a wall of markers
            ys: list[Any] = [0] * len(rows)
            marker = {"symbol": "line-ns-open", "size": 14, "color": color, "line": {"width": 2}}
        else:  # the turn's count, else (no model call saw it) the event's own count
            ys = [
                v if (v := level.get(t)) is not None else e.tokens_before
                for t, e in zip(at, rows, strict=True)
            ]
            marker = {
                "symbol": symbol,
                "size": 11,
                "color": color,
                "line": {"width": 1.2, "color": "#222222"},
            }
        traces.append(
            {
                "type": "scatter",
                "x": _numbers_or_list(at),
                "y": _numbers_or_list(ys),
                "mode": "markers",
                "name": f"event: {kind} ({len(rows):,}{', rug' if dense else ''})",
                "marker": marker,
                "hovertext": [_hover_of(_HOVER_FIELDS(e)) for e in rows],
                "hoverinfo": "text",
                "legendgroup": f"event: {kind}",  # toggled alone; a group each: see legend_layout
                "legendrank": EVENT_RANK,
                "showlegend": bool(rows),
            }
        )
    return traces


DENSE_EVENTS = 20
"""More events of one kind than this draw as a rug of ticks on the x axis (their count in the
legend): 50 argument truncations at 50 successive calls made a solid line of markers over the
curve, hiding it and reading as one more series."""

AREA_RANK, LINE_RANK, EVENT_RANK = 100, 500, 800
"""Legend order (plotly's `legendrank`, lower first): the stacked kinds top band first, as the
stack reads from the top; then the baseline and the recording; then events."""

VISIBLE_SHARE = 0.005
"""A stacked band under this share of the chart's highest stack at every turn is too thin to
see: it is drawn, but left out of the legend."""


def _numbers_or_list(values: list[Any]) -> np.ndarray | list[Any]:
    """`numbers(values)` (sent to a live chart as a binary buffer, not element by element)
    unless a value is missing (an event no model call saw has no turn)."""
    return values if None in values else numbers(values)


_HOVER_FIELDS = attrgetter(
    "kind", "turn", "tokens_before", "tokens_after", "messages", "file_path", "reason"
)
"""An event's fields its hover label shows, as a tuple (`_hover_of`'s key)."""


@lru_cache(maxsize=1 << 14)
def _hover_of(fields: tuple[Any, ...]) -> str:
    """An event's hover label from its (kind, turn, tokens before, after, messages, file path,
    reason), remembered: successive replays of one trace repeat most events, and a plain tuple
    hashes and compares in C, where the `Event` dataclass's own hash and equality run Python
    (about 1 us an event; a masking preset draws one a call). A new label is one string
    format: its escaped text fields repeat from event to event (`_escaped`), and a move that
    masks at every call makes about 1,000 new labels (2.8 -> 1.2 us each)."""
    kind, turn, before, after, messages, file_path, reason = fields
    label = f"<b>{_escaped(kind, None)}</b> at turn {turn}"
    if before is not None and after is not None:
        label += f"<br>{before:,} → {after:,} tokens"
    if len(messages) == 1:  # most events (a mask or a clear at each call)
        label += f"<br>messages {messages[0]}"
    elif messages:
        more = " …" if len(messages) > 8 else ""
        label += f"<br>messages {', '.join(map(str, messages[:8]))}{more}"
    if file_path:
        label += f"<br>file {_escaped(file_path, 120)}"
    if reason or before is not None:
        event = Event(kind, turn, messages, before, after, file_path, reason)
        label += f"<br>why: {_escaped(why(event), 120)}"
    return label


@lru_cache(maxsize=1 << 10)
def _escaped(text: Any, limit: int | None) -> str:
    """`esc(text, limit)`, remembered: an event kind, file path or reason is shared by many
    events."""
    return esc(text, limit)


def event_markers(replay: Replay, *, y: str = "context_tokens") -> list[go.Scatter]:
    """One marker trace per event kind, at each event's turn and the turn's `y` value."""
    return [go.Scatter(d) for d in event_marker_dicts(replay, y=y)]


def context_trace_dicts(
    replay: Replay | Counted,
    *,
    lines: Mapping[str, int] | None = None,
    baseline: bool = True,
    events: bool = True,
    recorded: Trace | None = None,
    event_kinds: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """`context_traces` as plain trace dicts (not validated): what `context_tokens` validates
    once and live widgets copy into their figure in place (`event_kinds`: marker traces to
    keep even when empty, `event_marker_dicts`). A `recorded` trace that is not the replay's
    raises `ValueError`."""
    same_trace([replay], recorded, "context_tokens")
    turns = replay.counts  # the policy's counts: a live move draws without billing
    x = numbers(turns["turn"])
    out = _kind_areas(turns, "context", "%{y:,}", x=x)
    if baseline:
        out.append(
            {
                "type": "scatter",
                "x": x,
                "y": numbers(turns["baseline_tokens"]),
                "name": "uncompacted baseline",
                "mode": "lines",
                "line": {"color": BASELINE_COLOR, "width": 2, "dash": "dash"},
                "hovertemplate": "baseline: %{y:,}<extra>turn %{x}</extra>",
                "legendrank": LINE_RANK,
            }
        )
    out.extend(reference_lines(lines or {}, x))
    if events:
        out.extend(event_marker_dicts(replay, kinds=event_kinds))
    if recorded is not None:
        top = max(int_max(turns["context_tokens"]), int_max(turns["baseline_tokens"]))
        out.extend(t.to_plotly_json() for t in recorded_traces(recorded, top=top))
    return own_legend_groups(out)


LABEL_GAP = 0.25
"""Reference lines closer than this share of the highest one get their labels at opposite
ends (`reference_lines`): two labels facing each other (the highest one's under its line)
need two text heights of a single-column chart's 170 px."""


def reference_lines(lines: Mapping[str, int], x: np.ndarray) -> list[dict[str, Any]]:
    """Window, trigger and budget as horizontal lines across the turns `x`, each labelled on
    the plot (`window 200,000`) instead of in the legend: one hue for the
    family (`REFERENCE_COLOR`), told apart by dash and label. Marked `meta: "reference"`, so
    a y axis fitted to the data can leave them out (`ctxlab._view.widgets._common.y_extent`)."""
    out = []
    ends = [int(x[0]) if len(x) else 0, int(x[-1]) if len(x) else 1]
    # Labels sit at the left end, where the context curve starts small and the chart is empty
    # (at the right end the compacted curve keeps reaching the trigger, with its markers, and
    # the baseline crosses the budget). A label whose line is within `LABEL_GAP` of the chart's
    # top of the line below it goes to the right end instead, so lines close together (a
    # budget just under the window) never share a label's place. The highest label sits under
    # its line, which may be the top of the chart.
    order = sorted(lines, key=lambda k: lines[k])
    top = max(lines.values(), default=0)
    right_of = {label: False for label in order}
    for below, label in itertools.pairwise(order):
        close = lines[label] - lines[below] < LABEL_GAP * top
        right_of[label] = close and not right_of[below]
    for label, level in lines.items():
        text = f"{label} {level:,}"
        right = right_of[label]
        under = label == order[-1] and len(order) > 1
        where = ("bottom" if under else "top") + (" left" if right else " right")
        out.append(
            {
                "type": "scatter",
                "x": ends,
                "y": [level, level],
                "name": text,
                "mode": "lines+text",
                "text": ["", text] if right else [text, ""],
                "textposition": where,
                "textfont": {"color": REFERENCE_COLOR, "size": 12},
                "line": {
                    "color": REFERENCE_COLOR,
                    "width": 1.5,
                    "dash": REFERENCE_DASHES.get(label, "dashdot"),
                },
                "hoverinfo": "name",
                "showlegend": False,
                "meta": "reference",
            }
        )
    return out


def context_traces(
    replay: Replay,
    *,
    lines: Mapping[str, int] | None = None,
    baseline: bool = True,
    events: bool = True,
    recorded: Trace | None = None,
) -> list[go.Scatter]:
    """The traces of `context_tokens`, without layout. A `recorded` trace that is not the
    replay's raises `ValueError`."""
    dicts = context_trace_dicts(
        replay, lines=lines, baseline=baseline, events=events, recorded=recorded
    )
    return [go.Scatter({k: v for k, v in d.items() if k != "type"}) for d in dicts]


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
    and its own compactions (`ctxlab._view.plots.recorded`). Trace order is fixed (kinds, baseline,
    lines, events, recorded) so widgets can update in place. The default title names the
    policy and the trace (`ctxlab.plots.trace_name`).
    """
    data = context_trace_dicts(
        replay, lines=lines, baseline=baseline, events=events, recorded=recorded
    )
    if width < NARROW:
        data = [_short_event_name(d) for d in data]
    layout = paper_layout(
        title=title or f"{esc(replay.policy)} on {esc(replay_name(replay))}",
        width=width,
        height=height,
        xaxis={"title": {"text": "turn (model call)"}},
        yaxis={"title": {"text": "context tokens"}, "tickformat": "~s", "rangemode": "tozero"},
    )
    return go.Figure({"data": data, "layout": layout})


def _short_event_name(trace: dict[str, Any]) -> dict[str, Any]:
    """An event marker trace named for a single column's legend, else `trace` itself:
    `offload_tool_result (4)`, not `event: offload_tool_result (4)`. plotly gives every legend
    entry the widest one's width, so the two longest names decided how many entries a row
    holds; the marker shapes already tell events from bands, and a rug shows as ticks."""
    if not trace.get("legendgroup", "").startswith("event: "):
        return trace
    name = trace["name"].removeprefix("event: ").replace(", rug)", ")")
    return {**trace, "name": name}


def _kind_areas(
    turns: Any,
    stackgroup: str,
    value: str,
    *,
    groupnorm: str | None = None,
    x: np.ndarray | None = None,
) -> list[dict[str, Any]]:
    """One stacked area per token kind (plain trace dicts); `groupnorm` (set on the first)
    stacks to 100%."""
    x = numbers(turns["turn"]) if x is None else x
    columns = {kind: numbers(turns[f"{kind}_tokens"]) for kind in KINDS}
    stacked = np.sum([c.astype(float) for c in columns.values()], axis=0) if len(x) else 0
    top = float(np.max(stacked)) if len(x) else 0.0
    out = []
    for rank, kind in enumerate(KINDS):
        seen = bool(len(x)) and float(np.max(columns[kind])) > VISIBLE_SHARE * top
        area: dict[str, Any] = {
            "type": "scatter",
            "x": x,
            "y": columns[kind],
            "name": KIND_LABELS[kind],
            "legendrank": AREA_RANK + len(KINDS) - rank,
            "showlegend": seen,
            "mode": "lines",
            "line": {"width": 0.5, "color": KIND_COLORS[kind]},
            "fillcolor": KIND_COLORS[kind],
            "stackgroup": stackgroup,
            "hovertemplate": f"{KIND_LABELS[kind]}: {value}<extra>turn %{{x}}</extra>",
        }
        if groupnorm is not None and kind == KINDS[0]:
            area["groupnorm"] = groupnorm
        out.append(area)
    return out


def composition(
    replay: Replay, *, title: str | None = None, width: int = 900, height: int = 420
) -> go.Figure:
    """Share of each kind in the request, per turn (100% stacked): what the context is made of."""
    layout = paper_layout(
        title=title or f"Context composition · {esc(replay_name(replay))}",
        width=width,
        height=height,
        xaxis={"title": {"text": "turn (model call)"}},
        yaxis={"title": {"text": "share of request (%)"}, "range": [0, 100]},
    )
    data = _kind_areas(replay.counts, "share", "%{y:.1f}%", groupnorm="percent")
    return go.Figure({"data": own_legend_groups(data), "layout": layout})


EVENT_PAD = 0.04
"""Share of the turns the events timeline's x axis runs past the first and the last turn."""


def events_timeline(
    replay: Replay, *, title: str | None = None, width: int = 900, height: int = 320
) -> go.Figure:
    """Events by kind along the turns; marker area shows the tokens each event removed."""
    events = replay.events
    fig = go.Figure()
    n_turns = replay.counts.height
    kinds = sorted(set(events["kind"].to_list())) if not events.is_empty() else []
    rows_of = {kind: events.filter(pl.col("kind") == kind).to_dicts() for kind in kinds}
    named = {kind: f"{kind} ({len(rows):,})" for kind, rows in rows_of.items()}
    for kind, rows in rows_of.items():
        saved = [
            max(0, (r["tokens_before"] or 0) - (r["tokens_after"] or 0))
            if r["tokens_after"] is not None
            else 0
            for r in rows
        ]
        symbol, color = EVENT_STYLE.get(kind, DEFAULT_EVENT_STYLE)
        if len(rows) > DENSE_EVENTS:  # a rug: one tick a turn, not overlapping markers
            marker: dict[str, Any] = {
                "symbol": "line-ns-open",
                "size": 16,
                "color": color,
                "line": {"width": 2, "color": color},
            }
        else:
            marker = {
                "symbol": symbol,
                "color": color,
                "size": [8 + min(22, (s / 1000) ** 0.5 * 3) for s in saved],
                "line": {"width": 1, "color": "#222222"},
            }
        fig.add_trace(
            go.Scatter(
                x=[r["turn"] if r["turn"] is not None else n_turns for r in rows],
                y=[named[kind]] * len(rows),
                mode="markers",
                name=named[kind],
                marker=marker,
                cliponaxis=False,  # a marker at the last turn is drawn whole
                hovertext=[_event_hover(r) for r in rows],
                hoverinfo="text",
            )
        )
    # Padded past the first and the last turn: the largest marker is 30 px across, and the
    # rightmost event sat on the axis end, cut in half (a rug's last tick too).
    last = max(n_turns, 1) if any(e is None for e in events["turn"].to_list()) else n_turns - 1
    pad = max(2.0, EVENT_PAD * max(last, 1))
    fig.update_xaxes(title_text="turn (model call)", range=[-pad, max(last, 1) + pad])
    fig.update_yaxes(
        title_text=None,
        type="category",
        categoryorder="array",
        categoryarray=[named[k] for k in kinds],
    )
    fig.update_layout(showlegend=False)
    return style(
        fig,
        title=title or f"Events ({events.height}) · {esc(replay_name(replay))}",
        width=width,
        height=height,
    )


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
    data: list[dict[str, Any]] = []
    for i, (r, label) in enumerate(zip(replays, labels, strict=True)):
        y = r.turns[metric]
        data.append(
            {
                "type": "scatter",
                "x": numbers(r.turns["turn"]),
                "y": numbers(y.cum_sum() if cumulative else y),
                "name": esc(label, 60),
                "mode": "lines",
                "line": {
                    "color": SERIES_COLORS[i % len(SERIES_COLORS)],
                    "width": 2,
                    "dash": SERIES_DASHES[i % len(SERIES_DASHES)],
                },
                "hovertemplate": f"{esc(label, 60)}: %{{y:,}}<extra>turn %{{x}}</extra>",
            }
        )
    if baseline and replays:
        y = replays[0].turns["baseline_tokens"]
        data.append(
            {
                "type": "scatter",
                "x": numbers(replays[0].turns["turn"]),
                "y": numbers(y.cum_sum() if cumulative else y),
                "name": "uncompacted baseline",
                "mode": "lines",
                "line": {"color": BASELINE_COLOR, "width": 1.5, "dash": "dash"},
                "hovertemplate": "baseline: %{y:,}<extra>turn %{x}</extra>",
            }
        )
    if recorded is not None:
        top = max((float(np.max(d["y"])) for d in data if len(d["y"])), default=0)
        data.extend(
            t.to_plotly_json() for t in recorded_traces(recorded, cumulative=cumulative, top=top)
        )
    what = "cumulative input tokens" if cumulative else metric.replace("_", " ")
    named = f" on {esc(replay_name(replays[0]))}" if replays else ""
    layout = paper_layout(
        title=title or f"Policies compared: {what}{named}",
        width=width,
        height=height,
        xaxis={"title": {"text": "turn (model call)"}},
        yaxis={"title": {"text": what}, "tickformat": "~s", "rangemode": "tozero"},
    )
    return go.Figure({"data": own_legend_groups(data), "layout": layout})


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
            # the bar's title along the bar: written across, it took a third of the width
            colorbar={"title": {"text": z.replace("_", " "), "side": "right"}, "thickness": 16},
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
    "context_trace_dicts",
    "context_tokens",
    "context_traces",
    "event_marker_dicts",
    "event_markers",
    "events_timeline",
    "numbers",
    "paper_layout",
    "paper_template",
    "style",
    "sweep_heatmap",
]
