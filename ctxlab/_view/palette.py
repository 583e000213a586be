"""Colours, markers and the font of ctxlab's figures and widgets, in one place.

Figures are styled for papers: the Okabe-Ito palette stays distinguishable for colour-blind
readers and in greyscale print. The context strip (HTML, no plotly) uses the same colours as
the charts beside it, so they live apart from any plotting library.
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
    "offload_human_message": ("triangle-down-open", OKABE_ITO["orange"]),
    "truncate_args": ("line-ew-open", OKABE_ITO["orange"]),
    "summarize": ("diamond", OKABE_ITO["green"]),
    "tail_clip": ("x", OKABE_ITO["vermillion"]),
    "overflow_error": ("star", OKABE_ITO["black"]),
}
DEFAULT_EVENT_STYLE = ("circle", OKABE_ITO["purple"])
"""Marker of an event kind `EVENT_STYLE` does not list (a third-party policy's own kinds)."""

SERIES_COLORS = [
    OKABE_ITO[c] for c in ("blue", "vermillion", "green", "orange", "purple", "sky", "black")
]
"""Line colours for comparisons, in order; `SERIES_DASHES` tells them apart in greyscale."""
SERIES_DASHES = ["solid", "dash", "dot", "dashdot", "longdash", "longdashdot", "solid"]


__all__ = [
    "DEFAULT_EVENT_STYLE",
    "EVENT_STYLE",
    "FACT_STATUS_COLORS",
    "FONT",
    "KIND_COLORS",
    "KIND_LABELS",
    "OKABE_ITO",
    "SERIES_COLORS",
    "SERIES_DASHES",
    "STATUS_COLORS",
]
