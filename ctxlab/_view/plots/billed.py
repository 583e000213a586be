"""The bill beside the policy's count: a billed-tokens curve and markers at the turns where the
two part about a threshold (`ctxlab._cost.billing`), as plain plotly trace dicts for the Scrubber's
chart (and any `context_tokens` figure: `fig.add_traces(billed_trace_dicts(replay))`).

Markers sit on the billed curve, where the threshold was actually passed; each flag is one
legend entry, so a reader sees at once that the policy's belief and the bill differ.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ctxlab._view.escape import esc
from ctxlab._view.palette import OKABE_ITO

if TYPE_CHECKING:
    from ctxlab._replay.replay import Replay

FLAG_STYLE: dict[str, tuple[str, str, str]] = {
    "late_trigger": (
        "triangle-up",
        OKABE_ITO["orange"],
        "late trigger: policy count under its trigger, billed over it",
    ),
    "would_overflow": (
        "x",
        OKABE_ITO["vermillion"],
        "would overflow: policy count fits the window, billed does not",
    ),
}
"""Per flag: marker symbol, colour and legend name."""


def billed_trace_dicts(replay: Replay) -> list[dict[str, Any]]:
    """The billed-tokens line (named with its method) and one marker trace per flag that some
    turn raises; `[]` when the replay has no bill (no trace)."""
    billing = replay.billing
    if billing.method is None:
        return []
    turns = [c.turn for c in replay.calls]
    out: list[dict[str, Any]] = [
        {
            "type": "scatter",
            "x": turns,
            "y": billing.tokens,
            "name": f"billed tokens ({esc(billing.method)})",
            "mode": "lines",
            "line": {"color": OKABE_ITO["purple"], "width": 2, "dash": "dot"},
            "hovertemplate": "billed: %{y:,}<extra>turn %{x}</extra>",
        }
    ]
    counted = [c.context_tokens for c in replay.calls]
    for flag, values in (
        ("late_trigger", billing.late_trigger),
        ("would_overflow", billing.would_overflow),
    ):
        at = [i for i, v in enumerate(values) if v]
        if not at:
            continue
        symbol, color, name = FLAG_STYLE[flag]
        out.append(
            {
                "type": "scatter",
                "x": [turns[i] for i in at],
                "y": [billing.tokens[i] for i in at],
                "mode": "markers",
                "name": f"{name} ({len(at)})",
                "marker": {
                    "symbol": symbol,
                    "size": 12,
                    "color": color,
                    "line": {"width": 1.2, "color": "#222222"},
                },
                "hovertext": [
                    f"turn {turns[i]}: {esc(flag)}<br>policy {counted[i]:,} · "
                    f"billed {billing.tokens[i]:,}"
                    for i in at
                ],
                "hoverinfo": "text",
                "legendgroup": "billing",
            }
        )
    return out


__all__ = ["FLAG_STYLE", "billed_trace_dicts"]
