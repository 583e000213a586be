"""The shared engine of the catalogue policies: a request is a list of items built by stages.

Every catalogue policy (all but `deepagents`, which is one hand-tuned stack) is a list of
*stages*. At each recorded model call the run hands the full history fed so far, as items
`(pos, message, kind)`, to the first stage; each stage returns the request it would send, and
the next stage works on that. Stages keep their own state in **full-history positions** (a
summary's cutoff, the observations they masked), never in message objects of another stage,
which is what makes them compose open-loop: a
`Pipeline([ClearToolUses(), LangChainSummarization()])`
summarises the request the clearing produced, and the clearing is recomputed on every call the
way LangChain's request-only `ContextEditingMiddleware` recomputes it.

Derived messages (masked, cleared, truncated copies) are memoised per original message through
`ctxlab.tokens.derived`, so the same edit gives the same object on every call: token counts are
measured once, and the prompt-cache simulation (`Call.request`) can compare requests by identity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NamedTuple, Protocol

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import tokens as tk
from ctxlab.policies.base import Call, Event, Files, Request
from ctxlab.profiles import profile as lookup_profile

if TYPE_CHECKING:
    from ctxlab.summarizers import Summarizer
    from ctxlab.trace import Trace, Turn

AUTO: Literal["auto"] = "auto"


class Item(NamedTuple):
    """One message of a request: its full-history position (None for inserted ones, like a
    summary), the message as sent, and its token bucket (`ctxlab.policies.base.KINDS`)."""

    pos: int | None
    msg: BaseMessage
    kind: str

    def __eq__(self, other: object) -> bool:
        """Position and bucket first, the message last: a masked or cleared copy differs in
        its bucket, so comparing requests rarely reaches pydantic's (slow) message equality."""
        if not isinstance(other, tuple):
            return NotImplemented
        return (
            self[0] == other[0]
            and self[2] == other[2]
            and (self[1] is other[1] or self[1] == other[1])
        )

    def __ne__(self, other: object) -> bool:
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = tuple.__hash__


def kind_of(message: BaseMessage) -> str:
    """Token bucket of an unedited message."""
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AIMessage):
        return "ai"
    if isinstance(message, ToolMessage):
        return "tool_results"
    if isinstance(message, HumanMessage) and (
        message.additional_kwargs.get("lc_source") == "summarization"
    ):
        return "summary"
    return "human"


class TokenCache:
    """Tokens of a message object at one characters-per-token, looked up once per object.

    Keeps a reference to every message it measured, so an `id` is never reused while cached
    (a replay's messages live as long as the run anyway)."""

    __slots__ = ("cpt", "_d")

    def __init__(self, chars_per_token: float) -> None:
        self.cpt = chars_per_token
        self._d: dict[int, tuple[BaseMessage, int]] = {}

    def __call__(self, message: BaseMessage) -> int:
        hit = self._d.get(id(message))
        if hit is not None and hit[0] is message:
            return hit[1]
        toks = tk.message_tokens(message, self.cpt)
        self._d[id(message)] = (message, toks)
        return toks


INCREMENTAL = True
"""Stages take their fast paths (work proportional to what changed since the previous call).
Tests switch this off to check that every replay equals the full recomputation each stage
falls back to when its input is not the previous input plus new messages."""


def common_prefix(a: Sequence[Item], b: Sequence[Item]) -> int:
    """Length of the longest common prefix of two requests, compared at C speed.

    Items compare by identity first and by value otherwise (equal content is an equal prefix,
    as a provider's prompt cache sees it). Blocks are compared as slices (C loops) until one
    differs, then bisected, so finding the first difference costs about one pass.
    """
    n = min(len(a), len(b))
    lo = 0
    while lo < n:
        hi = min(n, lo + 256)
        if a[lo:hi] != b[lo:hi]:
            break
        lo = hi
    else:
        return n
    # a[:lo] == b[:lo] and a[lo:hi] != b[lo:hi]
    while hi - lo > 8:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    while a[lo] == b[lo]:
        lo += 1
    return lo


def appended(previous: list[Item] | None, items: list[Item]) -> list[Item] | None:
    """`items[len(previous):]` when `items` is `previous` plus new messages, else None (and
    always None with `INCREMENTAL` off): the test every stage's fast path starts with."""
    if not INCREMENTAL or previous is None or len(items) < len(previous):
        return None
    n = len(previous)
    if items[:n] != previous:
        return None
    return items[n:]


class Sums:
    """Token totals of requests, reusing the prefix sums of a recently counted list.

    A call's stages count lists that mostly repeat earlier ones (the history plus a few new
    messages, the same request with one result masked near its end), so a count costs a
    C-speed comparison plus the tokens of what differs, not a walk of the whole request.
    Entries hold copies: a caller mutating its list later cannot corrupt them.
    """

    __slots__ = ("tok", "_entries", "_last")

    KEEP = 6

    def __init__(self, tok: TokenCache) -> None:
        self.tok = tok
        # (copy of the list, cumulative tokens of every item, of the non-system items)
        self._entries: list[tuple[list[Item], list[int], list[int]]] = []
        # the list last counted and its entry (exactly that list's items), for `rebase`
        self._last: tuple[Sequence[Item], tuple[list[Item], list[int], list[int]]] | None = None

    def rebase(self, before: Sequence[Item], after: Sequence[Item], same: int) -> None:
        """`after` replaces `before`, the list just counted, sharing its first `same` items:
        the entry of `before` becomes `after`'s at the cost of what changed (a stage that
        edits a few items near the end of a long request at every call would otherwise pay
        for a search and a copy of the whole prefix at its next count)."""
        last = self._last
        self._last = None
        if not INCREMENTAL or last is None or last[0] is not before:
            return
        entry = last[1]
        if len(entry[0]) != len(before) or same > len(before) or same > len(after):
            return
        del entry[0][same:], entry[1][same + 1 :], entry[2][same + 1 :]
        self._extend(entry, after, same)

    def totals(self, items: Sequence[Item]) -> tuple[int, int]:
        """(tokens of every item, tokens of the non-system items)."""
        every, non_system = self.prefix_sums(items)
        return every[-1], non_system[-1]

    def prefix_sums(self, items: Sequence[Item]) -> tuple[list[int], list[int]]:
        """Cumulative tokens (length `len(items) + 1`) over every / non-system items.

        The lists returned belong to the cache: read them before the next count.
        """
        entries = self._entries
        if INCREMENTAL:
            # the newest entry that `items` extends (one C-speed comparison each) grows in place
            for i, entry in enumerate(entries):
                n = len(entry[0])
                if (
                    n <= len(items)
                    and (not n or items[n - 1] == entry[0][-1])
                    and items[:n] == entry[0]
                ):
                    if n < len(items):
                        self._extend(entry, items, n)
                    if i:
                        entries.insert(0, entries.pop(i))
                    self._last = (items, entry)
                    return entry[1], entry[2]
        # else a new entry, from the one sharing the longest prefix with `items`
        best_k, best = 0, None
        if INCREMENTAL:
            for entry in entries:
                k = common_prefix(entry[0], items)
                if k > best_k:
                    best_k, best = k, entry
                    if 2 * k >= len(items):
                        break  # most of it: do not pay more comparisons for the rest
        if best is None:
            entry = ([], [0], [0])
        else:
            entry = (best[0][:best_k], best[1][: best_k + 1], best[2][: best_k + 1])
        self._extend(entry, items, best_k)
        entries.insert(0, entry)
        del entries[self.KEEP :]
        self._last = (items, entry)
        return entry[1], entry[2]

    def _extend(
        self, entry: tuple[list[Item], list[int], list[int]], items: Sequence[Item], start: int
    ) -> None:
        every, non_system = entry[1], entry[2]
        a, s = every[-1], non_system[-1]
        tok = self.tok
        for it in items[start:]:
            t = tok(it.msg)
            a += t
            every.append(a)
            if it.kind != "system":
                s += t
            non_system.append(s)
        entry[0].extend(items[start:])


@dataclass
class Context:
    """What a stage may read and write during one model call."""

    turn: Turn
    trace: Trace
    summarizer: Summarizer
    files: Files
    events: list[Event]
    chars_per_token: float
    tools_tokens: int
    window: int | None
    tok: TokenCache
    sums: Sums

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
                raise ValueError(
                    f"{what}: a fraction needs the model's window (pass window=N or a model "
                    "with a known profile)"
                )
            return max(1, int(self.window * value))
        return max(1, int(value))


class Stage(Protocol):
    """One step of a request pipeline, with its own state for one trace."""

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        """The request this stage sends, given the request the previous stage produced."""
        ...


def resolve_window(window: Any, trace: Trace, model: str | None = None) -> int | None:
    """`"auto"`: the trace's model window from the LangChain profile data, else None."""
    if window == AUTO:
        return lookup_profile(model or trace.model, trace.provider).max_input_tokens
    return None if window is None else int(window)


@dataclass(slots=True)
class ViewCall(Call):
    """A `Call` that also says how many tool calls / results in the request lost their pair."""

    orphans: int = 0


def count_orphans(messages: Sequence[BaseMessage]) -> int:
    """Tool results without an earlier call in the request, plus calls never answered in it
    (a provider rejects both with a 400)."""
    called: set[str] = set()
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


class _Request:
    """Running totals over the previous call's request, brought to the new request by the
    edits between them, so the bookkeeping of a call costs what changed, not the request.

    The edits it recognises: a shared prefix (kept), like-for-like replacements (a result
    masked or cleared, arguments truncated: same tool-call pairing, swapped in place), one
    removed block (a sliding window's oldest messages, a forgotten middle: dropped without
    touching what follows, when no tool result outside it answers a call inside it), and a
    new tail. Anything else is rewound: each item pushed leaves an undo record, so popping
    restores the exact state (tokens, buckets, tool-call pairing) of the shorter request.
    """

    def __init__(self, tools_tokens: int, meta: Callable[[BaseMessage], _Meta]) -> None:
        self.meta = meta
        self.items: list[Item] = []
        # the request's parts (tool schemas, then messages): fingerprints and tokens
        self.fps: list[int] = [0] if tools_tokens else []
        self.toks: list[int] = [tools_tokens] if tools_tokens else []
        self.base = len(self.fps)
        self.kept = 0  # parts this request shares with the previous one (a common prefix)
        # per item: (kind, tokens, calls it added, its tool_call_id if a result,
        # 1 if an orphan result / 2 if an answered one / 0)
        self.undo: list[tuple[str, int, frozenset[str] | None, str | None, int]] = []
        self.total = tools_tokens
        self.by_kind: dict[str, int] = {"tools": tools_tokens}
        self.n_kind: dict[str, int] = {}
        self.called: dict[str, int] = {}
        self.answered: dict[str, int] = {}
        self.results: dict[str, int] = {}  # tool results in the request, by tool_call_id
        self.orphan_results = 0

    def _drop(self, rec: tuple[str, int, frozenset[str] | None, str | None, int]) -> None:
        """Take one item's contribution out (the caller guarantees pairing stays exact)."""
        kind, toks, calls, tool_id, status = rec
        by_kind, n_kind = self.by_kind, self.n_kind
        self.total -= toks
        by_kind[kind] -= toks
        n_kind[kind] -= 1
        if not n_kind[kind]:
            del by_kind[kind], n_kind[kind]
        if calls:
            called = self.called
            for c in calls:
                called[c] -= 1
                if not called[c]:
                    del called[c]
        elif tool_id is not None:
            self.results[tool_id] -= 1
            if not self.results[tool_id]:
                del self.results[tool_id]
            if status == 1:
                self.orphan_results -= 1
            elif status == 2:
                self.answered[tool_id] -= 1
                if not self.answered[tool_id]:
                    del self.answered[tool_id]

    def _push(self, it: Item) -> None:
        msg, pair, calls = self.meta(it.msg)
        toks = pair[1]
        kind = it.kind
        self.total += toks
        self.by_kind[kind] = self.by_kind.get(kind, 0) + toks
        self.n_kind[kind] = self.n_kind.get(kind, 0) + 1
        self.fps.append(pair[0])
        self.toks.append(toks)
        tool_id, status = None, 0
        if calls:
            called = self.called
            for c in calls:
                called[c] = called.get(c, 0) + 1
        elif isinstance(msg, ToolMessage):
            tool_id = msg.tool_call_id
            self.results[tool_id] = self.results.get(tool_id, 0) + 1
            if tool_id in self.called:
                status = 2
                self.answered[tool_id] = self.answered.get(tool_id, 0) + 1
            else:
                status = 1
                self.orphan_results += 1
        self.undo.append((kind, toks, calls, tool_id, status))

    def _closed(self, start: int, stop: int) -> bool:
        """No tool result outside `undo[start:stop]` answers a call made inside it, so the
        block can leave without changing any other result's pairing."""
        inside: dict[str, int] = {}
        calls: set[str] = set()
        for _, _, c, tool_id, _ in self.undo[start:stop]:
            if c:
                calls |= c
            elif tool_id is not None:
                inside[tool_id] = inside.get(tool_id, 0) + 1
        return all(self.results.get(c, 0) == inside.get(c, 0) for c in calls)

    def update(self, items: list[Item]) -> None:
        """Make `items` the current request."""
        # Always by comparison (not under INCREMENTAL): a part equal to the previous request's
        # keeps its fingerprint, as a provider's cache matches content, not objects.
        prev = self.items
        k = common_prefix(prev, items)
        self.kept = self.base + k
        undo = self.undo
        by_kind, n_kind = self.by_kind, self.n_kind
        meta = self.meta
        while k < len(prev) and k < len(items):
            kind0, toks0, calls0, tool_id0, status = undo[k]
            msg, pair, calls = meta(items[k].msg)
            tool_id = msg.tool_call_id if not calls and isinstance(msg, ToolMessage) else None
            if calls != calls0 or tool_id != tool_id0:
                break
            kind, toks = items[k].kind, pair[1]
            self.total += toks - toks0
            by_kind[kind0] -= toks0
            n_kind[kind0] -= 1
            if not n_kind[kind0]:
                del by_kind[kind0], n_kind[kind0]
            by_kind[kind] = by_kind.get(kind, 0) + toks
            n_kind[kind] = n_kind.get(kind, 0) + 1
            self.fps[self.base + k], self.toks[self.base + k] = pair
            undo[k] = (kind, toks, calls, tool_id, status)
            k += 1
            k += common_prefix(prev[k:], items[k:])
        if k < len(prev) and k < len(items):
            try:
                b = prev.index(items[k], k + 1)  # C-speed scan for a removed block prev[k:b]
            except ValueError:
                b = -1
            if b > 0:
                kept = common_prefix(prev[b:], items[k:])
                if self._closed(k, b):
                    for rec in reversed(undo[b + kept :]):
                        self._drop(rec)
                    for rec in undo[k:b]:
                        self._drop(rec)
                    del undo[b + kept :], undo[k:b]
                    for parts in (self.fps, self.toks):
                        del parts[self.base + b + kept :], parts[self.base + k : self.base + b]
                    k += kept
        for rec in reversed(undo[k:]):
            self._drop(rec)
        del undo[k:]
        del self.fps[self.base + k :], self.toks[self.base + k :]
        for it in items[k:]:
            self._push(it)
        self.items = items

    @property
    def orphans(self) -> int:
        """Results without an earlier call, plus calls never answered (`count_orphans`)."""
        return self.orphan_results + len(self.called) - len(self.answered)


_Meta = tuple[BaseMessage, tuple[int, int], "frozenset[str] | None"]


class ViewRun:
    """A trace under a list of stages; see `ctxlab.policies.base.Run`."""

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
        self.history: list[Item] = []
        self.baseline = self.tools_tokens
        self.tok = TokenCache(chars_per_token)
        self.sums = Sums(self.tok)
        # id -> (message, (fingerprint, tokens), tool-call ids or None); the message reference
        # keeps ids unique for the run's lifetime
        self._meta: dict[int, _Meta] = {}
        self.request = _Request(self.tools_tokens, self._meta_of)
        self._request: Request | None = None

    def _feed(self, upto: int) -> None:
        msgs = self.trace.messages
        while len(self.history) < upto:
            pos = len(self.history)
            message = msgs[pos]
            self.history.append(Item(pos, message, kind_of(message)))
            self.baseline += self.tok(message)

    def _meta_of(self, message: BaseMessage) -> _Meta:
        hit = self._meta.get(id(message))
        if hit is not None and hit[0] is message:
            return hit
        calls = (
            frozenset(c["id"] for c in message.tool_calls if c.get("id"))
            if isinstance(message, AIMessage)
            else None
        )
        entry = (message, (len(self._meta) + 1, self.tok(message)), calls)
        self._meta[id(message)] = entry
        return entry

    def call(self, turn: Turn) -> Call:
        """The request for `turn`; the recorded output then joins the history."""
        self._feed(turn.position)
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
        items = list(self.history)
        for stage in self.stages:
            items = stage.apply(items, ctx)
        req = self.request
        req.update(items)
        kept = req.kept if self._request is not None else 0  # the first request: every part
        request = self._request = Request(self._request, kept, req.fps[kept:], req.toks[kept:])
        call = ViewCall(
            turn.index,
            turn.position,
            req.total,
            dict(req.by_kind),
            len(items),
            ctx.events,
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
    """Base of the catalogue policies: parameters in, a `ViewRun` of `stages()` out.

    Subclasses are frozen dataclasses whose field names are the upstream parameter names; they
    set `name` and `source` as class variables and implement `stages()`.
    """

    name: ClassVar[str] = "stage-policy"
    source: ClassVar[str] = ""

    def params(self) -> dict[str, Any]:
        """Parameters as given (dataclass fields), JSON-able."""
        return {k: _jsonable(v) for k, v in asdict(self).items()}

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """Fresh stage objects for one trace."""
        raise NotImplementedError

    def window_for(self, trace: Trace) -> int | None:
        """The window this policy resolves for `trace` (`window` field, if it has one)."""
        return resolve_window(getattr(self, "window", None), trace, getattr(self, "model", None))

    def counter_chars_per_token(self, trace: Trace) -> float:
        """Characters per token of the reported counts: LangChain's approximate counter for the
        trace's model (3.3 for Anthropic, else 4), the one `deepagents` reports, so policies
        compare on one scale. Stages that decide with another counter (ClearToolUsesEdit's
        default 4.0) keep their own for the decision."""
        prof = lookup_profile(getattr(self, "model", None) or trace.model, trace.provider)
        return tk.ANTHROPIC_CHARS_PER_TOKEN if prof.is_anthropic else tk.CHARS_PER_TOKEN

    def start(self, trace: Trace, summarizer: Summarizer) -> ViewRun:
        """A fresh run over `trace`."""
        window = self.window_for(trace)
        return ViewRun(
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
    while j < len(items) and isinstance(items[j].msg, ToolMessage):
        if items[j].msg.tool_call_id:
            ids.add(items[j].msg.tool_call_id)
        j += 1
    for i in range(cutoff - 1, -1, -1):
        m = items[i].msg
        if isinstance(m, AIMessage) and m.tool_calls:
            if ids & {c.get("id") for c in m.tool_calls if c.get("id")}:
                return i
    return j


def text_of(message: BaseMessage) -> str:
    """Plain text of a message (text blocks joined)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts = []
    for b in content:
        if isinstance(b, str):
            parts.append(b)
        elif isinstance(b, dict) and b.get("type") == "text":
            parts.append(str(b.get("text", "")))
    return "\n".join(parts)


def replaced(message: BaseMessage, key: Any, make: Callable[[], BaseMessage]) -> BaseMessage:
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


class RebuildStage:
    """Base of stages that rebuild the whole request when they compact (persistently).

    After a compaction at call t the request is `prefix` (the rebuilt messages) followed by
    every history message fed after t; a later compaction rebuilds from that view. This is how
    Claude Code, Codex, Inspect and OpenHands' rolling condensers behave: the compacted history
    replaces the old one for all later calls.

    `view` is incremental: while the input only grows, the view grows by the new messages.
    """

    def __init__(self) -> None:
        self.prefix: list[Item] | None = None
        self.cut = 0
        self._in: list[Item] | None = None
        self._view: list[Item] = []
        self._given: list[Item] | None = None

    def view(self, items: list[Item]) -> list[Item]:
        """The current request before this call's decision."""
        self._given = items
        if self.prefix is None:
            return items
        new = appended(self._in, items)
        cut = self.cut
        if new is None:
            view = [*self.prefix, *(it for it in items if it.pos is not None and it.pos >= cut)]
        else:
            view = self._view + [it for it in new if it.pos is not None and it.pos >= cut]
        self._in, self._view = items, view
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
    ) -> list[Item]:
        """Make `after` the new prefix; record the event over the positions that left.

        `same`: a count of leading items the caller knows `before` and `after` share, so only
        the rest is compared (a tail edit costs the tail). `summary`: the text a `summarize`
        puts in the request, kept on its event.
        """
        kept = {it.pos: it.msg for it in after[same:] if it.pos is not None}
        gone = [
            it.pos
            for it in before[same:]
            if it.pos is not None and (it.pos not in kept or kept[it.pos] is not it.msg)
        ]
        self.prefix = list(after)
        self.cut = ctx.turn.position
        # every input item is older than this call (positions < cut), so the next view is
        # the prefix plus what the input gains
        self._in, self._view = self._given, self.prefix
        total = ctx.count(before)
        if same:
            tok = ctx.tok
            changed = sum(tok(it.msg) for it in after[same:]) - sum(
                tok(it.msg) for it in before[same:]
            )
            after_total = total + changed
            ctx.sums.rebase(before, self.prefix, same)
        else:
            after_total = ctx.count(after)
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
        HumanMessage(content=text, additional_kwargs={"lc_source": "summarization"}),
        "summary",
    )


def first_user_index(items: Sequence[Item]) -> int | None:
    """Index of the first real user message (the task)."""
    return next((i for i, it in enumerate(items) if it.kind == "human"), None)


__all__ = [
    "AUTO",
    "Context",
    "Item",
    "RebuildStage",
    "Stage",
    "StagePolicy",
    "ViewCall",
    "ViewRun",
    "count_orphans",
    "first_user_index",
    "kind_of",
    "replaced",
    "resolve_window",
    "safe_cutoff_backward",
    "safe_start",
    "summary_item",
    "text_of",
    "write_history",
]
