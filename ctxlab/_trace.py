"""The canonical conversation every loader produces and every policy replays.

A `Trace` keeps two views of one agent run, because compaction research needs both:

* the **full history** (`Trace.messages`): every message the main agent's conversation ever held,
  in order of first appearance, with original content (a tool result the recorded harness
  offloaded is restored from its tool run when the export has it). Policies replay this.
* the **as-sent inputs** (`Turn.inputs`): what the model really received at each recorded call,
  after whatever compaction the recorded harness applied. Recorded token counts refer to these.
  Each is an `Inputs` (`ctxlab._ingest.inputs`): slices of the history or of a loader's append-only
  list, shared between calls, since a tuple per call made a trace hold turns x history
  references (1.1 GB at 10,000 turns). `Trace.messages` is therefore append-only once loaded.

Messages are real `langchain_core` message objects so users can hand them straight to LangChain.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage

from ctxlab._ingest.inputs import Inputs


@dataclass(frozen=True, slots=True)
class Turn:
    """One recorded model call.

    `position` is the number of full-history messages that existed when the call was made: the
    uncompacted context of this call is `trace.messages[:position]`, and its output, when the
    call produced one, is `trace.messages[position]`.
    """

    index: int
    position: int
    inputs: Sequence[BaseMessage]
    output: AIMessage | None
    model: str | None = None
    provider: str | None = None
    run_id: str | None = None
    name: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    max_output_tokens: int | None = None
    compacted: bool = False
    started_at: str | None = None

    @property
    def output_index(self) -> int | None:
        """Index of this call's output in the full history, if it produced one."""
        return self.position if self.output is not None else None


@dataclass(frozen=True, slots=True)
class RecordedCompaction:
    """A compaction the recorded harness itself performed, as its file tells it.

    `turn` is the index of the first recorded call that saw the compacted context (the turn a
    replay's event would sit on). `trigger` is `"auto"` when a threshold fired and `"manual"`
    when the user asked (Claude Code `/compact`): thresholds cannot predict a manual one, so
    `ctxlab check-replay` reports it but leaves it out of the agreement. `pre_tokens` is the
    context size the harness recorded just before compacting (Claude Code `preTokens`, or the
    previous call's recorded input), and `summary` the text the harness put in its place.
    """

    turn: int
    kind: str = "summarize"
    trigger: str | None = None
    pre_tokens: int | None = None
    post_tokens: int | None = None
    summary: str | None = None
    started_at: str | None = None


@dataclass(slots=True, weakref_slot=True)
class Trace:
    """One agent conversation, loaded from any supported format.

    `harness_calls` are model calls the harness made for itself (summarisers, planners, judges):
    kept as records, never counted as turns. `inserted` are messages a recorded compaction put
    into the as-sent inputs (summaries): they are not part of the full history. `compactions`
    are the recorded compactions with what the file says of them. `notes` say, in a sentence
    each, what the source format lacks or what the loader had to assume (no per-call input, no
    system prompt or tool schemas counted, ...): shown by `ctxlab inspect`, never silent.
    """

    trace_id: str
    format: str
    source: str
    messages: list[BaseMessage]
    turns: list[Turn]
    tools: list[dict[str, Any]] = field(default_factory=list)
    model: str | None = None
    provider: str | None = None
    subagents: list[Trace] = field(default_factory=list)
    parent_trace_id: str | None = None
    parent_tool_call_id: str | None = None
    harness_calls: list[Turn] = field(default_factory=list)
    inserted: list[BaseMessage] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    compactions: list[RecordedCompaction] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def system_prompt(self) -> str | None:
        """Text of the leading system message of the full history, if any."""
        if self.messages and isinstance(self.messages[0], SystemMessage):
            return self.messages[0].text
        return None

    @property
    def recorded_compactions(self) -> list[int]:
        """Turn indices where the recorded harness compacted: inputs that did not extend the
        previous call's input and output, and the turns of `compactions`."""
        marked = {t.index for t in self.turns if t.compacted}
        return sorted(marked | {c.turn for c in self.compactions})

    @property
    def recorded_input_tokens(self) -> int | None:
        """Sum of recorded input tokens over the turns that have them; None if none do."""
        values = [t.input_tokens for t in self.turns if t.input_tokens is not None]
        return sum(values) if values else None

    def walk(self) -> list[Trace]:
        """This trace and all its subagents, depth first."""
        out = [self]
        for sub in self.subagents:
            out.extend(sub.walk())
        return out

    def summary(self) -> dict[str, Any]:
        """The per-trace facts `ctxlab inspect --json` prints."""
        return {
            "trace_id": self.trace_id,
            "format": self.format,
            "model": self.model,
            "messages": len(self.messages),
            "turns": len(self.turns),
            "subagents": len(self.walk()) - 1,
            "recorded_compactions": len(self.recorded_compactions),
            "recorded_input_tokens": self.recorded_input_tokens,
            "notes": list(self.notes),
        }


def from_messages(
    messages: list[BaseMessage],
    *,
    trace_id: str = "messages",
    format: str = "messages",
    source: str = "<memory>",
    model: str | None = None,
    provider: str | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> Trace:
    """A trace from a plain message list: one turn per AIMessage, each seeing all before it.

    Plain lists carry no per-call inputs, so every call is taken to have seen the whole prefix
    (no recorded compaction) and no recorded usage except what AIMessages carry themselves.
    """
    history = list(messages)
    turns: list[Turn] = []
    for pos, msg in enumerate(history):
        if isinstance(msg, AIMessage):
            usage: Mapping[str, Any] = msg.usage_metadata or {}
            details = usage.get("input_token_details") or {}
            turns.append(
                Turn(
                    index=len(turns),
                    position=pos,
                    inputs=Inputs.prefix(history, pos),
                    output=msg,
                    model=model,
                    provider=provider,
                    input_tokens=usage.get("input_tokens"),
                    output_tokens=usage.get("output_tokens"),
                    cache_read_tokens=details.get("cache_read"),
                    cache_write_tokens=details.get("cache_creation"),
                )
            )
    return Trace(
        trace_id=trace_id,
        format=format,
        source=source,
        messages=history,
        turns=turns,
        tools=list(tools or []),
        model=model,
        provider=provider,
    )
