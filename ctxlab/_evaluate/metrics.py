"""Metrics of one replay: size, cost with and without a prompt cache, validity, information.

Everything is computed from a `Replay` (its calls, events, files) and the trace it replayed:

* **size**: peak context, cumulative input, mean per call, turns whose *uncompacted* context
  would overflow the window (what `raw` would have sent);
* **events** by kind and tokens removed per event; summariser input/output tokens (estimated
  from summarise events: the tokens that left the request plus the summary written);
* **prompt cache** (`cache_frame`): the cached prefix of each request is its longest common
  prefix with the previous request, under the provider's rules (`ctxlab._cost.pricing`): minimum
  cacheable size, 128-token steps for OpenAI; priced at the model's input, output, cache-read
  and cache-write prices (genai-prices, or a given `Price`; null for a model with neither). A
  *cache break* is a
  turn whose request does not extend the previous one (the common prefix, as the previous
  request counted it, is less than that request), and `rebilled_tokens` counts what was sent
  before and is paid again. Runs that fill `Call.request` (every catalogue policy and
  `deepagents`) are exact; for others the prefix is estimated from events: a summary or a
  changed set of truncated arguments keeps only the system prompt and tools cached
  (`cache_exact` says which). A call after a model switch or an idle gap longer than the
  provider's cache lifetime reads nothing, and every call says why its input not read from
  the cache was sent afresh (`cache_write_cause`, `cause_event`: `ctxlab._cost.cache_causes`);
* **billed tokens** (`ctxlab._cost.billing`): each request as the provider bills it; costs use it
  where the bill is `exact` or `calibrated` (else the policy's count), and `summary` counts the
  calls where the policy's count stayed under its trigger or window but the bill did not;
* **validity**: turns whose request holds an orphaned tool call or result;
* **information** (offline proxies): goal retention (the first user request is still in the
  request, verbatim, after compaction), references after eviction (later recorded tool calls
  naming a path whose every mention was evicted), recoverability (evicted content found in the
  replay's virtual files), needed-but-lost (facts the recorded agent used again after they were
  evicted and lost by then: Tier 1 of `ctxlab.evaluate`).
"""

from __future__ import annotations

import dataclasses
import json
from itertools import accumulate
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

import polars as pl
from langchain_core.messages import AIMessage, HumanMessage

from ctxlab._cost import tokens as tk
from ctxlab._cost.billing import cost_inputs
from ctxlab._cost.cache_causes import attribute
from ctxlab._cost.pricing import Price, Rates, cached_tokens, rates_for
from ctxlab._cost.profiles import profile as lookup_profile
from ctxlab._messages import chars_per_token, is_summary, message_text, paths_in
from ctxlab._replay.policies.base import Request
from ctxlab._store.schema import int_max

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Call
    from ctxlab._replay.replay import Replay
    from ctxlab._trace import Trace, Turn

EVICTING = frozenset(
    {
        "summarize",
        "forget",
        "trim",
        "offload_human_message",
        "offload_tool_result",
        "clear_tool_uses",
        "mask_observations",
        "tail_clip",
    }
)
"""Event kinds that take a message's original content out of the request."""
DROPPING = frozenset({"summarize", "forget", "trim", "offload_human_message"})
"""Event kinds that remove a whole message (the others replace a tool result's content)."""
_BREAKING = frozenset({"summarize", "forget", "trim"})
"""Events that rewrite the start of the request (a tail clip only edits the newest results)."""


def _exact_prefixes(calls: list[Call]) -> tuple[list[int], list[int]]:
    """Tokens each request shares with the previous one, from `Call.request`: as this request
    counts them, and as the previous one did (the two differ only where a run scales its
    counts per request, as `deepagents` does with `use_usage_metadata`).

    One pass that keeps the previous request's fingerprints and running token sums, so a call
    costs what changed, not the length of its request: a `Request` (an edit of the previous
    call's request) is compared from its `kept` parts on; any other sequence of parts from its
    start (in C while it extends the previous request, the common case).
    """
    now: list[int] = []
    then: list[int] = []
    fingerprints: list[int] = []  # the previous request's
    sums = [0]  # sums[k]: tokens of its first k parts
    previous = None
    for call in calls:
        request = call.request
        assert request is not None, "`_prefixes` passes calls that all carry a request"
        if isinstance(request, Request) and previous is not None and request.previous is previous:
            start, new, tokens = request.kept, request.fingerprints, request.tokens
        else:
            parts = list(request)
            start, new, tokens = 0, [f for f, _ in parts], [t for _, t in parts]
        same = min(len(fingerprints) - start, len(new))
        if same and fingerprints[start : start + same] != list(new[:same]):
            common, same = same, 0
            while same < common and fingerprints[start + same] == new[same]:
                same += 1
        base = sums[start]
        now.append(base + sum(tokens[:same]) if previous is not None else 0)
        then.append(sums[start + same] if previous is not None else 0)
        del fingerprints[start:], sums[start:]
        fingerprints.extend(new)
        sums.extend(accumulate(tokens, initial=base))
        previous = request
    return now, then


def _prefixes(replay: Replay) -> tuple[list[int], list[int], bool]:
    """`_exact_prefixes`, or else the estimate from events (one count), and exactness."""
    calls = replay.calls
    if calls and all(getattr(c, "request", None) is not None for c in calls):
        return (*_exact_prefixes(calls), True)
    out = []
    prev_call = None
    prev_trunc: frozenset[int] = frozenset()
    for c in calls:
        trunc = frozenset(p for e in c.events if e.kind == "truncate_args" for p in e.messages)
        if prev_call is None:
            out.append(0)
        else:
            broke = any(e.kind in _BREAKING for e in c.events) or trunc != prev_trunc
            fixed = c.by_kind.get("system", 0) + c.by_kind.get("tools", 0)
            out.append(min(fixed, prev_call.context_tokens) if broke else prev_call.context_tokens)
        prev_call, prev_trunc = c, trunc
    return out, out, False


def common_prefixes(replay: Replay) -> tuple[list[int], bool]:
    """Tokens each request shares with the previous one, as it counts them (0 for the first),
    and exactness."""
    now, _, exact = _prefixes(replay)
    return now, exact


def _output_tokens(trace: Trace) -> list[int]:
    """Output tokens per turn: as recorded, else estimated from the output message the way the
    replay counts input for the trace's model."""
    cpt = chars_per_token(trace.model, trace.provider)
    out = []
    for t in trace.turns:
        if t.output_tokens is not None:
            out.append(int(t.output_tokens))
        elif t.output is not None:
            out.append(tk.message_tokens(t.output, cpt))
        else:
            out.append(0)
    return out


def model_of(trace: Trace, model: str | None = None) -> str | None:
    """`model` if given (an override), else the trace's model."""
    return model or trace.model


def cache_frame(
    replay: Replay,
    trace: Trace,
    model: str | None = None,
    price: Price | None = None,
    *,
    ttl_seconds: float | None = None,
) -> pl.DataFrame:
    """Per turn: input, common prefix, cached read / written / uncached tokens, costs (USD;
    null when the model has no price and none is given), and why the input not read from the
    cache was sent afresh (`cache_write_cause`, `cause_event`: `ctxlab._cost.cache_causes`; null
    when nothing was sent afresh or the model has no price). Input is the billed tokens where
    the replay's bill is `exact` or `calibrated` (`ctxlab._cost.billing.cost_inputs`), else the
    policy's own count.

    A call after a model switch, or after an idle gap longer than the cache lifetime
    (`ttl_seconds`, default the provider's `CacheRule.ttl_seconds`), reads nothing."""
    rates = rates_for(model_of(trace, model), price)
    prefixes, before, _ = _prefixes(replay)
    calls = replay.calls
    totals = [c.context_tokens for c in calls]
    breaks = [i > 0 and before[i] < totals[i - 1] for i in range(len(calls))]
    inputs, scales = cost_inputs(replay)  # billed tokens where known (ctxlab._cost.billing)
    prefixes = [min(t, round(p * s)) for p, s, t in zip(prefixes, scales, inputs, strict=True)]
    before = [round(w * s) for w, s in zip(before, [1.0, *scales[:-1]], strict=True)]
    outputs = _output_tokens(trace)
    ttl = ttl_seconds if ttl_seconds is not None else (rates.cache.ttl_seconds if rates else None)
    causes, cause_events, cold = attribute(calls, _turns_of(replay, trace), breaks, ttl)
    rows = []
    prev_total = None
    for i, (call, prefix, was, out_toks) in enumerate(
        zip(calls, prefixes, before, outputs, strict=True)
    ):
        total = inputs[i]
        read = cached_tokens(prefix, rates.cache) if rates and not cold[i] else 0
        write = 0
        if rates and _bills_writes(rates.price.at(total)) and total >= rates.cache.min_cacheable:
            write = total - read
        uncached = total - read - write
        fresh = rates is not None and total > read
        rows.append(
            {
                "turn": call.turn,
                "input_tokens": total,
                "output_tokens": out_toks,
                "common_prefix": prefix,
                "cache_read_tokens": read,
                "cache_write_tokens": write,
                "uncached_tokens": uncached,
                "cache_break": breaks[i],  # in the policy's counts: scaling may round
                "rebilled_tokens": (prev_total - was) if prev_total is not None else 0,
                "cost_usd": _cost(rates, total, total, 0, 0, out_toks),
                "cost_usd_with_cache": _cost(rates, total, uncached, read, write, out_toks),
                "cache_write_cause": causes[i] if fresh else None,
                "cause_event": cause_events[i] if fresh else None,
            }
        )
        prev_total = total
    schema = {"cache_write_cause": pl.String, "cause_event": pl.Int64}
    return pl.DataFrame(rows, schema_overrides=schema) if rows else pl.DataFrame()


def _turns_of(replay: Replay, trace: Trace) -> list[Turn]:
    """The recorded turn each call replays (by `Call.turn`), for timestamps and models."""
    by_index = {t.index: t for t in trace.turns}
    try:
        return [by_index[c.turn] for c in replay.calls]
    except KeyError as e:
        raise ValueError(f"replay call of turn {e.args[0]} is not a turn of trace") from None


def _bills_writes(price: Price) -> bool:
    """Whether writing to the cache costs other than plain input (Anthropic's explicit cache):
    only then are written tokens counted apart from uncached ones."""
    return price.cache_write != price.input


def _cost(
    rates: Rates | None, total: int, uncached: int, read: int, write: int, output: int
) -> float | None:
    """USD of one call of `total` input tokens (its long-context tier, if any, by `total`)."""
    if rates is None:
        return None
    p = rates.price.at(total)
    assert p.cache_read is not None and p.cache_write is not None  # filled by rates_for
    cached = read * p.cache_read + write * p.cache_write
    return (uncached * p.input + cached + output * p.output) / 1e6


def _evictions(replay: Replay) -> dict[int, int]:
    """Full-history position -> turn of the first event that took its content out."""
    out: dict[int, int] = {}
    for e in replay.event_list:
        if e.kind in EVICTING and e.turn is not None:
            for p in e.messages:
                out.setdefault(p, e.turn)
    return out


def goal_position(trace: Trace) -> int | None:
    """Position of the first user request (the goal) in the full history."""
    return next(
        (
            i
            for i, m in enumerate(trace.messages)
            if isinstance(m, HumanMessage) and not is_summary(m)
        ),
        None,
    )


def goal_retention(replay: Replay, trace: Trace) -> float | None:
    """Share of the turns after the first compaction event whose request still holds the goal
    verbatim (None if nothing was compacted or the trace has no user message)."""
    goal = goal_position(trace)
    events = [(e.turn, e) for e in replay.event_list if e.turn is not None]
    if goal is None or not events:
        return None
    first = min(t for t, _ in events)
    gone = min((t for t, e in events if e.kind in DROPPING and goal in e.messages), default=None)
    after = [c.turn for c in replay.calls if c.turn >= first]
    if not after:
        return None
    kept = sum(1 for t in after if gone is None or t < gone)
    return kept / len(after)


def references_after_eviction(replay: Replay, trace: Trace) -> int:
    """Recorded tool calls that name a path every mention of which the policy had evicted by
    then (the agent used something no longer in its context: an offline proxy for harm)."""
    evicted = _evictions(replay)
    if not evicted:
        return 0
    mentions: dict[str, list[int]] = {}
    for p, m in enumerate(trace.messages):
        for path in set(paths_in(message_text(m))):
            mentions.setdefault(path, []).append(p)
    count = 0
    for turn in trace.turns:
        out = turn.output
        if not isinstance(out, AIMessage) or not out.tool_calls:
            continue
        for call in out.tool_calls:
            for path in set(paths_in(" " + json.dumps(call.get("args", {})))):
                before = [q for q in mentions.get(path, ()) if q < turn.position]
                if before and all(q in evicted and evicted[q] <= turn.index for q in before):
                    count += 1
    return count


def recoverability(replay: Replay, trace: Trace, probe: int = 200) -> float | None:
    """Share of evicted messages whose text can be found in the replay's files (head and tail
    probes of `probe` characters, raw or XML-escaped as history files store it)."""
    evicted = _evictions(replay)
    if not evicted:
        return None
    texts = [replay.files[path] for path in replay.files]
    found = 0
    counted = 0
    for p in evicted:
        text = message_text(trace.messages[p]).strip()
        if not text:
            continue
        counted += 1
        probes = {text[:probe], text[-probe:]}
        if any(all(pr in f or escape(pr) in f for pr in probes) for f in texts):
            found += 1
    return found / counted if counted else None


def needed_lost(replay: Replay, trace: Trace | None = None) -> int | None:
    """Facts the recorded agent used again after eviction that were lost by then
    (`ctxlab.evaluate`'s headline, Tier 1 only); None without the replayed trace."""
    from ctxlab._evaluate.evaluation import evaluate

    trace = replay.trace if replay.trace is not None else trace
    if trace is None:
        return None
    if replay.trace is None:
        replay = dataclasses.replace(replay, trace=trace)
    return evaluate(replay).needed_lost


def summarizer_tokens(replay: Replay) -> tuple[int, int]:
    """Input and output tokens of the summariser's calls, estimated from `summarize` events:
    the tokens that left the request plus the summary written, and the summary written."""
    summ_in = summ_out = 0
    for c in replay.calls:
        for e in c.events:
            if e.kind == "summarize" and e.tokens_before is not None and e.tokens_after is not None:
                written = c.by_kind.get("summary", 0)
                summ_out += written
                summ_in += max(0, e.tokens_before - e.tokens_after + written)
    return summ_in, summ_out


def summary(
    replay: Replay,
    trace: Trace,
    *,
    model: str | None = None,
    window: int | None = None,
    price: Price | None = None,
) -> dict[str, Any]:
    """One flat record of every metric (the `ctxlab compare --json` row). `price` prices the
    model instead of genai-prices (needed for a model it does not know); costs are null when
    there is neither, and `price_source` says where the price came from."""
    frame = replay.turns
    n = frame.height
    name = model_of(trace, model)
    if window is None:
        window = lookup_profile(name, None if model else trace.provider).max_input_tokens
    cache = cache_frame(replay, trace, model, price)
    _, exact = common_prefixes(replay)
    events = replay.event_list
    by_kind: dict[str, int] = {}
    removed: dict[str, int] = {}
    for e in events:
        by_kind[e.kind] = by_kind.get(e.kind, 0) + 1
        if e.tokens_before is not None and e.tokens_after is not None:
            removed[e.kind] = removed.get(e.kind, 0) + (e.tokens_before - e.tokens_after)
    summ_in, summ_out = summarizer_tokens(replay)
    orphans = [getattr(c, "orphans", None) for c in replay.calls]
    rates = rates_for(name, price)
    costs = {}
    if rates is not None and n:
        costs["cost_usd"] = float(cache["cost_usd"].sum())
        costs["cost_usd_with_cache"] = float(cache["cost_usd_with_cache"].sum())
        summariser_cost = (summ_in * rates.price.input + summ_out * rates.price.output) / 1e6
        costs["summarizer_cost_usd"] = summariser_cost
    mean = frame["context_tokens"].mean()  # of an Int64 column: a float, None without rows
    return {
        "trace_id": replay.trace_id,
        "policy": replay.policy,
        "model": name,
        "window": window,
        "turns": n,
        "peak_context_tokens": int_max(frame["context_tokens"]),
        "cumulative_input_tokens": int(frame["context_tokens"].sum()) if n else 0,
        "mean_input_tokens": mean if isinstance(mean, float) else 0.0,
        "raw_overflow_turns": int((frame["baseline_tokens"] > window).sum())
        if window and n
        else None,
        "overflow_turns": int((frame["context_tokens"] > window).sum()) if window and n else None,
        "events": len(events),
        "events_by_kind": by_kind,
        "tokens_removed_by_kind": removed,
        "tokens_removed_per_event": {k: removed[k] / by_kind[k] for k in removed if by_kind[k]},
        "summarizer_input_tokens": summ_in,
        "summarizer_output_tokens": summ_out,
        "cost_usd": costs.get("cost_usd"),
        "cost_usd_with_cache": costs.get("cost_usd_with_cache"),
        "summarizer_cost_usd": costs.get("summarizer_cost_usd"),
        "price_source": _price_source(rates),
        "cache_read_tokens": int(cache["cache_read_tokens"].sum()) if n else 0,
        "cache_breaks": int(cache["cache_break"].sum()) if n else 0,
        "rebilled_tokens": int(cache["rebilled_tokens"].sum()) if n else 0,
        "cache_exact": exact,
        **_billed(replay, n),
        "orphan_turns": None if any(o is None for o in orphans) else sum(1 for o in orphans if o),
        "goal_retention": goal_retention(replay, trace),
        "references_after_eviction": references_after_eviction(replay, trace),
        "recoverability": recoverability(replay, trace),
        "needed_lost": needed_lost(replay, trace),
    }


def _billed(replay: Replay, n: int) -> dict[str, Any]:
    """The bill beside the policy's count (`ctxlab._cost.billing`): how it was counted, billed input
    summed over the calls, and the calls where the policy's count stayed under its trigger /
    window while the bill passed it (null when the policy has no such threshold)."""
    billing = replay.billing
    known = [t for t in billing.tokens if t is not None]

    def flagged(values: list[bool | None]) -> int | None:
        seen = [v for v in values if v is not None]
        return sum(seen) if seen else None

    return {
        "billing_method": billing.method,
        "billed_input_tokens": sum(known) if n and len(known) == n else None,
        "late_trigger_turns": flagged(billing.late_trigger),
        "would_overflow_turns": flagged(billing.would_overflow),
    }


def _price_source(rates: Rates | None) -> str | None:
    """Where the costs' prices come from (and since when, if dated), to cite with a figure."""
    if rates is None:
        return None
    day = rates.price.date
    return rates.price.source + (f", as of {day}" if day else "")


__all__ = [
    "cache_frame",
    "common_prefixes",
    "goal_retention",
    "needed_lost",
    "recoverability",
    "references_after_eviction",
    "summary",
]
