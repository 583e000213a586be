"""LangChain v1's own context policies, with their class defaults and parameter names.

* `LangChainSummarization`: `langchain.agents.middleware.SummarizationMiddleware` (a
  `before_model` hook, destructive: the state becomes `[summary, *preserved]`).
* `ClearToolUses`: `ContextEditingMiddleware([ClearToolUsesEdit(...)])` (request-only,
  recomputed on every call); the same defaults as Anthropic's `clear_tool_uses_20250919`.
* `SlidingWindow`: `langchain_core.messages.trim_messages` run before every call (LangGraph's
  "manage short-term memory" recipe), request-only.

Rules: docs/deepagents.md §7 and §8 (langchain 1.5.2 read line by line). Exact texts (summary
prompt, placeholder) are in `ctxlab._replay.policies.langchain_texts`, checked against the package.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar, Literal, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    SystemMessage,
    ToolMessage,
    trim_messages,
)

from ctxlab._cost import tokens as tk
from ctxlab._errors import UnsupportedSettingError
from ctxlab._messages import chars_per_token, summary_message
from ctxlab._replay.policies._engine_counts import (
    Grown,
    RunningCount,
    Sums,
    TokenCache,
    extended,
    grown,
    mark,
)
from ctxlab._replay.policies.base import Event
from ctxlab._replay.policies.cache_aligned import aligned, aligned_params
from ctxlab._replay.policies.engine import (
    AUTO,
    KEEPS_MARKS,
    Context,
    Item,
    Stage,
    StagePolicy,
    appended,
    replaced,
    safe_cutoff_backward,
    write_history,
)
from ctxlab._replay.policies.langchain_rules import is_message_type, keep_search, normalize_trigger
from ctxlab._replay.policies.langchain_texts import DEFAULT_SUMMARY_PROMPT, DEFAULT_TOOL_PLACEHOLDER

if TYPE_CHECKING:
    from ctxlab._replay.policies._engine_counts import Mark
    from ctxlab._replay.policies.counts_only import CallCounts
    from ctxlab._trace import Trace
    from ctxlab.summarizers import Summarizer

SUMMARY_PREFIX = "Here is a summary of the conversation to date:\n\n"
"""`SummarizationMiddleware._build_new_messages`: the summary HumanMessage's text before it."""


def _cpt(given: Any, trace: Trace, model: str | None) -> float:
    """LangChain's `_get_approximate_token_counter` for the policy's model (`chars_per_token`)."""
    return chars_per_token(model or trace.model, trace.provider, given)


# ---------------------------------------------------------------------------------------------
# SummarizationMiddleware
# ---------------------------------------------------------------------------------------------


class SummarizeStage:
    """Trigger clauses, keep window with the backward safe cutoff, chained summaries.

    State, in full-history positions: `cut` (non-system messages before it are summarised
    away) and the current summary message, inserted after the system messages.
    """

    capabilities = frozenset({KEEPS_MARKS})

    def __init__(
        self,
        *,
        trigger: Any,
        keep: tuple[str, float],
        trim_tokens_to_summarize: int | None,
        summary_prompt: str,
        prefix: str = SUMMARY_PREFIX,
        history_path: str | None = None,
    ) -> None:
        self.clauses = normalize_trigger(trigger)
        self.keep = cast("tuple[str, float]", tuple(keep))
        self.trim = trim_tokens_to_summarize
        self.prompt = summary_prompt
        self.prefix = prefix
        self.history_path = history_path
        self.cut = 0
        self.summary: Item | None = None
        self.gone: set[int] = set()  # inserted messages (earlier stages' summaries) summarised
        self.gone_refs: list[BaseMessage] = []
        # the last input and its view, and how many system messages the view holds
        self._in: list[Item] | Mark | None = None
        self._view: list[Item] = []
        self._n_system = 0
        # what the view grew by since the last call (None: rebuilt), and the count of the
        # view's non-system messages at the last call (None: not known)
        self._added: list[Item] | None = None
        self._total: int | None = None

    def _keeps(self, it: Item) -> bool:
        return it.pos >= self.cut if it.pos is not None else id(it.msg) not in self.gone

    def view(self, items: list[Item]) -> list[Item]:
        """System messages, the current summary, then the messages from `cut` on.

        While the input only grows by non-system messages, the view grows by them too."""
        new = appended(self._in, items)
        if new is not None and all(it.kind != "system" for it in new):
            if self.summary is None:
                view, self._added = items, new
            else:
                self._added = [it for it in new if self._keeps(it)]
                view = grown(self._view, self._added)
        elif self.summary is None:
            view, self._added = items, None
            self._n_system = sum(1 for it in items if it.kind == "system")
        else:
            head = [it for it in items if it.kind == "system"]
            tail = [it for it in items if it.kind != "system" and self._keeps(it)]
            view, self._added = [*head, self.summary, *tail], None
            self._n_system = len(head)
        # marks, not the lists: a list kept here is one the run must copy before it grows
        self._in, self._view = mark(items), (view if self.summary is not None else [])
        return view

    def should(self, n_messages: int, total: int, ctx: Context) -> bool:
        """Whether a trigger clause is met by `n_messages` non-system messages of `total`
        tokens."""
        for clause in self.clauses:
            met = True
            for kind, value in clause.items():
                if kind == "messages":
                    met = n_messages >= value
                else:
                    met = total >= ctx.threshold(kind, value, "trigger")
                if not met:
                    break
            if met:
                return True
        return False

    def cutoff(self, msgs: list[Item], ctx: Context) -> int:
        """`_determine_cutoff_index`."""
        kind, value = self.keep
        n = len(msgs)
        if kind == "messages":
            if n <= value:
                return 0
            return safe_cutoff_backward(msgs, int(n - value))
        if n == 0:
            return 0
        target = ctx.threshold(kind, value, "keep")
        suffix = [0] * (n + 1)
        for i in range(n - 1, -1, -1):
            suffix[i] = suffix[i + 1] + ctx.tokens(msgs[i].msg)
        if suffix[0] <= target:
            return 0
        candidate = keep_search(n, lambda i: suffix[i] <= target)
        return 0 if candidate is None else safe_cutoff_backward(msgs, candidate)

    def summary_text(self, messages: list[BaseMessage], ctx: Context) -> str:
        """`_create_summary`: trim to the last `trim_tokens_to_summarize` tokens, then ask."""
        if not messages:
            return "No previous conversation history."
        if self.trim is not None:
            cpt = ctx.chars_per_token
            try:
                messages = trim_messages(
                    messages,
                    max_tokens=self.trim,
                    token_counter=lambda ms: tk.count_tokens(ms, chars_per_token=cpt),
                    start_on="human",
                    strategy="last",
                    allow_partial=True,
                    include_system=True,
                )
            except Exception:  # noqa: BLE001 - LangChain falls back to the last 15 the same way
                messages = messages[-15:]
            if not messages:
                return "Previous conversation was too long to summarize."
        return ctx.summarizer.summarize(messages, prompt=self.prompt).strip()

    def _count(self, items: list[Item], ctx: Context) -> int:
        """`count_tokens_approximately` of the view's non-system messages: the last call's
        count plus what the view grew by (non-system messages only), when it only grew
        (`appended` says so only under `INCREMENTAL`, so the full recomputation counts). The
        view knows what it gained, so this skips `RunningCount`'s test of it."""
        if self._added is not None and self._total is not None:
            self._total += sum(ctx.tokens(it.msg) for it in self._added)
        else:
            self._total = ctx.count(items, system=False, tools=False)
        return self._total

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        given = items
        items = self.view(given)
        total = self._count(items, ctx)
        if not self.should(len(items) - self._n_system, total, ctx):
            return items
        msgs = [it for it in items if it.kind != "system"]
        cut = self.cutoff(msgs, ctx)
        if cut <= 0:
            return items
        before = ctx.count(items)
        gone, kept = msgs[:cut], msgs[cut:]
        if self.history_path:
            write_history(ctx, self.history_path, gone)
        text = self.summary_text([it.msg for it in gone], ctx)
        message = summary_message(f"{self.prefix}{text}")
        self.summary = Item(None, message, "summary")
        positions = [it.pos for it in kept if it.pos is not None]
        self.cut = positions[0] if positions else len(ctx.trace.messages)
        self.gone |= {id(it.msg) for it in gone if it.pos is None}
        self.gone_refs.extend(it.msg for it in gone if it.pos is None)  # ids stay unique
        self._in = None
        out = self.view(given)
        self._total = ctx.count(out, system=False, tools=False)
        ctx.events.append(
            Event(
                "summarize",
                ctx.turn.index,
                tuple(it.pos for it in gone if it.pos is not None),
                before,
                ctx.count(out),
                self.history_path,
                "trigger",
                text,
            )
        )
        return out


@dataclass(frozen=True)
class LangChainSummarization(StagePolicy):
    """`SummarizationMiddleware(model, trigger=None, keep=("messages", 20),
    trim_tokens_to_summarize=4000, summary_prompt=DEFAULT_SUMMARY_PROMPT)`.

    Counts messages only (no system prompt, no tools), with LangChain's approximate counter
    (3.3 characters per token for Anthropic models). `trigger=None`, the class default, never
    summarises: set one (`("fraction", 0.8)`, `("tokens", 100000)`, `[{...}, ...]`).
    """

    name: ClassVar[str] = "langchain-summarization"
    source: ClassVar[str] = (
        "langchain 1.5.2 langchain/agents/middleware/summarization.py SummarizationMiddleware "
        "class defaults (docs/deepagents.md §7)"
    )

    trigger: Any = None
    keep: Any = ("messages", 20)
    trim_tokens_to_summarize: int | None = 4000
    summary_prompt: str = DEFAULT_SUMMARY_PROMPT
    window: int | None | Literal["auto"] = AUTO
    chars_per_token: float | Literal["auto"] = AUTO
    model: str | None = None
    cache_aligned: bool = False
    """Compact only at a call whose cache is cold anyway, or when the window forces it
    (`ctxlab._replay.policies.cache_aligned`)."""

    def params(self) -> dict[str, Any]:
        """Parameters, the summary prompt only when changed."""
        out = aligned_params(super().params())
        if self.summary_prompt == DEFAULT_SUMMARY_PROMPT:
            out.pop("summary_prompt")
        return out

    def counter_chars_per_token(self, trace: Trace) -> float:
        """LangChain's approximate counter for the trace's model (3.3 for Anthropic)."""
        return _cpt(self.chars_per_token, trace, self.model)

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One summarisation stage."""
        stage = SummarizeStage(
            trigger=self.trigger,
            keep=tuple(self.keep),
            trim_tokens_to_summarize=self.trim_tokens_to_summarize,
            summary_prompt=self.summary_prompt,
        )
        return aligned([stage], self, trace, window)


# ---------------------------------------------------------------------------------------------
# ContextEditingMiddleware + ClearToolUsesEdit
# ---------------------------------------------------------------------------------------------


def _cleared_result(message: ToolMessage, placeholder: str) -> ToolMessage:
    return message.model_copy(
        update={
            "artifact": None,
            "content": placeholder,
            "response_metadata": {
                **message.response_metadata,
                "context_editing": {"cleared": True, "strategy": "clear_tool_uses"},
            },
        }
    )


def _cleared_input(message: AIMessage, tool_call_id: str) -> AIMessage:
    """`ClearToolUsesEdit._build_cleared_tool_input_message`."""
    calls, cleared = [], False
    for call in message.tool_calls:
        updated = dict(call)
        if updated.get("id") == tool_call_id:
            updated["args"] = {}
            cleared = True
        calls.append(updated)
    metadata = dict(message.response_metadata)
    entry = dict(metadata.get("context_editing", {}))
    if cleared:
        entry["cleared_tool_inputs"] = sorted({*entry.get("cleared_tool_inputs", []), tool_call_id})
        metadata["context_editing"] = entry
    return message.model_copy(update={"tool_calls": calls, "response_metadata": metadata})


class ClearStage:
    """`ClearToolUsesEdit.apply` on a copy of the request, every call (never persisted).

    Fast path: once the request is over `trigger` it stays over it while the history only
    grows (the count is of the unedited messages), and with `clear_at_least=0` every result but
    the last `keep` is cleared; so a call that only appends messages clears just the results
    that left the last `keep`, on the previous call's output.
    """

    capabilities = frozenset({KEEPS_MARKS})

    def __init__(
        self,
        *,
        trigger: int,
        keep: int,
        clear_at_least: int,
        clear_tool_inputs: bool,
        exclude_tools: tuple[str, ...],
        placeholder: str,
        trace: Trace,
        counter_cpt: float = tk.CHARS_PER_TOKEN,
        event_kind: str = "clear_tool_uses",
    ) -> None:
        self.trigger = trigger
        self.keep = keep
        self.clear_at_least = clear_at_least
        self.clear_tool_inputs = clear_tool_inputs
        self.exclude = set(exclude_tools)
        self.placeholder = placeholder
        self.cpt = counter_cpt
        self.tok = TokenCache.of(trace, counter_cpt)  # the history comes measured
        self.sums = Sums(self.tok)
        # the input's tokens by this edit's counter (non-system) and by the run's (events)
        self.counted, self.counted_ctx = RunningCount(), RunningCount()
        self.kind = event_kind
        self.cleared: set[int] = set()
        self.decisions: dict[
            tuple[int, int], tuple[ToolMessage, AIMessage, ToolMessage | None]
        ] = {}
        self.prev_in: list[Item] | Mark | None = None
        self.prev_out: list[Item] = []
        self.over = False  # the previous input was over the trigger (and fully processed)
        self.tool_idx: list[int] = []  # input indices of the tool results
        self.last_ai: list[int] = []  # per input index: the nearest AIMessage before it, or -1
        self.done = 0  # tool_idx[:done] went through the clearing loop
        self.saved_ctx = 0  # request tokens (the run's counter) the output no longer costs

    def _count(self, items: list[Item]) -> int:
        """`count_tokens_approximately(request.messages)` with default arguments."""
        return self.sums.totals(items)[1]

    def _decide(self, message: ToolMessage, ai: AIMessage) -> ToolMessage | None:
        """The cleared copy of `message` when its nearest preceding AIMessage is `ai`, or None
        (already cleared, no owning call, excluded tool); memoised per object pair."""
        key = (id(message), id(ai))
        hit = self.decisions.get(key)
        if hit is not None and hit[0] is message and hit[1] is ai:
            return hit[2]
        stub: ToolMessage | None = None
        if not message.response_metadata.get("context_editing", {}).get("cleared"):
            call = next((c for c in ai.tool_calls if c.get("id") == message.tool_call_id), None)
            if call is not None and (message.name or call["name"]) not in self.exclude:
                stub = replaced(
                    message,
                    ("clear", self.placeholder),
                    partial(_cleared_result, message, self.placeholder),
                )
        self.decisions[key] = (message, ai, stub)
        return stub

    def _index(self, items: list[Item], start: int) -> None:
        """Extend `tool_idx` and `last_ai` over `items[start:]`."""
        seen = self.last_ai[-1] if self.last_ai else -1
        if start and isinstance(items[start - 1].msg, AIMessage) and items[start - 1].kind == "ai":
            seen = start - 1
        for i in range(start, len(items)):
            it = items[i]
            self.last_ai.append(seen)
            if it.kind == "ai" and isinstance(it.msg, AIMessage):
                seen = i
            elif it.kind != "ai" and isinstance(it.msg, ToolMessage):
                self.tool_idx.append(i)

    def _clear(self, out: list[Item], idx: int, saved: int, ctx: Context) -> tuple[int, int | None]:
        """Clear the result at `idx` in place: (tokens saved so far by the edit's own counter,
        its position if cleared); `saved_ctx` adds what the request's counter saves."""
        message = cast(ToolMessage, out[idx].msg)  # `idx` is from `tool_idx`
        ai_idx = self.last_ai[idx]
        if ai_idx < 0:
            return saved, None
        ai = cast(AIMessage, out[ai_idx].msg)  # `last_ai` holds AIMessages' indices
        stub = self._decide(message, ai)
        if stub is None:
            return saved, None
        tok = self.tok
        saved += tok(message) - tok(stub)
        self.saved_ctx += ctx.tokens(message) - ctx.tokens(stub)
        out[idx] = Item(out[idx].pos, stub, "stubs")
        if self.clear_tool_inputs:
            tid = message.tool_call_id
            new_ai = replaced(ai, ("clear_input", tid), partial(_cleared_input, ai, tid))
            saved += tok(ai) - tok(new_ai)
            self.saved_ctx += ctx.tokens(ai) - ctx.tokens(new_ai)
            out[ai_idx] = Item(out[ai_idx].pos, new_ai, "ai")
        return saved, out[idx].pos

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        new = appended(self.prev_in, items)
        fast = new is not None and self.over and not self.clear_at_least
        tokens = self.counted(items, self._count, self.tok, system=False)
        if tokens <= self.trigger:
            self.prev_in, self.prev_out, self.over = mark(items), [], False
            self.tool_idx, self.last_ai, self.done = [], [], 0
            return items
        if fast:
            self._index(items, len(self.prev_out))
            out: list[Item] = extended(self.prev_out, new, edits=True, owner=self)  # type: ignore[arg-type]
        else:
            out = list(items)
            self.tool_idx, self.last_ai, self.done, self.saved_ctx = [], [], 0, 0
            self._index(items, 0)
        upto = max(0, len(self.tool_idx) - self.keep) if self.keep < len(self.tool_idx) else 0
        touched: list[int] = []
        saved = 0
        todo = self.tool_idx[self.done : upto]
        if isinstance(out, Grown) and todo:  # edited from the first result cleared (or its call)
            first = self.last_ai[todo[0]] if self.clear_tool_inputs else todo[0]
            out.same = min(out.same, first if first >= 0 else todo[0])
        for idx in todo:
            saved, pos = self._clear(out, idx, saved, ctx)
            if pos is not None:
                touched.append(pos)
            if self.clear_at_least > 0 and max(0, saved) >= self.clear_at_least:
                break
        self.done = upto
        self.prev_in, self.prev_out, self.over = mark(items), out, True
        if fast:
            new_pos = [p for p in touched if p not in self.cleared]
            self.cleared.update(new_pos)
        else:
            new_pos = [p for p in touched if p not in self.cleared]
            self.cleared = set(touched)
        if new_pos:
            before = self.counted_ctx(items, ctx.count, ctx.tok)
            ctx.events.append(
                Event(
                    self.kind,
                    ctx.turn.index,
                    tuple(new_pos),
                    before,
                    before - self.saved_ctx,
                    None,
                    f"{tokens} > {self.trigger} tokens",
                )
            )
        return out


@dataclass(frozen=True)
class ClearToolUses(StagePolicy):
    """`ClearToolUsesEdit(trigger=100_000, keep=3, clear_at_least=0, clear_tool_inputs=False,
    exclude_tools=(), placeholder="[cleared]")` inside `ContextEditingMiddleware`.

    When the request's messages (LangChain's approximate count, default arguments, no system
    prompt or tools) exceed `trigger`, every tool result but the last `keep` is replaced by the
    placeholder, oldest first, until `clear_at_least` tokens are gone (0: all of them). The
    same defaults as Anthropic's server-side `clear_tool_uses_20250919`.
    """

    name: ClassVar[str] = "clear-tool-uses"
    source: ClassVar[str] = (
        "langchain 1.5.2 langchain/agents/middleware/context_editing.py ClearToolUsesEdit "
        "defaults (DEFAULT_TOOL_PLACEHOLDER); Anthropic clear_tool_uses_20250919 docs "
        "(trigger 100k input tokens, keep 3 tool uses)"
    )

    trigger: int = 100_000
    keep: int = 3
    clear_at_least: int = 0
    clear_tool_inputs: bool = False
    exclude_tools: tuple[str, ...] = ()
    placeholder: str = DEFAULT_TOOL_PLACEHOLDER
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One clearing stage."""
        return [
            ClearStage(
                trigger=int(self.trigger),
                keep=int(self.keep),
                clear_at_least=int(self.clear_at_least),
                clear_tool_inputs=self.clear_tool_inputs,
                exclude_tools=tuple(self.exclude_tools),
                placeholder=self.placeholder,
                trace=trace,
            )
        ]

    def counts_only(self, trace: Trace, summarizer: Summarizer) -> CallCounts | None:
        """This policy's per-call counts and events on `trace` by formula, with its default
        `clear_at_least=0` and results only (`ctxlab._replay.policies.clear_counts`)."""
        from ctxlab._replay.policies.clear_counts import clear_counts
        from ctxlab._replay.policies.counts_only import single_stage

        return single_stage(self, trace, ClearStage, clear_counts)


# ---------------------------------------------------------------------------------------------
# trim_messages
# ---------------------------------------------------------------------------------------------


class TrimStage:
    """`trim_messages(messages, max_tokens=..., strategy=..., start_on=..., ...)` every call.

    Fast path for `strategy="last"` without `allow_partial` or `end_on` (the preset): the
    token counter is a sum over messages, so `trim_messages`' binary search over suffixes is
    a bisection of prefix sums, and `start_on` the first matching message at or after the
    cut; the result is `[system?] + items[cut:]`, computed from running sums in the time of
    what changed. Any other option calls `trim_messages` itself.
    """

    def __init__(
        self, *, max_tokens: int | None, options: dict[str, Any], cpt: float, trace: Trace
    ) -> None:
        self.max_tokens = max_tokens
        self.options = options
        self.cpt = cpt
        self.dropped: set[int] = set()
        self.sums = Sums(TokenCache.of(trace, cpt))  # the history comes measured
        self.fast = (
            options.get("strategy", "first") == "last"
            and not options.get("allow_partial")
            and not options.get("end_on")
        )
        self.prev_in: list[Item] | Mark | None = None
        self.prev_cut = 0
        self.starts: list[int] = []  # input indices of messages `start_on` accepts

    def _cut(self, items: list[Item], limit: int) -> tuple[int, int]:
        """(head, cut): `trim_messages` keeps `items[:head] + items[cut:]`."""
        msgs = self.sums.prefix_sums(items)[0]
        n = len(items)
        head = 1 if self.options.get("include_system") and n and items[0].kind == "system" else 0
        if head and not isinstance(items[0].msg, SystemMessage):
            head = 0
        remaining = max(0, limit - msgs[1]) if head else limit
        cut = bisect.bisect_left(msgs, msgs[n] - remaining, head, n + 1)
        start_on = self.options.get("start_on")
        if start_on:
            k = bisect.bisect_left(self.starts, cut)
            cut = self.starts[k] if k < len(self.starts) else n
        return head, cut

    def _index(self, items: list[Item], start: int) -> None:
        start_on = self.options.get("start_on")
        if start_on:
            self.starts.extend(
                i for i in range(start, len(items)) if is_message_type(items[i].msg, start_on)
            )

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        limit = self.max_tokens if self.max_tokens is not None else ctx.window
        if limit is None:
            raise UnsupportedSettingError(
                "sliding-window: max_tokens needs a value (or a known window)"
            )
        new = appended(self.prev_in, items) if self.fast else None
        if new is not None:
            self._index(items, len(self.prev_in))  # type: ignore[arg-type]
            head, cut = self._cut(items, int(limit))
            if cut < self.prev_cut:
                new = None
        if new is None:
            out = self._trim(items, int(limit))
            kept_pos = {it.pos for it in out}
            dropped = {it.pos for it in items if it.pos is not None and it.pos not in kept_pos}
            fresh = sorted(dropped - self.dropped)
            self.dropped = dropped
            if self.fast:
                self.starts = []
                self._index(items, 0)
                self.prev_cut = self._cut(items, int(limit))[1]
        else:
            out = [*items[:head], *items[cut:]]
            fresh = sorted(
                it.pos
                for it in items[max(head, self.prev_cut) : cut]
                if it.pos is not None and it.pos not in self.dropped
            )
            self.dropped.update(fresh)
            self.prev_cut = cut
        self.prev_in = items
        if fresh:
            ctx.events.append(
                Event(
                    "trim",
                    ctx.turn.index,
                    tuple(fresh),
                    ctx.count(items),
                    ctx.count(out),
                    None,
                    f"max_tokens={limit}",
                )
            )
        return out

    def _trim(self, items: list[Item], limit: int) -> list[Item]:
        """`trim_messages` itself."""
        cpt = self.cpt

        def counter(messages: list[BaseMessage]) -> int:
            return sum(tk.message_tokens(m, cpt) for m in messages)

        kept = trim_messages(
            [it.msg for it in items], max_tokens=limit, token_counter=counter, **self.options
        )
        by_id = {id(it.msg): it for it in items}
        return [by_id.get(id(m)) or Item(None, m, "human") for m in kept]


@dataclass(frozen=True)
class SlidingWindow(StagePolicy):
    """`trim_messages` before every model call: keep the most recent messages that fit.

    `max_tokens` is required by `trim_messages`; `"auto"` uses the model's window, so the
    preset trims only what would not fit. `start_on="human"` makes the kept history begin at a
    user turn (so no tool result loses its call), `include_system=True` keeps the system prompt:
    the settings of LangGraph's short-term-memory recipe.
    """

    name: ClassVar[str] = "sliding-window"
    source: ClassVar[str] = (
        "langchain_core 1.8 langchain_core/messages/utils.py trim_messages (strategy='last', "
        "allow_partial=False); LangGraph docs 'manage short-term memory' recipe "
        "(start_on='human', include_system=True)"
    )

    max_tokens: int | Literal["auto"] = AUTO
    strategy: Literal["first", "last"] = "last"
    allow_partial: bool = False
    start_on: str | None = "human"
    end_on: Any = None
    include_system: bool = True
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One trimming stage."""
        options: dict[str, Any] = {
            "strategy": self.strategy,
            "allow_partial": self.allow_partial,
            "start_on": self.start_on,
            "end_on": tuple(self.end_on) if isinstance(self.end_on, list) else self.end_on,
        }
        if self.strategy == "last":
            options["include_system"] = self.include_system
        max_tokens = None if self.max_tokens == AUTO else int(self.max_tokens)
        return [
            TrimStage(max_tokens=max_tokens, options=options, cpt=tk.CHARS_PER_TOKEN, trace=trace)
        ]


__all__ = [
    "ClearStage",
    "ClearToolUses",
    "LangChainSummarization",
    "SUMMARY_PREFIX",
    "SlidingWindow",
    "SummarizeStage",
    "TrimStage",
]
