"""The prompt-cache simulation checked against the cache tokens a provider recorded.

Anthropic reports, per call, the input tokens read from the cache and written to it (Claude
Code sessions, Managed Agents events keep them: `Turn.cache_read_tokens`,
`Turn.cache_write_tokens`, with `Turn.input_tokens` their sum plus the uncached rest). This
module replays what the model really received (`recorded_context`: the as-sent inputs,
`Turn.inputs`, or the `raw` policy where a trace has none), simulates its cache with
`metrics.cache_frame`, and compares call by call:

* **shares**: tokens read (written) over the call's input, simulated against recorded. Shares
  compare even where ctxlab's count of a request differs from the provider's (a Claude Code
  session records neither its system prompt nor its tool schemas, some 15k tokens the
  simulation cannot see);
* **absolute**: simulated tokens minus recorded ones, as counted (`read_error_tokens`), and
  with the simulated shares applied to the recorded input (`read_error_scaled`), which takes
  out the difference in size.

The simulation's token split does not depend on prices; a model with no price gets a stand-in
(`STANDIN_PRICE`) so its provider's cache rule still applies.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import polars as pl

from ctxlab._cost import tokens as tk
from ctxlab._cost.pricing import Price, rates_for
from ctxlab._evaluate.metrics import cache_frame
from ctxlab._messages import chars_per_token, kind_of
from ctxlab._replay.policies.base import Call
from ctxlab._replay.replay import Replay, replay

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

    from ctxlab._trace import Trace, Turn

STANDIN_PRICE = Price(1.0, 1.0, cache_read=0.1, cache_write=1.25, source="stand-in")
"""Prices for a model genai-prices does not know: only the read/write split is used, and a
write price apart from the input price makes writes counted as Anthropic bills them."""


def _content_key(message: BaseMessage) -> str:
    """What makes two sent messages the same to a provider's cache: role and content."""
    return json.dumps(
        [
            message.type,
            message.content,
            getattr(message, "tool_calls", None),
            getattr(message, "tool_call_id", None),
        ],
        sort_keys=True,
        default=str,
    )


def unseen_tokens(trace: Trace, context: Replay) -> int:
    """Tokens the first recorded call's input holds beyond the replay's first request: what
    the trace does not record (a Claude Code session keeps neither its system prompt nor its
    tool schemas) plus the counter's error on that request. 0 without a recorded input."""
    first = trace.turns[0].input_tokens if trace.turns else None
    if first is None or not context.calls:
        return 0
    return max(0, int(first) - context.calls[0].context_tokens)


def recorded_context(trace: Trace, unseen: int = 0) -> Replay:
    """A replay whose requests are the recorded as-sent inputs (`Turn.inputs`), parts
    fingerprinted by content; the `raw` replay's requests when some turn has no inputs.

    `unseen`: tokens of a constant part sent first in every request (counted with the tool
    schemas), standing for what the trace did not record (`unseen_tokens`)."""
    if not trace.turns or any(not t.inputs for t in trace.turns):
        base = replay(trace, "raw")
        if not unseen:
            return base
        calls = [
            Call(
                c.turn,
                c.position,
                c.context_tokens + unseen,
                {**c.by_kind, "tools": c.by_kind.get("tools", 0) + unseen},
                c.messages,
                c.events,
                c.baseline_tokens,
                request=[(-1, unseen), *(c.request or ())],
            )
            for c in base.calls
        ]
        return Replay(
            trace_id=trace.trace_id,
            policy="raw+unseen",
            params={"unseen": unseen},
            calls=calls,
            recorded=base.recorded,
            trace=trace,
        )
    cpt = chars_per_token(trace.model, trace.provider)
    tools = tk.tool_schema_tokens(trace.tools, cpt) + unseen
    keys: dict[str, int] = {}
    calls = []
    for turn in trace.turns:
        parts = [(0, tools)] if tools else []
        by_kind: dict[str, int] = {"tools": tools}
        for m in turn.inputs:
            n = tk.message_tokens(m, cpt)
            parts.append((keys.setdefault(_content_key(m), len(keys) + 1), n))
            kind = kind_of(m)
            by_kind[kind] = by_kind.get(kind, 0) + n
        total = sum(t for _, t in parts)
        calls.append(
            Call(turn.index, turn.position, total, by_kind, len(turn.inputs), request=tuple(parts))
        )
    return Replay(
        trace_id=trace.trace_id,
        policy="recorded-inputs" + ("+unseen" if unseen else ""),
        params={"unseen": unseen} if unseen else {},
        calls=calls,
        recorded=[t.input_tokens for t in trace.turns],
        trace=trace,
    )


@dataclass(frozen=True)
class CacheCheck:
    """Simulated against recorded cache tokens on one trace: `calls` (one row per call with
    recorded cache tokens) and `totals` (one flat record, see `check`)."""

    trace_id: str
    context: str
    calls: pl.DataFrame
    totals: dict[str, Any]


def has_recorded_cache(trace: Trace) -> bool:
    """Whether any turn recorded both its cache read and write tokens and its input."""
    return any(_recorded(t) is not None for t in trace.turns)


def _recorded(turn: Turn) -> tuple[int, int, int] | None:
    """The turn's recorded input, cache read and cache write tokens, when it records all three
    and some input."""
    given, read, write = turn.input_tokens, turn.cache_read_tokens, turn.cache_write_tokens
    if given is None or read is None or write is None or given <= 0:
        return None
    return int(given), int(read), int(write)


def check(
    trace: Trace,
    context: Replay | None = None,
    *,
    unseen: bool = False,
    ttl_seconds: float | None = None,
) -> CacheCheck:
    """Compare the simulated cache of `context` (default `recorded_context(trace)`, with
    `unseen=True` plus a constant first part of `unseen_tokens`) with the trace's recorded
    cache tokens. Raises ValueError when the trace recorded none.

    `totals`: calls compared; recorded and simulated read and write shares over all compared
    calls (token-weighted); the median and mean absolute per-call share errors; the total
    absolute errors in tokens, as counted and scaled to the recorded input."""
    if not has_recorded_cache(trace):
        raise ValueError(
            f"trace {trace.trace_id!r} records no cache tokens per call (needs input, cache "
            "read and cache write tokens, as Anthropic usage gives them)"
        )
    if context is None:
        context = recorded_context(trace)
        if unseen:
            context = recorded_context(trace, unseen_tokens(trace, context))
    price = None if rates_for(trace.model) is not None else STANDIN_PRICE
    # Simulated on ctxlab's counts of the requests: a bill (`Replay.billing`) rebuilds each
    # request from a policy's events, which the as-sent inputs are not, and the unseen part
    # would be billed twice (once more in a calibrated offset). A replay without its trace is
    # not billed, so `cache_frame` prices the counts.
    counted = dataclasses.replace(context, trace=None)
    frame = cache_frame(counted, trace, price=price, ttl_seconds=ttl_seconds)
    by_turn = {t.index: t for t in trace.turns}
    rows = []
    for row in frame.iter_rows(named=True):
        turn = by_turn[row["turn"]]
        recorded = _recorded(turn)
        if recorded is None:
            continue
        total = row["input_tokens"]
        rec_in, rec_read, rec_write = recorded
        read_share = row["cache_read_tokens"] / total if total else 0.0
        write_share = row["cache_write_tokens"] / total if total else 0.0
        rows.append(
            {
                "turn": row["turn"],
                "model": turn.model,
                "recorded_input": rec_in,
                "recorded_read": rec_read,
                "recorded_write": rec_write,
                "simulated_input": total,
                "simulated_read": row["cache_read_tokens"],
                "simulated_write": row["cache_write_tokens"],
                "cause": row["cache_write_cause"],
                "read_share_error": read_share - rec_read / rec_in,
                "write_share_error": write_share - rec_write / rec_in,
                "read_error_tokens": row["cache_read_tokens"] - rec_read,
                "write_error_tokens": row["cache_write_tokens"] - rec_write,
                "read_error_scaled": round(read_share * rec_in) - rec_read,
                "write_error_scaled": round(write_share * rec_in) - rec_write,
            }
        )
    calls = pl.DataFrame(rows)
    return CacheCheck(trace.trace_id, context.policy, calls, _totals(calls))


def _totals(calls: pl.DataFrame) -> dict[str, Any]:
    """The flat summary of per-call rows (see `check`)."""
    rec_in = int(calls["recorded_input"].sum())
    sim_in = int(calls["simulated_input"].sum())
    out: dict[str, Any] = {"calls": calls.height}
    for what in ("read", "write"):
        out[f"recorded_{what}_share"] = int(calls[f"recorded_{what}"].sum()) / rec_in
        out[f"simulated_{what}_share"] = int(calls[f"simulated_{what}"].sum()) / sim_in
        errors = calls[f"{what}_share_error"].abs()
        out[f"{what}_share_error_median"] = float(errors.median())  # type: ignore[arg-type]
        out[f"{what}_share_error_mean"] = float(errors.mean())  # type: ignore[arg-type]
        out[f"{what}_error_tokens"] = int(calls[f"{what}_error_tokens"].sum())
        out[f"{what}_error_scaled"] = int(calls[f"{what}_error_scaled"].sum())
    out["recorded_input"] = rec_in
    out["simulated_input"] = sim_in
    return out


__all__ = [
    "STANDIN_PRICE",
    "CacheCheck",
    "check",
    "has_recorded_cache",
    "recorded_context",
    "unseen_tokens",
]
