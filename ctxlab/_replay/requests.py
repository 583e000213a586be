"""The request a replay would have sent at a turn, message by message, rebuilt from its events.

A replay keeps token counts and events, not the requests themselves (1,000 requests of up to
thousands of messages each would be most of a replay's memory). Fact survival, probes and the
widgets need what the model would have read, so this module rebuilds it with the semantics of
`ctxlab._replay.timeline.Timeline`: a kept message as recorded, an offloaded one as the stub the
policy
put in its place, a truncated one with its arguments cut, a masked one as its placeholder, a
summarised or dropped one absent, and the summary in the place of what it summarised.

Exact for `deepagents`: the stubs, truncated arguments, summary message, system prompt,
reasoning dropped after a summary, refused parallel file mutations and rolled-back overflow
turns are those of `ctxlab._replay.policies.deepagents`, and tests/test_requests.py checks every
request message for message against the real middleware. Every built-in preset's rebuilt
requests have the replay's message and token counts at every turn (same test file): summaries
carry each harness's fixed wording (JetBrains' checkpoints accumulate as its stage sends them),
masked results each policy's placeholder. What events cannot tell is approximated
conservatively: a policy registered from outside gets its summary as the summariser's text
alone and `"[masked]"` as placeholder; a message a harness rewrote while keeping it (codex's
shortened long user messages) is listed by its event as gone, so it counts as summarised,
never kept; a summary inserted among kept messages is placed where the history it replaced
began (codex sends the user messages it keeps before its summary).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)

from ctxlab._cost import tokens as tk
from ctxlab._messages import message_text, summary_message
from ctxlab._replay.timeline import sticky_status

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Event
    from ctxlab._replay.policies.deepagents.settings import Settings
    from ctxlab._replay.replay import Replay

REQUEST_STATUSES = ("kept", "offloaded", "truncated", "masked", "summary")
"""`RequestMessage.status` values; "summary" is any message a compaction inserted."""

ABSENT = ("summarised", "dropped")
"""Timeline statuses of a message that is not in the request."""

_UNDONE_ON_OVERFLOW = frozenset({"summarize", "tail_clip", "offload_human_message"})
"""Kinds deepagents rolls back when the same call ends in `ContextOverflowError`: they shape
that turn's request only."""

DEFAULT_PLACEHOLDER = "[masked]"


@dataclass(frozen=True, slots=True)
class RequestMessage:
    """One message of a rebuilt request: the message as the policy would have sent it, the
    full-history position it stands for (None for inserted messages) and what the policy did
    to it (`REQUEST_STATUSES`)."""

    message: BaseMessage
    source: int | None
    status: str


@dataclass(frozen=True, slots=True)
class Change:
    """From `turn` on (through `until`, when the change was rolled back), message status."""

    turn: int
    status: str
    event: Event
    until: int | None = None

    def active(self, turn: int) -> bool:
        return self.turn <= turn and (self.until is None or turn <= self.until)


class Requests:
    """Every request of one replay, rebuilt from its events: the event index is made once,
    each `at(turn)` then costs the request's length."""

    def __init__(self, replay: Replay) -> None:
        if replay.trace is None:
            raise ValueError("rebuilding requests needs the replay's trace (replay.trace)")
        self.replay = replay
        self.trace = replay.trace
        self.messages = replay.trace.messages
        self.positions: list[int] = [call.position for call in replay.calls]
        self.deep = _deepagents_settings(replay)
        events = replay.event_list
        overflow = {e.turn for e in events if e.kind == "overflow_error"}
        self.changes: dict[int, list[Change]] = {}
        self.truncated: dict[int, set[int]] = {}
        self.summaries: list[Change] = []
        self._cutoffs: list[int] | None = None  # reasoning_cutoff per turn, made on first use
        for event in events:
            if event.turn is None:
                continue
            until = (
                event.turn if event.turn in overflow and event.kind in _UNDONE_ON_OVERFLOW else None
            )
            if event.kind == "truncate_args":
                self.truncated.setdefault(event.turn, set()).update(event.messages)
                continue
            status = sticky_status(event.kind)
            if status is None:
                continue
            change = Change(event.turn, status, event, until)
            if event.kind == "summarize":
                self.summaries.append(change)
            for p in event.messages:
                self.changes.setdefault(p, []).append(change)
        members = dict(_member_params(replay))
        jetbrains = members.get("jetbrains-llm-summary") or members.get("jetbrains-hybrid")
        self.checkpoints = None
        """JetBrains' checkpoints accumulate in the request instead of replacing each other."""
        if jetbrains is not None:
            static = jetbrains.get("enable_static_checkpointing", True)
            self.checkpoints = "static" if static else "kept"
        self.system_source = (
            0 if self.messages and isinstance(self.messages[0], SystemMessage) else None
        )
        self.system_replaced = (
            self.deep is not None
            and self.system_source is not None
            and self.deep.system is not self.messages[0]
        )
        """deepagents sends its own system prompt instead of the trace's (`system_prompt=`)."""
        self.base = _deepagents_base(self.messages) if self.deep else {}
        """Deep Agents' edits made as messages join its state (no event): refused parallel
        mutations, human messages a recording already saved to a file."""

    def status(self, p: int, turn: int, before: Event | None = None) -> tuple[str, Event | None]:
        """Timeline status of full-history message `p` in the request at `turn` (from the
        changes made before event `before`, when given)."""
        if p == 0 and self.system_replaced:
            return "dropped", None
        found: tuple[str, Event | None] = ("kept", None)
        for change in self.changes.get(p, ()):
            if change.turn > turn or change.event is before:
                break
            if not change.active(turn):
                continue
            if change.status in ABSENT or found[0] not in ABSENT:
                found = (change.status, change.event)
        if found[0] == "kept" and p in self.truncated.get(turn, ()):
            return "truncated", None
        return found

    def summaries_at(self, turn: int) -> list[Change]:
        """The summarize changes whose summaries are in the request at `turn`, in order: the
        latest one, or for JetBrains' checkpoints every one so far (on the call that makes a
        new one with static checkpointing, that one alone)."""
        active = [c for c in self.summaries if c.turn <= turn and c.active(turn)]
        if not self.checkpoints:
            return active[-1:]
        if self.checkpoints == "static" and active and active[-1].turn == turn:
            return active[-1:]
        return active

    def summary_message(self, change: Change) -> BaseMessage:
        """The summary message the policy inserted for a summarize event."""
        event = change.event
        text = event.summary
        if text is None:
            where = f" is in {event.file_path}" if event.file_path else " was not recorded"
            return summary_message(f"(no summary text recorded; the summarised history{where})")
        return _summary_form(self.replay, event, text)

    def form(self, p: int, status: str, event: Event | None, turn: int) -> BaseMessage:
        """Message `p` as sent with `status` (set by `event`) at `turn`."""
        message = self.messages[p]
        if status == "kept":
            base = self.base.get(p)
            if base is not None:
                return base[0]
            if self.deep is not None and isinstance(message, AIMessage):
                return self._deep_reasoning(p, message, turn)
            return message
        if status == "truncated" and self.deep is not None:  # only deepagents truncates
            from ctxlab._replay.policies.deepagents.message_edits import truncated

            s = self.deep
            short = truncated(message, s.max_arg_length, s.truncation_text)  # type: ignore[arg-type]
            return self._deep_reasoning(p, short, turn)
        if status == "offloaded" and event is not None:
            if event.kind == "tail_clip":  # clips the message as the state held it then
                message = self.form(p, *self.status(p, turn, event), turn)
            # one stub per message and event kind / path, so rebuilding it (a clip formats a
            # large result line by line) and counting it happen once across replays
            shown = message
            stub = tk.derived(
                message,
                ("request-offloaded", event.kind, event.file_path),
                lambda: _changed(_offloaded(self.messages, p, shown, event), shown),
            )
            return message if stub is None else stub
        if status == "masked":
            return _masked(self.replay, message)
        return message

    def _deep_reasoning(self, p: int, message: AIMessage, turn: int) -> BaseMessage:
        """Deep Agents drops reasoning bound to summarised history from kept AIMessages from
        each summary's cutoff to the state length when it was made (request-only copies)."""
        from ctxlab._replay.policies.deepagents.message_edits import dropped

        if not isinstance(message.content, list):
            return message
        return dropped(message) if p < self.reasoning_cutoff(turn) else message

    def reasoning_cutoff(self, turn: int) -> int:
        """Deep Agents: kept AIMessages before this full-history position are sent without
        the reasoning bound to summarised history at `turn` (0: none). Incremental counts
        (`ctxlab._cost.billing`) re-count the messages between two turns' cut-offs."""
        if self._cutoffs is None:
            self._cutoffs = self._reasoning_cutoffs()
        if 0 <= turn < len(self._cutoffs):
            return self._cutoffs[turn]
        until = 0
        for change in self.summaries:
            if change.turn > turn:
                break
            if change.until is None or change.active(turn):
                until = max(until, self.positions[change.turn])
        return until

    def _reasoning_cutoffs(self) -> list[int]:
        """`reasoning_cutoff` of every turn in one sweep (it is asked per message)."""
        out = [0] * len(self.positions)
        rolled: dict[int, int] = {}  # turn -> cut-off of summaries rolled back after it
        lasting: list[Change] = []
        for change in self.summaries:
            if change.until is None:
                lasting.append(change)
                continue
            for t in range(change.turn, min(change.until + 1, len(out))):
                rolled[t] = max(rolled.get(t, 0), self.positions[change.turn])
        until = i = 0
        for turn in range(len(out)):
            while i < len(lasting) and lasting[i].turn <= turn:
                until = max(until, self.positions[lasting[i].turn])
                i += 1
            out[turn] = max(until, rolled.get(turn, 0))
        return out

    def at(self, turn: int) -> list[RequestMessage]:
        """The request at `turn` (row index of `replay.turns`)."""
        position = self.positions[turn]
        out: list[RequestMessage] = []
        pending = [
            RequestMessage(self.summary_message(c), None, "summary")
            for c in self.summaries_at(turn)
        ]
        start = 0
        if self.deep is not None:
            system = self.deep.system
            source = 0 if self.system_source is not None and system is self.messages[0] else None
            out.append(RequestMessage(system, source, "kept" if source is not None else "summary"))
            start = 1 if self.system_source is not None else 0
            out.extend(pending)
            pending = []
        for p in range(start, position):
            status, event = self.status(p, turn)
            if status in ABSENT:
                if status == "summarised":
                    out.extend(pending)
                    pending = []
                continue
            shown = status
            base = self.base.get(p) if status == "kept" else None
            if base is not None:
                shown = base[1]
            out.append(RequestMessage(self.form(p, status, event, turn), p, shown))
        out.extend(pending)
        return out


def request_messages(replay: Replay, turn: int) -> list[RequestMessage]:
    """The replayed request at `turn` (row index of `replay.turns`), message by message; see
    the module docstring for what is exact. Asking many turns of one replay: `Requests`."""
    return Requests(replay).at(turn)


def _deepagents_settings(replay: Replay) -> Settings | None:
    from ctxlab._replay.policies.deepagents import DeepAgents

    policy = replay.source_policy
    if isinstance(policy, DeepAgents) and replay.trace is not None:
        return policy.resolve(replay.trace)
    if replay.policy == "deepagents" and replay.trace is not None:
        return DeepAgents(**replay.params).resolve(replay.trace)
    return None


def _deepagents_base(messages: Sequence[BaseMessage]) -> dict[int, tuple[BaseMessage, str]]:
    """Messages Deep Agents' state holds edited from the moment they join it (no event marks
    them): a tool result of a same-path parallel file mutation is replaced by the refusal
    (`masked`), a human message a recording already saved to a file is sent as its stub
    (`offloaded`)."""

    from ctxlab._replay.policies.deepagents.filesystem import (
        rejected_result,
        truncated_human_message,
    )
    from ctxlab._replay.policies.deepagents.message_edits import (
        CALL_FACTS,
        NONE_REJECTED,
        call_facts,
    )

    calls: dict[Any, dict] = {}
    rejected = NONE_REJECTED
    out: dict[int, tuple[BaseMessage, str]] = {}
    for p, message in enumerate(messages):
        if isinstance(message, AIMessage):
            if message.tool_calls:
                calls, rejected, _ = tk.derived(message, CALL_FACTS, partial(call_facts, message))
            else:
                calls, rejected = {}, NONE_REJECTED
        elif isinstance(message, ToolMessage):
            if rejected and message.tool_call_id in rejected:
                call = calls[message.tool_call_id]
                error = tk.derived(
                    message,
                    ("deepagents-rejected", call["name"]),
                    partial(rejected_result, call),
                )
                out[p] = (error, "masked")
        elif isinstance(message, HumanMessage) and message.additional_kwargs.get("lc_evicted_to"):
            path = message.additional_kwargs["lc_evicted_to"]
            out[p] = (truncated_human_message(message, path), "offloaded")
    return out


def _offloaded(
    messages: Sequence[BaseMessage], p: int, message: BaseMessage, event: Event
) -> BaseMessage:
    """The stub an offload, a human-message eviction or a tail clip put in place of `p`."""
    from ctxlab._replay.policies.deepagents.filesystem import (
        sanitize_tool_call_id,
        tool_stub,
        truncated_human_message,
    )
    from ctxlab._replay.policies.deepagents.texts import read_file_clip

    text = message_text(message)
    if event.kind == "offload_human_message" and isinstance(message, HumanMessage):
        tagged = message.model_copy(
            update={
                "additional_kwargs": {**message.additional_kwargs, "lc_evicted_to": event.file_path}
            }
        )
        return truncated_human_message(tagged, event.file_path or "")
    if not isinstance(message, ToolMessage):
        return message
    if event.kind == "tail_clip":
        call = _call_of(messages, p, message.tool_call_id)
        original = call.get("args", {}).get("file_path") if call else None
        if call and call.get("name") == "read_file" and isinstance(original, str) and original:
            return message.model_copy(update={"content": read_file_clip(text, original)})
        if not message.tool_call_id:
            return tool_stub(message, event.file_path or "", text)
        path = f"/large_tool_results/{sanitize_tool_call_id(message.tool_call_id)}"
        return tool_stub(message, path, text)
    return tool_stub(message, event.file_path or "", text)


def _changed(form: BaseMessage, message: BaseMessage) -> BaseMessage | None:
    """`form`, or None when it is `message` itself (a memo entry must not hold its own
    message, or the message would never be freed)."""
    return None if form is message else form


def _call_of(messages: Sequence[BaseMessage], p: int, call_id: str) -> ToolCall | None:
    """The tool call a tool result at `p` answers (the nearest earlier AIMessage making it)."""
    for j in range(p - 1, -1, -1):
        m = messages[j]
        if isinstance(m, AIMessage):
            found = next((c for c in m.tool_calls if c.get("id") == call_id), None)
            if found is not None:
                return found
    return None


def _masked(replay: Replay, message: BaseMessage) -> BaseMessage:
    """A masked observation with the policy's placeholder (AIMessages stay as they are; a
    SWE-agent 0.x observation is a user turn)."""
    from ctxlab._replay.policies.masking import (
        _masked as masked_copy,
    )
    from ctxlab._replay.policies.masking import (
        _swe_0_placeholder,
        _swe_placeholder,
        swe_agent_observations,
    )

    if isinstance(message, AIMessage):
        return message
    text = _placeholder(replay)
    if text is None:  # SWE-agent's placeholder counts the lines it hides
        old = replay.trace is not None and swe_agent_observations(replay.trace)[1]
        text = _swe_0_placeholder(message) if old else _swe_placeholder(message)  # type: ignore[arg-type]
    elif not isinstance(message, ToolMessage):
        return message
    # one copy per message and placeholder, so counts memoised per message object (billing)
    # hold across requests and replays
    return tk.derived(
        message,
        ("request-masked", text),
        lambda: masked_copy(message, text),  # type: ignore[arg-type]
    )


def _member_params(replay: Replay) -> list[tuple[str, dict[str, Any]]]:
    members = replay.params.get("policies")
    if isinstance(members, list) and members:
        return [(m.get("name", ""), m.get("params", {})) for m in members]
    return [(replay.policy, replay.params)]


def _placeholder(replay: Replay) -> str | None:
    """The placeholder text of the policy's masking stage; None for SWE-agent's, which depends
    on the message."""
    from ctxlab._replay.policies.inspect import TOOL_RESULT_PLACEHOLDER

    for name, params in _member_params(replay):
        if name in ("clear-tool-uses", "openhands-observation-masking") and "placeholder" in params:
            return str(params["placeholder"])
        if name == "inspect-edit":
            return TOOL_RESULT_PLACEHOLDER
        if name in ("observation-masking", "swe-agent-masking", "jetbrains-hybrid"):
            return None
    return DEFAULT_PLACEHOLDER


def _summary_wording(replay: Replay, event: Event, text: str) -> str:
    """The summary message's text: the summariser's `text` in the policy's fixed wording."""
    from ctxlab._replay.policies.claude_code import CONTINUATION
    from ctxlab._replay.policies.codex import CODEX_SUMMARY_PREFIX
    from ctxlab._replay.policies.deepagents.texts import summary_message_text
    from ctxlab._replay.policies.inspect import SUMMARY_MESSAGE as INSPECT_SUMMARY
    from ctxlab._replay.policies.langchain import SUMMARY_PREFIX

    names = [name for name, _ in _member_params(replay)]
    if replay.policy == "deepagents":
        return summary_message_text(event.file_path or "", text)
    if "langchain-summarization" in names:
        return f"{SUMMARY_PREFIX}{text}"
    if "claude-code" in names:
        return f"{CONTINUATION}{text}"
    if "codex" in names:
        return f"{CODEX_SUMMARY_PREFIX}\n{text}"
    if "inspect-summary" in names:
        return INSPECT_SUMMARY.format(summary=text)
    return text


def _summary_form(replay: Replay, event: Event, text: str) -> BaseMessage:
    """The message a summarize event inserted: a user-role summary, or for JetBrains' policies
    an assistant "Checkpoint for the last n turns:" message."""
    from ctxlab._replay.policies.jetbrains import checkpoint_item

    members = dict(_member_params(replay))
    for name in ("jetbrains-llm-summary", "jetbrains-hybrid"):
        if name in members:
            return checkpoint_item(int(members[name].get("n", 21)), text).msg
    return summary_message(_summary_wording(replay, event, text))


__all__ = ["REQUEST_STATUSES", "RequestMessage", "Requests", "request_messages"]
