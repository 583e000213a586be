"""Figures of replays and sweeps (`ctxlab._view.plots.figures`), of tuning studies
(`ctxlab._view.plots.pareto`) and of what policies kept of a
trace's facts (`ctxlab.plots.retention`), written to files for write-ups
(`ctxlab._view.plots.exporter`), with a policy's threshold lines and legend labels
(`ctxlab._view.plots.annotations`), and what they refuse to draw (`ctxlab._view.plots.guards`).
Everything is importable from `ctxlab.plots` directly.
"""

from ctxlab._view.escape import esc
from ctxlab._view.palette import (
    EVENT_STYLE,
    FONT,
    KIND_COLORS,
    KIND_LABELS,
    OKABE_ITO,
    SERIES_COLORS,
    SERIES_DASHES,
    STATUS_COLORS,
)
from ctxlab._view.plots.annotations import default_labels, replay_name, thresholds, trace_name
from ctxlab._view.plots.billed import billed_trace_dicts
from ctxlab._view.plots.cache import cache_writes
from ctxlab._view.plots.exporter import FORMATS, KALEIDO, export
from ctxlab._view.plots.figures import (
    comparison,
    composition,
    context_tokens,
    context_trace_dicts,
    context_traces,
    event_marker_dicts,
    event_markers,
    events_timeline,
    numbers,
    paper_layout,
    paper_template,
    style,
    sweep_heatmap,
)
from ctxlab._view.plots.guards import same_trace
from ctxlab._view.plots.pareto import pareto
from ctxlab._view.plots.recorded import recorded_traces
from ctxlab._view.plots.retention import retention

__all__ = [
    "EVENT_STYLE",
    "FONT",
    "FORMATS",
    "KALEIDO",
    "KIND_COLORS",
    "KIND_LABELS",
    "OKABE_ITO",
    "SERIES_COLORS",
    "SERIES_DASHES",
    "STATUS_COLORS",
    "billed_trace_dicts",
    "cache_writes",
    "comparison",
    "composition",
    "context_trace_dicts",
    "context_tokens",
    "context_traces",
    "default_labels",
    "esc",
    "event_marker_dicts",
    "event_markers",
    "events_timeline",
    "export",
    "numbers",
    "paper_layout",
    "paper_template",
    "pareto",
    "recorded_traces",
    "replay_name",
    "retention",
    "same_trace",
    "style",
    "sweep_heatmap",
    "thresholds",
    "trace_name",
]
