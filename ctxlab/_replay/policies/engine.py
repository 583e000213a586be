"""Write a compaction policy: the stage API every catalogue policy is built on.

A policy is a frozen dataclass of parameters that subclasses `StagePolicy` and returns, from
`stages(trace, window)`, a list of fresh `Stage` objects for one trace. At each recorded model
call the engine hands the first stage the history fed so far as a list of `Item`s
`(pos, msg, kind)`; each stage returns the request it would send, and the next stage works on
that. The engine then counts the request's tokens, per bucket (`kind`), and the parts it shares
with the previous request (for the prompt-cache simulation), so a stage only decides *which*
messages to send and *what* they say.

    @dataclass(frozen=True)
    class KeepLast(StagePolicy):
        name: ClassVar[str] = "keep-last"
        n: int = 20

        def stages(self, trace, window):
            return [KeepLastStage(self.n)]

    class KeepLastStage:
        def __init__(self, n):
            self.n = n

        def apply(self, items, ctx):
            start = safe_start(items, max(1, len(items) - self.n))
            return items[:1] + items[start:]  # the first message, then the newest ones

`ctxlab.policies.register(KeepLast, "keep-last")` makes the name known to `get`,
`ctxlab.sweep` and the explorer in this process; a `ctxlab.policies` entry point in an
installed package also to the `ctxlab` command (`replay`, `compare`, `sweep --policy`,
`policies`). docs/writing-a-policy.md is a complete worked example.

Rules a stage keeps:

* State lives in **full-history positions** (`Item.pos`: a summary's cutoff, the results it
  masked), never in message objects of another stage. That is what lets stages compose
  open-loop in a `Pipeline`: each works on whatever the previous one produced.
* An edited message is made once: `replaced(message, key, make)` memoises `make()` per
  original message, so the same edit yields the same object on every call (counted once, and
  seen as the same part by the prompt-cache simulation). Its item's `kind` says which bucket
  it is counted in (`"stubs"` for a placeholder, `"summary"` for a summary).
* Tool calls keep their results: cut with `safe_start` / `safe_cutoff_backward`
  (`StageCall.orphans` counts calls and results left without their pair in a request; a
  provider would reject it).
* What a stage did is an `Event` appended to `ctx.events` (its `kind` one of
  `ctxlab._replay.policies.base.EVENT_KINDS`), with the full-history positions it touched and the
  token counts before and after (`ctx.count`). A stage that compacts persistently (the
  compacted history replaces the old one for later calls) subclasses `RebuildStage`, whose
  `commit` records the event for it.

A stage may be plain (recompute its request from `items` on every call): the engine's own
bookkeeping is incremental. Stages that must be fast on long traces compare their input with
the previous call's through `appended` and do only the new messages' work. What a stage
promises the engine it declares in `capabilities` on its own class (`declares`; never
inherited): `KEEPS_MARKS` (it keeps `mark(items)`, never `items`, so the run grows its
history in place instead of copying it for the next call; without it, a list a stage was
given never changes under it), `JUMPS` (a threshold stage the count-only form may run only
where it can act) and `acts_over("trigger")` (a request-only stage that acts only over the
token threshold in that attribute, whose requests the count-only form reuses across
thresholds). tests/test_fast_paths.py checks every fast path against the plain replay.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple, Protocol, TypeVar, cast

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab._cost import tokens as tk
from ctxlab._cost.profiles import profile as lookup_profile
from ctxlab._errors import UnsupportedSettingError
from ctxlab._messages import AUTO, chars_per_token, kind_of, message_text, summary_message
from ctxlab._replay.policies._engine_counts import (
    Grown,
    Mark,
    RunningCount,
    Sums,
    TokenCache,
    appended,
    extended,
    grown,
    mark,
)
from ctxlab._replay.policies._engine_facts import Meta, TraceFacts, facts, meta_of
from ctxlab._replay.policies._engine_request import RequestTotals
from ctxlab._replay.policies.base import Call, Event, Files, Request
from ctxlab._replay.policies.param_ranges import check_shared

if TYPE_CHECKING:
    from ctxlab._replay.policies.counts_only import CallCounts
    from ctxlab._trace import Trace, Turn
    from ctxlab.summarizers import Summarizer


class Item(NamedTuple):
    """One message of a request: its full-history position (None for inserted ones, like a
    summary), the message as sent, and its token bucket (`ctxlab._messages.KINDS`).

    A stage that edits a message keeps its `pos` and gives the copy the bucket it belongs to:
    `Item(it.pos, replaced(it.msg, key, make), "stubs")` for a placeholder."""

    pos: int | None
    msg: BaseMessage
    kind: str

    def __eq__(self, other: object) -> bool:
        """Position and bucket first, then the message's content, the message last: a masked
        or cleared copy differs in its bucket, and two inserted summaries (no position, one
        bucket) in their text, so comparing requests rarely reaches pydantic's (slow) message
        equality."""
        if not isinstance(other, tuple):
            return NotImplemented
        if self[0] != other[0] or self[2] != other[2]:
            return False
        a, b = self[1], other[1]
        return a is b or (getattr(a, "content", None) == getattr(b, "content", None) and a == b)

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    def __hash__(self) -> int:
        """The tuple's hash (a class that defines `__eq__` alone is unhashable)."""
        return tuple.__hash__(self)


@dataclass
class Context:
    """What a stage may read and write during one model call (one `Context` per call, shared
    by the call's stages)."""

    turn: Turn
    """The recorded model call being replayed (`turn.index`, `turn.position`: the number of
    history messages before it)."""
    trace: Trace
    summarizer: Summarizer
    """Writes summaries: `summarizer.summarize(messages, prompt)`; deterministic offline
    summarisers make replays reproducible."""
    files: Files
    """The run's virtual filesystem, for evicted or offloaded content."""
    events: list[Event]
    """Append one `Event` per action; the replay reports them on this call."""
    chars_per_token: float
    """The counter of the reported token counts (`StagePolicy.counter_chars_per_token`)."""
    tools_tokens: int
    """Tokens of the trace's tool schemas, sent with every request."""
    window: int | None
    """The model's input window as the policy resolved it (None when unknown)."""
    tok: TokenCache
    """The engine's per-message counter (use `tokens`)."""
    sums: Sums
    """The engine's request counter (use `count`)."""

    def tokens(self, message: BaseMessage, chars_per_token: float | None = None) -> int:
        """Approximate tokens of one message (measured once per object)."""
        if chars_per_token is None or chars_per_token == self.chars_per_token:
            return self.tok(message)
        return tk.message_tokens(message, chars_per_token)

    def count(self, items: Sequence[Item], *, system: bool = True, tools: bool = True) -> int:
        """Tokens of a request; LangChain middleware counts messages only (no system, no tools)."""
        every, non_system = self.sums.totals(items)
        return (self.tools_tokens if tools else 0) + (every if system else non_system)

    def threshold(self, kind: str, value: float, what: str) -> int:
        """A `("tokens", N)` / `("fraction", f)` size as tokens (fractions need a window)."""
        if kind == "fraction":
            if self.window is None:
                raise UnsupportedSettingError(
                    f"{what}: a fraction needs the model's window (pass window=N or a model "
                    "with a known profile)"
                )
            return max(1, int(self.window * value))
        return max(1, int(value))


class Stage(Protocol):
    """One step of a request pipeline, with its own state for one trace.

    `StagePolicy.stages` makes fresh ones per trace, and `apply` is called once per model
    call, in order, so a stage may keep whatever it learnt on earlier calls (in full-history
    positions)."""

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        """The request this stage sends, given the request the previous stage produced.

        Return a new list (or `items` itself when nothing changes); never mutate `items`,
        which the engine and other stages may hold."""
        ...


KEEPS_MARKS = "keeps-marks"
"""Capability of a stage that keeps of any list it is given only `mark(items)`, and of its
own outputs only what it made (`extended(..., owner=self)`): the run may then grow its
history, and the stage before it its output, in place. Without it the stage is handed
lists that never change under it (copies are made as the lists grow)."""

JUMPS = "jumps"
"""Capability of a `RebuildStage` whose `apply` returns `self.view(items)`, changing nothing
else, whenever `self.count(view, ctx)` is under its `trigger_tokens` (or, with
`trigger_messages`, whenever the view holds fewer messages; with `trigger_turns`, whenever
`turns_in(view)` is under that and counts the AIMessages after a head that holds none of the
history's), and that records events only through `commit`: its policy's count-only form
(`ctxlab._replay.policies.threshold_counts`) runs it only at the calls that reach that.
tests/test_fast_paths.py checks every stage that declares it against the plain replay."""


class ActsOver(NamedTuple):
    """The capability `acts_over(attribute)` declares (see there)."""

    attribute: str
    """The name of the stage's attribute that holds its token threshold."""


def acts_over(attribute: str) -> ActsOver:
    """Capability of a request-only stage that acts only over a token threshold, the value of
    its attribute `attribute` (`capabilities = {acts_over("trigger")}`). Its promise:

    (a) `apply` returns its input unchanged, and records no event, whenever
        `ctx.count(items) <= getattr(stage, attribute)`;
    (b) above it, the request it returns and its events (but for which positions they list,
        see (c)) depend neither on that attribute nor on earlier calls: a fresh stage at the
        same call returns the same request;
    (c) its only memory is which positions it already reported: a fresh stage's events at a
        call list every position it acts on, and a running stage's list only those no earlier
        event listed (no event when none is new).

    Its policy's count-only form (`ctxlab._replay.policies.acts_over_counts`, when it is the
    policy's only stage) then counts the calls at or under the threshold from the history's
    prefix sums, and runs a fresh stage once per call over it, remembered per trace: a new
    threshold runs the stage only at calls it never reached before. tests/test_fast_paths.py
    checks every stage that declares it against the plain replay."""
    return ActsOver(attribute)


def declared(stage: object) -> Collection[object]:
    """What `stage`'s own class lists in its `capabilities` (empty when nothing).

    Read from the class itself, never inherited: a subclass that overrides `apply` has not
    promised what its parent promised, so it gets the plain engine until it declares again.
    A `capabilities` property (a wrapper that promises what its inner stage does) is read
    from the instance."""
    found = vars(type(stage)).get("capabilities", ())
    if isinstance(found, property):
        found = found.__get__(stage)
    return cast("Collection[object]", found)


def declares(stage: object, capability: object) -> bool:
    """Whether `stage`'s own class lists `capability` in its `capabilities` (`declared`)."""
    return capability in declared(stage)


def acting_threshold(stage: object) -> str | None:
    """The attribute named by the `acts_over` capability `stage`'s own class declares, else
    None."""
    return next((c.attribute for c in declared(stage) if isinstance(c, ActsOver)), None)


def resolve_window(window: Any, trace: Trace, model: str | None = None) -> int | None:
    """`"auto"`: the trace's model window from the LangChain profile data, else None."""
    if window == AUTO:
        return lookup_profile(model or trace.model, trace.provider).max_input_tokens
    return None if window is None else int(window)


def history_items(facts: TraceFacts) -> tuple[Item, ...]:
    """The measured history as `Item`s (position, message, bucket), made once per trace and
    counter: a run feeds slices of them (items are immutable, so runs share them)."""
    return facts.kept(
        "items", lambda: tuple(map(Item, range(len(facts.messages)), facts.messages, facts.kinds))
    )


@dataclass(slots=True)
class StageCall(Call):
    """A `Call` that also says how many tool calls / results in the request lost their pair
    (0 for a well-behaved policy: a provider rejects a request with an orphan)."""

    orphans: int = 0


def count_orphans(messages: Sequence[BaseMessage]) -> int:
    """Tool results without an earlier call in the request, plus calls never answered in it
    (a provider rejects both with a 400)."""
    called: set[str | None] = set()
    answered: set[str] = set()
    bad = 0
    for m in messages:
        if isinstance(m, AIMessage):
            called.update(c["id"] for c in m.tool_calls if c.get("id"))
        elif isinstance(m, ToolMessage):
            if m.tool_call_id in called:
                answered.add(m.tool_call_id)
            else:
                bad += 1
    return bad + len(called - answered)


class StageRun:
    """A trace under a list of stages (the `PolicyRun` of every `StagePolicy`).

    Feeds the recorded history to the stages call by call and keeps the request's totals by
    the edits between consecutive requests, so a call's bookkeeping costs what changed."""

    def __init__(
        self,
        trace: Trace,
        summarizer: Summarizer,
        stages: Sequence[Stage],
        *,
        window: int | None,
        chars_per_token: float = tk.CHARS_PER_TOKEN,
    ) -> None:
        self.trace = trace
        self.summarizer = summarizer
        self.stages = list(stages)
        self.window = window
        self.cpt = chars_per_token
        self.files = Files()
        self.tools_tokens = tk.tool_schema_tokens(trace.tools, chars_per_token)
        self.history: Grown = Grown()
        """What the first stage gets: appended to in place until it is handed to a stage that
        does not declare `KEEPS_MARKS`, then copied first (`_writable`), so a stage never
        sees a list it was given change."""
        self._wary = [not declares(s, KEEPS_MARKS) for s in self.stages]
        """Per stage, whether it may keep the lists it is given (its input is then `handed`)."""
        self.baseline = self.tools_tokens
        # the history's own messages come measured (`_engine_facts`): a run measures only
        # the messages its stages make
        self.facts = facts(trace, chars_per_token)
        self.tok = TokenCache(chars_per_token, self.facts.tokens)
        self.sums = Sums(self.tok)
        # id -> `Meta` (message, (fingerprint, tokens), tool-call ids, the call it answers);
        # the message reference keeps ids unique for the run's lifetime
        self._meta: dict[int, Meta] = dict(self.facts.metas)
        self._next_fingerprint = self.facts.first_free
        self.items = history_items(self.facts)
        self.totals = RequestTotals(self.tools_tokens, self._meta, self._meta_of)
        self.last_request: Request | None = None
        """The previous call's `Call.request`, which the next one is an edit of."""

    def _writable(self) -> list[Item]:
        """The history, safe to append to: itself unless it was handed to a stage that may
        keep it (the request bookkeeping keeps a copy and a `Mark`, never the list), else a
        `Grown` copy, whose shared prefix later checks skip."""
        if self.history.handed:
            self.history = grown(self.history, ())
        return self.history

    def _feed(self, upto: int) -> None:
        fed = len(self.history)
        if fed >= upto:
            return
        self._writable().extend(self.items[fed:upto])
        self.baseline += sum(self.facts.counts[fed:upto])

    def _meta_of(self, message: BaseMessage) -> Meta:
        hit = self._meta.get(id(message))
        if hit is not None and hit[0] is message:
            return hit
        entry = meta_of(message, self._next_fingerprint, self.tok(message))
        self._next_fingerprint += 1
        self._meta[id(message)] = entry
        return entry

    def apply_stages(self, turn: Turn, upto: int) -> tuple[list[Item], list[Event]]:
        """The stages' request for `turn` with the history fed to `upto` messages, and the
        events they recorded: what `call` does before its bookkeeping (a count-only form
        runs the stages at the calls that may act, `ctxlab._replay.policies.threshold_counts`)."""
        self._feed(upto)
        ctx = Context(
            turn,
            self.trace,
            self.summarizer,
            self.files,
            [],
            self.cpt,
            self.tools_tokens,
            self.window,
            self.tok,
            self.sums,
        )
        items: list[Item] = self.history
        for stage, wary in zip(self.stages, self._wary, strict=True):
            if wary and isinstance(items, Grown):
                items.handed = True
            items = stage.apply(items, ctx)
        return items, ctx.events

    def call(self, turn: Turn) -> Call:
        """The request for `turn`; the recorded output then joins the history."""
        items, events = self.apply_stages(turn, turn.position)
        req = self.totals
        req.update(items)
        previous = self.last_request
        kept = req.kept if previous is not None else 0  # the first request: every part
        request = self.last_request = Request(previous, kept, req.fps[kept:], req.toks[kept:])
        call = StageCall(
            turn.index,
            turn.position,
            req.total,
            dict(req.by_kind),
            len(items),
            events,
            self.baseline,
            request=request,
            orphans=req.orphans,
        )
        if turn.output is not None:
            self._feed(turn.position + 1)
        return call

    def finish(self) -> list[Event]:
        """Catalogue stages act only at model calls: nothing is left over."""
        return []


@dataclass(frozen=True)
class StagePolicy:
    """Base of stage policies: parameters in, a `StageRun` of `stages()` out.

    A subclass is a `@dataclass(frozen=True)` whose fields are its parameters (the catalogue
    uses the upstream parameter names); it sets `name` (the name it registers under) and
    `source` (where its defaults come from) as class variables and implements `stages()`.
    Parameters should be JSON-able values: `params()` identifies a replay in the store, sweeps
    vary them by name, and the explorer gives every int and float field (and every
    `(kind, number)` size) a slider. A `window` field (`"auto"`, an int or None) and a
    `model` field are read by `window_for` and `counter_chars_per_token` when present.
    """

    name: ClassVar[str] = "stage-policy"
    source: ClassVar[str] = ""

    def __post_init__(self) -> None:
        """Refuse out-of-range shared parameters (`ctxlab._replay.policies.param_ranges`)."""
        check_shared(self)

    def params(self) -> dict[str, Any]:
        """Parameters as given (dataclass fields), JSON-able."""
        return {k: _jsonable(v) for k, v in asdict(self).items()}

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """Fresh stage objects for one trace."""
        raise NotImplementedError

    def counts_only(self, trace: Trace, summarizer: Summarizer) -> CallCounts | None:
        """Optional: the per-call counts and events a replay of `trace` would give, without
        its requests (`ctxlab._replay.policies.counts_only`), or None. A slider draws these
        first and replays in full after the chart is sent; a policy that can say them by
        formula gets moves that cost the formula. By default: a policy of one `RuleStage`
        that keeps the engine's `apply` gets its rule's counts by prefix sums
        (`ctxlab._replay.policies._engine_rules`); a policy of one `RebuildStage` that declares
        `JUMPS` runs it only at the calls that may act
        (`ctxlab._replay.policies.threshold_counts`); a policy of one stage that declares
        `acts_over` runs it only at the calls over its threshold, each once per trace
        (`ctxlab._replay.policies.acts_over_counts`); any other, None (the full replay)."""
        from ctxlab._replay.policies._engine_rules import rule_counts
        from ctxlab._replay.policies.acts_over_counts import acts_over_counts
        from ctxlab._replay.policies.threshold_counts import threshold_counts

        found = rule_counts(self, trace)
        if found is None:
            found = threshold_counts(self, trace, summarizer)
        return found if found is not None else acts_over_counts(self, trace, summarizer)

    def window_for(self, trace: Trace) -> int | None:
        """The window this policy resolves for `trace` (`window` field, if it has one)."""
        return resolve_window(getattr(self, "window", None), trace, getattr(self, "model", None))

    def thresholds(self, trace: Trace) -> dict[str, int]:
        """Token levels of this policy on `trace`: the `window` it resolves and, as `trigger`,
        the lowest `trigger_tokens` among its stages (stages that compact once the request, as
        the policy counts it, reaches a token threshold say so). Figures draw them as lines and
        billing flags the calls billed past them (`ctxlab._cost.billing.levels`)."""
        window = self.window_for(trace)
        out = {"window": int(window)} if window else {}
        triggers = [
            int(t)
            for stage in self.stages(trace, window)
            if (t := getattr(stage, "trigger_tokens", None)) is not None
        ]
        if triggers:
            out["trigger"] = min(triggers)
        return out

    def counter_chars_per_token(self, trace: Trace) -> float:
        """Characters per token of the reported counts: LangChain's approximate counter for the
        trace's model (3.3 for Anthropic, else 4), the one `deepagents` reports, so policies
        compare on one scale. Stages that decide with another counter (ClearToolUsesEdit's
        default 4.0) keep their own for the decision."""
        return chars_per_token(getattr(self, "model", None) or trace.model, trace.provider)

    def start(self, trace: Trace, summarizer: Summarizer) -> StageRun:
        """A fresh run over `trace`."""
        window = self.window_for(trace)
        return StageRun(
            trace,
            summarizer,
            self.stages(trace, window),
            window=window,
            chars_per_token=self.counter_chars_per_token(trace),
        )


def _jsonable(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_jsonable(v) for v in value]
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    return value


# ---------------------------------------------------------------------------------------------
# Helpers shared by stages
# ---------------------------------------------------------------------------------------------


def safe_start(items: Sequence[Item], start: int) -> int:
    """Move a cut forward past tool results, so the kept tail does not begin with an orphan."""
    while start < len(items) and isinstance(items[start].msg, ToolMessage):
        start += 1
    return start


def safe_cutoff_backward(items: Sequence[Item], cutoff: int) -> int:
    """LangChain's `_find_safe_cutoff_point`: a cut at a ToolMessage moves back to the
    AIMessage that made the call (keeping more), else forward past the tool results."""
    if cutoff >= len(items) or not isinstance(items[cutoff].msg, ToolMessage):
        return cutoff
    ids: set[str] = set()
    j = cutoff
    while j < len(items) and isinstance(m := items[j].msg, ToolMessage):
        if m.tool_call_id:
            ids.add(m.tool_call_id)
        j += 1
    for i in range(cutoff - 1, -1, -1):
        m = items[i].msg
        if isinstance(m, AIMessage) and m.tool_calls:
            if ids & {c.get("id") for c in m.tool_calls if c.get("id")}:
                return i
    return j


M = TypeVar("M", bound=BaseMessage)


def replaced(message: BaseMessage, key: Any, make: Callable[[], M]) -> M:
    """`make()` memoised per (message, key): the same edit yields the same object every call."""
    return tk.derived(message, key, make)


def write_history(ctx: Context, path: str, items: Sequence[Item]) -> None:
    """Append the evicted messages to a virtual file, LangChain's XML rendering, so
    recoverability can be checked (rendered lazily: decisions never read it)."""
    from langchain_core.messages import get_buffer_string

    msgs = [it.msg for it in items if it.kind != "summary"]
    turn = ctx.turn.index
    ctx.files.append(
        path, lambda: f"## Evicted at turn {turn}\n\n{get_buffer_string(msgs, format='xml')}\n\n"
    )


class Edited(NamedTuple):
    """A request as it was before a stage edited it in place (`RebuildStage.commit`)."""

    seen: list[Item] | Mark
    """`mark` of it, for the token sums (`Sums.rebase`)."""
    total: int
    """Its token count."""
    tail: list[Item]
    """A copy of its items from the first one edited on."""


class RebuildStage:
    """Base of stages that rebuild the whole request when they compact (persistently).

    After a compaction at call t the request is `prefix` (the rebuilt messages) followed by
    every history message fed after t; a later compaction rebuilds from that view. This is how
    Claude Code, Codex, Inspect and OpenHands' rolling condensers behave: the compacted history
    replaces the old one for all later calls.

    `view` is incremental: while the input only grows, the view grows by the new messages.

    A subclass may declare `JUMPS` (see there) in its own `capabilities`.
    """

    def __init__(self) -> None:
        # the request the last compaction built is `_view[:prefix_n]` (None: none yet); it is
        # not held apart, so `_view` has one holder and grows in place (`extended`)
        self.prefix_n: int | None = None
        self.cut = 0
        # marks of the inputs (`mark`): a list kept here is one the run must copy to grow
        self._in: list[Item] | Mark | None = None
        self._view: list[Item] = []
        self._given: list[Item] | Mark | None = None
        self._counted = RunningCount()
        # the tokens of `_view[:prefix_n]` (tool schemas included) as the last compaction
        # counted them: a later view's count starts from them (`_total`)
        self._prefix_tokens: int | None = None

    def prefix(self) -> list[Item]:
        """The messages the last compaction built, which every later view starts with (no
        compaction yet: none). What a compacting call sends may differ (JetBrains' static
        checkpoints send less on that call only)."""
        return [] if self.prefix_n is None else self._view[: self.prefix_n]

    def count(self, view: list[Item], ctx: Context) -> int:
        """`ctx.count(view)`, by what the view gained since the last call (`RunningCount`;
        counted again after every compaction): a stage that checks its threshold at every
        call pays for what is new."""
        return self._counted(view, lambda v: self._total(v, ctx), ctx.tok)

    def _total(self, view: list[Item], ctx: Context) -> int:
        """`ctx.count(view)`; for the view this stage built (the last compaction's output,
        untouched, plus new messages), that output's tokens plus the new messages': a
        compaction then counts only what it added, not the whole request again."""
        known = self._prefix_tokens
        if known is not None and view is self._view:
            return known + sum(ctx.tok.each(view[self.prefix_n :]))
        return ctx.count(view)

    def view(self, items: list[Item]) -> list[Item]:
        """The current request before this call's decision."""
        self._given = mark(items)
        if self.prefix_n is None:
            return items
        new = appended(self._in, items)
        cut = self.cut
        if new is None:
            view = [
                *self._view[: self.prefix_n],
                *(it for it in items if it.pos is not None and it.pos >= cut),
            ]
        else:
            view = extended(
                self._view,
                [it for it in new if it.pos is not None and it.pos >= cut],
                edits=False,
                owner=self,
            )
        self._in, self._view = self._given, view
        return view

    def commit(
        self,
        ctx: Context,
        before: list[Item],
        after: list[Item],
        kind: str,
        reason: str,
        path: str | None = None,
        same: int = 0,
        summary: str | None = None,
        *,
        edited: Edited | None = None,
    ) -> list[Item]:
        """Make `after` the new prefix; record the event over the positions that left.

        `same`: a count of leading items the caller knows `before` and `after` share, so only
        the rest is compared (a tail edit costs the tail). `summary`: the text a `summarize`
        puts in the request, kept on its event. `edited`: `before` as it was, when `after` is
        `before` itself edited in place from `same` on.
        """
        old = before[same:] if edited is None else edited.tail
        kept = {it.pos: it.msg for it in after[same:] if it.pos is not None}
        gone = [
            it.pos
            for it in old
            if it.pos is not None and (it.pos not in kept or kept[it.pos] is not it.msg)
        ]
        if edited is not None:
            total = edited.total
        elif appended(self._counted.seen, before) == []:  # `before` is what `count` counted
            total = self._counted.tokens
        else:
            total = self._total(before, ctx)
        # a Grown is never edited once handed on; any other list is copied, as a caller may
        self._view = after if isinstance(after, Grown) else list(after)
        self._counted.forget()
        self.prefix_n = len(after)
        self.cut = ctx.turn.position
        # every input item is older than this call (positions < cut), so the next view is
        # the prefix plus what the input gains
        self._in = self._given
        if same:
            tok = ctx.tok
            changed = sum(tok(it.msg) for it in after[same:]) - sum(tok(it.msg) for it in old)
            after_total = total + changed
            ctx.sums.rebase(before if edited is None else edited.seen, self._view, same)
        else:  # the stage's next count starts from this (`_total`), not from the sums
            after_total = ctx.tools_tokens + sum(ctx.tok.each(after))
        self._prefix_tokens = after_total
        ctx.events.append(
            Event(
                kind, ctx.turn.index, tuple(sorted(gone)), total, after_total, path, reason, summary
            )
        )
        return after


def summary_item(text: str) -> Item:
    """An inserted summary message (a user-role message, as every harness here sends it)."""
    return Item(
        None,
        summary_message(text),
        "summary",
    )


def first_user_index(items: Sequence[Item]) -> int | None:
    """Index of the first real user message (the task)."""
    return next((i for i, it in enumerate(items) if it.kind == "human"), None)


__all__ = [
    "AUTO",
    "ActsOver",
    "Context",
    "Event",
    "Files",
    "Item",
    "JUMPS",
    "KEEPS_MARKS",
    "RebuildStage",
    "Stage",
    "StageCall",
    "StagePolicy",
    "StageRun",
    "acting_threshold",
    "acts_over",
    "appended",
    "count_orphans",
    "declared",
    "declares",
    "first_user_index",
    "kind_of",
    "mark",
    "message_text",
    "replaced",
    "resolve_window",
    "safe_cutoff_backward",
    "safe_start",
    "summary_item",
    "write_history",
]
