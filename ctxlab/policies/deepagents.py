"""The Deep Agents compaction stack (deepagents 0.7.32), decision for decision.

Mirrors, in order of application (spec: `deepagents-semantics.md`):

* `FilesystemMiddleware.wrap_tool_call`: a tool result whose text exceeds
  `4 * tool_token_limit_before_evict` chars is written to `/large_tool_results/{id}` and the
  state keeps a head/tail stub (tools in `TOOLS_EXCLUDED_FROM_EVICTION` never are); a later
  same-path file mutation in one AIMessage is answered with deepagents' error instead.
* `FilesystemMiddleware.wrap_model_call`: a trailing HumanMessage over
  `4 * human_message_token_limit_before_evict` chars is saved to `/conversation_history/` and
  every tagged HumanMessage is sent as a stub.
* `SummarizationMiddleware.wrap_model_call`: the effective list (latest summary + messages from
  the event's cutoff), request-only argument truncation, the trigger clauses OR the input budget,
  the token/message keep window with the backward safe cutoff, the history file section, the
  chained summary, and `_call_with_budget`'s overflow tail clip.

Exact texts (stubs, previews, summary prompt, history XML) come from the installed packages.

Speed: every message is measured once, in one pass on the first call (`tokens.tokens_list`);
what the feed derives from a message (its calls by id, the size of its truncated form, its
offload stub, its size without bound reasoning) is memoised per message object, so a repeat
replay of the same trace derives nothing. Context counts are lazily extended prefix sums over
the state: a call with no event costs O(1) amortised, an event O(messages it touches) plus
O(log n) for the keep window's binary search. Message copies that only the summariser and the
history file read (truncated arguments, dropped reasoning) are made when they are read. The
real middleware walks and re-counts the whole history on every call.

Each call's request is also given part by part (`Call.request`, for the prompt-cache
simulation) as a `Request`: an edit of the previous call's request, built from the state
positions appended or edited since, so it too costs O(1) amortised on a call without an event.
"""

from __future__ import annotations

import hashlib
import math
from bisect import bisect_left
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from functools import cached_property, lru_cache
from itertools import accumulate
from typing import TYPE_CHECKING, Any, ClassVar, Literal, overload

from deepagents.backends.utils import sanitize_tool_call_id, validate_path
from deepagents.middleware._message_eviction import (
    _build_evicted_content,
    _build_evicted_tool_message,
    _extract_text_from_message,
    _render_too_large_tool_msg,
)
from deepagents.middleware.filesystem import (
    NUM_CHARS_PER_TOKEN,
    TOOLS_EXCLUDED_FROM_EVICTION,
    _build_truncated_human_message,
)
from deepagents.middleware.summarization import (
    DEEPAGENTS_DEFAULT_SUMMARY_PROMPT,
    _bound_reasoning_types,
    _drop_bound_reasoning,
)
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    get_buffer_string,
)

from ctxlab import tokens as tk
from ctxlab.policies.base import Call, Event, Files, Request
from ctxlab.profiles import profile as lookup_profile

if TYPE_CHECKING:
    from ctxlab.summarizers import Summarizer
    from ctxlab.trace import Trace, Turn

AUTO: Literal["auto"] = "auto"
_FILE_MUTATION_TOOLS = frozenset({"write_file", "edit_file", "delete"})
_PARALLEL_MUTATION_ERROR = "Error: parallel file mutations to the same path are not allowed."
_TRUNCATE_ARGS_TOOLS = frozenset({"write_file", "edit_file"})
_DEFAULT_MESSAGES_TO_KEEP = 20
_EPOCH = "1970-01-01T00:00:00+00:00"


# --------------------------------------------------------------------------------------------
# Parameters
# --------------------------------------------------------------------------------------------


def keep_search(n: int, fits: Callable[[int], bool]) -> int | None:
    """LangChain's `_determine_cutoff_index` search over a token keep window, shared by every
    policy that reuses it: the smallest start `k` whose suffix `fits`, by the same bounded
    binary search (so the same answer where `fits` is not monotone); if no suffix fits, the
    last message (`n - 1`), or None (no cutoff) for a single message. The caller applies its
    own safe point."""
    left, right, candidate = 0, n, n
    for _ in range(n.bit_length() + 1):
        if left >= right:
            break
        mid = (left + right) // 2
        if fits(mid):
            candidate, right = mid, mid
        else:
            left = mid + 1
    if candidate == n:
        candidate = left
    if candidate >= n:
        if n == 1:
            return None
        candidate = n - 1
    return candidate


def normalize_trigger(trigger: Any) -> list[dict[str, float]]:
    """LangChain's trigger forms as OR-ed clauses of AND-ed metrics (`_normalize_trigger`)."""
    if trigger is None:
        return []
    if _is_pair(trigger) or not isinstance(trigger, list):
        trigger = [trigger]
    clauses: list[dict[str, float]] = []
    for item in trigger:
        clause = {item[0]: item[1]} if _is_pair(item) else dict(item)
        if not clause:
            raise ValueError("trigger clause must name at least one of tokens, messages, fraction")
        for kind, value in clause.items():
            _validate_size(kind, value, "trigger")
        clauses.append(clause)
    return clauses


def _is_pair(item: Any) -> bool:
    """`("fraction", 0.85)`, also as the list JSON turns it into."""
    return isinstance(item, tuple | list) and len(item) == 2 and isinstance(item[0], str)


def _validate_size(kind: str, value: float, what: str) -> None:
    if kind == "fraction":
        if not 0 < value <= 1:
            raise ValueError(f"Fractional {what} values must be between 0 and 1, got {value}.")
    elif kind in {"tokens", "messages"}:
        if value <= 0:
            raise ValueError(f"{what} thresholds must be greater than 0, got {value}.")
    else:
        raise ValueError(f"Unsupported context size type {kind} for {what}.")


@dataclass(frozen=True)
class DeepAgents:
    """Deep Agents' compaction with its own parameter names; `"auto"` = what deepagents picks.

    * `window`: the model's `max_input_tokens`. `"auto"` looks the trace's model up in the
      LangChain profile data (exact name); `None` means "no profile" (fixed 170k/6-message
      defaults, no budget check, fractions rejected).
    * `trigger`, `keep`, `truncate_args_settings`: as `SummarizationMiddleware` takes them, e.g.
      `trigger=("fraction", 0.85)`, `[{"tokens": 4000, "messages": 10}, ("fraction", 0.9)]`.
      Each `"auto"` is what `create_summarization_middleware` picks, independently of the
      others; a hand-built `SummarizationMiddleware` has truncation off unless given, so mirror
      one with `truncate_args_settings=None`.
    * `max_output_tokens`: reserved by the input budget `int(0.95 * window) - max_output_tokens`.
      `"auto"`: the call's recorded `max_tokens` where the trace has it, else ChatAnthropic's
      default (the profile's output limit, else 4096) for Anthropic models, nothing for others.
    * `chars_per_token`: `"auto"` = 3.3 for Anthropic chat models, else 4.0.
    * `tools`: schemas in every request: `"trace"` (as recorded), `"deepagents"` (the default
      Deep Agents tool set), `"deepagents+trace"` (that set plus the recorded tools it lacks, as
      a deep agent given the trace's tools would send), a list of schemas, or a token count.
    * `system_prompt`: `"trace"` = the trace's system message, or `""` (deepagents sends an empty
      one when none is configured).
    * `stress`: one-argument stress mode: trigger (and truncation trigger) at this fraction of
      the window, keep a tenth of it; the Deep Agents team runs 10-25% to multiply events.
    * `use_usage_metadata`: let recorded `usage_metadata` scale counts and trigger, as LangChain
      does. Off by default: recorded usage describes the recorded context, not the replayed one
      (spec §2.3); on, every call re-reads the whole context (O(n) per call).
    """

    name: ClassVar[str] = "deepagents"

    window: int | None | Literal["auto"] = AUTO
    trigger: Any = AUTO
    keep: Any = AUTO
    truncate_args_settings: Any = AUTO
    max_output_tokens: int | None | Literal["auto"] = AUTO
    chars_per_token: float | Literal["auto"] = AUTO
    tools: Any = "trace"
    system_prompt: str | None = "trace"
    tool_token_limit_before_evict: int | None = 20000
    human_message_token_limit_before_evict: int | None = 50000
    trim_tokens_to_summarize: int | None = None
    summary_prompt: str = DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
    stress: float | None = None
    use_usage_metadata: bool = False
    model: str | None = None
    provider: str | None = None

    def params(self) -> dict[str, Any]:
        """Parameters as given, for the store (the summary prompt only if changed)."""
        out = {k: v for k, v in asdict(self).items() if k != "summary_prompt"}
        if self.summary_prompt != DEEPAGENTS_DEFAULT_SUMMARY_PROMPT:
            out["summary_prompt"] = self.summary_prompt
        return out

    def resolve(self, trace: Trace) -> Settings:
        """Concrete thresholds for `trace`, computed the way deepagents computes its defaults."""
        prof = lookup_profile(self.model or trace.model, self.provider or trace.provider)
        window = prof.max_input_tokens if self.window == AUTO else self.window
        anthropic = prof.is_anthropic
        cpt = (
            (tk.ANTHROPIC_CHARS_PER_TOKEN if anthropic else tk.CHARS_PER_TOKEN)
            if self.chars_per_token == AUTO
            else float(self.chars_per_token)
        )
        max_out = (
            prof.reserved_output_tokens
            if self.max_output_tokens == AUTO
            else self.max_output_tokens
        )
        has_profile = window is not None
        trigger, keep, truncate = self.trigger, self.keep, self.truncate_args_settings
        if self.stress is not None:
            if not has_profile:
                raise ValueError("stress mode needs a window (a model profile or window=N)")
            trigger = ("fraction", self.stress) if trigger == AUTO else trigger
            keep = ("fraction", round(self.stress / 10, 6)) if keep == AUTO else keep
            if truncate == AUTO:
                truncate = {"trigger": ("fraction", self.stress), "keep": keep}
        if trigger == AUTO:
            trigger = ("fraction", 0.85) if has_profile else ("tokens", 170000)
        if keep == AUTO:
            keep = ("fraction", 0.10) if has_profile else ("messages", 6)
        if truncate == AUTO:
            truncate = (
                {"trigger": ("fraction", 0.85), "keep": ("fraction", 0.10)}
                if has_profile
                else {"trigger": ("messages", 20), "keep": ("messages", 20)}
            )
        clauses = normalize_trigger(trigger)
        keep = tuple(keep)
        _validate_size(keep[0], keep[1], "keep")
        if (any("fraction" in c for c in clauses) or keep[0] == "fraction") and not has_profile:
            raise ValueError("Model profile information is required to use fractional limits")
        truncate = dict(truncate) if truncate is not None else None
        budget = None
        if window is not None:
            budget = max(0, int(window * 0.95) - (max_out or 0))
        recorded_max_out = self.max_output_tokens == AUTO
        return Settings(
            window=window,
            clauses=clauses,
            keep=keep,
            truncate_trigger=tuple(truncate["trigger"])
            if truncate and truncate.get("trigger")
            else None,
            truncate_keep=tuple(truncate.get("keep", ("messages", 20)))
            if truncate
            else ("messages", 20),
            max_arg_length=truncate.get("max_length", 2000) if truncate else 2000,
            truncation_text=truncate.get("truncation_text", "...(argument truncated)")
            if truncate
            else "...(argument truncated)",
            budget=budget,
            recorded_max_output=recorded_max_out,
            max_output_tokens=max_out,
            chars_per_token=cpt,
            tools_tokens=_tools_tokens(self.tools, trace, cpt),
            system=_system_message(self.system_prompt, trace),
            tool_evict_chars=NUM_CHARS_PER_TOKEN * self.tool_token_limit_before_evict
            if self.tool_token_limit_before_evict
            else None,
            human_evict_chars=NUM_CHARS_PER_TOKEN * self.human_message_token_limit_before_evict
            if self.human_message_token_limit_before_evict
            else None,
            trim_tokens_to_summarize=self.trim_tokens_to_summarize,
            summary_prompt=self.summary_prompt,
            use_usage_metadata=self.use_usage_metadata,
            provider=prof.provider,
        )

    def start(self, trace: Trace, summarizer: Summarizer) -> DeepAgentsRun:
        """A fresh run over `trace`."""
        return DeepAgentsRun(self.resolve(trace), trace, summarizer)


def _system_message(system_prompt: str | None, trace: Trace) -> SystemMessage:
    if system_prompt == "trace":
        if trace.messages and isinstance(trace.messages[0], SystemMessage):
            return trace.messages[0]
        return SystemMessage("")
    return SystemMessage(system_prompt or "")


def _tools_tokens(tools: Any, trace: Trace, cpt: float) -> int:
    if isinstance(tools, bool):
        raise TypeError("tools must be 'trace', 'deepagents', a list of schemas or a token count")
    if isinstance(tools, int):
        return tools
    if tools == "trace":
        return tk.tool_schema_tokens(visible_tools(trace.tools), cpt)
    if tools in {"deepagents", "deepagents+trace"}:
        from ctxlab.policies.deepagents_tools import default_tools

        own = list(default_tools())
        if tools == "deepagents+trace":
            names = {t.name for t in own}
            own += [t for t in visible_tools(trace.tools) if _schema_name(t) not in names]
        return tk.tool_schema_tokens(own, cpt)
    return tk.tool_schema_tokens(visible_tools(list(tools)), cpt)


def _schema_name(tool: dict[str, Any]) -> str | None:
    """Name of a recorded schema in OpenAI (`function.name`) or Anthropic/plain shape."""
    return (tool.get("function") or {}).get("name") or tool.get("name")


def visible_tools(tools: list[Any]) -> list[Any]:
    """Recorded schemas as deepagents' default StateBackend would send them.

    `FilesystemMiddleware` drops a top-level tool named `execute` (the backend cannot run
    commands); nested OpenAI-shaped schemas have no top-level name and pass untouched.
    """
    return [t for t in tools if not (isinstance(t, dict) and t.get("name") == "execute")]


@dataclass(frozen=True)
class Settings:
    """A `DeepAgents` policy resolved against one trace: only numbers and texts."""

    window: int | None
    clauses: list[dict[str, float]]
    keep: tuple[str, float]
    truncate_trigger: tuple[str, float] | None
    truncate_keep: tuple[str, float]
    max_arg_length: int
    truncation_text: str
    budget: int | None
    recorded_max_output: bool
    max_output_tokens: int | None
    chars_per_token: float
    tools_tokens: int
    system: SystemMessage
    tool_evict_chars: int | None
    human_evict_chars: int | None
    trim_tokens_to_summarize: int | None
    summary_prompt: str
    use_usage_metadata: bool
    provider: str | None


# --------------------------------------------------------------------------------------------
# Incremental state
# --------------------------------------------------------------------------------------------


class _Prefix:
    """Values with prefix sums, extended lazily: appending (once per message) is a bare
    `list.append`; a query extends the sums (in C, with `accumulate`) only as far as it reads;
    an edit drops the sums after it."""

    __slots__ = ("values", "sums")

    def __init__(self) -> None:
        self.values: list[int] = []
        self.sums: list[int] = [0]  # sums[k] = sum(values[:k]), for k < len(sums)

    def set(self, index: int, value: int) -> None:
        self.set_many([(index, value)])

    def set_many(self, changes: list[tuple[int, int]]) -> None:
        for index, value in changes:
            self.values[index] = value
        if changes:
            del self.sums[min(index for index, _ in changes) + 1 :]

    def total(self, start: int, stop: int) -> int:
        """sum(values[start:stop])."""
        sums = self.sums
        if len(sums) <= stop:
            known = len(sums) - 1
            sums[known:] = accumulate(self.values[known:stop], initial=sums[known])
        return sums[stop] - sums[start]


def _kind(message: BaseMessage) -> str:
    if isinstance(message, AIMessage):
        return "ai"
    if isinstance(message, ToolMessage):
        return "tool_results"
    if isinstance(message, HumanMessage):
        return (
            "summary" if message.additional_kwargs.get("lc_source") == "summarization" else "human"
        )
    if isinstance(message, SystemMessage):
        return "system"
    return "human"


_MESSAGE_KINDS = ("human", "ai", "tool_results", "stubs", "summary", "system")


def _deterministic_hex(*parts: object) -> str:
    return hashlib.sha256("\x1f".join(map(str, parts)).encode()).hexdigest()


_Undo = tuple["_SummaryEvent | None", tuple[int, list[tuple[int, int]]], str]
_REBUILD = object()
"""`DeepAgentsRun.request_event` when the next request must be built whole."""


@dataclass
class _SummaryEvent:
    cutoff: int
    message: HumanMessage
    tokens: int
    created_at: int
    file_path: str | None


class _Sent(Sequence[BaseMessage]):
    """Messages of a request as sent, copied on first read (`DeepAgentsRun._messages`).

    A summarisation hands what it summarises to the summariser and to the history file.
    Decisions never read it, and neither does a `Fixed` summariser, so the copies with
    truncated arguments and dropped reasoning are only made for whoever looks. Everything is
    captured when the sequence is taken (state messages, which positions are cut, how far
    reasoning is dropped), so a late read gives what an immediate one would have.
    """

    def __init__(
        self,
        summary: BaseMessage | None,
        messages: list[BaseMessage],
        first: int,
        cut: frozenset[int],
        dropped_until: int,
        truncation: tuple[int, str],
    ) -> None:
        self._summary = summary
        self._messages = messages
        self._first = first
        self._cut = cut
        self._dropped_until = dropped_until
        self._truncation = truncation
        self._built: list[BaseMessage] | None = None

    def _list(self) -> list[BaseMessage]:
        if self._built is None:
            built = [] if self._summary is None else [self._summary]
            for p, message in enumerate(self._messages, self._first):
                if p in self._cut:
                    message = _truncated(message, *self._truncation)
                if p < self._dropped_until:
                    message = _dropped(message)
                built.append(message)
            self._built = built
        return self._built

    def __len__(self) -> int:
        return len(self._messages) + (self._summary is not None)

    @overload
    def __getitem__(self, index: int) -> BaseMessage: ...

    @overload
    def __getitem__(self, index: slice) -> list[BaseMessage]: ...

    def __getitem__(self, index: int | slice) -> BaseMessage | list[BaseMessage]:
        return self._list()[index]

    def __iter__(self) -> Iterator[BaseMessage]:
        return iter(self._list())


@dataclass
class DeepAgentsRun:
    """One trace under one `DeepAgents` policy; see `ctxlab.policies.base.Run`."""

    settings: Settings
    trace: Trace
    summarizer: Summarizer
    files: Files = field(default_factory=Files)

    def __post_init__(self) -> None:
        s = self.settings
        self.cpt = s.chars_per_token
        self.system_tokens = tk.message_tokens(s.system, self.cpt)
        self.fixed = s.tools_tokens + self.system_tokens  # in every request
        self.source = self.trace.messages[1:] if self._has_system() else self.trace.messages
        self.offset = 1 if self._has_system() else 0
        self.tool_evict_chars = s.tool_evict_chars
        self.view: list[BaseMessage] = []  # state as SummarizationMiddleware sees it
        self.kinds: list[str] = []
        self.etok = _Prefix()  # effective tokens (bound reasoning dropped where it applies)
        self.window_kinds = dict.fromkeys(_MESSAGE_KINDS, 0)  # etok by kind over [cutoff, n)
        self.tsaved: list[int] = [0]  # cumulative tokens truncation saves, along `tpos`
        self.calls: dict[Any, dict] = {}  # the latest AIMessage's calls by id
        self.rejected: frozenset[Any] = _NONE_REJECTED  # ids of those deepagents rejects
        self.truncated: set[int] = set()  # AIMessages argument truncation would shorten
        self.tpos: list[int] = []  # positions in `truncated`, ascending
        self.ai_key = ("deepagents-ai", s.max_arg_length, s.truncation_text)
        self.tagged: set[int] = set()
        self.event: _SummaryEvent | None = None
        self.dropped_until = 0  # state positions below this had bound reasoning dropped
        self.unreasoned: set[int] = set()  # those that had some (their copies are sent)
        self.edited_until = 0  # `_set` and `unreasoned` positions are all below this
        self.session: str | None = None
        self.summaries: dict[str, HumanMessage] = {}  # summary messages by text
        self.pending: list[Event] = []
        self.fed = 0
        self.counter = 0
        self.budget = self.settings.budget  # this call's input budget
        self.budget_per_call = s.recorded_max_output and s.window is not None
        self.truncate_when = self._truncate_when()
        self.trigger = [[self._metric(k, v) for k, v in clause.items()] for clause in s.clauses]
        # Fingerprints: 4 * state position for a state message as fed; a new number (negative,
        # steps of 4) for one `_set` put there (`versions`), and for each other thing sent:
        # the tool schemas, the system prompt, each summary message (`named`, by id).
        self.last_fingerprint = 0
        self.versions: dict[int, int] = {}
        self.named: dict[int, tuple[object, int]] = {}
        tools = ((self._new_fingerprint(), s.tools_tokens),) if s.tools_tokens else ()
        self.fixed_parts = (*tools, (self._fingerprint(s.system), self.system_tokens))
        # The previous call's request and what `_request` needs of how it was built: its
        # summary event (`_REBUILD` before the first call, and always with usage scaling),
        # the `tpos` indices its truncated arguments start (`truncated_from`, fixed while the
        # event is) and stop at (`truncated_to`), the offset from a state position to its part
        # (`part_of`), and `dirty`: the first state position edited in place since (`_set`),
        # or the state length then.
        self.request: Request | None = None
        self.request_event: object = _REBUILD
        self.truncated_from = self.truncated_to = self.part_of = self.dirty = 0
        self.scaled = s.use_usage_metadata
        self.scale = 1.0  # usage scaling of the latest whole-request count

    @cached_property
    def source_tokens(self) -> list[int]:
        """Tokens of each recorded message, measured once, on the first call (`start` alone,
        which a sweep's planning calls to validate every cell, measures nothing)."""
        return tk.tokens_list(self.source, self.cpt)

    @cached_property
    def baselines(self) -> list[int]:
        """`baselines[k]`: the counter over system prompt, tools and the first k messages."""
        return list(accumulate(self.source_tokens, initial=self.fixed))

    def _has_system(self) -> bool:
        msgs = self.trace.messages
        return bool(msgs) and isinstance(msgs[0], SystemMessage)

    # -- feeding the recorded history ----------------------------------------------------

    def _feed(self, upto: int) -> None:
        """Append recorded history messages until the state holds `upto - offset` of them.

        The replay's per-message loop, so the common cases are inline: AIMessages, tool results
        kept as they are, human messages. Offloads, rejected calls and already evicted human
        messages take methods.
        """
        fed, stop = self.fed, upto - self.offset
        if fed >= stop:
            return
        self.fed = stop
        view, kinds, toks_in_state = self.view, self.kinds, self.etok.values
        window, toks_of, limit = self.window_kinds, self.source_tokens, self.tool_evict_chars
        source, excluded = self.source, TOOLS_EXCLUDED_FROM_EVICTION
        for i in range(fed, stop):
            message = source[i]
            toks = toks_of[i]
            kind = "ai"
            if isinstance(message, ToolMessage):
                call = self.calls.get(message.tool_call_id)
                if call is not None and self.rejected and message.tool_call_id in self.rejected:
                    self._rejected(message, call)
                    continue
                name = call["name"] if call is not None else message.name
                if not (limit is None or name in excluded or _text_len(message) <= limit):
                    self._offload_result(message, i + self.offset, toks, limit)
                    continue
                kind = "tool_results"
            elif isinstance(message, AIMessage):
                if message.tool_calls:
                    self._tool_calls(message, i, toks)
                elif self.calls:
                    self.calls, self.rejected = {}, _NONE_REJECTED
            elif isinstance(message, HumanMessage) and message.additional_kwargs.get(
                "lc_evicted_to"
            ):
                self.tagged.add(i)
                path = message.additional_kwargs["lc_evicted_to"]
                self._append(_build_truncated_human_message(message, path), "stubs")
                continue
            else:
                kind = _kind(message)
            view.append(message)
            kinds.append(kind)
            toks_in_state.append(toks)
            window[kind] += toks

    def _append(self, message: BaseMessage, kind: str, toks: int | None = None) -> None:
        """Append a stub or an error to the state."""
        toks = tk.message_tokens(message, self.cpt) if toks is None else toks
        self.view.append(message)
        self.kinds.append(kind)
        self.etok.values.append(toks)
        self.window_kinds[kind] += toks

    def _tool_calls(self, message: AIMessage, index: int, toks: int) -> None:
        """An AIMessage with tool calls at state `index`: the calls its results will answer
        (as the tool node would be asked), and whether argument truncation would shorten it."""
        self.calls, self.rejected, grown = tk.derived(
            message, self.ai_key, lambda: _ai_facts(message, *self.ai_key[1:])
        )
        if grown is not None:
            saved = 0
            if grown:
                size = tk.cached_size(message)
                saved = toks - tk.Size(size.chars + grown, size.images).tokens(self.cpt)
            self.truncated.add(index)
            self.tpos.append(index)
            self.tsaved.append(self.tsaved[-1] + saved)

    def _set(self, index: int, message: BaseMessage, kind: str) -> None:
        self.view[index] = message
        self.dirty = min(self.dirty, index)
        self.versions[index] = self._new_fingerprint()
        self.edited_until = max(self.edited_until, index + 1)
        self._retoken(index, tk.message_tokens(message, self.cpt), kind)

    def _retoken(self, index: int, toks: int, kind: str) -> None:
        if index >= self._window_start():
            self.window_kinds[self.kinds[index]] -= self.etok.values[index]
            self.window_kinds[kind] += toks
        self.kinds[index] = kind
        self.etok.set(index, toks)

    def _window_start(self) -> int:
        return self.event.cutoff if self.event is not None else 0

    def _recount_window(self) -> None:
        """Per-kind totals over the state window the effective list shows (after an event)."""
        totals = dict.fromkeys(_MESSAGE_KINDS, 0)
        values, kinds = self.etok.values, self.kinds
        for p in range(min(self._window_start(), len(values)), len(values)):
            totals[kinds[p]] += values[p]
        self.window_kinds = totals

    def _rejected(self, message: ToolMessage, call: dict) -> None:
        """`FilesystemMiddleware.wrap_tool_call` answered a same-path parallel mutation with
        an error instead of running it."""
        error = tk.derived(message, ("deepagents-rejected", call["name"]), lambda: _error(call))
        self._append(error, "tool_results")

    def _offload_result(self, message: ToolMessage, pos: int, toks: int, limit: int) -> None:
        """`FilesystemMiddleware.wrap_tool_call` offloaded an oversized result."""
        stub, path = self._offload(message, _text(message))
        self._append(stub, "stubs")
        event = Event(
            "offload_tool_result",
            None,
            (pos,),
            toks,
            self.etok.values[-1],
            path,
            f"> {limit} chars",
        )
        self.pending.append(event)

    def _offload(self, message: ToolMessage, text: str) -> tuple[ToolMessage, str]:
        if message.tool_call_id:
            name = sanitize_tool_call_id(message.tool_call_id)
        else:
            name = f"unknown-{self._next_hex()[:8]}"
        path = f"/large_tool_results/{name}"
        self.files.write(path, text)
        stub = tk.derived(message, ("deepagents-offload", path), lambda: _stub(message, path, text))
        return stub, path

    def _next_hex(self) -> str:
        self.counter += 1
        return _deterministic_hex(self.trace.trace_id, self.counter)

    # -- one model call --------------------------------------------------------------------

    def call(self, turn: Turn) -> Call:
        """The request for `turn`. Its recorded output joins the state with the next call's
        feed (or `finish`): nothing reads the state in between."""
        self._feed(turn.position)
        events: list[Event] = []
        if self.pending:
            events = [replace(e, turn=turn.index) for e in self.pending]
            self.pending.clear()
        tagged = None
        if self.view and isinstance(self.view[-1], HumanMessage):
            tagged = self._human_offload(turn, events)
        result = self._summarization(turn, events)
        if tagged is not None and any(e.kind == "overflow_error" for e in events):
            # The call raised: FilesystemMiddleware's tag never reached the state (its file
            # stays written); the message is sent in full from now on.
            index, original, event = tagged
            self.tagged.discard(index)
            self._set(index, original, _kind(original))
            events.remove(event)
        return result

    def finish(self) -> list[Event]:
        """Offloads of tool results after the last model call (no turn saw them)."""
        self._feed(len(self.trace.messages))
        out, self.pending = self.pending, []
        return out

    def _human_offload(
        self, turn: Turn, events: list[Event]
    ) -> tuple[int, BaseMessage, Event] | None:
        """`FilesystemMiddleware.wrap_model_call`: stub the trailing HumanMessage if it is new
        and oversized (asked only when the state ends with one).

        Returns what to restore should this call end in `ContextOverflowError`.
        """
        limit = self.settings.human_evict_chars
        last = len(self.view) - 1
        message = self.view[last]
        if not limit or last in self.tagged:
            return None
        text = _text(message)
        if len(text) <= limit:
            return None
        h = self._next_hex()
        path = f"/conversation_history/{h[:8]}-{h[8:12]}-4{h[13:16]}-a{h[17:20]}-{h[20:32]}.md"
        self.files.write(path, text)
        before = self.etok.values[last]
        tagged = message.model_copy(
            update={"additional_kwargs": {**message.additional_kwargs, "lc_evicted_to": path}}
        )
        self.tagged.add(last)
        self._set(last, _build_truncated_human_message(tagged, path), "stubs")
        event = Event(
            "offload_human_message",
            turn.index,
            (last + self.offset,),
            before,
            self.etok.values[last],
            path,
            f"> {limit} chars",
        )
        events.append(event)
        return last, message, event

    # effective list helpers: index j of the effective list <-> state position

    def _eff_len(self) -> int:
        n = len(self.view)
        ev = self.event
        if ev is None:
            return n
        return 1 if ev.cutoff > n else 1 + n - ev.cutoff

    def _pos(self, j: int) -> int:
        """State position of effective index `j` (-1 for the summary message)."""
        ev = self.event
        if ev is None:
            return j
        return -1 if j == 0 else ev.cutoff + j - 1

    def _suffix(self, j: int, trunc_stop: int) -> int:
        """Tokens of effective[j:], with truncation applied to effective indices < trunc_stop.

        The state positions are `_pos` inlined: binary searches call this ~log(n) times.
        """
        n = len(self.view)
        ev = self.event
        if ev is None:
            start, stop = j, trunc_stop
            total = self.etok.total(start, n)
        else:
            stop = ev.cutoff + trunc_stop - 1 if trunc_stop > 1 else 0
            if j == 0:
                start = ev.cutoff
                total = ev.tokens + (self.etok.total(start, n) if start <= n else 0)
            else:
                start = ev.cutoff + j - 1
                total = self.etok.total(start, n)
        if stop > start:
            total -= self._saved(start, stop)
        return total

    def _flags(self, j: int, trunc_stop: int) -> int:
        start = self.event.cutoff if (self.event is not None and j == 0) else self._pos(j)
        stop = self._pos(trunc_stop - 1) + 1 if trunc_stop > 0 else 0
        if stop <= start:
            return 0
        return bisect_left(self.tpos, stop) - bisect_left(self.tpos, start)

    def _saved(self, start: int, stop: int) -> int:
        """Tokens truncation saves over state positions [start, stop)."""
        return (
            self.tsaved[bisect_left(self.tpos, stop)] - self.tsaved[bisect_left(self.tpos, start)]
        )

    def _raw(self, j: int) -> BaseMessage:
        """Effective message `j` before the request-only edits (truncated arguments, dropped
        reasoning). Those keep a message's type and its tool calls' ids and names, which is all
        the cutoff and tail-clip searches read, so they need no copies."""
        p = self._pos(j)
        return self.event.message if p < 0 else self.view[p]

    def _messages(self, start: int, stop: int, trunc_stop: int) -> _Sent:
        """Effective messages [start, stop) as the request holds them (arguments truncated
        below `trunc_stop`, bound reasoning dropped), copied only when first read."""
        summary = None
        if self.event is not None and start == 0 and stop > 0:
            summary, start = self.event.message, 1
        first = self._pos(start) if start < stop else 0
        last = self._pos(stop - 1) + 1 if start < stop else 0
        cut_below = self._pos(trunc_stop - 1) + 1 if trunc_stop > 0 else 0
        cut = self.tpos[bisect_left(self.tpos, first) : bisect_left(self.tpos, cut_below)]
        s = self.settings
        return _Sent(
            summary,
            self.view[first:last],
            first,
            frozenset(cut),
            self.dropped_until,
            (s.max_arg_length, s.truncation_text),
        )

    def _scaled(self, raw: int, msgs: list[BaseMessage] | None, with_fixed: bool) -> int:
        """Apply LangChain's usage-metadata scaling (only when enabled). The factor of a whole
        request's count (`with_fixed`) is kept in `scale`: the last one taken before a call is
        recorded is that call's, which its request's parts are scaled by."""
        if not self.settings.use_usage_metadata or msgs is None:
            return raw
        fixed_msgs = [self.settings.system] if with_fixed else []
        counted = fixed_msgs + msgs
        per = [tk.message_tokens(m, self.cpt) for m in counted]
        scale = tk.usage_scale(counted, per, self.settings.tools_tokens if with_fixed else 0)
        if with_fixed:
            self.scale = scale
        return math.ceil(raw * scale)

    def _all(self, trunc_stop: int) -> list[BaseMessage] | None:
        if not self.settings.use_usage_metadata:
            return None
        return list(self._messages(0, self._eff_len(), trunc_stop))

    def _threshold(self, kind: str, value: float) -> int | None:
        if kind == "fraction":
            if self.settings.window is None:
                return None
            return max(1, int(self.settings.window * value))
        return max(1, int(value))

    def _reported(self, threshold: float, msgs: list[BaseMessage] | None) -> bool:
        """LangChain's reported-usage trigger (only with `use_usage_metadata`)."""
        if msgs is None:
            return False
        last = next((m for m in reversed(msgs) if isinstance(m, AIMessage)), None)
        if last is None or last.usage_metadata is None:
            return False
        reported = last.usage_metadata.get("total_tokens", -1)
        provider = last.response_metadata.get("model_provider")
        return bool(reported) and reported >= threshold and provider == self.settings.provider

    def _summarization(self, turn: Turn, events: list[Event]) -> Call:
        s = self.settings
        self.budget = s.budget
        if self.budget_per_call and turn.max_output_tokens is not None:
            self.budget = max(0, int(s.window * 0.95) - turn.max_output_tokens)
        n_eff = self._eff_len()
        msgs = None
        total = self.fixed + self._suffix(0, 0)
        if s.use_usage_metadata:
            msgs = self._all(0)
            total = self._scaled(total, msgs, True)

        # Step 1: request-only argument truncation.
        trunc_stop = 0
        when = self.truncate_when
        if when is not None and (n_eff if when[0] else total) >= when[1]:
            cut = self._truncate_cutoff(n_eff)
            if cut < n_eff and self._flags(0, cut):
                trunc_stop = cut
                before = total
                msgs = self._all(trunc_stop)
                total = self._scaled(self.fixed + self._suffix(0, trunc_stop), msgs, True)
                first = self.event.cutoff if self.event is not None else 0
                lo = bisect_left(self.tpos, first)
                hi = bisect_left(self.tpos, self._pos(cut - 1) + 1)
                touched = tuple(p + self.offset for p in self.tpos[lo:hi])
                events.append(
                    Event(
                        "truncate_args",
                        turn.index,
                        touched,
                        before,
                        total,
                        None,
                        f"{s.truncate_trigger[0]}:{s.truncate_trigger[1]}",
                    )
                )

        # Step 2: trigger clauses OR input budget.
        by_trigger = self._should_summarize(n_eff, total, msgs)
        by_budget = self.budget is not None and total > self.budget
        if not (by_trigger or by_budget):
            return self._record(turn, events, trunc_stop, total)

        # Step 3: summarise.
        cutoff = self._cutoff(n_eff, trunc_stop)
        if cutoff <= 0:
            return self._with_budget(turn, events, trunc_stop)
        reason = "+".join(r for r, on in (("trigger", by_trigger), ("budget", by_budget)) if on)
        return self._summarize(turn, events, cutoff, trunc_stop, total, reason)

    def _metric(self, kind: str, value: float) -> tuple[bool, float | None]:
        """A trigger clause's metric as (counts messages?, limit); a None limit is never met."""
        return (True, value) if kind == "messages" else (False, self._threshold(kind, value))

    def _truncate_when(self) -> tuple[bool, int | float] | None:
        """The truncation trigger as (counts messages?, limit), or None if it never fires."""
        trigger = self.settings.truncate_trigger
        if trigger is None:
            return None
        kind, value = trigger
        if kind == "messages":
            return True, value
        if kind == "tokens":
            return False, value
        if kind == "fraction" and self.settings.window is not None:
            return False, max(1, int(self.settings.window * value))
        return None

    def _truncate_cutoff(self, n_eff: int) -> int:
        kind, value = self.settings.truncate_keep
        if kind == "messages":
            return n_eff if n_eff <= value else int(n_eff - value)
        if kind == "fraction" and self.settings.window is None:
            return n_eff if n_eff <= 20 else n_eff - 20
        if kind not in {"tokens", "fraction"}:
            return n_eff
        target = self._threshold(kind, value)
        # Walking back, the first i with suffix(i) > target gives i + 1; suffixes only grow.
        lo, hi = 0, n_eff  # smallest j with suffix(j) <= target (suffix(n_eff) = 0)
        while lo < hi:
            mid = (lo + hi) // 2
            if self._suffix(mid, 0) <= target:
                hi = mid
            else:
                lo = mid + 1
        return lo

    def _should_summarize(self, n_eff: int, total: int, msgs: list[BaseMessage] | None) -> bool:
        for clause in self.trigger:
            for by_messages, limit in clause:
                if by_messages:
                    if n_eff < limit:
                        break
                elif limit is None or not (total >= limit or self._reported(float(limit), msgs)):
                    break
            else:
                return True
        return False

    def _cutoff(self, n_eff: int, trunc_stop: int) -> int:
        """`_determine_cutoff_index` on the truncated effective list."""
        kind, value = self.settings.keep
        if kind == "messages" or (kind == "fraction" and self.settings.window is None):
            keep = int(value) if kind == "messages" else _DEFAULT_MESSAGES_TO_KEEP
            if n_eff <= keep:
                return 0
            return self._safe(n_eff - keep, n_eff)
        if n_eff == 0:
            return 0
        target = self._threshold(kind, value)
        msgs = self._all(trunc_stop)
        whole = self._scaled(self._suffix(0, trunc_stop), msgs, False)
        if whole <= target:
            return 0
        candidate = keep_search(n_eff, lambda i: self._suffix(i, trunc_stop) <= target)
        return 0 if candidate is None else self._safe(candidate, n_eff)

    def _safe(self, cutoff: int, n_eff: int) -> int:
        """`_find_safe_cutoff_point`: move back to the AIMessage owning a ToolMessage at cutoff."""
        if cutoff >= n_eff or not isinstance(self._raw(cutoff), ToolMessage):
            return cutoff
        ids: set[str] = set()
        j = cutoff
        while j < n_eff:
            m = self._raw(j)
            if not isinstance(m, ToolMessage):
                break
            if m.tool_call_id:
                ids.add(m.tool_call_id)
            j += 1
        for i in range(cutoff - 1, -1, -1):
            m = self._raw(i)
            if isinstance(m, AIMessage) and m.tool_calls:
                if ids & {c.get("id") for c in m.tool_calls if c.get("id")}:
                    return i
        return j

    def _summarize(
        self,
        turn: Turn,
        events: list[Event],
        cutoff: int,
        trunc_stop: int,
        total: int,
        reason: str,
    ) -> Call:
        old = self.event
        to_summarize = self._messages(0, cutoff, trunc_stop)
        session = self.session or f"session_{self._next_hex()[:32]}"
        path = f"/conversation_history/{session}.md"
        stamp = turn.started_at or _EPOCH
        self.files.append(path, lambda: _history_section(stamp, to_summarize))
        summary = self._summary_text(to_summarize)
        content = (
            "You are in the middle of a conversation that has been summarized.\n\n"
            f"The full conversation history has been saved to {path} should you need to "
            "refer back to it for details.\n\nA condensed summary follows:\n\n"
            f"<summary>\n{summary}\n</summary>"
        )
        message = self.summaries.get(content)
        if message is None:  # one object per distinct text: built and measured once
            message = self.summaries[content] = HumanMessage(
                content=content, additional_kwargs={"lc_source": "summarization"}
            )
        state_cutoff = old.cutoff + cutoff - 1 if old is not None else cutoff
        first = old.cutoff if old is not None else 0
        touched = tuple(range(first + self.offset, min(state_cutoff, len(self.view)) + self.offset))
        new = _SummaryEvent(
            state_cutoff, message, tk.message_tokens(message, self.cpt), len(self.view), path
        )
        # The request: [summary, *drop_reasoning(preserved)]; preserved keeps truncated args,
        # which under the new event means state positions below `truncated_until`.
        truncated_until = self._pos(trunc_stop - 1) + 1 if trunc_stop > 0 else 0
        self.event = new
        self._recount_window()
        undo = self._drop_reasoning(new.cutoff, new.created_at)
        index = len(events)
        events.append(Event("summarize", turn.index, touched, total, None, path, reason, summary))
        committed = self._with_budget(
            turn, events, max(0, truncated_until - new.cutoff + 1), (old, undo, session)
        )
        events[index] = replace(events[index], tokens_after=committed.context_tokens)
        return committed

    def _summary_text(self, messages: Sequence[BaseMessage]) -> str:
        s = self.settings
        if not messages:
            return "No previous conversation history."
        if s.trim_tokens_to_summarize is not None:
            from langchain_core.messages import trim_messages

            try:
                messages = trim_messages(
                    list(messages),
                    max_tokens=s.trim_tokens_to_summarize,
                    token_counter=lambda ms: tk.count_tokens(ms, chars_per_token=self.cpt),
                    start_on="human",
                    strategy="last",
                    allow_partial=True,
                    include_system=True,
                )
            except Exception:  # noqa: BLE001 - LangChain falls back the same way
                messages = messages[-15:]
            if not messages:
                return "Previous conversation was too long to summarize."
        return self.summarizer.summarize(messages, prompt=s.summary_prompt).strip()

    def _drop_reasoning(self, start: int, stop: int) -> tuple[int, list[tuple[int, int]]]:
        """Kept messages from before a summary lose reasoning bound to the dropped history.

        Returns what `_undo_drop` needs to restore the previous state.
        """
        view, cpt = self.view, self.cpt
        changed = []
        for p in range(max(start, self.dropped_until), min(stop, len(view))):
            m = view[p]
            if isinstance(m, AIMessage) and isinstance(m.content, list):
                size = tk.derived(
                    m, "deepagents-no-reasoning-size", lambda m=m: _size_without_reasoning(m)
                )
                if size is not None:
                    changed.append((p, size.tokens(cpt)))
        undo = (self.dropped_until, [(p, self.etok.values[p]) for p, _ in changed])
        self.dropped_until = max(self.dropped_until, stop)
        if changed:
            self.unreasoned.update(p for p, _ in changed)
            self.edited_until = max(self.edited_until, changed[-1][0] + 1)
        self._retoken_ai(changed)
        return undo

    def _undo_drop(self, undo: tuple[int, list[tuple[int, int]]]) -> None:
        self.dropped_until, changed = undo
        self.unreasoned.difference_update(p for p, _ in changed)
        self._retoken_ai(changed)

    def _retoken_ai(self, changes: list[tuple[int, int]]) -> None:
        """New token counts for AIMessages at the given positions, in one prefix-sum pass."""
        start = self._window_start()
        for p, toks in changes:
            if p >= start:
                self.window_kinds["ai"] += toks - self.etok.values[p]
        self.etok.set_many(changes)

    def _with_budget(
        self, turn: Turn, events: list[Event], trunc_stop: int, summarized: _Undo | None = None
    ) -> Call:
        """`_call_with_budget`: clip the trailing tool-result batch if the request is over budget.

        `summarized` is set when this call just summarised: what to restore if deepagents would
        raise `ContextOverflowError` (it then persists nothing: no event, no clipped results;
        files already written stay, as the backend wrote them).
        """
        n_eff = self._eff_len()
        msgs = self._all(trunc_stop)
        count = self._scaled(self.fixed + self._suffix(0, trunc_stop), msgs, True)
        if self.budget is None or count <= self.budget:
            if summarized:
                self.session = summarized[2]
            return self._record(turn, events, trunc_stop, count)
        # Trailing batch of ToolMessages in the request.
        start = n_eff
        while start > 0 and isinstance(self._raw(start - 1), ToolMessage):
            start -= 1
        replacements: dict[int, tuple[BaseMessage, str]] = {}
        paths = []
        for j in range(start, n_eff):
            p = self._pos(j)
            clipped, path = self._clip(p, start)
            replacements[p] = (clipped, "stubs")
            paths.append(path)
        saved = {p: (self.view[p], self.kinds[p]) for p in replacements}
        for p, (m, kind) in replacements.items():
            self._set(p, m, kind)
        reduced = self._scaled(
            self.fixed + self._suffix(0, trunc_stop), self._all(trunc_stop), True
        )
        if replacements:
            events.append(
                Event(
                    "tail_clip",
                    turn.index,
                    tuple(p + self.offset for p in replacements),
                    count,
                    reduced,
                    next((p for p in paths if p), None),
                    "over budget",
                )
            )
        if reduced > self.budget:
            result = self._record(turn, events, trunc_stop, reduced)
            events.append(
                Event(
                    "overflow_error",
                    turn.index,
                    (),
                    reduced,
                    None,
                    None,
                    "Context remains above the input budget after compaction",
                )
            )
            for p, (m, kind) in saved.items():
                self._set(p, m, kind)
            if summarized:
                self._undo_drop(summarized[1])
                self.event = summarized[0]
                self._recount_window()
            return result
        if summarized:
            self.session = summarized[2]
        return self._record(turn, events, trunc_stop, reduced)

    def _clip(self, p: int, batch_start: int) -> tuple[BaseMessage, str | None]:
        """`_clip_one_tail_message`: slice a read_file result, offload any other."""
        message = self.view[p]
        call = None
        for j in range(batch_start - 1, -1, -1):
            m = self._raw(j)
            if isinstance(m, AIMessage):
                call = next((c for c in m.tool_calls if c.get("id") == message.tool_call_id), None)
                if call is not None:
                    break
        original = (
            call.get("args", {}).get("file_path")
            if call and call.get("name") == "read_file"
            else None
        )
        text = _text(message)
        if isinstance(original, str) and original:
            notice = (
                "\n\n[Output was truncated due to context window size limits. "
                f"The full content is at {original}. "
                "Use read_file with offset and limit parameters to retrieve specific portions. "
                "For example, to read the first 100 lines, call read_file with "
                f"file_path='{original}', offset=0, limit=100.]"
            )
            return message.model_copy(update={"content": text[:4_000] + notice}), None
        stub, path = self._offload(message, text)
        return stub, path

    def _record(self, turn: Turn, events: list[Event], trunc_stop: int, count: int) -> Call:
        ev = self.event
        by_kind = self.window_kinds.copy()
        if trunc_stop > 0:
            start = min(self._window_start(), len(self.view))
            stop = self._pos(trunc_stop - 1) + 1
            if stop > start:
                by_kind["ai"] -= self._saved(start, stop)
        if ev is not None:
            by_kind["summary"] += ev.tokens
        by_kind["system"] += self.system_tokens
        by_kind["tools"] = self.settings.tools_tokens
        return Call(
            turn.index,
            turn.position,
            count,
            by_kind,
            self._eff_len(),
            events,
            self.baselines[self.fed],
            self._request(trunc_stop),
        )

    def _fingerprint(self, obj: object) -> int:
        """The fingerprint of an object sent outside the state (see `__post_init__`); the dict
        keeps each object alive, so its id cannot be reused by another within the run."""
        entry = self.named.get(id(obj))
        if entry is None:
            entry = self.named[id(obj)] = (obj, self._new_fingerprint())
        return entry[1]

    def _new_fingerprint(self) -> int:
        """A fingerprint no state position has (negative), with room for the flags."""
        self.last_fingerprint -= 4
        return self.last_fingerprint

    def _request(self, trunc_stop: int) -> Request:
        """This call's request part by part, as an edit of the previous call's.

        Parts: the tool schemas (one part: the counter measures them together), the system
        prompt, the summary message, then each state message from the event's cutoff as sent.
        A state message's fingerprint names its position and version (`__post_init__`), plus 2
        when its arguments are truncated in this request and 1 when its bound reasoning is
        dropped: the copies deepagents sends, told apart without being made. Tokens are those
        the count adds up, so the parts sum to the call's `context_tokens`. Usage scaling
        multiplies the whole count (`ceil(raw * scale)`): there the first k parts hold
        `ceil(raw_k * scale)` tokens (raw_k: their raw sum), so the parts still sum to the
        count, and the whole request is given each call (the factor moves with each call).

        Otherwise only what can differ from the previous request is visited: the state
        positions from `dirty` (appended, or edited in place by an offload or a tail clip) and
        from the first position whose truncation changed (the truncated range of `tpos` starts
        where the event does and grows or shrinks at its end); after a new summary event,
        everything after the fixed parts.
        """
        ev, n, first, previous = self.event, len(self.view), self.dirty, self.request
        if (
            ev is self.request_event
            and not trunc_stop
            and self.truncated_to == self.truncated_from
            and first >= self.edited_until
        ):  # the common call: messages appended, nothing else changed
            request = self.request = Request(
                previous,
                self.part_of + first,
                range(first << 2, n << 2, 4),
                self.etok.values[first:n],
            )
            self.dirty = n
            return request
        tpos = self.tpos
        head: list[tuple[int, int]] = []  # on a rebuild: the fixed parts, the summary
        edit = ev is self.request_event
        if edit:
            truncated_from = self.truncated_from
        else:
            first = 0 if ev is None else ev.cutoff
            truncated_from = self.truncated_from = bisect_left(tpos, first)
            kept = 0 if previous is None or self.scaled else len(self.fixed_parts)
            if not kept:
                head.extend(self.fixed_parts)
            if ev is not None:
                head.append((self._fingerprint(ev.message), ev.tokens))
            self.part_of = kept + len(head) - first
            if not self.scaled:
                self.request_event = ev
        # `tpos` indices [truncated_from, truncated_to) are truncated: effective indices below
        # `trunc_stop`, i.e. state positions below `_pos(trunc_stop - 1) + 1`
        truncated_to = truncated_from
        if trunc_stop:
            below = trunc_stop if ev is None else ev.cutoff + trunc_stop - 1
            truncated_to = bisect_left(tpos, below)
        if truncated_to != self.truncated_to:
            if edit:
                first = min(first, tpos[min(truncated_to, self.truncated_to)])
            self.truncated_to = truncated_to
        if edit:
            if ev is not None and first < ev.cutoff:
                first = ev.cutoff
            kept = self.part_of + first
        # the messages as fed, then the exceptions: edited in place or with their reasoning
        # dropped (both only below `edited_until`), arguments truncated
        fingerprints: Sequence[int] = range(first << 2, n << 2, 4)
        tokens = self.etok.values[first:n]
        truncating = truncated_to and tpos[truncated_to - 1] >= first
        if first < self.edited_until or truncating:
            fingerprints = list(fingerprints)
            versions, unreasoned = self.versions, self.unreasoned
            for p in range(first, min(n, self.edited_until)):
                if p in versions or p in unreasoned:
                    fingerprints[p - first] = versions.get(p, p << 2) + (p in unreasoned)
            if truncating:
                tsaved = self.tsaved
                for i in range(bisect_left(tpos, first), truncated_to):
                    fingerprints[tpos[i] - first] += 2
                    tokens[tpos[i] - first] -= tsaved[i + 1] - tsaved[i]
        if head:
            fingerprints = [*(f for f, _ in head), *fingerprints]
            tokens = [*(t for _, t in head), *tokens]
        if self.scaled:
            tokens = _scaled_tokens(tokens, self.scale)
        request = self.request = Request(previous, kept, fingerprints, tokens)
        self.dirty = n
        return request


def _scaled_tokens(tokens: list[int], scale: float) -> list[int]:
    """Token counts whose first k sum to `ceil(raw_k * scale)` (raw_k: their raw sum), the
    rounding LangChain applies to the whole count, so all of them sum to the scaled count."""
    out = []
    before = 0
    for raw in accumulate(tokens):
        now = math.ceil(raw * scale)
        out.append(now - before)
        before = now
    return out


def _stub(message: ToolMessage, path: str, text: str) -> ToolMessage:
    """The state copy of an offloaded tool result: deepagents' stub, identity fields kept."""
    stub_text = _render_too_large_tool_msg(
        tool_call_id=message.tool_call_id, file_path=path, content_str=text
    )
    return _build_evicted_tool_message(message, _build_evicted_content(message, stub_text))


def _text_len(message: BaseMessage) -> int:
    """`len(_text(message))`, without joining when the content is a plain string."""
    content = message.content
    return len(content) if isinstance(content, str) else len(_text(message))


def _text(message: BaseMessage) -> str:
    """deepagents' `_extract_text_from_message`, skipping LangChain's content-block translation
    (slow for big Anthropic-format results) when content is plain strings or bare text blocks."""
    content = message.content
    if isinstance(content, str):
        return content
    if all(
        isinstance(b, str)
        or (isinstance(b, dict) and b.get("type") == "text" and b.keys() <= {"type", "text"})
        for b in content
    ):
        return "\n".join(b if isinstance(b, str) else b["text"] for b in content)
    return _extract_text_from_message(message)


def _history_section(stamp: str, summarized: Sequence[BaseMessage]) -> str:
    """One `## Summarized at` section of the history file (`_offload_to_backend`)."""
    kept = [m for m in summarized if not _is_summary(m)]
    return f"## Summarized at {stamp}\n\n{get_buffer_string(kept, format='xml')}\n\n"


def _is_summary(message: BaseMessage) -> bool:
    return isinstance(message, HumanMessage) and (
        message.additional_kwargs.get("lc_source") == "summarization"
    )


def _truncated(message: AIMessage, max_length: int, text: str) -> AIMessage:
    """`message` with its long `write_file`/`edit_file` arguments cut, as the request holds it
    (memoised per message: every replay that sends it sends the same copy)."""

    def make() -> AIMessage:
        calls = []
        for call in message.tool_calls:
            if call["name"] in _TRUNCATE_ARGS_TOOLS:
                args = call.get("args", {})
                new = {
                    k: v[:20] + text if isinstance(v, str) and len(v) > max_length else v
                    for k, v in args.items()
                }
                if new != args:
                    call = {**call, "args": new}
            calls.append(call)
        short = message.model_copy()
        short.tool_calls = calls
        return short

    return tk.derived(message, ("deepagents-truncated", max_length, text), make)


def _dropped(message: BaseMessage) -> BaseMessage:
    """`_drop_bound_reasoning(message)`, memoised per message (only real copies are kept: a
    memo entry must not refer to its own message, or the message would never be freed)."""
    copy = tk.derived(message, "deepagents-no-reasoning", lambda: _copy_without_reasoning(message))
    return message if copy is None else copy


def _copy_without_reasoning(message: BaseMessage) -> BaseMessage | None:
    copy = _drop_bound_reasoning(message)
    return None if copy is message else copy


def _size_without_reasoning(message: AIMessage) -> tk.Size | None:
    """Size of `_drop_bound_reasoning(message)` (None if it drops nothing), without the copy:
    the blocks it drops are subtracted from the measured size."""
    if not isinstance(message.content, list):
        return None
    bound = _bound_reasoning_types(message)
    gone = [b for b in message.content if isinstance(b, dict) and b.get("type") in bound]
    if not gone:
        return None
    size = tk.cached_size(message)
    chars, images = tk.blocks_size(gone)
    return tk.Size(size.chars - chars, size.images - images)


_NONE_REJECTED: frozenset[Any] = frozenset()


def _ai_facts(
    message: AIMessage, max_length: int, text: str
) -> tuple[dict[Any, dict], frozenset[Any], int | None]:
    """What the feed needs of an AIMessage with tool calls, in one pass over them (once per
    message): its calls by id (the first of equal ids, as a search would find it); the ids of
    those deepagents rejects as same-path parallel mutations; and the characters argument
    truncation adds to its size (None when truncation leaves it as it is).

    The truncated size is found without building the copy (only a summary or usage scaling
    needs that): the copy differs in its tool calls alone, whose repr the counter charges only
    when the content is a string, and there only by the values cut.
    """
    counted = not isinstance(message.content, list)
    by_id: dict[Any, dict] = {}
    mutations, delta = 0, None
    for call in message.tool_calls:
        by_id.setdefault(call.get("id"), call)
        name = call["name"]
        mutations += name in _FILE_MUTATION_TOOLS
        if name in _TRUNCATE_ARGS_TOOLS:
            for value in call.get("args", {}).values():
                if isinstance(value, str) and len(value) > max_length:
                    short = value[:20] + text
                    if short != value:
                        grown = tk.repr_len(short) - tk.repr_len(value) if counted else 0
                        delta = (delta or 0) + grown
    rejected = _NONE_REJECTED
    if mutations > 1:
        rejected = frozenset(i for i, c in by_id.items() if _parallel_mutation(message, c))
    return by_id, rejected, delta


def _error(call: dict) -> ToolMessage:
    """The error a rejected same-path parallel mutation gets instead of its result."""
    return ToolMessage(
        content=_PARALLEL_MUTATION_ERROR, name=call["name"], tool_call_id=call["id"], status="error"
    )


def _parallel_mutation(ai: AIMessage, call: dict) -> bool:
    """`_parallel_file_mutation_error`: an earlier call in the same AIMessage hit this path
    (only asked of messages with two or more file mutations)."""
    if call["name"] not in _FILE_MUTATION_TOOLS:
        return False
    path = call.get("args", {}).get("file_path")
    target = _validated(path) if isinstance(path, str) else None
    if target is None:
        return False
    for other in ai.tool_calls:
        if other["id"] == call["id"]:
            return False
        other_path = other.get("args", {}).get("file_path")
        if other["name"] in _FILE_MUTATION_TOOLS and isinstance(other_path, str):
            if _validated(other_path) == target:
                return True
    return False


@lru_cache(maxsize=4096)
def _validated(path: str) -> str | None:
    """`validate_path(path)`, None where it raises ValueError (cached: it goes through pathlib,
    and agents write the same paths again and again)."""
    try:
        return validate_path(path)
    except ValueError:
        return None


__all__ = [
    "DeepAgents",
    "DeepAgentsRun",
    "Request",
    "Settings",
    "normalize_trigger",
    "visible_tools",
]
