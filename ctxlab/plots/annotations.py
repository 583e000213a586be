"""What figures write beside the numbers: a policy's threshold lines and replays' legend labels.

Both ask the policy rather than guess from its settings: lines come from the policy's own
`thresholds(trace)`, labels from the parameters the named policy has by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxlab.replay import Replay
    from ctxlab.trace import Trace


def thresholds(policy: Any, trace: Trace) -> dict[str, int]:
    """Token levels (`window`, `trigger`, `budget`, ...) `policy` resolves to on `trace`, from
    its `thresholds(trace)` method; `{}` for a policy that has no such lines to draw."""
    method = getattr(policy, "thresholds", None)
    return {str(k): int(v) for k, v in method(trace).items()} if method is not None else {}


def _default_params(policy: str) -> dict[str, Any]:
    """The parameters the policy named `policy` has at its defaults, as `ctxlab.policies.get`
    builds it (so a label shows only what a replay changed); `{}` for a name it does not know."""
    from ctxlab import policies

    try:
        return policies.get(policy).params()
    except (TypeError, ValueError):
        return {}


def default_labels(replays: Sequence[Replay]) -> list[str]:
    """`policy(changed params)` per replay: enough to tell sweep cells apart in a legend."""
    out = []
    for r in replays:
        defaults = _default_params(r.policy)
        shown = {k: v for k, v in r.params.items() if k not in defaults or defaults[k] != v}
        inner = ", ".join(f"{k}={v}" for k, v in list(shown.items())[:3])
        out.append(f"{r.policy}({inner})")
    return out


__all__ = ["default_labels", "thresholds"]
