"""Request-only stages written once, as a rule over items: the engine derives from that rule
both the requests a plain replay sends and the count-only form a slider draws.

Masking old observations, forgetting the middle of the history: each of these stages decides,
at every call, which items of its input it edits, from the items alone and a horizon that
only moves forward as the input grows. A `RuleStage` says just that, in three parts:

* `observe(new)`: per item, as the input grows, whether it *ranks* (the horizon counts ranked
  items, e.g. observations) and whether it is edited once the horizon passes it (`WINDOW`),
  as soon as it arrives (`ALWAYS`, a result tagged for removal) or never (`NEVER`);
* `bounds(length, ranked)`: the horizon at a call, `[lo, hi)` over the ranked items (over
  every item when the stage does not `ranks`), from the input's length and ranked count. It
  is written with numpy's elementwise functions, so the same code takes one call's numbers
  (the plain replay) or every call's arrays (the count-only form);
* `edit(item)`: what is sent in an edited item's place; a stage that `drops` sends nothing
  in place of its whole span (and reads no codes).

`RuleStage.apply` makes the request from that (incrementally while the input only grows) and
records one event per call over the positions edited for the first time. `rule_counts` gives
every call's counts and events when the stage is its policy's only one, by prefix sums over
the history's items (their codes, kept per trace and rule) and the horizon of every call at
once: `StagePolicy.counts_only` uses it for any stage whose class keeps the engine's `apply`,
so a subclass that changes the rule gets a form of its new rule, and one that overrides
`apply` gets the plain replay. tests/test_fast_paths.py checks the two against each other.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from langchain_core.messages import ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._messages import KINDS
from ctxlab._replay.policies._engine_counts import RunningCount, appended, extended, mark
from ctxlab._replay.policies._engine_facts import TraceFacts, facts, turn_table
from ctxlab._replay.policies.base import Event, make_event
from ctxlab._replay.policies.counts_only import (
    CallCounts,
    cumulative,
    fed_lengths,
    raw_counts,
)

if TYPE_CHECKING:
    from ctxlab._replay.policies._engine_counts import Mark
    from ctxlab._replay.policies.engine import Context, Item, StagePolicy
    from ctxlab._trace import Trace

NEVER, WINDOW, ALWAYS = 0, 1, 2
"""What `RuleStage.observe` says of an item: never edited, edited once the horizon passes
it, edited as soon as it arrives."""
RANKED = 4
"""Added to an item's code when the horizon counts it (`RuleStage.ranks`)."""


class RuleStage:
    """Base of a request-only stage written as a rule (see the module); a subclass sets the
    class variables, `reason` (the events' reason) and the rule's three methods, and
    declares its own `capabilities`."""

    ranks: ClassVar[bool] = False
    """The horizon counts ranked items (observations), not every item."""
    drops: ClassVar[bool] = False
    """Edited items leave the request (every item of the span), instead of `edit`'s copy."""
    past_results: ClassVar[bool] = False
    """The horizon's end moves forward past tool results, so the request keeps no result
    without its call."""
    event: ClassVar[str] = "mask_observations"
    """The kind of the events the stage records."""
    horizon: ClassVar[tuple[str, ...]] = ()
    """The attributes only `bounds` reads: the history's codes and edits are kept per trace
    and the stage's other plain attributes, so a slider that moves these reuses them."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        self.reported: set[int] = set()
        self.counted = RunningCount()  # the inputs' tokens, for the events
        self._in: list[Item] | Mark | None = None
        self._out: list[Item] = []
        self._codes: list[int] = []
        self._ranked: list[int] = []  # input indices of the ranked items
        self._span = (0, 0)  # the edited span, input indices, at the last call
        self._saved = 0  # tokens the edited items no longer cost

    def restart(self) -> None:
        """Forget what `observe` learnt: the input is not the previous one plus new items."""

    def observe(self, new: Sequence[Item]) -> list[int]:
        """Per new item of the input, its code (`NEVER`, `WINDOW`, `ALWAYS`) plus `RANKED`
        when the horizon counts it."""
        raise NotImplementedError

    def bounds(self, length: Any, ranked: Any) -> tuple[Any, Any]:
        """The horizon `[lo, hi)` for an input of `length` items, `ranked` of them ranked
        (ints, or arrays of every call's); it never falls as the input grows."""
        raise NotImplementedError

    def edit(self, it: Item) -> Item:
        """What is sent in place of an edited item (same position, its own bucket)."""
        raise NotImplementedError

    def _indices(self, items: list[Item], lo: int, hi: int) -> tuple[int, int]:
        """The horizon as input indices: ranked numbers mapped to the ranked items' indices
        (past the last: the input's end), moved past tool results if the stage says so."""
        n = len(items)
        if self.ranks:
            ranked = self._ranked
            lo, hi = (ranked[x] if 0 <= x < len(ranked) else (0 if x < 0 else n) for x in (lo, hi))
        lo = min(max(lo, 0), n)
        hi = min(max(hi, lo), n)
        if self.past_results:
            while hi < n and isinstance(items[hi].msg, ToolMessage):
                hi += 1
        return lo, hi

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        """The request: the input with the rule's edits (see the module)."""
        new = appended(self._in, items)
        if new is None:
            self.restart()
            self._codes, self._ranked = [], []
        base = len(self._codes)
        for j, code in enumerate(self.observe(items if new is None else new), base):
            if code & RANKED:
                self._ranked.append(j)
            self._codes.append(code & 3)
        lo, hi = self.bounds(len(items), len(self._ranked))
        span = self._indices(items, int(lo), int(hi))
        grows = new is not None and span[0] == self._span[0] and span[1] >= self._span[1]
        if self.drops:
            out, fresh = self._dropped(items, span, grows, ctx)
        else:
            out, fresh = self._edited(items, span, grows, base, ctx)
        self._in, self._out, self._span = mark(items), out, span
        if fresh:
            before = self.counted(items, ctx.count, ctx.tok)
            ctx.events.append(
                Event(
                    self.event,
                    ctx.turn.index,
                    tuple(fresh),
                    before,
                    before - self._saved,
                    None,
                    self.reason,
                )
            )
        return out

    def _dropped(
        self, items: list[Item], span: tuple[int, int], grows: bool, ctx: Context
    ) -> tuple[list[Item], list[int]]:
        """The input without its span, and the positions dropped for the first time."""
        lo, hi = span
        if grows:
            start = max(lo, self._span[1])
            fresh = [
                it.pos
                for it in items[start:hi]
                if it.pos is not None and it.pos not in self.reported
            ]
            self.reported.update(fresh)
        else:
            gone = {it.pos for it in items[lo:hi] if it.pos is not None}
            fresh = list(gone - self.reported)
            self.reported = gone
        if fresh:  # the span's tokens, from the input's prefix sums
            every = ctx.sums.prefix_sums(items)[0]
            self._saved = every[hi] - every[lo]
        return [*items[:lo], *items[hi:]], sorted(fresh)

    def _edited(
        self, items: list[Item], span: tuple[int, int], grows: bool, base: int, ctx: Context
    ) -> tuple[list[Item], list[int]]:
        """The input with its edited items replaced (in place of the previous output while
        the input only grows), and the positions edited for the first time."""
        lo, hi = span
        codes = self._codes
        out: list[Item]
        if grows:
            out = grown = extended(self._out, items[len(self._out) :], edits=True, owner=self)
            start = max(lo, self._span[1])
            todo = sorted(
                {i for i in range(start, hi) if codes[i] == WINDOW}
                | {i for i in range(base, len(items)) if codes[i] == ALWAYS}
            )
            if todo:  # edited from the first one on
                grown.same = min(grown.same, todo[0])
        else:
            out = list(items)
            self._saved = 0
            todo = [
                i
                for i, code in enumerate(codes)
                if code == ALWAYS or (code == WINDOW and lo <= i < hi)
            ]
        touched = []
        tok = ctx.tok
        for i in todo:
            it = items[i]
            out[i] = self.edit(it)
            self._saved += tok(it.msg) - tok(out[i].msg)
            if it.pos is not None:
                touched.append(it.pos)
        if grows:
            fresh = [p for p in touched if p not in self.reported]
            self.reported.update(fresh)
        else:
            fresh = [p for p in touched if p not in self.reported]
            if fresh or len(touched) != len(self.reported):
                self.reported = set(touched)
        return out, fresh


def _plain(value: object) -> bool:
    """A number, text, bool, None, or a tuple or frozenset of such: a value that is the same
    setting whenever it compares equal (an object's identity may be reused once freed)."""
    if isinstance(value, (tuple, frozenset)):
        return all(map(_plain, value))
    return value is None or isinstance(value, (bool, int, float, str))


def rule_key(stage: RuleStage) -> Hashable | None:
    """What the history's codes and edits under `stage` may depend on: its class and its
    public attributes but the horizon's and the run's (`reason`, `reported`, `counted`);
    None (nothing kept) when one is not a plain value."""
    skip = {*stage.horizon, "reason", "reported", "counted"}
    found = {k: v for k, v in vars(stage).items() if not k.startswith("_") and k not in skip}
    if not all(map(_plain, found.values())):
        return None
    return (type(stage), tuple(sorted(found.items())))


class HistoryRule:
    """The history's items under a rule (`rule_tables`): where the ranked, `WINDOW` and
    `ALWAYS` items are, and prefix sums, per bucket, of what edits take out and put in."""

    def __init__(self, history: TraceFacts, stage: RuleStage, fed: np.ndarray) -> None:
        from ctxlab._replay.policies.engine import history_items

        items = history_items(history)
        stage.restart()
        # observed in the pieces a run hands the stage (what each call's input adds), so a
        # rule that reads a piece as a whole says here what it says there; items no call
        # reaches (after the last one) are never edited
        found: list[int] = []
        starts = np.concatenate(([0], fed))[:-1].tolist()
        for start, stop in zip(starts, fed.tolist(), strict=True):
            found += stage.observe(items[start:stop])
        found += [NEVER] * (len(items) - len(found))
        codes = np.asarray(found, dtype=np.int64)
        self.ranked = np.flatnonzero(codes & RANKED)
        self.rank_prefix = cumulative(codes & RANKED > 0)
        codes &= 3
        self.window, self.always = np.flatnonzero(codes == WINDOW), np.flatnonzero(codes == ALWAYS)
        toks = np.asarray(history.counts, dtype=np.int64)
        kinds = np.asarray(history.kinds, dtype=object)
        self.out: dict[int, dict[str, np.ndarray]] = {}  # code -> bucket -> tokens taken out
        self.into: dict[int, dict[str, np.ndarray]] = {}  # code -> bucket -> tokens put in
        cpt = history.chars_per_token
        for code in (WINDOW, ALWAYS):
            chosen = codes == code
            self.out[code] = {
                k: cumulative(np.where(chosen & (kinds == k), toks, 0)) for k in KINDS
            }
            made = np.zeros(len(codes), dtype=np.int64)
            made_kinds = np.full(len(codes), "", dtype=object)
            if not stage.drops:
                for i in np.flatnonzero(chosen).tolist():
                    edited = stage.edit(items[i])
                    made[i], made_kinds[i] = tk.message_tokens(edited.msg, cpt), edited.kind
            self.into[code] = {k: cumulative(np.where(made_kinds == k, made, 0)) for k in KINDS}
        self.every = {k: cumulative(np.where(kinds == k, toks, 0)) for k in KINDS}
        self.next_non_tool = np.arange(len(codes) + 1)
        if stage.past_results:
            for i in range(len(codes) - 1, -1, -1):
                if isinstance(history.messages[i], ToolMessage):
                    self.next_non_tool[i] = self.next_non_tool[i + 1]


def rule_tables(history: TraceFacts, stage: RuleStage, fed: np.ndarray) -> HistoryRule:
    """`HistoryRule` of `stage` over the history fed to the calls as `fed` says, kept per
    trace, counter, `rule_key` and calls."""
    key = rule_key(stage)
    if key is None:
        return HistoryRule(history, stage, fed)
    return history.kept(("rule", key, fed.tobytes()), lambda: HistoryRule(history, stage, fed))


def rule_counts(policy: StagePolicy, trace: Trace) -> CallCounts | None:
    """`policy`'s counts and events on `trace` when it runs one `RuleStage` whose class keeps
    the engine's `apply` (made as a replay makes it, so a refused setting raises as it would
    there), else None: the input at each call is the history fed so far, so each call's edited
    items are two spans of the history and its counts a few prefix sums."""
    from ctxlab._replay.policies.engine import StagePolicy

    if type(policy).start is not StagePolicy.start:
        return None  # a run of its own making: its calls are not the stage engine's
    window = policy.window_for(trace)
    stages = policy.stages(trace, window)
    if len(stages) != 1 or not isinstance(stages[0], RuleStage):
        return None
    stage = stages[0]
    if type(stage).apply is not RuleStage.apply:
        return None  # requests of its own making, not the rule's
    cpt = policy.counter_chars_per_token(trace)
    history = facts(trace, cpt)
    fed = fed_lengths(trace)
    rule = rule_tables(history, stage, fed)
    raw = raw_counts(history, fed, tk.tool_schema_tokens(trace.tools, cpt))
    lo, hi = (
        np.broadcast_to(np.asarray(x, dtype=np.int64), fed.shape)
        for x in stage.bounds(fed, rule.rank_prefix[fed] if stage.ranks else fed)
    )
    if stage.ranks:  # ranked numbers to indices, as `RuleStage._indices`
        at = np.append(rule.ranked, 0)
        lo, hi = (
            np.where(x < 0, 0, np.where(x < rule.rank_prefix[fed], at[x.clip(0, len(at) - 1)], fed))
            for x in (lo, hi)
        )
    lo = np.minimum(np.maximum(lo, 0), fed)
    hi = np.minimum(np.maximum(hi, lo), fed)
    if stage.past_results:
        hi = np.minimum(rule.next_non_tool[hi], fed)
    by_kind = dict(raw.by_kind)
    if stage.drops:
        for k in KINDS:
            by_kind[k] = by_kind[k] - (rule.every[k][hi] - rule.every[k][lo])
        messages = fed - (hi - lo)
    else:
        for k in KINDS:
            for code, upto, since in ((WINDOW, hi, lo), (ALWAYS, fed, 0)):
                out, into = rule.out[code][k], rule.into[code][k]
                by_kind[k] = by_kind[k] - (out[upto] - out[since]) + (into[upto] - into[since])
        messages = fed.copy()
    context = np.add.reduce([by_kind[k] for k in KINDS])
    events = _events(trace, stage, rule, fed, lo, hi, raw.context_tokens, context)
    return CallCounts(messages, context, by_kind, raw.baseline_tokens, events)


def _events(
    trace: Trace,
    stage: RuleStage,
    rule: HistoryRule,
    fed: np.ndarray,
    lo: np.ndarray,
    hi: np.ndarray,
    before: np.ndarray,
    after: np.ndarray,
) -> list[list[Event]]:
    """Each call's event over the positions it edits that the call before did not (what the
    running stage reports: it remembers exactly the last call's edited positions)."""
    events: list[list[Event]] = [[] for _ in fed]
    spans = rule.window if not stage.drops else None
    prev_lo, prev_hi, prev_fed = (np.concatenate(([0], x))[:-1] for x in (lo, hi, fed))
    empty = prev_hi <= prev_lo
    # this call's span without the last one's: before it, and after it
    first = (lo, np.where(empty, hi, np.minimum(hi, np.maximum(lo, prev_lo))))
    second = (np.where(empty, hi, np.maximum(lo, prev_hi)), hi)

    def between(a: np.ndarray, b: np.ndarray, where: np.ndarray | None) -> tuple[Any, Any]:
        """Items `[a, b)` of the history as positions, per call (a flat array) and the call
        of each: every item, or those of `where`."""
        if where is not None:
            a, b = np.searchsorted(where, a), np.searchsorted(where, b)
        size = np.maximum(b - a, 0)
        call = np.repeat(np.arange(len(a)), size)
        flat = np.arange(int(size.sum())) - np.repeat(np.cumsum(size) - size, size) + a[call]
        return (flat if where is None else where[flat]), call

    found = [between(*first, spans), between(*second, spans)]
    if not stage.drops:
        found.append(between(prev_fed, fed, rule.always))
    where = np.concatenate([f[0] for f in found])
    call = np.concatenate([f[1] for f in found])
    if not len(call):
        return events
    order = np.lexsort((where, call))  # by call, then in input order
    where, call = where[order].tolist(), call[order]
    cuts = (np.flatnonzero(np.diff(call)) + 1).tolist()
    index = turn_table(trace).index.tolist()
    b4, af = before.tolist(), after.tolist()
    for t, start, stop in zip(
        call[[0, *cuts]].tolist(), [0, *cuts], [*cuts, len(where)], strict=True
    ):
        events[t].append(
            make_event(
                stage.event, index[t], tuple(where[start:stop]), b4[t], af[t], None, stage.reason
            )
        )
    return events


__all__ = [
    "ALWAYS",
    "NEVER",
    "RANKED",
    "WINDOW",
    "HistoryRule",
    "RuleStage",
    "rule_counts",
    "rule_key",
    "rule_tables",
]
