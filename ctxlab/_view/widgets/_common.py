"""What every widget shares: the export bar, the debouncer, in-place figure updates, the y-axis
zoom and log-scale controls and the metrics readout. The per-message state a strip shows is
`ctxlab._replay.timeline` (no ipywidgets).

Widgets only read `Replay`s and `Trace`s (DESIGN: one direction).
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import ipywidgets as W
import numpy as np
import plotly.graph_objects as go
from plotly.basedatatypes import Undefined

from ctxlab import plots
from ctxlab._cost.billing import COST_METHODS
from ctxlab._cost.pricing import rates_for
from ctxlab._evaluate.metrics import cache_frame, model_of
from ctxlab._replay.replay import Counted, Replay
from ctxlab._store.schema import int_max
from ctxlab._trace import Trace
from ctxlab._view.escape import esc
from ctxlab._view.widgets.chart import ChartWidget

FIGURES_ENV = "CTXLAB_FIGURES"
"""Folder export buttons write to (default `data/figures`); notebooks and tests set it."""


def figures_dir() -> Path:
    """Where export buttons write, from `$CTXLAB_FIGURES` (so tests never litter the repo)."""
    return Path(os.environ.get(FIGURES_ENV) or "data/figures")


# --------------------------------------------------------------------------- export bar


class ExportBar(W.HBox):
    """File name, format and an Export button writing the owner's current figure."""

    def __init__(self, figure: Callable[[], Any], stem: str) -> None:
        self._figure = figure
        self.name = W.Text(value=stem, description="file", layout=W.Layout(width="260px"))
        self.format = W.Dropdown(
            options=list(plots.FORMATS[:3]) + ["html"], value="pdf", layout=W.Layout(width="80px")
        )
        self.button = W.Button(description="Export", icon="download", tooltip="write the figure")
        self.button.add_class("ctx-export")
        self.status = W.HTML()
        self.status.add_class("ctx-export-status")
        self.button.on_click(lambda _: self.export())
        super().__init__([self.name, self.format, self.button, self.status])

    def export(self, path: str | Path | None = None) -> Path:
        """Write the figure (to `path`, else `$CTXLAB_FIGURES/<file>.<format>`)."""
        target = Path(path) if path else figures_dir() / f"{self.name.value}.{self.format.value}"
        try:
            written = plots.export(self._figure(), target)
        except Exception as exc:  # shown in the widget: a button has nowhere to raise to
            self.status.value = f"<span style='color:#D55E00'>export failed: {esc(exc, 300)}</span>"
            raise
        self.status.value = f"wrote <code>{esc(written)}</code>"
        return written


# --------------------------------------------------------------------------- debounce


class Debouncer:
    """Run `fn` once changes stop for `wait` seconds, on the kernel's event loop.

    Sliders already fire on release (`continuous_update=False`); the debounce coalesces bursts
    (keyboard arrows, several sliders moved quickly) into one re-replay. With no running loop
    (plain Python, tests, benchmarks) or `wait=0`, `fn` runs at once, synchronously.
    """

    def __init__(self, fn: Callable[[], None], wait: float = 0.05) -> None:
        self.fn = fn
        self.wait = wait
        self._handle: asyncio.TimerHandle | None = None

    def __call__(self, *_: Any) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        loop = None
        if self.wait > 0:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                loop = None
        if loop is None:
            self.fn()
        else:
            self._handle = loop.call_later(self.wait, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self.fn()

    def flush(self) -> None:
        """Run a pending call now (used before reading state)."""
        if self._handle is not None:
            self._handle.cancel()
            self._fire()


# --------------------------------------------------------------------------- figures


_DATA_PROPS = ("x", "y", "name", "text", "hovertext", "marker", "showlegend")
"""What changes between redraws of one builder; styling stays as first drawn."""


def trace_dicts(fig: go.Figure | Sequence[Any]) -> list[dict[str, Any]]:
    """Trace dicts of a figure, of plotly trace objects or of dicts (kept as they are)."""
    data = fig.data if isinstance(fig, go.Figure) else fig
    return [d if isinstance(d, dict) else d.to_plotly_json() for d in data]


def update_in_place(
    widget: go.FigureWidget,
    fig: go.Figure | Sequence[Any],
    title: str | None = None,
    layout: dict[str, Any] | None = None,
) -> None:
    """Copy `fig`'s traces (a figure, trace objects or plain trace dicts, as
    `ctxlab.plots.context_trace_dicts` gives) into `widget`, with `title` and `layout`
    (`Plotly.relayout` keys such as `"yaxis.range"`).

    Builders keep a fixed trace order and count for a given widget, so only the properties that
    change between redraws (`_DATA_PROPS`: `x`, `y`, `name`, `text`, `hovertext`, `marker`,
    `showlegend`) are sent, and of those only the ones that differ from what this function last
    sent to `widget` (kept on it as `_ctxlab_sent`), as one `Plotly.update` message with the
    title and `layout`: the values go in as given, numpy arrays as binary buffers, without
    plotly validating every trace again (why a live move costs a fraction of a fresh figure),
    and a trace that keeps a property gets plotly's `Undefined` for it, so the browser redraws
    once per move, not once per set of changed properties (three on a typical move: areas,
    markers, threshold lines, each drawn half-updated). If the count or the trace types differ
    (an event kind appeared), the traces are replaced and validated.
    """
    data = trace_dicts(fig)
    sent: list[dict[str, Any]] | None = getattr(widget, "_ctxlab_sent", None)
    widget._ctxlab_sent = data
    release_after_redraw(sent)  # the last move's traces (1,000 hover labels) freed after it
    relayout = _unsettled(widget, dict(layout or {}))
    if isinstance(fig, go.Figure):
        relayout["title.text"] = fig.layout.title.text
    if title is not None:
        relayout["title.text"] = title
    same = len(widget.data) == len(data) and all(
        old.type == new.get("type", "scatter") for old, new in zip(widget.data, data, strict=True)
    )
    if not same:
        with widget.batch_update():
            widget.data = ()
            widget.add_traces(data)
        if relayout:
            widget.plotly_relayout(relayout)
        return
    indexes: list[int] = []
    changes: list[tuple[str, ...]] = []
    for i, new in enumerate(data):
        old = sent[i] if sent is not None and len(sent) == len(data) else {}
        changed = tuple(p for p in _DATA_PROPS if p in new and not _same(old.get(p), new[p]))
        if changed:
            indexes.append(i)
            changes.append(changed)
    if indexes:
        props = [p for p in _DATA_PROPS if any(p in c for c in changes)]
        restyle = {
            p: [data[i][p] if p in c else Undefined for i, c in zip(indexes, changes, strict=True)]
            for p in props
        }
        widget.plotly_update(restyle_data=restyle, relayout_data=relayout, trace_indexes=indexes)
    elif relayout:
        widget.plotly_relayout(relayout)


_STEADY_AXIS = ("type", "autorange")
"""`yaxis.*` relayout keys a move rarely changes (`y_axis_layout`): plotly takes about 90 us to
process a relayout key, changed or not, and reading the value back takes 28."""


def _unsettled(widget: go.FigureWidget, relayout: dict[str, Any]) -> dict[str, Any]:
    """`relayout` without the steady y-axis keys whose values the widget's layout already
    holds: what plotly would send anyway, found for less (the layout is read, not a record of
    what was sent, so the user's own zoom or another relayout is seen)."""
    steady = [name for name in _STEADY_AXIS if f"yaxis.{name}" in relayout]
    if steady:
        yaxis = widget.layout.yaxis
        for name in steady:
            if getattr(yaxis, name) == relayout[f"yaxis.{name}"]:
                del relayout[f"yaxis.{name}"]
    return relayout


def _same(a: Any, b: Any) -> bool:
    """Whether two trace property values are equal (numpy arrays element by element)."""
    if a is b:
        return True
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.shape == b.shape
            and bool(np.array_equal(a, b))
        )
    return type(a) is type(b) and a == b


def figure_widget(fig: go.Figure, css_class: str) -> go.FigureWidget:
    """A `ChartWidget` (a FigureWidget whose browser module loads within anywidget's deadline,
    `ctxlab._view.widgets.chart`) built from `fig` in the constructor (edits before display survive
    nesting in boxes, unlike `update_layout` after construction; see the research notes)."""
    widget = ChartWidget(data=fig.data, layout=fig.layout)
    widget.add_class(css_class)
    return widget


# --------------------------------------------------------------------------- y axis

ZOOMS = ("auto", "window", "data")
"""`YAxis.zoom` values: fit the data when they use under a third of the chart's full height
(`auto`), always show every line up to the window (`window`), or fit the data (`data`). The
data are everything but the reference lines (window, trigger, budget): the replayed context,
the uncompacted baseline and the recording, so a zoom never pushes the baseline or the
recorded curve off the chart."""


def y_extent(data: Sequence[dict[str, Any]]) -> tuple[float, float, float]:
    """(top of the data, top of everything drawn, lowest positive context) of
    context-chart trace dicts: the data are the stacked context and every other trace but the
    reference lines (`meta: "reference"`, `ctxlab._view.plots.figures.reference_lines`), which
    only count for the full height."""
    stacked = [np.asarray(d["y"], dtype=float) for d in data if d.get("stackgroup")]
    context = np.sum(stacked, axis=0) if stacked else np.zeros(0)
    top = float(context.max()) if context.size else 0.0
    full = top
    for d in data:
        y = d.get("y")
        if d.get("stackgroup") or y is None or not len(y):
            continue
        if isinstance(y, np.ndarray) and y.dtype.kind in "iuf":  # no gaps: read as it is
            ys = y  # (walking a 1,000-turn line in Python took 0.1 ms a trace, every move)
        else:
            ys = np.asarray([v for v in y if v is not None], dtype=float)
        high = float(ys.max()) if ys.size else 0.0
        full = max(full, high)
        if d.get("meta") != "reference":
            top = max(top, high)
    positive = context[context > 0]
    low = float(positive.min()) if positive.size else 1.0
    return top, full, low


def y_axis_layout(data: Sequence[dict[str, Any]], zoom: str, log: bool) -> dict[str, Any]:
    """`Plotly.relayout` keys for the y axis of a context chart (`ZOOMS`, log scale or not)."""
    if zoom not in ZOOMS:
        raise ValueError(f"zoom must be one of {', '.join(ZOOMS)}; got {zoom!r}")
    top, full, low = y_extent(data)
    fit = zoom == "data" or (zoom == "auto" and 0 < top < full / 3)
    if log:
        hi = (top if fit else full) * 1.3 or 10.0
        return {
            "yaxis.type": "log",
            "yaxis.autorange": False,
            "yaxis.range": [float(np.log10(max(1.0, low / 2))), float(np.log10(max(hi, 10.0)))],
        }
    if fit:
        return {"yaxis.type": "linear", "yaxis.autorange": False, "yaxis.range": [0, top * 1.08]}
    return {"yaxis.type": "linear", "yaxis.autorange": True, "yaxis.range": None}


class YAxis(W.HBox):
    """Zoom and log-scale controls of a context chart: `zoom` (`ZOOMS`; default `auto`) and
    `log_scale` (a checkbox). The owner calls `relayout(data)` for the relayout keys of its current
    trace dicts and is told of changes through `on_change`."""

    def __init__(self, on_change: Callable[[], None]) -> None:
        self.zoom = W.ToggleButtons(
            options=[("auto", "auto"), ("window", "window"), ("fit data", "data")],
            value="auto",
            description="y axis",
            tooltips=[
                "fit the data (context, baseline, recording) when they use under a third "
                "of the window",
                "show the window and every reference line",
                "fit the data: the context, the uncompacted baseline and the recording",
            ],
            style={"button_width": "70px"},
        )
        self.zoom.add_class("ctx-zoom")
        self.log_scale = W.Checkbox(value=False, description="log scale", indent=False)
        self.log_scale.add_class("ctx-log")
        self.zoom.observe(lambda _: on_change(), names="value")
        self.log_scale.observe(lambda _: on_change(), names="value")
        super().__init__([self.zoom, self.log_scale])

    def relayout(self, data: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """Relayout keys for `data` under the current settings (`y_axis_layout`)."""
        return y_axis_layout(data, self.zoom.value, self.log_scale.value)


# --------------------------------------------------------------------------- metrics


def token_metrics(replay: Replay | Counted) -> dict[str, Any]:
    """Peak and cumulative tokens against the baseline and events by kind, read from the
    policy's own counts (`counts`, which the chart reads too) and events: no bill, so a
    slider's chart and title need only those, a full replay or a count-only one
    (`ctxlab._replay.replay.counted`)."""
    # summed in polars (missing baselines count as 0), not walked as Python lists
    counted, baseline = replay.counts["context_tokens"], replay.counts["baseline_tokens"]
    cumulative, base_cum = int(counted.sum()), int(baseline.sum())
    kinds: dict[str, int] = {}
    for e in replay.event_list:
        kinds[e.kind] = kinds.get(e.kind, 0) + 1
    return {
        "peak": int_max(counted),
        "cumulative": cumulative,
        "baseline_peak": int_max(baseline),
        "baseline_cumulative": base_cum,
        "saved": 1 - cumulative / base_cum if base_cum else 0.0,
        "events": sum(kinds.values()),
        "events_by_kind": kinds,
    }


def metrics(replay: Replay, trace: Trace | None = None) -> dict[str, Any]:
    """`token_metrics` and cost (`cost`)."""
    return {**token_metrics(replay), **cost(replay, trace)}


def after_redraw(fn: Callable[[], None]) -> None:
    """Run `fn` once the kernel has sent what the current handler drew (next turn of its
    event loop), or at once where no loop runs (plain Python, tests, benchmarks): readouts
    that need more work than the chart (the bill and its cost) then never delay the chart."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        fn()
        return
    loop.call_soon(fn)


def release_after_redraw(*objects: Any) -> None:
    """Drop the last references to `objects` (the replay a move replaced, the run that made
    the new one) once the chart is sent (`after_redraw`): freeing a 1,000-turn replay and its
    run took up to 2 ms of a 14 ms slider move."""
    held = list(objects)
    after_redraw(held.clear)


def after_rest(fn: Callable[[], None], seconds: float, pending: Any = None) -> Any:
    """Run `fn` once the kernel has been left alone for `seconds` after this handler (the
    sliders rest), cancelling `pending` (what the previous call returned); at once where no
    loop runs. Returns what to pass as `pending` next time: a readout that costs more than
    the chart (the cost, which needs the full replay and its bill) is then worked out once
    per rest, not once per move of a dragged slider."""
    if pending is not None:
        pending.cancel()
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        fn()
        return None
    return loop.call_later(seconds, fn)


def priced(trace: Trace | None) -> bool:
    """Whether `cost` can say anything for `trace`: its model has a known price (else the
    widgets skip the cost readout's work altogether)."""
    return trace is not None and rates_for(model_of(trace), None) is not None


def cost(replay: Replay, trace: Trace | None) -> dict[str, Any]:
    """Cost in USD without and with prompt caching (`ctxlab._evaluate.metrics.cache_frame`) when the
    trace is given and its model has a price; `{}` otherwise, so widgets show token counts.
    Priced on billed tokens where the bill is exact or calibrated (`billed`: that method)."""
    if trace is None:
        return {}
    try:
        frame = cache_frame(replay, trace)
    except Exception:  # noqa: BLE001 - an optional readout must never break the widget
        return {}
    out: dict[str, Any] = {}
    for col, key in (("cost_usd", "cost_usd"), ("cost_usd_with_cache", "cost_usd_cached")):
        if col in frame.columns and frame.height and frame[col].null_count() < frame.height:
            out[key] = float(frame[col].sum())
    if out and replay.billing.method in COST_METHODS:
        out["billed"] = replay.billing.method
    return out


def readout_html(
    m: dict[str, Any], latency_ms: float | None = None, replays: int | None = None
) -> str:
    """Peak / cumulative / events (and cost) as one compact line of HTML."""
    kinds = ", ".join(f"{esc(k)} {v}" for k, v in sorted(m["events_by_kind"].items()))
    parts = [
        f"<b>peak</b> {m['peak']:,} (baseline {m['baseline_peak']:,})",
        f"<b>cumulative</b> {m['cumulative']:,} (baseline {m['baseline_cumulative']:,}, "
        f"{m['saved']:.0%} saved)",
        f"<b>events</b> {m['events']}" + (f" ({kinds})" if kinds else ""),
    ]
    for k, v in m.items():
        if k.startswith("cost"):
            label = "cost (cache)" if k == "cost_usd_cached" else "cost"
            parts.append(f"<b>{label}</b> ${v:,.2f}")
    if m.get("billed"):
        parts.append(f"<span class='ctx-billed'>billed tokens, {esc(m['billed'])}</span>")
    if latency_ms is not None:
        parts.append(f"<span style='color:#777'>{latency_ms:.0f} ms</span>")
    count = f" data-replays='{replays}'" if replays is not None else ""
    return f"<div class='ctx-readout'{count}>" + " &nbsp;|&nbsp; ".join(parts) + "</div>"


def now_ms() -> float:
    """Monotonic milliseconds (latency readouts)."""
    return time.perf_counter() * 1000
