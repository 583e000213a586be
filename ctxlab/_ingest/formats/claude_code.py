"""Claude Code session transcripts (`~/.claude/projects/<project>/<session>.jsonl`).

A session is one JSONL file of entries linked by `uuid`/`parentUuid` (`claude_code_lines`);
each agent's conversation is rebuilt from them (`claude_code_chain`). Subagents come in two
layouts, both read here:

* Claude Code 1.x writes a Task subagent's transcript into the session file itself, as lines
  with `isSidechain: true` starting a chain of their own; it is linked to the Task call whose
  `prompt` is its first message.
* Claude Code 2.x writes each one to `<session>/subagents/agent-<id>.jsonl` beside the session
  file; the Task call's tool result names the `agentId`. Reading the session file reads that
  folder too. `agent-acompact-*` is not an agent but the harness's own summariser call for a
  compaction: it becomes one of the session's `harness_calls`.

A subagent file read on its own (a directory load meets it as any other file) is a trace with
`parent_trace_id` set; `link` drops it when its session was loaded and already holds it, and
attaches it to its session when that was loaded from elsewhere.
"""

from __future__ import annotations

import os
from dataclasses import replace
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats import redaction
from ctxlab._ingest.formats.claude_code_chain import Conversation, build, check_parents
from ctxlab._ingest.formats.claude_code_lines import MESSAGE_TYPES, Line, Parsed, parse
from ctxlab._ingest.inputs import Inputs
from ctxlab._trace import Trace, Turn

NAME = "claude-code"
DESCRIPTION = "a Claude Code session (JSONL lines with 'sessionId', 'uuid' and 'parentUuid')"

NOTES = (
    "Claude Code session files do not record what each model call received: each turn's "
    "inputs are rebuilt from the uuid/parentUuid chain, after a compaction from the summary "
    "Claude Code inserted and what follows it.",
    "The system prompt is not in the file and is counted as zero tokens.",
    "Tool schemas are not in the file and are counted as zero tokens.",
)
ALONE = (
    "This subagent transcript was loaded without its session file, so the Task call that ran "
    "it is unknown."
)
UNLINKED = "No Task call of the session names this subagent, so the call that ran it is unknown."
HARNESS_PREFIX = "acompact"
"""`agentId` prefix of the transcript of Claude Code's compaction summariser call."""
TASK_TOOLS = ("Task", "Agent")


def sniff(values: list[tuple[Any, int | None]]) -> bool:
    """A Claude Code entry among the first lines: `sessionId`, `uuid` and `parentUuid`."""
    for value, _ in values[:200]:
        if (
            isinstance(value, dict)
            and value.get("type") in (*MESSAGE_TYPES, "progress", "system")
            and "sessionId" in value
            and "uuid" in value
            and "parentUuid" in value
        ):
            return True
    return False


def _stem(source: str) -> str:
    return os.path.basename(source).split(".")[0]


def _agent_id(parsed: Parsed, source: str) -> str:
    return parsed.agent_id or _stem(source).removeprefix("agent-")


def _trace(
    trace_id: str,
    conversation: Conversation,
    source: str,
    metadata: dict[str, Any],
    *,
    parent: str | None = None,
    call: str | None = None,
    notes: tuple[str, ...] = (),
) -> Trace:
    """A `Trace` of one rebuilt conversation, with the notes its format always needs."""
    models: dict[str, int] = {}
    for turn in conversation.turns:
        if turn.model:
            models[turn.model] = models.get(turn.model, 0) + 1
    extra = list(notes)
    if len(models) > 1:
        counts = ", ".join(f"{m}: {n}" for m, n in models.items())
        extra.append(
            f"Calls used {len(models)} models ({counts}); the trace's model is the one with the "
            "most calls, and each turn keeps its own."
        )
    extra.extend(redaction.notes(conversation.messages))
    # the model of the most calls, the first one on a tie (`max` keeps the first)
    model = max(models, key=models.__getitem__) if models else None
    return Trace(
        trace_id=trace_id,
        format=NAME,
        source=source,
        messages=conversation.messages,
        turns=conversation.turns,
        model=model,
        provider="anthropic",
        parent_trace_id=parent,
        parent_tool_call_id=call,
        inserted=conversation.inserted,
        metadata=metadata,
        compactions=conversation.compactions,
        notes=[*NOTES, *conversation.notes, *extra],
    )


def _task_calls(conversation: Conversation) -> list[tuple[str, str]]:
    """(call id, prompt) of every Task call of a conversation, in order."""
    out = []
    for message in conversation.messages:
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                prompt = call["args"].get("prompt")
                if call["name"] in TASK_TOOLS and call["id"] and isinstance(prompt, str):
                    out.append((call["id"], prompt))
    return out


def _spawning_call(prompt: str | None, calls: list[tuple[str, str]], used: set[str]) -> str | None:
    """The first unused Task call whose prompt is the subagent's first message."""
    for call, text in calls:
        if call not in used and text == prompt:
            used.add(call)
            return call
    return None


def _sidechains(lines: list[Line], by_uuid: dict[str, Line]) -> list[list[Line]]:
    """Inlined subagent transcripts: sidechain lines grouped by the first sidechain line of
    their chain."""
    roots: dict[str, str] = {}
    groups: dict[str, list[Line]] = {}
    for line in lines:
        if not line.sidechain:
            continue
        path = [line.uuid]
        current = line
        while (
            current.parent in by_uuid
            and by_uuid[current.parent].sidechain
            and current.parent not in roots
            and current.parent not in path  # a parentUuid cycle: the chain check reports it
        ):
            current = by_uuid[current.parent]
            path.append(current.uuid)
        root = roots.get(current.parent or "", current.uuid)
        for uuid in path:
            roots[uuid] = root
        groups.setdefault(root, []).append(line)
    return list(groups.values())


def _agent_files(source: str) -> list[Path]:
    """`<session>/subagents/agent-*.jsonl[.gz|...]` beside a session file, sorted."""
    where = os.path.join(os.path.dirname(source), _stem(source), "subagents")
    if not os.path.isdir(where):  # os.path: four Path objects cost a tenth of a small load
        return []
    names = (p for p in Path(where).iterdir() if p.name.startswith("agent-") and ".jsonl" in p.name)
    return sorted(p for p in names if p.is_file())


def _read_agent_file(path: Path) -> tuple[Parsed, Conversation]:
    # Imported here: `ctxlab.load` imports the format registry, which imports this module.
    from ctxlab._ingest.load import read_values

    source = str(path)
    parsed = parse(read_values(path), source)
    by_uuid = {line.uuid: line for line in parsed.lines}
    return parsed, build(parsed.lines, by_uuid, source, open_root=True)


def _add_harness_call(trace: Trace, turn: Turn, before: tuple[Any, ...]) -> None:
    """A summariser transcript's call as one of the session's harness calls: its input is the
    context just before the compaction, then the summary request."""
    trace.harness_calls.append(
        replace(
            turn,
            index=len(trace.harness_calls),
            position=-1,
            inputs=Inputs.of((*before, *turn.inputs)),
            name="compact",
        )
    )


def _attach_files(
    trace: Trace, main: Conversation, calls: list[tuple[str, str]], parsed: Parsed, source: str
) -> None:
    """Read the session's `subagents/` folder into its subagents and harness calls; `calls` are
    the main conversation's Task calls (`_task_calls`)."""
    used = set(parsed.agent_calls.values())
    for path in _agent_files(source):
        try:
            agent, conversation = _read_agent_file(path)
        except (TraceFormatError, RecursionError) as exc:  # a folder also reads it alone
            why = exc.reason if isinstance(exc, TraceFormatError) else "nested too deeply"
            trace.notes.append(f"Subagent file {path.name} left out: {why}.")
            continue
        agent_id = _agent_id(agent, str(path))
        trace.metadata["agent_files"].append(str(path))
        if agent_id.startswith(HARNESS_PREFIX):
            first = next((line for line in agent.lines if line.type in MESSAGE_TYPES), None)
            before = main.before_compaction.get(first.parent or "", ()) if first else ()
            for turn in conversation.turns:
                _add_harness_call(trace, turn, before)
            continue
        call = parsed.agent_calls.get(agent_id) or _spawning_call(conversation.prompt, calls, used)
        trace.subagents.append(
            _trace(
                f"{trace.trace_id}/{agent_id}",
                conversation,
                str(path),
                {"agent_id": agent_id},
                parent=trace.trace_id,
                call=call,
                notes=() if call else (UNLINKED,),
            )
        )


def _alone(parsed: Parsed, by_uuid: dict[str, Line], source: str) -> Trace:
    """A subagent transcript file read without its session."""
    conversation = build(parsed.lines, by_uuid, source, open_root=True)
    agent_id = _agent_id(parsed, source)
    session = parsed.session_id or agent_id
    return _trace(
        f"{session}/{agent_id}",
        conversation,
        source,
        {"agent_id": agent_id, "harness": agent_id.startswith(HARNESS_PREFIX)},
        parent=session,
        notes=(ALONE,),
    )


def read(values: list[tuple[Any, int | None]], source: str) -> list[Trace]:
    """The session's main conversation as one trace, with its subagents and summariser calls."""
    parsed = parse(values, source)
    by_uuid = {line.uuid: line for line in parsed.lines}
    if not any(line.type in MESSAGE_TYPES and not line.sidechain for line in parsed.lines):
        return [_alone(parsed, by_uuid, source)]
    check_parents(parsed.lines, by_uuid, source)
    main = build([line for line in parsed.lines if not line.sidechain], by_uuid, source)
    session = parsed.session_id or _stem(source)
    metadata: dict[str, Any] = {
        "session_id": session,
        "version": parsed.version,
        "cwd": parsed.cwd,
        "summaries": parsed.summaries,
        "agent_calls": parsed.agent_calls,
        "agent_files": [],
    }
    trace = _trace(session, main, source, metadata)
    calls = _task_calls(main)
    used: set[str] = set()
    for group in _sidechains(parsed.lines, by_uuid):
        own = {line.uuid: line for line in group}
        conversation = build(group, own, source, open_root=True)
        call = _spawning_call(conversation.prompt, calls, used)
        trace.subagents.append(
            _trace(
                f"{session}/{call or group[0].uuid}",
                conversation,
                source,
                {"agent_id": None},
                parent=session,
                call=call,
                notes=() if call else (UNLINKED,),
            )
        )
    _attach_files(trace, main, calls, parsed, source)
    return [trace]


def _context_before_compaction(session: Trace, started_at: str | None) -> tuple[Any, ...]:
    """The as-sent context just before the first compaction recorded after `started_at`: the
    last call's input and output, then what the history gained up to the compaction."""
    later = [c for c in session.compactions if c.kind == "summarize"]
    if started_at:
        later = [c for c in later if (c.started_at or "") >= started_at]
    if not later or not 0 < later[0].turn < len(session.turns):
        return ()
    last, first_after = session.turns[later[0].turn - 1], session.turns[later[0].turn]
    kept = first_after.inputs[1:]  # after the summary: messages that followed the compaction
    ids = [id(m) for m in session.messages]
    end = ids.index(id(kept[0])) if kept and id(kept[0]) in ids else first_after.position
    return (*last.inputs, *session.messages[last.position : end])


def _same_file(path: str) -> str:
    return os.path.realpath(path)


def link(traces: list[Trace]) -> list[Trace]:
    """Subagent files read on their own: dropped when their session already read them, attached
    to their session when it was loaded from elsewhere, kept top-level otherwise."""
    ours = [t for t in traces if t.format == NAME]
    if not any(t.parent_trace_id for t in ours):
        return traces
    read_with_session = {
        _same_file(path) for t in ours for path in t.metadata.get("agent_files", ())
    }
    sessions = {t.trace_id: t for t in ours if t.parent_trace_id is None}
    out = []
    for trace in traces:
        if trace.format != NAME or trace.parent_trace_id is None:
            out.append(trace)
            continue
        if _same_file(trace.source) in read_with_session:
            continue
        session = sessions.get(trace.parent_trace_id)
        if session is None:
            out.append(trace)
            continue
        session.metadata.setdefault("agent_files", []).append(trace.source)
        notes = [n for n in trace.notes if n != ALONE]
        if trace.metadata.get("harness"):
            for turn in trace.turns:
                before = _context_before_compaction(session, turn.started_at)
                _add_harness_call(session, turn, before)
            continue
        call = session.metadata.get("agent_calls", {}).get(trace.metadata.get("agent_id"))
        trace.parent_tool_call_id = call
        trace.notes = notes if call else [*notes, UNLINKED]
        session.subagents.append(trace)
    return out
