"""`DeepAgentsRun`: one trace under one `DeepAgents` policy, call by call.

It feeds the recorded history into a state as `FilesystemMiddleware.wrap_tool_call` leaves it
(offloaded results, refused parallel mutations, tagged human messages), stubs an oversized
trailing human message (`FilesystemMiddleware.wrap_model_call`), then runs the summarisation
step (`summarization.py`) and gives the request part by part (`request.py`).

Speed: what the tool node leaves in the state (each message's tokens and bucket, the refused
mutations, the sizes of truncated calls, which results are offloaded) is worked out once per
trace and feed settings (`feed.py`), so a run's feed is list slices; what a run derives from a
message (its offload stub, its size without bound reasoning) is memoised per message object,
so a repeat replay of the same trace derives nothing. Context counts are lazily extended
prefix sums over the state: a call with no event costs O(1) amortised, an event O(messages it
touches) plus O(log n) for the keep window's binary search. Message copies that only the
summariser and the history file read (truncated arguments, dropped reasoning) are made when
they are read. The real middleware walks and re-counts the whole history on every call.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from itertools import accumulate
from typing import TYPE_CHECKING, cast

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxlab._cost import tokens as tk
from ctxlab._messages import kind_of, message_text
from ctxlab._replay.policies._engine_facts import facts
from ctxlab._replay.policies.base import Call, Event, Files, Request
from ctxlab._replay.policies.deepagents.feed import Feed, feed_of
from ctxlab._replay.policies.deepagents.filesystem import (
    sanitize_tool_call_id,
    tool_stub,
    truncated_human_message,
)
from ctxlab._replay.policies.deepagents.message_edits import REASONING_SIZE, size_without_reasoning
from ctxlab._replay.policies.deepagents.request import RequestParts
from ctxlab._replay.policies.deepagents.state import (
    REBUILD,
    STATE_KINDS,
    Prefix,
    SummaryEvent,
    deterministic_hex,
)
from ctxlab._replay.policies.deepagents.summarization import SummarizationStep

if TYPE_CHECKING:
    from ctxlab._replay.policies.deepagents.settings import Settings
    from ctxlab._trace import Trace, Turn
    from ctxlab.summarizers import Summarizer


@dataclass
class DeepAgentsRun(SummarizationStep, RequestParts):
    """One trace under one `DeepAgents` policy; see `ctxlab._replay.policies.base.Run`."""

    settings: Settings
    trace: Trace
    summarizer: Summarizer
    files: Files = field(default_factory=Files)
    requests: bool = True
    """Calls carry their request part by part; False for the count-only form
    (`ctxlab._replay.policies.deepagents.counts`), which reads counts and events only."""

    def __post_init__(self) -> None:
        s = self.settings
        self.cpt = s.chars_per_token
        self.system_tokens = tk.message_tokens(s.system, self.cpt)
        self.fixed = s.tools_tokens + self.system_tokens  # in every request
        self.offset = 1 if self._has_system() else 0
        self.tool_evict_chars = s.tool_evict_chars
        self.view: list[BaseMessage] = []  # state as SummarizationMiddleware sees it
        self.kinds: list[str] = []
        self.etok = Prefix()  # effective tokens (bound reasoning dropped where it applies)
        self.window_kinds = dict.fromkeys(STATE_KINDS, 0)  # etok by kind over [cutoff, n)
        # from the feed (`_open_feed`): AIMessages argument truncation would shorten, by
        # state position, ascending, and the cumulative tokens truncation saves along them
        self.tpos: list[int] = []
        self.tsaved: list[int] = [0]
        self.feed: Feed | None = None
        self.offloaded = 0  # the feed's offloads made so far
        self.ai_key = ("deepagents-ai", s.max_arg_length, s.truncation_text)
        self.tagged: set[int] = set()  # human messages sent as stubs (evicted)
        self.event: SummaryEvent | None = None
        self.dropped_until = 0  # state positions below this had bound reasoning dropped
        self.unreasoned: set[int] = set()  # those that had some (their copies are sent)
        self.edited_until = 0  # `_set` and `unreasoned` positions are all below this
        self.session: str | None = None
        self.summaries: dict[str, HumanMessage] = {}  # summary messages by text
        self.pending: list[Event] = []
        self.fed = 0
        self.counter = 0
        self.budget = self.settings.budget  # this call's input budget
        self.budget_per_call = s.recorded_max_output  # with a window (`budget_for`)
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
        # summary event (`REBUILD` before the first call, and always with usage scaling),
        # the `tpos` indices its truncated arguments start (`truncated_from`, fixed while the
        # event is) and stop at (`truncated_to`), the offset from a state position to its part
        # (`part_of`), and `dirty`: the first state position edited in place since (`_set`),
        # or the state length then.
        self.request: Request | None = None
        self.request_event: object = REBUILD
        self.truncated_from = self.truncated_to = self.part_of = self.dirty = 0
        self.scaled = s.use_usage_metadata
        self.scale = 1.0  # usage scaling of the latest whole-request count

    @cached_property
    def source_tokens(self) -> Sequence[int]:
        """Tokens of each recorded message, read on the first call (`start` alone, which a
        sweep's planning calls to validate every cell, measures nothing) from the trace's
        facts, measured once per trace (`_engine_facts`)."""
        return facts(self.trace, self.cpt).counts[self.offset :]

    @cached_property
    def reasoned(self) -> list[int]:
        """State positions, ascending, of the AIMessages whose bound reasoning a summary
        drops once they are kept past it (`message_edits.size_without_reasoning`): found once
        per trace, so a summary visits these, not every kept message."""
        found = facts(self.trace, self.cpt)
        return found.kept(
            ("deepagents-reasoned", self.offset),
            lambda: [
                p
                for p, m in enumerate(found.messages[self.offset :])
                if isinstance(m, AIMessage)
                and isinstance(m.content, list)
                and tk.derived(m, REASONING_SIZE, partial(size_without_reasoning, m)) is not None
            ],
        )

    @cached_property
    def baselines(self) -> list[int]:
        """`baselines[k]`: the counter over system prompt, tools and the first k messages."""
        return list(accumulate(self.source_tokens, initial=self.fixed))

    def _has_system(self) -> bool:
        msgs = self.trace.messages
        return bool(msgs) and isinstance(msgs[0], SystemMessage)

    def _feed(self, upto: int) -> None:
        """Append recorded history messages until the state holds `upto - offset` of them:
        slices of the trace's `Feed` (worked out once per trace and feed settings), then the
        offloads among them."""
        fed, stop = self.fed, upto - self.offset
        if fed >= stop:
            return
        self.fed = stop
        feed = self.feed or self._open_feed()
        kinds, toks = feed.kinds[fed:stop], feed.tokens[fed:stop]
        # a None is an offloaded result's place, filled by `_offload_result` below
        self.view += cast("list[BaseMessage]", feed.view[fed:stop])
        self.kinds += kinds
        self.etok.values += toks
        window = self.window_kinds
        for kind, t in zip(kinds, toks, strict=True):
            window[kind] += t
        offloads, k = feed.offloads, self.offloaded
        while k < len(offloads) and offloads[k][0] < stop:
            self._offload_result(*offloads[k])
            k += 1
        self.offloaded = k

    def _open_feed(self) -> Feed:
        """The trace's `Feed` for these settings, read on the first call (`start` alone, which
        a sweep's planning calls to validate every cell, measures nothing); the state shares
        its truncation positions and evicted human messages."""
        feed = self.feed = feed_of(
            self.trace, self.offset, self.cpt, self.tool_evict_chars, self.ai_key
        )
        self.tpos, self.tsaved = feed.tpos, feed.tsaved
        self.tagged = set(feed.tagged)
        return feed

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

    def _recount_window(self) -> None:
        """Per-kind totals over the state window the effective list shows (after an event)."""
        totals = dict.fromkeys(STATE_KINDS, 0)
        values, kinds = self.etok.values, self.kinds
        for p in range(min(self._window_start(), len(values)), len(values)):
            totals[kinds[p]] += values[p]
        self.window_kinds = totals

    def _offload_result(self, pos: int, message: ToolMessage, text: str, before: int) -> None:
        """`FilesystemMiddleware.wrap_tool_call` offloaded an oversized result, fed at state
        position `pos` with `before` tokens."""
        stub, path = self._offload(message, text)
        toks = tk.message_tokens(stub, self.cpt)
        self.view[pos] = stub
        self.etok.set(pos, toks)
        self.window_kinds["stubs"] += toks
        event = Event(
            "offload_tool_result",
            None,
            (pos + self.offset,),
            before,
            toks,
            path,
            f"> {self.tool_evict_chars} chars",
        )
        self.pending.append(event)

    def _offload(self, message: ToolMessage, text: str) -> tuple[ToolMessage, str]:
        if message.tool_call_id:
            name = sanitize_tool_call_id(message.tool_call_id)
        else:
            name = f"unknown-{self._next_hex()[:8]}"
        path = f"/large_tool_results/{name}"
        self.files.write(path, text)
        stub = tk.derived(
            message, ("deepagents-offload", path), lambda: tool_stub(message, path, text)
        )
        return stub, path

    def _next_hex(self) -> str:
        self.counter += 1
        return deterministic_hex(self.trace.trace_id, self.counter)

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
            self._set(index, original, kind_of(original))
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
        assert isinstance(message, HumanMessage)  # asked only when the state ends with one
        if not limit or last in self.tagged:
            return None
        text = message_text(message)
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
        self._set(last, truncated_human_message(tagged, path), "stubs")
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
