"""Whether a policy's settings apply to a trace, without replaying it.

A sweep checks every grid point before its first replay, and the threshold explorer asks which
slider values a policy accepts; both want the policy's own refusal (`ValueError` or
`TypeError`, as a replay would raise it) at the cost of resolving its settings, not of a replay.
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, cast

from ctxlab._trace import Trace

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Policy


def check_policy(policy: Any, trace: Trace, summarizer: Any) -> None:
    """Raise what `policy` would raise on `trace`, as cheaply as the policy allows: its
    `resolve(trace)` when it has one, else starting a run (which measures the trace)."""
    resolve = getattr(policy, "resolve", None)
    if callable(resolve):
        resolve(trace)
    else:
        policy.start(trace, summarizer)


def with_settings(policy: Policy, **settings: Any) -> Policy:
    """`policy` with `settings` changed, by `dataclasses.replace`: the policy's own checks run
    and an unknown name is a `TypeError`, as sweeps and sliders want. `Policy` is a Protocol,
    which cannot also say "and a dataclass", so `replace` gets the policy untyped."""
    return dataclasses.replace(cast(Any, policy), **settings)
