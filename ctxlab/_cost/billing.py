"""Billed tokens of a replay: what the provider would have charged for each request the policy
built, beside the policy's own count, and the turns where the two disagree about a threshold.

A policy decides with its harness's counter (deepagents' `ceil(chars/4)+3`, 3.3 characters per
token for Claude); the bill is counted by the provider's tokenizer. `bill(replay, biller)`
counts every replayed request with a `ctxlab._cost.calibration.Biller` (exact for OpenAI models,
calibrated against recorded usage, else estimated) and flags the turns where the policy's
count stayed under a threshold the billed count passed:

* `late_trigger`: the policy's count is below its `trigger` but billed tokens reach it (the
  compaction fires later than a user tuning the trigger believes);
* `would_overflow`: the policy's count fits the `window` but billed tokens exceed it (the
  provider would refuse the request the policy thought fits).

Thresholds come from the policy itself (`policy.thresholds(trace)`); a flag is None where the
policy has no such threshold.

The requests are those `ctxlab._replay.requests.Requests` rebuilds from the replay's events, message
for message, but counted incrementally: a request is the previous one plus the messages fed
since, with the messages whose status an event changed at this turn (or whose change was
rolled back) re-counted, so a replay of n calls costs O(n + edits) lookups, not the O(n^2) of
rebuilding every request. Each distinct message form is counted once (keyed by position,
status, event and the deepagents reasoning cut-off), so a masked result rebuilt at every turn
is tokenised once. `tests/test_billing.py` checks the sum against a direct count of every
rebuilt request.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab._replay.requests import ABSENT, Requests
from ctxlab._weak_memo import WeakMemo

if TYPE_CHECKING:
    from ctxlab._replay.replay import Replay
    from ctxlab._trace import Trace

COST_METHODS = frozenset({"exact", "calibrated"})
"""Methods whose billed tokens replace the policy's count in costs (`ctxlab._evaluate.metrics`): an
`estimated` bill is a default per model family, no better than the policy's own count."""


class BillerLike(Protocol):
    """What billing needs of a `ctxlab._cost.calibration.Biller`."""

    method: str

    def message(self, m: BaseMessage) -> int:
        """Billed tokens one message adds to a request."""
        ...

    def fixed(self, tools: Sequence[dict]) -> int:
        """Billed tokens every request carries: priming plus the tool schemas."""
        ...

    def count(self, messages: Sequence[BaseMessage], tools: Sequence[dict]) -> int:
        """Billed tokens of a whole request (`fixed` plus each message)."""
        ...


@dataclass(frozen=True, slots=True)
class Billing:
    """Billed tokens per call of one replay, the method that counted them, and the flags
    (None where the policy has no trigger / window, or nothing was billed)."""

    method: str | None
    tokens: list[int | None]
    late_trigger: list[bool | None]
    would_overflow: list[bool | None]

    @staticmethod
    def unknown(n: int) -> Billing:
        """No bill (a replay without its trace): every value null."""
        none: list[Any] = [None] * n
        return Billing(None, list(none), list(none), list(none))


def request_tools(replay: Replay) -> tuple[list[dict], int]:
    """The tool schemas the replayed requests carry, and tokens to add for schemas given only
    as a count (deepagents' `tools=N`): the trace's recorded schemas for catalogue policies,
    the `tools` setting's for deepagents (`ctxlab._replay.policies.deepagents.tool_schemas`, what
    its
    own count is made of)."""
    trace = replay.trace
    assert trace is not None
    if replay.policy != "deepagents":
        return list(trace.tools), 0
    from ctxlab._replay.policies.deepagents import tool_schemas

    return tool_schemas(replay.params.get("tools", "trace"), list(trace.tools))


def billed_tokens(replay: Replay, biller: BillerLike) -> list[int]:
    """Billed tokens of each call's request, as the policy built it (see the module docstring
    for how it is counted incrementally); equal at every call to
    `biller.count([m.message for m in Requests(replay).at(turn)], tools)`."""
    if not replay.calls:
        return []
    requests = Requests(replay)
    tools, tools_count = request_tools(replay)
    fixed = biller.fixed(tools) + tools_count
    deep = requests.deep
    start = 0
    if deep is not None:
        fixed += biller.message(deep.system)
        start = 1 if requests.system_source is not None else 0
    recheck: dict[int, set[int]] = {}
    """Turn -> positions whose status a change starts (or a rolled-back change ends) at it."""
    for p, changes in requests.changes.items():
        for change in changes:
            recheck.setdefault(change.turn, set()).add(p)
            if change.until is not None:
                recheck.setdefault(change.until + 1, set()).add(p)
    moves = {0}
    """Turns where the summaries in the request may change: one is made (and, for JetBrains'
    static checkpoints, the next call shows all again) or a rolled-back one ends."""
    for change in requests.summaries:
        moves.update((change.turn, change.turn + 1))
        if change.until is not None:
            moves.add(change.until + 1)
    messages, message = requests.messages, biller.message
    special = set(requests.changes) | set(requests.base)
    """Positions an event or deepagents' state may send other than as recorded."""
    if requests.system_replaced:
        special.add(0)
    reasoned = (
        [
            p
            for p, m in enumerate(messages)
            if isinstance(m, AIMessage) and isinstance(m.content, list)
        ]
        if deep is not None
        else []
    )
    """deepagents: AIMessages whose reasoning its summaries may drop (`reasoning_cutoff`)."""
    reasons = set(reasoned)
    # this bill's own counts of forms and summaries, keyed by the `id()` of events the replay
    # holds while the bill is made: not a cache of a trace, gone when the bill is done
    forms: dict[tuple[Any, ...], int] = {}
    summaries: dict[int, int] = {}
    current: dict[int, int] = {}
    total = 0
    fed = start
    truncated: set[int] = set()
    cutoff = 0
    inserted = 0
    out = []
    for turn, position in enumerate(requests.positions):
        todo = set(recheck.get(turn, ()))
        now_truncated = requests.truncated.get(turn, set())
        todo |= now_truncated ^ truncated
        truncated = now_truncated
        if deep is not None:
            moved = requests.reasoning_cutoff(turn)
            if moved != cutoff:
                low, high = min(moved, cutoff), max(moved, cutoff)
                todo.update(reasoned[bisect_left(reasoned, low) : bisect_left(reasoned, high)])
                cutoff = moved
        if position > fed:
            todo.update(range(fed, position))
            fed = position
        for p in todo:
            if p < start or p >= position:
                continue
            if p not in special and p not in truncated and (p >= cutoff or p not in reasons):
                value = message(messages[p])  # sent as recorded: its own memoised count
                total += value - current.get(p, 0)
                current[p] = value
                continue
            status, event = requests.status(p, turn)
            value = 0
            if status not in ABSENT:
                key = (
                    p,
                    status,
                    id(event) if event is not None else None,
                    p in truncated,
                    deep is not None and p < cutoff and isinstance(requests.messages[p], AIMessage),
                )
                value = forms.get(key, -1)
                if value < 0:
                    value = forms[key] = biller.message(requests.form(p, status, event, turn))
            total += value - current.get(p, 0)
            current[p] = value
        if turn in moves:
            inserted = 0
            for change in requests.summaries_at(turn):
                count = summaries.get(id(change))
                if count is None:
                    count = biller.message(requests.summary_message(change))
                    summaries[id(change)] = count
                inserted += count
        out.append(fixed + total + inserted)
    return out


def recount(replay: Replay, biller: BillerLike) -> list[int]:
    """Billed tokens of each call by rebuilding and counting every request in full: O(n^2),
    the reference `billed_tokens` is tested against (and what a reader can trust)."""
    if not replay.calls:
        return []
    requests = Requests(replay)
    tools, tools_count = request_tools(replay)
    return [
        biller.count([m.message for m in requests.at(turn)], tools) + tools_count
        for turn in range(len(replay.calls))
    ]


def levels(replay: Replay, trace: Trace) -> dict[str, int]:
    """The policy's `trigger` and `window` on `trace` (those it has), from its own
    `thresholds(trace)` (catalogue presets: `StagePolicy.thresholds`); the policy is rebuilt
    from its name and parameters when the replay does not carry it."""
    from ctxlab._view.plots.annotations import thresholds

    policy = replay.source_policy
    if policy is None:
        from ctxlab._replay.policies.catalog import get

        try:
            policy = get(replay.policy, **replay.params)
        except (TypeError, ValueError):
            return {}
    found = thresholds(policy, trace)
    return {k: found[k] for k in ("trigger", "window") if k in found}


def flags(
    counted: Sequence[int], billed: Sequence[int | None], found: dict[str, int]
) -> tuple[list[bool | None], list[bool | None]]:
    """(`late_trigger`, `would_overflow`) per call from the policy's counts, the billed counts
    and the policy's levels (`levels`); None where a level or the bill is missing."""
    trigger, window = found.get("trigger"), found.get("window")
    late: list[bool | None] = []
    over: list[bool | None] = []
    for own, paid in zip(counted, billed, strict=True):
        late.append(None if trigger is None or paid is None else own < trigger <= paid)
        over.append(None if window is None or paid is None else own <= window < paid)
    return late, over


def bill(replay: Replay, biller: BillerLike | None = None, store: Any = None) -> Billing:
    """Billed tokens and flags of `replay` (`biller` defaults to
    `ctxlab._cost.calibration.biller_for(replay.trace, store)`); every value null when the replay
    carries no trace."""
    trace = replay.trace
    n = len(replay.calls)
    if trace is None:
        return Billing.unknown(n)
    if biller is None:
        biller = biller_of(trace, store)
    tokens: list[int | None] = list(billed_tokens(replay, biller))
    counted = [c.context_tokens for c in replay.calls]
    found = levels(replay, trace)
    harness = replay.counted_as
    if harness is not None and harness.method != "file":
        # a harness preset decides on its estimate of what the harness counted (call by call
        # for one that counts from the previous call's usage): compare the bill with that
        # estimate and with the trigger in the same terms
        counted = [harness.harness_at(c.context_tokens, c.turn) for c in replay.calls]
        found = {k: harness.harness(v) if k == "trigger" else v for k, v in found.items()}
    late, over = flags(counted, tokens, found)
    return Billing(biller.method, tokens, late, over)


def cost_inputs(replay: Replay) -> tuple[list[int], list[float]]:
    """Input tokens each call is priced at, and the factor from the policy's count to them:
    billed tokens where the bill is known (`COST_METHODS`), else the policy's count (factor 1).

    The prompt-cache simulation finds common prefixes in the policy's counts (`Call.request`);
    a prefix is priced at the same factor as its request (billed over counted), since billing
    counts whole requests, not each prefix."""
    counted = [c.context_tokens for c in replay.calls]
    billing = replay.billing
    if billing.method not in COST_METHODS:
        return counted, [1.0] * len(counted)
    inputs = [
        own if paid is None else paid for own, paid in zip(counted, billing.tokens, strict=True)
    ]
    return inputs, [paid / own if own else 1.0 for own, paid in zip(counted, inputs, strict=True)]


_BILLERS: WeakMemo[BillerLike] = WeakMemo()
"""Per live trace: its biller. `biller_for` fits a calibration from the trace's usage, which a
slider re-replaying the same trace must not pay again."""


def biller_of(trace: Trace, store: Any = None) -> BillerLike:
    """`ctxlab._cost.calibration.biller_for(trace, store)`, remembered per live trace (without a
    store: a store may learn calibrations between calls)."""
    from ctxlab._cost.calibration import biller_for

    if store is not None:
        return biller_for(trace, store)
    return _BILLERS.setdefault(trace, lambda: biller_for(trace))


__all__ = [
    "COST_METHODS",
    "Billing",
    "BillerLike",
    "bill",
    "cost_inputs",
    "biller_of",
    "billed_tokens",
    "flags",
    "levels",
    "recount",
    "request_tools",
]
