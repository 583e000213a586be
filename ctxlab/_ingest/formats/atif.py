"""Harbor / Terminal-Bench ATIF trajectories (Agent Trajectory Interchange Format) as traces.

A trajectory is one JSON document (shared/research/trace-formats.md §2.9, Harbor's RFC 0001
and its pydantic models, `harbor.models.trajectories`): `{schema_version: "ATIF-v1.x",
session_id, trajectory_id?, agent{name, version, model_name?, tool_definitions?}, steps[...],
final_metrics?, continued_trajectory_ref?, subagent_trajectories?}`. A step is `{step_id,
timestamp?, source: system|user|agent, model_name?, message (text or content parts),
reasoning_content?, tool_calls?[{tool_call_id, function_name, arguments}],
observation?{results[{source_call_id?, content?, subagent_trajectory_ref?}]}, metrics?
{prompt_tokens (cached included), completion_tokens, cached_tokens, extra?},
is_copied_context?, llm_call_count?}`.

Every agent step is one model call (an assistant message with its tool calls), its
observation results the tool results that answer them. Producers deviate from the spec, so the
reader also takes: a `schema_version` without the `ATIF-v` prefix, `agent.model` for
`agent.model_name`, tool results written as later `system` steps, arguments as a JSON string,
and results with no call id (Terminus sends terminal output back as a user turn). Each
tolerated deviation is said in `Trace.notes`.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.inputs import Inputs, Part
from ctxlab._trace import RecordedCompaction, Trace, Turn

if TYPE_CHECKING:
    from ctxlab._ingest.formats.registry import Values

NAME = "atif"
DESCRIPTION = (
    "a Harbor / Terminal-Bench ATIF trajectory (an object with 'schema_version' and 'steps')"
)

SOURCES = {"system": "system", "user": "user", "agent": "agent", "assistant": "agent"}
"""Step sources, with the spelling some converters use for the agent."""


def _looks_like(value: Any) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("steps"), list):
        return False
    if not ("schema_version" in value or "agent" in value):
        return False
    steps = value["steps"]
    return not steps or (isinstance(steps[0], dict) and "source" in steps[0])


def sniff(values: Values) -> bool:
    """One JSON document: an object with `steps` (steps with a `source`) and a
    `schema_version` or `agent`."""
    return len(values) == 1 and values[0][1] is None and _looks_like(values[0][0])


def _typename(value: Any) -> str:
    return "null" if value is None else type(value).__name__


@dataclass
class _Where:
    source: str
    path: str = ""
    """Where the trajectory sits inside the file ("" for the root, "subagent_trajectories[0]")."""
    step: Any = None

    def error(self, what: str) -> TraceFormatError:
        where = [self.path] if self.path else []
        if self.step is not None:
            where.append(f"step {self.step}")
        prefix = ", ".join(where) + ": " if where else ""
        return TraceFormatError(prefix + what, source=self.source)


def _obj(value: Any, name: str, where: _Where) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise where.error(f"field '{name}' must be an object, got {_typename(value)}")
    return value


def _opt_obj(value: Any, name: str, where: _Where) -> dict[str, Any]:
    return {} if value is None else _obj(value, name, where)


def _list(value: Any, name: str, where: _Where) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.error(f"field '{name}' must be a list, got {_typename(value)}")
    return value


def _opt_str(value: Any, name: str, where: _Where) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise where.error(f"field '{name}' must be a string, got {_typename(value)}")


def _count(obj: dict[str, Any], key: str, prefix: str, where: _Where) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise where.error(f"field '{prefix}.{key}' must be a non-negative integer, got {value!r}")
    return value


def _content(value: Any, name: str, where: _Where) -> str | list[Any]:
    """Text, or ATIF content parts (v1.6) as LangChain blocks; an image becomes a text
    placeholder naming its file, since the file is not in the trajectory."""
    if value is None or isinstance(value, str):
        return value or ""
    if not isinstance(value, list):
        raise where.error(
            f"field '{name}' must be a string or a list of content parts, got {_typename(value)}"
        )
    blocks: list[Any] = []
    for part in value:
        part = _obj(part, f"{name}[]", where)
        if part.get("type") == "text":
            text = part.get("text")
            if not isinstance(text, str):
                raise where.error(f"field '{name}[].text' must be a string")
            blocks.append({"type": "text", "text": text})
        elif part.get("type") == "image":
            source = _opt_obj(part.get("source"), f"{name}[].source", where)
            blocks.append({"type": "text", "text": f"[image {source.get('path', '')}]".strip()})
        else:
            raise where.error(f"field '{name}[].type' must be 'text' or 'image'")
    return blocks


_WORDS = re.compile(r"[A-Za-z0-9_\-]{6,}")
"""Id-like words of a system step's text, looked up among the trajectory's call ids."""


def _call_ids(steps: list[Any]) -> frozenset[str]:
    """Every tool-call id the steps hold (`tool_call_id`, or `id` where producers use it)."""
    ids = (
        call.get("tool_call_id", call.get("id"))
        for step in steps
        if isinstance(step, dict)
        for call in step.get("tool_calls") or []
        if isinstance(call, dict)
    )
    return frozenset(i for i in ids if isinstance(i, str))


def _arguments(value: Any, where: _Where) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value) if value.strip() else {}
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            return parsed
    raise where.error(
        f"field 'tool_calls[].arguments' must be an object (or a JSON object string), got "
        f"{_typename(value)}"
    )


@dataclass
class _Builder:
    """Walks one trajectory's steps, building its history, turns and subagent references."""

    where: _Where
    default_model: str | None
    messages: list[BaseMessage] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)
    """Tool calls of earlier agent steps still waiting for their result, in order."""
    called: set[str] = field(default_factory=set)
    call_ids: frozenset[str] = frozenset()
    """Every tool-call id of the trajectory, for results a system step names by id."""
    refs: list[dict[str, Any]] = field(default_factory=list)
    deviations: set[str] = field(default_factory=set)
    has_system: bool = False
    copied: int = 0
    copied_prefix: int = 0
    before: int = 0
    """Messages that existed before the current step."""
    """How many leading messages come from copied-context steps (a continuation's carried-over
    context), for `link` to join the segments of one run."""
    aggregated: int = 0
    unmatched: int = 0
    compactions: list[RecordedCompaction] = field(default_factory=list)
    inserted: list[BaseMessage] = field(default_factory=list)
    context: list[Part] | None = None
    """After a `context_management` step that replaced the context: the request's leading
    parts (system prompt, the compacted context), then the history from `boundary` on."""
    boundary: int = 0
    announced: dict[str, Any] | None = None
    """A compaction step waiting for the agent step that first sees its context."""

    def step(self, raw: Any, index: int) -> None:
        where = self.where
        where.step = f"#{index}"
        step = _obj(raw, "steps[]", where)
        step_id = step.get("step_id")
        if step_id is not None:
            if isinstance(step_id, bool) or not isinstance(step_id, int):
                raise where.error(f"field 'step_id' must be an integer, got {step_id!r}")
            where.step = step_id
        source = step.get("source")
        kind = SOURCES.get(source) if isinstance(source, str) else None
        if kind is None:
            raise where.error(f"field 'source' must be 'system', 'user' or 'agent', got {source!r}")
        if source == "assistant":
            self.deviations.add("steps with source 'assistant' are read as agent steps")
        message = _content(step.get("message"), "message", where)
        self.before = len(self.messages)
        managed = _opt_obj(
            _opt_obj(step.get("extra"), "extra", where).get("context_management"),
            "extra.context_management",
            where,
        )
        if managed.get("type") == "compaction":
            self.compacted(managed, message, kind)
            self.results(
                _list(
                    _opt_obj(step.get("observation"), "observation", where).get("results"),
                    "observation.results",
                    where,
                )
            )
            return
        copied = step.get("is_copied_context")
        if copied is not None and not isinstance(copied, bool):
            raise where.error(f"field 'is_copied_context' must be a boolean, got {copied!r}")
        results = _list(
            _opt_obj(step.get("observation"), "observation", where).get("results"),
            "observation.results",
            where,
        )
        if kind == "agent":
            self.agent(step, message, bool(copied))
        elif kind == "user":
            self.messages.append(HumanMessage(content=message))
        else:
            observed = _opt_obj(step.get("observation"), "observation", where).get("content")
            self.system(message, bool(results), observed if isinstance(observed, str) else None)
        self.results(results)
        if copied and self.copied_prefix == self.before:
            self.copied_prefix = len(self.messages)

    def compacted(self, managed: dict[str, Any], message: str | list[Any], kind: str) -> None:
        """A step that records the harness's own compaction (`extra.context_management =
        {"type": "compaction", "boundary": "replace" | ...}`): its message is the compacted
        context the next calls see (a summary: `Trace.inserted`, not the history). With
        `boundary: "replace"` it replaces everything before it but the system prompt; with any
        other boundary it is added to the context."""
        summary: BaseMessage = (
            SystemMessage(content=message) if kind == "system" else HumanMessage(content=message)
        )
        self.inserted.append(summary)
        head: list[Part]
        if managed.get("boundary") == "replace":
            head = [(self.messages, 0, 1 if self.has_system else 0)]
        elif self.context is not None:
            head = [*self.context, (self.messages, self.boundary, len(self.messages))]
        else:
            head = [(self.messages, 0, len(self.messages))]
        self.context = [*head, ([summary], 0, 1)]
        self.boundary = len(self.messages)
        trigger = managed.get("trigger")
        self.announced = {
            "summary": summary.text,
            "trigger": trigger if trigger in ("auto", "manual") else "auto",
        }

    def inputs(self, position: int) -> Inputs:
        """What the call at `position` received: every step before it, or after a recorded
        compaction the compacted context and the steps since."""
        if self.context is None:
            return Inputs.prefix(self.messages, position)
        return Inputs([*self.context, (self.messages, self.boundary, position)])

    def system(self, message: str | list[Any], has_results: bool, observed: str | None) -> None:
        """A system step: the system prompt first; later, without `observation.results`, a
        tool result written as a step of its own (its text the step's `observation.content`
        where a producer puts it there, else its message). It answers the call its message
        names by id, else the oldest pending call; one naming a call made later (a producer
        that wrote results before the step holding their calls) stays a user message."""
        if not self.messages and not self.turns and observed is None:
            self.has_system = True
            self.messages.append(SystemMessage(content=message))
            return
        if has_results:
            return
        text = message if observed is None else observed
        if observed is not None:
            self.deviations.add("a system step's result as 'observation.content'")
        named = self.named_call(message)
        if named is not None and named in self.pending:
            self.deviations.add("tool results written as separate system steps")
            self.pending.remove(named)
            self.messages.append(ToolMessage(content=text, tool_call_id=named))
        elif named is not None and named not in self.called:
            self.deviations.add(
                "tool results written before the step holding their call (kept as user messages)"
            )
            self.messages.append(HumanMessage(content=text))
        elif self.pending:
            self.deviations.add("tool results written as separate system steps")
            self.messages.append(ToolMessage(content=text, tool_call_id=self.pending.pop(0)))
        elif text:
            self.messages.append(HumanMessage(content=text))

    def named_call(self, message: str | list[Any]) -> str | None:
        """The tool-call id a system step's text names ("Tool result for toolu_..."), if any."""
        if not self.call_ids or not isinstance(message, str):
            return None
        return next((w for w in _WORDS.findall(message) if w in self.call_ids), None)

    def agent(self, step: dict[str, Any], message: str | list[Any], copied: bool) -> None:
        where = self.where
        calls: list[dict[str, Any]] = []
        for raw in _list(step.get("tool_calls"), "tool_calls", where):
            call = _obj(raw, "tool_calls[]", where)
            call_id = call.get("tool_call_id", call.get("id"))
            name = call.get("function_name", call.get("name"))
            if "tool_call_id" not in call or "function_name" not in call:
                self.deviations.add(
                    "tool calls with 'id'/'name' for 'tool_call_id'/'function_name'"
                )
            if not isinstance(call_id, str) or not call_id:
                raise where.error("field 'tool_calls[].tool_call_id' must be a non-empty string")
            if not isinstance(name, str):
                raise where.error("field 'tool_calls[].function_name' must be a string")
            if isinstance(call.get("arguments"), str):
                self.deviations.add("tool-call arguments written as JSON strings")
            calls.append(
                {
                    "name": name,
                    "args": _arguments(call.get("arguments"), where),
                    "id": call_id,
                    "type": "tool_call",
                }  # fmt: skip
            )
        reasoning = _opt_str(step.get("reasoning_content"), "reasoning_content", where)
        model = _opt_str(step.get("model_name"), "model_name", where) or self.default_model
        metrics = _opt_obj(step.get("metrics"), "metrics", where)
        extra = _opt_obj(metrics.get("extra"), "metrics.extra", where)
        prompt = _count(metrics, "prompt_tokens", "metrics", where)
        completion = _count(metrics, "completion_tokens", "metrics", where)
        usage: dict[str, Any] | None = None
        if prompt is not None:
            usage = {"input_tokens": prompt, "output_tokens": completion or 0,
                     "total_tokens": prompt + (completion or 0)}  # fmt: skip
            details = {}
            cached = _count(metrics, "cached_tokens", "metrics", where)
            written = _count(extra, "cache_creation_input_tokens", "metrics.extra", where)
            if cached is not None:
                details["cache_read"] = cached
            if written is not None:
                details["cache_creation"] = written
            if details:
                usage["input_token_details"] = details
        output = AIMessage(
            content=message,
            tool_calls=calls,
            additional_kwargs={"reasoning_content": reasoning} if reasoning else {},
            response_metadata={"model_name": model} if model else {},
            usage_metadata=usage,
        )
        self.pending = [c["id"] for c in calls]
        self.called.update(self.pending)
        position = len(self.messages)
        self.messages.append(output)
        count = _count(step, "llm_call_count", "step", where)
        if copied or count == 0:
            self.copied += copied
            return
        self.aggregated += count is not None and count > 1
        timestamp = _opt_str(step.get("timestamp"), "timestamp", where)
        details = (usage or {}).get("input_token_details", {})
        announced, self.announced = self.announced, None
        if announced is not None:
            self.compactions.append(
                RecordedCompaction(
                    turn=len(self.turns),
                    kind="summarize",
                    trigger=announced["trigger"],
                    pre_tokens=self.turns[-1].input_tokens if self.turns else None,
                    post_tokens=prompt,
                    summary=announced["summary"] or None,
                    started_at=timestamp,
                )
            )
        self.turns.append(
            Turn(
                index=len(self.turns),
                position=position,
                inputs=self.inputs(position),
                compacted=announced is not None,
                output=output,
                model=model,
                run_id=str(where.step),
                input_tokens=prompt,
                output_tokens=completion,
                cache_read_tokens=details.get("cache_read"),
                cache_write_tokens=details.get("cache_creation"),
                started_at=timestamp,
            )
        )

    def results(self, results: list[Any]) -> None:
        where = self.where
        for raw in results:
            result = _obj(raw, "observation.results[]", where)
            call_id = _opt_str(result.get("source_call_id"), "source_call_id", where)
            raw_content = result.get("content")
            content: str | list[Any]
            if isinstance(raw_content, dict):
                self.deviations.add(
                    "observation results whose content is an object (kept as its JSON text)"
                )
                content = json.dumps(raw_content, ensure_ascii=False)
            else:
                content = _content(raw_content, "observation.results[].content", where)
            for ref in _list(
                result.get("subagent_trajectory_ref"), "subagent_trajectory_ref", where
            ):
                ref = _obj(ref, "subagent_trajectory_ref[]", where)
                self.refs.append({**ref, "parent_tool_call_id": call_id})
            if call_id is not None and call_id in self.called:
                if call_id in self.pending:
                    self.pending.remove(call_id)
                self.messages.append(ToolMessage(content=content, tool_call_id=call_id))
            elif content:
                self.unmatched += call_id is not None
                self.messages.append(HumanMessage(content=content))


def _notes(builder: _Builder, tools: list[Any]) -> list[str]:
    notes = ["ATIF does not record each call's input: it is rebuilt as every step before the call."]
    if not builder.has_system:
        notes.append(
            "The system prompt is not in the file (no leading system step); "
            "it counts as zero tokens."
        )
    if not tools:
        notes.append(
            "Tool schemas are not in the file (no agent.tool_definitions); "
            "they count as zero tokens."
        )
    missing = sum(1 for t in builder.turns if t.input_tokens is None)
    if missing:
        notes.append(
            f"{missing} of {len(builder.turns)} agent steps have no metrics.prompt_tokens."
        )
    if builder.copied:
        notes.append(
            "Agent steps copied from an earlier trajectory (is_copied_context) are kept in the "
            f"history but not counted as calls: {builder.copied}."
        )
    if builder.aggregated:
        notes.append(
            "Agent steps that aggregate several model calls (llm_call_count > 1) are read as one "
            f"call each, with the summed metrics: {builder.aggregated}."
        )
    if builder.compactions:
        notes.append(
            f"Steps recording the harness's own compaction (extra.context_management type "
            f"'compaction'): {len(builder.compactions)}; each is a recorded compaction, its "
            "message the compacted context the next calls received (in Trace.inserted)."
        )
    if builder.unmatched:
        notes.append(
            "Observation results naming a call no step made are read as user messages: "
            f"{builder.unmatched}."
        )
    for deviation in sorted(builder.deviations):
        notes.append(f"Deviation from the ATIF spec tolerated: {deviation}.")
    return notes


def _trajectory(root: Any, where: _Where, fallback_id: str) -> Trace:
    root = _obj(root, "trajectory", where)
    version = root.get("schema_version")
    deviations: set[str] = set()
    if version is not None and not isinstance(version, str):
        raise where.error(f"field 'schema_version' must be a string, got {version!r}")
    if isinstance(version, str) and not version.startswith("ATIF-v"):
        deviations.add(f"schema_version {version!r} without the 'ATIF-v' prefix")
    agent = _opt_obj(root.get("agent"), "agent", where)
    model = _opt_str(agent.get("model_name"), "agent.model_name", where)
    if model is None and agent.get("model") is not None:
        model = _opt_str(agent.get("model"), "agent.model", where)
        deviations.add("agent.model instead of agent.model_name")
    tools = _list(agent.get("tool_definitions"), "agent.tool_definitions", where)
    steps = _list(root.get("steps"), "steps", where)
    builder = _Builder(
        where=where, default_model=model, deviations=deviations, call_ids=_call_ids(steps)
    )
    for index, step in enumerate(steps):
        builder.step(step, index)
    where.step = None
    session = _opt_str(root.get("session_id"), "session_id", where)
    trajectory_id = _opt_str(root.get("trajectory_id"), "trajectory_id", where)
    models = Counter(t.model for t in builder.turns if t.model)
    trace = Trace(
        trace_id=trajectory_id or session or fallback_id,
        format=NAME,
        source=where.source,
        messages=builder.messages,
        turns=builder.turns,
        tools=tools,
        model=model or (models.most_common(1)[0][0] if models else None),
        inserted=builder.inserted,
        compactions=builder.compactions,
        metadata={
            "schema_version": version,
            "session_id": session,
            "trajectory_id": trajectory_id,
            "agent": agent.get("name"),
            "agent_version": agent.get("version"),
            "final_metrics": root.get("final_metrics"),
            "continued_trajectory_ref": root.get("continued_trajectory_ref"),
            "copied_context_messages": builder.copied_prefix,
        },
        notes=_notes(builder, tools),
    )
    _attach(trace, root, builder.refs, where)
    return trace


def _attach(trace: Trace, root: dict[str, Any], refs: list[dict[str, Any]], where: _Where) -> None:
    """Embedded subagent trajectories (v1.7+) become subagents, linked to the tool call whose
    result references them; references to files wait in `metadata` for `link`."""
    embedded: dict[str, Trace] = {}
    subs = _list(root.get("subagent_trajectories"), "subagent_trajectories", where)
    for index, sub in enumerate(subs):
        inner = _Where(
            where.source, f"{where.path + '.' if where.path else ''}subagent_trajectories[{index}]"
        )
        child = _trajectory(sub, inner, f"{trace.trace_id}/subagent-{index}")
        child.parent_trace_id = trace.trace_id
        embedded[child.trace_id] = child
        trace.subagents.append(child)
    waiting: list[Any] = []  # references to trajectories the file does not embed
    for ref in refs:
        found = embedded.get(str(ref.get("trajectory_id")))
        if found is not None:
            found.parent_tool_call_id = ref["parent_tool_call_id"]
        else:
            waiting.append(ref)
    if waiting:
        trace.metadata["subagent_refs"] = waiting


def read(values: Values, source: str) -> list[Trace]:
    """The trajectory of the file, with its embedded subagents."""
    stem = Path(source).name.split(".")[0]
    return [_trajectory(values[0][0], _Where(source), stem)]


def _matches(ref: dict[str, Any], parent: Trace, child: Trace) -> bool:
    """Whether a subagent reference names `child`: by `trajectory_path` (beside the parent's
    file), else by `trajectory_id`, else by `session_id`."""
    path = ref.get("trajectory_path")
    if isinstance(path, str) and path:
        return _same_file(path, parent, child)
    for key in ("trajectory_id", "session_id"):
        if ref.get(key) is not None:
            return child.metadata.get(key) == ref[key]
    return False


COMPRESSED = (".gz", ".xz", ".bz2")
KEYS = ("trajectory_path", "trajectory_id", "session_id")
"""How a subagent reference names its trajectory, most specific first."""


def _same_file(ref: str, base: Trace, candidate: Trace) -> bool:
    """Whether `candidate` is the file `ref` names, relative to `base`'s file (a compressed
    copy counts)."""
    target = (Path(base.source).parent / ref).resolve()
    found = Path(candidate.source).resolve()
    return found == target or (
        found.parent == target.parent and found.name in {target.name + s for s in COMPRESSED}
    )


def _join(head: Trace, segment: Trace) -> None:
    """Append a continuation segment to the run it continues. The segment's leading
    copied-context steps are what the model received in place of the history (the recorded
    compaction): they stay in its calls' inputs, and the ones the run never held (the summary)
    go to `inserted`."""
    prefix = segment.metadata.get("copied_context_messages") or 0
    offset = len(head.messages) - prefix
    held = {(m.type, m.text) for m in head.messages}
    carried = [m for m in segment.messages[:prefix] if (m.type, m.text) not in held]
    head.messages.extend(segment.messages[prefix:])
    first = len(head.turns)
    for i, turn in enumerate(segment.turns):
        head.turns.append(
            replace(
                turn,
                index=first + i,
                position=turn.position + offset,
                compacted=turn.compacted or i == 0,
            )
        )
    head.inserted.extend(carried)
    head.inserted.extend(segment.inserted)
    head.compactions.extend(replace(c, turn=c.turn + first) for c in segment.compactions)
    if segment.turns and not any(c.turn == 0 for c in segment.compactions):
        head.compactions.append(
            RecordedCompaction(
                turn=first,
                kind="summarize",
                trigger="auto",
                pre_tokens=head.turns[first - 1].input_tokens if first else None,
                post_tokens=segment.turns[0].input_tokens,
                summary="\n\n".join(m.text for m in carried) or None,
                started_at=segment.turns[0].started_at,
            )
        )
    if segment.metadata.get("subagent_refs"):
        head.metadata.setdefault("subagent_refs", []).extend(segment.metadata["subagent_refs"])
    for sub in segment.subagents:
        sub.parent_trace_id = head.trace_id
    head.subagents.extend(segment.subagents)
    head.notes.append(
        f"Continued in {segment.source} (continued_trajectory_ref): joined here; its "
        f"{prefix} carried-over messages are the compacted context of its first call."
    )
    head.metadata["continued_trajectory_ref"] = segment.metadata.get("continued_trajectory_ref")


def _ref_name(ref: Any) -> str | None:
    """How a `continued_trajectory_ref` names its file: a path, or (v1.7 objects) its
    `trajectory_path`, `trajectory_id` or `session_id`; None when it names nothing."""
    if isinstance(ref, str):
        return ref or None
    if isinstance(ref, dict):
        return next((str(ref[k]) for k in KEYS if ref.get(k) is not None), None)
    return None


def _continues(ref: Any, head: Trace, candidate: Trace) -> bool:
    """Whether `candidate` is the continuation `ref` (a path beside `head`'s file, or an
    object naming it) points at."""
    return (
        _matches(ref, head, candidate)
        if isinstance(ref, dict)
        else _same_file(ref, head, candidate)
    )


def _continue(traces: list[Trace], taken: set[int]) -> None:
    """Join every run split over files by `continued_trajectory_ref`, in chain order."""
    for head in traces:
        while id(head) not in taken:
            ref = head.metadata.get("continued_trajectory_ref")
            named = _ref_name(ref)
            if named is None:
                break
            segment = next(
                (
                    t
                    for t in traces
                    if t is not head and id(t) not in taken and _continues(ref, head, t)
                ),
                None,
            )
            ref = named
            if segment is None:
                head.notes.append(f"The continuation {ref} was not loaded with this trajectory.")
                break
            taken.add(id(segment))
            _join(head, segment)


def link(traces: list[Trace]) -> list[Trace]:
    """Runs split over files by `continued_trajectory_ref` are joined into one trace (the
    split is a recorded compaction); trajectories another one references (by
    `trajectory_path` beside it, or by `session_id`) become its subagents."""
    atif = [t for t in traces if t.format == NAME]
    taken: set[int] = set()
    _continue(atif, taken)
    atif = [t for t in atif if id(t) not in taken]
    waiting = [t for t in atif if t.metadata.get("subagent_refs")]
    if not waiting and not taken:
        return traces
    for parent in waiting:
        for ref in parent.metadata.pop("subagent_refs"):
            child = next(
                (
                    c
                    for c in atif
                    if id(c) not in taken and c is not parent and _matches(ref, parent, c)
                ),
                None,
            )
            if child is None:
                name = next((ref[k] for k in KEYS if ref.get(k) is not None), "(unnamed)")
                parent.notes.append(f"Subagent trajectory {name} was not loaded with this one.")
                continue
            taken.add(id(child))
            child.parent_trace_id = parent.trace_id
            child.parent_tool_call_id = ref.get("parent_tool_call_id")
            parent.subagents.append(child)
    return [t for t in traces if id(t) not in taken]
