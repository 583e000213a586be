"""Colours, markers and the font of ctxlab's figures and widgets, in one place.

Figures are styled for papers: the Okabe-Ito palette stays distinguishable for colour-blind
readers and in greyscale print. Each family of series has colours of its own, so no two
families share a hue: the stacked kinds (Okabe-Ito), the uncompacted baseline (black), the
reference lines (window, trigger, budget: `REFERENCE_COLOR`, told apart by dash and labelled
on the plot), the recording (vermillion, `ctxlab._view.plots.recorded`), policies compared
(`SERIES_COLORS`) and events (`EVENT_STYLE`, black-edged markers in colours no band uses, or a
kind's own band colour where the event made that band: summaries, offload stubs). The extra
hues are Paul Tol's colour-blind-safe "muted" set. The context strip (HTML, no plotly) uses the
same colours as the charts beside it, so they live apart from any plotting library.
"""

from __future__ import annotations

FONT = "DejaVu Sans, Arial, Helvetica, sans-serif"
"""DejaVu ships with Debian's chromium fonts; the fallbacks cover other systems."""

OKABE_ITO = {
    "black": "#000000",
    "orange": "#E69F00",
    "sky": "#56B4E9",
    "green": "#009E73",
    "yellow": "#F0E442",
    "blue": "#0072B2",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "grey": "#999999",
}

TOL_MUTED = {
    "indigo": "#332288",
    "teal": "#44AA99",
    "olive": "#999933",
    "rose": "#CC6677",
    "wine": "#882255",
    "purple": "#AA4499",
}
"""Paul Tol's muted qualitative palette (colour-blind safe): hues Okabe-Ito's stacked kinds leave
free, for reference lines, events and further policies."""

REFERENCE_COLOR = TOL_MUTED["wine"]
"""Window, trigger and budget lines: one hue, dashes `REFERENCE_DASHES`, a label on the line."""
REFERENCE_DASHES = {"window": "solid", "trigger": "dash", "budget": "dot"}

BASELINE_COLOR = OKABE_ITO["black"]
"""The uncompacted baseline: black, dashed."""

RECORDED_COLOR = OKABE_ITO["vermillion"]
"""What the recording says (its input tokens, its compactions)."""

KIND_COLORS: dict[str, str] = {
    "system": OKABE_ITO["grey"],
    "tools": OKABE_ITO["purple"],
    "human": OKABE_ITO["orange"],
    "ai": OKABE_ITO["blue"],
    "tool_results": OKABE_ITO["sky"],
    "stubs": OKABE_ITO["yellow"],
    "summary": OKABE_ITO["green"],
}
KIND_LABELS: dict[str, str] = {
    "system": "system prompt",
    "tools": "tool schemas",
    "human": "human",
    "ai": "assistant",
    "tool_results": "tool results",
    "stubs": "offload stubs",
    "summary": "summary",
}

STATUS_COLORS: dict[str, str] = {
    "kept": OKABE_ITO["sky"],
    "offloaded": OKABE_ITO["yellow"],
    "truncated": OKABE_ITO["orange"],
    "summarised": "#D9D9D9",
    "summary": OKABE_ITO["green"],
    "masked": OKABE_ITO["purple"],
    "dropped": "#6E6E6E",
}
"""Colours of the context strip's blocks, by what the policy did to the message."""

FACT_STATUS_COLORS: dict[str, str] = {
    "context": OKABE_ITO["sky"],
    "summary": OKABE_ITO["green"],
    "file": OKABE_ITO["yellow"],
    "lost": OKABE_ITO["vermillion"],
}
"""Where a fact is after compaction (`ctxlab._evaluate.survival.STATUSES`): the same hues as the
strip's
kept, summary and offloaded blocks, and a warning colour for lost."""

EVENT_STYLE: dict[str, tuple[str, str]] = {
    "offload_tool_result": ("triangle-down", OKABE_ITO["yellow"]),
    "offload_human_message": ("triangle-down", TOL_MUTED["rose"]),
    "truncate_args": ("square", TOL_MUTED["olive"]),
    "summarize": ("diamond", OKABE_ITO["green"]),
    "tail_clip": ("x", TOL_MUTED["purple"]),
    "overflow_error": ("star", OKABE_ITO["black"]),
}
DEFAULT_EVENT_STYLE = ("circle", TOL_MUTED["indigo"])
"""Marker of an event kind `EVENT_STYLE` does not list (a third-party policy's own kinds)."""

SERIES_COLORS = [
    OKABE_ITO["blue"],
    OKABE_ITO["green"],
    OKABE_ITO["purple"],
    OKABE_ITO["orange"],
    OKABE_ITO["sky"],
    TOL_MUTED["indigo"],
    TOL_MUTED["olive"],
]
"""Line colours for policies compared, in order: none is the recording's vermillion, the
baseline's black or the reference lines' wine; `SERIES_DASHES` tells them apart in greyscale."""
SERIES_DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "solid"]


__all__ = [
    "BASELINE_COLOR",
    "DEFAULT_EVENT_STYLE",
    "EVENT_STYLE",
    "FACT_STATUS_COLORS",
    "FONT",
    "KIND_COLORS",
    "KIND_LABELS",
    "OKABE_ITO",
    "RECORDED_COLOR",
    "REFERENCE_COLOR",
    "REFERENCE_DASHES",
    "SERIES_COLORS",
    "SERIES_DASHES",
    "STATUS_COLORS",
    "TOL_MUTED",
]
