"""Figures of replays and sweeps (`ctxlab.plots.figures`) and of what policies kept of a
trace's facts (`ctxlab.plots.retention`), written to files for write-ups
(`ctxlab.plots.exporter`), with a policy's threshold lines and legend labels
(`ctxlab.plots.annotations`), and what they refuse to draw (`ctxlab.plots.checks`).
Everything is importable from `ctxlab.plots` directly.
"""

from ctxlab.escape import esc
from ctxlab.palette import (
    EVENT_STYLE,
    FONT,
    KIND_COLORS,
    KIND_LABELS,
    OKABE_ITO,
    SERIES_COLORS,
    SERIES_DASHES,
    STATUS_COLORS,
)
from ctxlab.plots.annotations import default_labels, replay_name, thresholds, trace_name
from ctxlab.plots.billed import billed_trace_dicts
from ctxlab.plots.cache import cache_writes
from ctxlab.plots.checks import same_trace
from ctxlab.plots.exporter import FORMATS, KALEIDO, export
from ctxlab.plots.figures import (
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
from ctxlab.plots.recorded import recorded_traces
from ctxlab.plots.retention import retention

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
    "recorded_traces",
    "replay_name",
    "retention",
    "same_trace",
    "style",
    "sweep_heatmap",
    "thresholds",
    "trace_name",
]
