"""What figures write beside the numbers: a policy's threshold lines, replays' legend labels and
the readable name of the trace a title names.

Lines and labels ask the policy rather than guess from its settings: lines come from the
policy's own `thresholds(trace)`, labels from the parameters the named policy has by default.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from langchain_core.messages import HumanMessage

if TYPE_CHECKING:
    from ctxlab._replay.replay import Replay
    from ctxlab._trace import Trace


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


NAME_KEYS = ("name", "title", "task_name", "instance_id", "task", "agent_name")
"""Metadata a reader would call a trace's name, in order of preference."""

_GENERATED = re.compile(
    r"[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}"  # a UUID
    r"|(?=[A-Za-z]*\d)(?=\d*[A-Za-z])[A-Za-z\d]{16,}",  # a long run of mixed letters and digits
    re.IGNORECASE,
)


def trace_name(trace: Trace | None, trace_id: str = "", limit: int = 60) -> str:
    """A short readable name for a figure title (plain text: escape it where HTML).

    The trace's own name (metadata `name`, `title`, task or instance id), else its id when that
    reads as a name (`marshmallow-code__marshmallow-1867`), else the first user request, else
    the id; on one line (whitespace collapsed), cut to `limit` characters with "…". Generated ids
    (UUIDs, long runs of mixed letters and digits) say nothing to a reader, so a request wins
    over them.
    """
    trace_id = trace.trace_id if trace is not None else trace_id
    found = ""
    if trace is not None:
        found = next((str(v) for k in NAME_KEYS if (v := trace.metadata.get(k))), "")
    if not found and trace_id and not _GENERATED.search(trace_id):
        found = trace_id
    if not found and trace is not None:
        first = next(
            (m for m in trace.messages if isinstance(m, HumanMessage) and m.text.strip()), None
        )
        found = first.text.strip() if first is not None else ""
    text = " ".join((found or trace_id).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def replay_name(replay: Replay, limit: int = 60) -> str:
    """`trace_name` of the trace `replay` replayed (its id alone when it carries no trace)."""
    return trace_name(replay.trace, replay.trace_id, limit)


__all__ = ["default_labels", "replay_name", "thresholds", "trace_name"]
