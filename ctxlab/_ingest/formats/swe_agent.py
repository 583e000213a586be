"""SWE-agent trajectories (`.traj`) to canonical `Trace`s.

A `.traj` is one JSON object: `history` (every message of the run, `{role, content, agent,
message_type, ...}`; function-calling runs add OpenAI `tool_calls` and `tool_call_ids`),
`trajectory` (one entry per step: `response`, `thought`, `action`, `observation`, and in 1.x
the model's view of the history) and `info` (`model_stats` totals, exit status, submission).

SWE-agent 1.x keeps what the model saw: newer versions as `trajectory[i].query` (the exact
input of step i), earlier 1.x versions as `trajectory[i].messages`, the processed history
*after* step i (so step i's input is step i-1's `messages`). The processed view differs from
`history` where SWE-agent's history processors elided old observations, which is why those
inputs are kept as recorded. SWE-agent 0.x keeps only `history`: each call is taken to see the
whole history before it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.messages import Memo, MessageDecodeError, decode_messages
from ctxlab._ingest.inputs import Inputs, Recorder
from ctxlab._messages import first_orphan_result
from ctxlab._trace import Trace, Turn

NAME = "swe-agent"
DESCRIPTION = "a SWE-agent trajectory (.traj: an object with 'trajectory' and 'history' or 'info')"

Values = list[tuple[Any, int | None]]


def sniff(values: Values) -> bool:
    """One JSON document with a `trajectory` list beside `history` or `info`."""
    if len(values) != 1 or values[0][1] is not None:
        return False
    doc = values[0][0]
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("trajectory"), list)
        and (isinstance(doc.get("history"), list) or isinstance(doc.get("info"), dict))
    )


@dataclass(slots=True)
class _Where:
    source: str

    def fail(self, where: str, message: str) -> TraceFormatError:
        return TraceFormatError(f"{where}: {message}", source=self.source)

    def obj(self, value: Any, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(where, f"expected an object, got {_kind(value)}")
        return value

    def items(self, value: Any, where: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(where, f"expected a list, got {_kind(value)}")
        return value


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), f"a {type(value).__name__}"
    )


def _normalised(raw: Any, where: str, check: _Where) -> dict[str, Any]:
    """A SWE-agent message as a role dict the shared decoders read: a tool observation's
    `tool_call_ids` list becomes the one `tool_call_id` it answers."""
    msg = check.obj(raw, where)
    role = msg.get("role")
    if not isinstance(role, str):
        raise check.fail(f"{where}.role", f"expected a string, got {_kind(role)}")
    content = msg.get("content")
    if not isinstance(content, str | list) and content is not None:
        raise check.fail(f"{where}.content", f"expected a string or a list, got {_kind(content)}")
    if isinstance(content, list) and not all(isinstance(b, str | dict) for b in content):
        raise check.fail(f"{where}.content", "expected a list of text strings or content blocks")
    calls = msg.get("tool_calls")
    if calls is not None:
        for i, call in enumerate(check.items(calls, f"{where}.tool_calls")):
            _check_call(call, f"{where}.tool_calls[{i}]", check)
    if role != "tool":
        return msg
    ids = msg.get("tool_call_ids", msg.get("tool_call_id"))
    if isinstance(ids, list) and ids and all(isinstance(i, str) for i in ids):
        return {**msg, "tool_call_id": ids[0]}
    if isinstance(ids, str) and ids:
        return {**msg, "tool_call_id": ids}
    raise check.fail(
        f"{where}.tool_call_ids", f"expected a non-empty list of call ids, got {_kind(ids)}"
    )


def _check_call(call: Any, where: str, check: _Where) -> None:
    """An OpenAI tool call: a string `id`, and `function` with a string `name` and arguments
    as JSON text or an object."""
    call = check.obj(call, where)
    if not isinstance(call.get("id"), str):
        raise check.fail(f"{where}.id", f"expected a string, got {_kind(call.get('id'))}")
    function = check.obj(call.get("function"), f"{where}.function")
    if not isinstance(function.get("name"), str):
        raise check.fail(
            f"{where}.function.name", f"expected a string, got {_kind(function.get('name'))}"
        )
    if not isinstance(function.get("arguments"), str | dict):
        raise check.fail(f"{where}.function.arguments", "expected JSON text or an object")


def _decode(raw: list[Any], where: str, check: _Where, memo: Memo) -> list[BaseMessage]:
    rows = [_normalised(m, f"{where}[{i}]", check) for i, m in enumerate(raw)]
    try:
        return decode_messages(rows, memo)
    except MessageDecodeError as exc:
        raise check.fail(where, str(exc)) from exc


def _check_pairs(history: list[BaseMessage], check: _Where) -> None:
    orphan = first_orphan_result(history)
    if orphan is not None:
        i, result = orphan
        raise check.fail(
            f"history[{i}]",
            f"tool observation for call {result.tool_call_id!r} has no earlier assistant "
            "message with that tool call",
        )


def observations(raw: list[Any]) -> dict[str, Any]:
    """Which history entries SWE-agent's `LastNObservations` treats as observations, and which
    SWE-agent wrote the history: `{"observations": [history positions], "swe_agent": "0.x" |
    "1.x"}` (the `swe-agent-masking` preset masks these).

    1.x marks every entry with a `message_type` and masks the `observation`s (tool results,
    and the instance template before them); 0.x has no `message_type` and masks every user
    message (its observations are user turns). Both skip demonstrations (`is_demo`) and never
    mask the first observation, the instance template: `_get_omit_indices` in
    sweagent/agent/history_processors.py (SWE-agent@3ea751c0, 1.x) and `last_n_history` in
    the same file at v0.7.0."""
    entries = [e if isinstance(e, dict) else {} for e in raw]
    old = not any("message_type" in e for e in entries)
    positions = [
        i
        for i, e in enumerate(entries)
        if not e.get("is_demo", False)
        and (e.get("role") == "user" if old else e.get("message_type") == "observation")
    ]
    return {"observations": positions, "swe_agent": "0.x" if old else "1.x"}


def _config(doc: dict[str, Any], check: _Where) -> dict[str, Any]:
    """`replay_config`, stored as an object or (SWE-agent 1.0) as a JSON string."""
    config = doc.get("replay_config")
    if isinstance(config, str):
        try:
            config = json.loads(config)
        except ValueError as exc:
            raise check.fail("replay_config", f"expected JSON text ({exc})") from exc
    return config if isinstance(config, dict) else {}


def _model(config: dict[str, Any]) -> str | None:
    agent = config.get("agent")
    model = agent.get("model") if isinstance(agent, dict) else None
    name = model.get("name") if isinstance(model, dict) else None
    return name if isinstance(name, str) else None


def _stats(info: dict[str, Any], check: _Where) -> dict[str, int | float]:
    stats = info.get("model_stats")
    if stats is None:
        return {}
    stats = check.obj(stats, "info.model_stats")
    out: dict[str, int | float] = {}
    for key in ("tokens_sent", "tokens_received", "api_calls", "instance_cost"):
        value = stats.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise check.fail(f"info.model_stats.{key}", f"expected a number, got {_kind(value)}")
        out[key] = value
    return out


def _step_inputs(
    steps: list[dict[str, Any]], check: _Where, memo: Memo
) -> list[list[BaseMessage]] | None:
    """Each step's model input from `query`, or from the previous step's `messages`; None
    when the steps carry neither (0.x)."""
    if all(isinstance(s.get("query"), list) for s in steps):
        return [
            _decode(s["query"], f"trajectory[{i}].query", check, memo) for i, s in enumerate(steps)
        ]
    if not all(isinstance(s.get("messages"), list) for s in steps):
        return None
    views = [  # the last step's view is nobody's input: not decoded
        _decode(s["messages"], f"trajectory[{i}].messages", check, memo)
        for i, s in enumerate(steps[: max(1, len(steps) - 1)])
    ]
    first = views[0]
    last_ai = max((i for i, m in enumerate(first) if isinstance(m, AIMessage)), default=None)
    if last_ai is None:
        raise check.fail("trajectory[0].messages", "expected the step's assistant message")
    return [first[:last_ai], *views[: len(steps) - 1]]


def _extends(inputs: list[BaseMessage], previous: list[BaseMessage]) -> bool:
    """Whether a call's input is the previous input plus what the history gained since
    (its output and the observations): anything else is an edit by a history processor."""
    if len(inputs) < len(previous):
        return False
    return all(a is b or a == b for a, b in zip(previous, inputs, strict=False))


def read(values: Values, source: str) -> list[Trace]:
    """The one agent run of a `.traj` file."""
    check = _Where(source)
    doc = check.obj(values[0][0], "document")
    steps = [
        check.obj(s, f"trajectory[{i}]")
        for i, s in enumerate(check.items(doc["trajectory"], "trajectory"))
    ]
    raw_history = check.items(doc.get("history", []), "history")
    info = check.obj(doc.get("info", {}), "info")
    memo: Memo = {}
    history = _decode(raw_history, "history", check, memo)
    _check_pairs(history, check)
    if not history:
        raise check.fail("history", "expected the run's messages (the file has none)")
    inputs = _step_inputs(steps, check, memo) if steps else None
    outputs = [i for i, m in enumerate(history) if isinstance(m, AIMessage)]
    notes: list[str] = []
    if inputs is not None and len(inputs) != len(outputs):
        notes.append(
            f"The trajectory has {len(inputs)} steps but the history {len(outputs)} assistant "
            "messages: each call is taken to see the whole history before it."
        )
        inputs = None
    stats = _stats(info, check)
    output_tokens = [s.get("output_tokens") for s in steps]
    turns: list[Turn] = []
    previous: tuple[list[BaseMessage], int] | None = None
    recorder = Recorder()
    for index, position in enumerate(outputs):
        seen = inputs[index] if inputs is not None else history[:position]
        compacted = previous is not None and not _extends(
            seen, [*previous[0], *history[previous[1] : position]]
        )
        produced = output_tokens[index] if inputs is not None else None
        turns.append(
            Turn(
                index=index,
                position=position,
                inputs=recorder.snapshot(seen)
                if inputs is not None
                else Inputs.prefix(history, position),
                output=history[position],  # type: ignore[arg-type]
                output_tokens=produced if isinstance(produced, int) else None,
                compacted=compacted,
            )
        )
        previous = (seen, position)
    if not turns:
        raise check.fail("history", "expected at least one assistant message (a model call)")
    config = _config(doc, check)
    model = _model(config)
    if inputs is None:
        notes.insert(
            0,
            "This trajectory does not record per-call inputs (SWE-agent 0.x): each call is taken "
            "to see the whole history before it, without SWE-agent's history processors.",
        )
    elif any(t.compacted for t in turns):
        notes.append(
            "Inputs that elide earlier observations (SWE-agent's history processors, such as "
            "last-N observation masking) mark their turns as compacted."
        )
    notes.append(
        "Per-call token usage is not recorded: only run totals in info.model_stats "
        f"(tokens_sent {stats.get('tokens_sent', 'absent')}, tokens_received "
        f"{stats.get('tokens_received', 'absent')}, api_calls {stats.get('api_calls', 'absent')}), "
        "kept in metadata['model_stats']."
    )
    notes.append("Tool schemas are not recorded (only tool bundle names): counted as zero.")
    if model is None:
        notes.append("The model name is not recorded.")
    api_calls = stats.get("api_calls")
    if isinstance(api_calls, int) and api_calls > len(turns):
        notes.append(
            f"info.model_stats counts {api_calls} API calls for {len(turns)} steps: requeries "
            "after format errors are not in the trajectory."
        )
    statement = config.get("problem_statement")
    trace_id = statement.get("id") if isinstance(statement, dict) else None
    metadata: dict[str, Any] = {"model_stats": stats}
    for key in ("exit_status", "submission"):
        if isinstance(info.get(key), str):
            metadata[key] = info[key]
    if len(history) == len(raw_history):
        metadata.update(observations(raw_history))
    return [
        Trace(
            trace_id=str(trace_id or Path(source).name.split(".")[0]),
            format=NAME,
            source=source,
            messages=history,
            turns=turns,
            model=model,
            metadata=metadata,
            notes=notes,
        )
    ]
