"""Why a policy acted: one line per event, and warnings for settings that make no sense.

A user sets a window and a trigger; the policy then also summarises because the request went
over its input budget, offloads a tool result over a size limit, or clips the tail when a
summary was not enough. Those rules fire without being asked for by name, so every place that
shows an event (the CLI's tables, the Scrubber's event cards, hover text on the charts) says
in one line which rule fired and at what count (`why`). `setting_warnings` names the settings
that defeat themselves before a replay is read: a keep at or above the trigger (the policy
compacts on every call), a trigger above the window (it never fires before an overflow), a
window smaller than the first request (the very first call is already over it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Event
    from ctxlab._trace import Trace

_NUMBER = re.compile(r"\d{4,}")


def _grouped(text: str) -> str:
    """Numbers of four digits or more in `text` with thousands separators, as tables print
    them (`> 80000 chars` -> `> 80,000 chars`)."""
    return _NUMBER.sub(lambda m: f"{int(m.group()):,}", text)


def _tokens(count: int | None) -> str:
    return f"{count:,} tokens" if count is not None else "an unknown count"


def why(event: Event, levels: Mapping[str, int] | None = None) -> str:
    """The rule behind `event`, and the count at which it fired, in one line:
    `budget: 126,169 tokens over the input budget`, `trigger: 171,230 tokens >= 170,000`,
    `tool-result limit: a result > 80,000 chars, moved to a file`. `levels` are the policy's
    token lines on the trace (`thresholds`: `trigger`), named when given."""
    reason = event.reason or ""
    before = _tokens(event.tokens_before)
    level = (levels or {}).get("trigger")
    reached = f">= {level:,}" if level is not None else "reached the trigger"
    if event.kind == "summarize" and reason in {"trigger", "budget", "trigger+budget"}:
        rules = {
            "trigger": f"trigger: {before} {reached}",
            "budget": f"budget: {before} over the input budget (window less output)",
            "trigger+budget": f"trigger and budget: {before} over both",
        }
        return rules[reason]
    if event.kind == "truncate_args":
        return f"argument truncation: {before} reached its trigger {_grouped(reason)}"
    if event.kind == "offload_tool_result":
        return f"tool-result limit: a result {_grouped(reason)}, moved to a file"
    if event.kind == "offload_human_message":
        return f"human-message limit: a message {_grouped(reason)}, moved to a file"
    if event.kind == "tail_clip":
        return f"overflow: {before} still over the input budget; tool results clipped"
    if event.kind == "overflow_error":
        return f"overflow: {before} still over the input budget after compaction"
    if reason:
        return f"trigger: {_grouped(reason)} (at {before})"
    return f"{event.kind} at {before}"


def _in_tokens(size: Any, window: int | None) -> int | None:
    """A `(kind, value)` size as tokens, when it is one (`tokens`, or `fraction` of a known
    window)."""
    kind, value = size if isinstance(size, tuple | list) and len(size) == 2 else (None, None)
    if not isinstance(value, int | float):
        return None
    if kind == "tokens":
        return int(value)
    if kind == "fraction" and window:
        return int(window * value)
    return None


def thresholds(policy: Any, trace: Trace) -> dict[str, int]:
    """The policy's token lines on `trace` (`window`, `trigger`, `budget`, those it has), `{}`
    for a policy that draws none."""
    method = getattr(policy, "thresholds", None)
    return dict(method(trace)) if method is not None else {}


def setting_warnings(policy: Any, trace: Trace, first_request: int | None = None) -> list[str]:
    """What is degenerate about `policy`'s settings on `trace`, one sentence each: keep at or
    above the trigger (in tokens or in messages), the trigger above the window, and a window
    smaller than `first_request` (the tokens of the first call's uncompacted request).
    Policies without a resolved window, trigger or keep are checked for what they have."""
    levels = thresholds(policy, trace)
    window = levels.get("window")
    trigger = levels.get("trigger")
    out = []
    keep: Any = None
    clauses: Sequence[Mapping[str, Any]] = ()
    if (resolve := getattr(policy, "resolve", None)) is not None:
        try:
            settings = resolve(trace)
            keep, clauses = getattr(settings, "keep", None), getattr(settings, "clauses", ())
        except (TypeError, ValueError):
            pass
    kept = _in_tokens(keep, window)
    if kept is not None and trigger is not None and kept >= trigger:
        out.append(
            f"keep ({kept:,} tokens) is at or above the trigger ({trigger:,} tokens): the "
            "policy compacts on every call once it first triggers"
        )
    messages = [c["messages"] for c in clauses or () if "messages" in c]
    if isinstance(keep, tuple | list) and keep[0] == "messages" and messages:
        if keep[1] >= min(messages):
            out.append(
                f"keep ({keep[1]:,} messages) is at or above the trigger ({min(messages):,} "
                "messages): the policy compacts on every call once it first triggers"
            )
    if window is not None and trigger is not None and trigger > window:
        out.append(
            f"the trigger ({trigger:,} tokens) is above the window ({window:,}): the request "
            "overflows before the trigger can fire"
        )
    if window is not None and first_request is not None and first_request > window:
        out.append(
            f"the window ({window:,} tokens) is smaller than the first request "
            f"({first_request:,} tokens): every call starts over it"
        )
    return out


__all__ = ["setting_warnings", "thresholds", "why"]
