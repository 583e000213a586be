"""Why each simulated cache write happened: one cause per model call.

Prompt caching is most of an agent's bill, and compaction is its biggest breaker: a summary
rewrites the start of the request, so everything after it is written to the cache again. To
tell that cost apart from the cache writes an agent pays anyway, `metrics.cache_frame` gives
every call whose input was not all read from the cache a `cache_write_cause` (one of `CAUSES`)
and, for a compaction, `cause_event` (the event's index in `Replay.event_list`):

* `first_call`: nothing was cached before;
* `model_switch`: the call's recorded model differs from the previous call's (a provider's
  cache belongs to one model, so nothing is read);
* `idle_gap`: the recorded start times (`Turn.started_at`) are further apart than the
  provider's cache lifetime (`CacheRule.ttl_seconds`), so the cache is cold and the whole
  prefix is written again (nothing is read);
* a compaction event's kind (`summarize`, `truncate_args`, `clear_tool_uses`, ...): the
  request does not extend the previous one and this call carries events; the event touching
  the earliest message is named, since the cache breaks where the first change is;
* `tool_schema_change` / `system_change`: the request's tool schemas / system prompt part
  differs from the previous call's (read from `Call.request`, see `head_changes`);
* `new_content`: ordinary growth, the messages appended since the previous call, after a hit.

A break with no event on its call and no changed head (a run that edits earlier messages
without recording an event on that call) is put on the latest earlier event, the compaction
whose state the request still reflects; with none, `new_content`.

Everything here is a pure function of a replay's calls and the trace's turns.
"""

from __future__ import annotations

from datetime import datetime
from itertools import islice
from typing import TYPE_CHECKING

from ctxlab._replay.policies.base import EVENT_KINDS, Request

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ctxlab._replay.policies.base import Call, Event
    from ctxlab._trace import Turn

FIRST_CALL = "first_call"
MODEL_SWITCH = "model_switch"
IDLE_GAP = "idle_gap"
TOOL_SCHEMA_CHANGE = "tool_schema_change"
SYSTEM_CHANGE = "system_change"
NEW_CONTENT = "new_content"

CAUSES: tuple[str, ...] = (
    FIRST_CALL,
    MODEL_SWITCH,
    IDLE_GAP,
    TOOL_SCHEMA_CHANGE,
    SYSTEM_CHANGE,
    *(k for k in EVENT_KINDS if k != "overflow_error"),
    NEW_CONTENT,
)
"""Every value `cache_write_cause` takes: the fixed causes, then the compaction event kinds
(`overflow_error` is a refused request, not a change of prefix), then ordinary growth."""

_NOT_A_CHANGE = frozenset({"overflow_error"})


def parse_time(stamp: str | None) -> datetime | None:
    """A recorded ISO-8601 start time (`...Z` or with an offset), None when absent or not
    ISO (a gap is then unknown, never guessed)."""
    if not stamp:
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None


def idle_gaps(turns: Sequence[Turn], ttl_seconds: float | None) -> list[bool]:
    """Per turn: whether more than `ttl_seconds` passed since the previous turn started (its
    request is when the provider last read or wrote the cache, which restarts the lifetime).
    All False without a lifetime or where either time is missing."""
    out = [False] * len(turns)
    if ttl_seconds is None:
        return out
    previous = None
    for i, turn in enumerate(turns):
        now = parse_time(turn.started_at)
        if now is not None and previous is not None:
            try:
                out[i] = (now - previous).total_seconds() > ttl_seconds
            except TypeError:  # one stamp with a timezone, the other without
                out[i] = False
        previous = now
    return out


def model_switches(turns: Sequence[Turn]) -> list[bool]:
    """Per turn: whether its recorded model differs from the previous turn's (both known)."""
    out = [False] * len(turns)
    for i in range(1, len(turns)):
        a, b = turns[i - 1].model, turns[i].model
        out[i] = a is not None and b is not None and a != b
    return out


def _head_layout(call: Call) -> tuple[int, int]:
    """Indices of the tool-schema part and the system part in `call.request` (-1 if none).

    The convention every built-in run keeps (`StageRun`, `DeepAgentsRun`): the tool schemas
    first, as one part, when the request has tool tokens; then the system prompt, as one
    part, when it has system tokens."""
    tools = 0 if call.by_kind.get("tools", 0) > 0 else -1
    system = tools + 1 if call.by_kind.get("system", 0) > 0 else -1
    return tools, system


def _head(
    request: Sequence[tuple[int, int]],
    previous: Sequence[tuple[int, int]] | None,
    previous_head: tuple[int, ...],
    k: int,
) -> tuple[int, ...]:
    """Fingerprints of the first `k` parts of `request`, in O(k) when it is a `Request`
    edited from `previous` (its first `kept` parts are the previous head's)."""
    if isinstance(request, Request) and previous is not None and request.previous is previous:
        kept = min(request.kept, k)
        return previous_head[:kept] + tuple(islice(request.fingerprints, k - kept))
    return tuple(f for f, _ in islice(request, k))


def head_changes(calls: Sequence[Call]) -> list[str | None]:
    """Per call: `tool_schema_change` when its tool-schema part differs from the previous
    call's (or one of them has none), `system_change` when its system part does, else None
    (always None for the first call, or without `Call.request`)."""
    out: list[str | None] = [None] * len(calls)
    previous = None
    head: tuple[int, ...] = ()
    layout = (-1, -1)
    for i, call in enumerate(calls):
        request = call.request
        if request is None:
            previous, head, layout = None, (), (-1, -1)
            continue
        now_layout = _head_layout(call)
        now = _head(request, previous, head, 2)
        if previous is not None:
            tools, system = now_layout
            if (tools < 0) != (layout[0] < 0) or (tools >= 0 and now[:1] != head[:1]):
                out[i] = TOOL_SCHEMA_CHANGE
            elif (system < 0) != (layout[1] < 0) or (
                system >= 0 and now[system : system + 1] != head[layout[1] : layout[1] + 1]
            ):
                out[i] = SYSTEM_CHANGE
        previous, head, layout = request, now, now_layout
    return out


def _breaking_event(events: Sequence[tuple[int, Event]]) -> tuple[int, Event] | None:
    """Of one call's (index, event) pairs, the change that breaks the prefix first: the event
    touching the earliest message (events touching none come after those that do)."""
    changes = [(i, e) for i, e in events if e.kind not in _NOT_A_CHANGE]
    if not changes:
        return None
    return min(changes, key=lambda ie: (min(ie[1].messages, default=float("inf")), ie[0]))


def attribute(
    calls: Sequence[Call],
    turns: Sequence[Turn],
    breaks: Sequence[bool],
    ttl_seconds: float | None,
) -> tuple[list[str], list[int | None], list[bool]]:
    """Per call: its cause, the index of the event that caused it in the replay's event list
    (None for causes that are not events), and whether its cache is cold (a model switch or
    an idle gap: nothing can be read).

    `breaks[i]`: call i's request does not extend call i-1's (`metrics` knows this from the
    common prefixes). `turns` are the recorded turns the calls replay, in order."""
    if len(turns) != len(calls) or len(breaks) != len(calls):
        raise ValueError("attribute needs one turn and one break flag per call")
    gaps = idle_gaps(turns, ttl_seconds)
    switches = model_switches(turns)
    heads = head_changes(calls)
    causes: list[str] = []
    indices: list[int | None] = []
    cold: list[bool] = []
    seen = 0  # events of earlier calls, so indices match `Replay.event_list`
    latest: tuple[int, Event] | None = None
    for i, call in enumerate(calls):
        own = [(seen + j, e) for j, e in enumerate(call.events)]
        seen += len(call.events)
        cause, index = NEW_CONTENT, None
        if i == 0:
            cause = FIRST_CALL
        elif switches[i]:
            cause = MODEL_SWITCH
        elif gaps[i]:
            cause = IDLE_GAP
        elif breaks[i]:
            hit = _breaking_event(own)
            if hit is not None:
                cause, index = hit[1].kind, hit[0]
            elif heads[i] is not None:
                cause = heads[i]  # type: ignore[assignment]
            elif latest is not None:
                cause, index = latest[1].kind, latest[0]
        elif heads[i] is not None:  # a changed head the token counts did not show
            cause = heads[i]  # type: ignore[assignment]
        causes.append(cause)
        indices.append(index)
        cold.append(i > 0 and (switches[i] or gaps[i]))
        for j, e in reversed(own):
            if e.kind not in _NOT_A_CHANGE:
                latest = (j, e)
                break
    return causes, indices, cold


__all__ = [
    "CAUSES",
    "FIRST_CALL",
    "IDLE_GAP",
    "MODEL_SWITCH",
    "NEW_CONTENT",
    "SYSTEM_CHANGE",
    "TOOL_SCHEMA_CHANGE",
    "attribute",
    "head_changes",
    "idle_gaps",
    "model_switches",
    "parse_time",
]
