"""Whether a policy's settings apply to a trace, without replaying it.

A sweep checks every grid point before its first replay, and the threshold explorer asks which
slider values a policy accepts; both want the policy's own refusal (`ValueError` or
`TypeError`, as a replay would raise it) at the cost of resolving its settings, not of a replay.
"""

from __future__ import annotations

from typing import Any

from ctxlab._trace import Trace


def check_policy(policy: Any, trace: Trace, summarizer: Any) -> None:
    """Raise what `policy` would raise on `trace`, as cheaply as the policy allows: its
    `resolve(trace)` when it has one, else starting a run (which measures the trace)."""
    resolve = getattr(policy, "resolve", None)
    if callable(resolve):
        resolve(trace)
    else:
        policy.start(trace, summarizer)
