"""mini-swe-agent trajectories (`<instance_id>.traj.json`): the messages and each call's usage.

mini-swe-agent (the small agent of the SWE-agent project) saves one JSON document per run:
`{"trajectory_format": "mini-swe-agent-1.x", "instance_id", "info": {"model_stats", "config",
"mini_version", "exit_status", "submission"}, "messages": [...]}`. The messages are OpenAI chat
dicts to which mini-swe-agent adds an `extra` object: on an assistant message the raw LiteLLM
`response` (its `usage` and `model`), on a tool result the command's `raw_output` and
`returncode`. The agent never edits its history, so every call saw all messages before it.

The run ends with a message of role `exit` (mini-swe-agent 2.x): the agent's own record of how
it stopped (`extra.exit_status`, `extra.submission`), never sent to a model. It is kept in
`metadata`, not in the history; a generic message-list reader refused the whole file for it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.fields import describe, obj_or_empty
from ctxlab._ingest.formats.messages import MessageDecodeError, decode_messages
from ctxlab._messages import first_orphan_result
from ctxlab._trace import Trace, Turn, from_messages

NAME = "mini-swe-agent"
DESCRIPTION = (
    "a mini-swe-agent trajectory (.traj.json: an object with 'trajectory_format' "
    "'mini-swe-agent-...' and 'messages')"
)

_CHAT_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
"""What a model saw of a message; `extra` and LiteLLM's bookkeeping fields are not sent."""


def sniff(values: list[tuple[Any, int | None]]) -> bool:
    """One JSON document whose `trajectory_format` names mini-swe-agent, with `messages`."""
    if len(values) != 1 or values[0][1] is not None:
        return False
    doc = values[0][0]
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("trajectory_format"), str)
        and doc["trajectory_format"].startswith("mini-swe-agent")
        and isinstance(doc.get("messages"), list)
    )


def _obj(value: Any, where: str, source: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TraceFormatError(f"{where}: expected an object, got {describe(value)}", source=source)
    return value


def _count(usage: dict[str, Any], key: str, where: str, source: str) -> int | None:
    value = usage.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TraceFormatError(
            f"{where}.{key}: expected a non-negative integer, got {describe(value)}",
            source=source,
        )
    return value


def _usage(extra: dict[str, Any], where: str, source: str) -> dict[str, Any]:
    """A call's recorded usage and model from the LiteLLM response mini-swe-agent kept.

    LiteLLM reports OpenAI-style usage for every provider: `prompt_tokens` is the whole input
    (cached tokens included, `prompt_tokens_details.cached_tokens`), and Anthropic's cache
    writes come as `cache_creation_input_tokens`.
    """
    response = extra.get("response")
    if response is None:
        return {}
    response = _obj(response, f"{where}.response", source)
    out: dict[str, Any] = {}
    if isinstance(response.get("model"), str):
        out["model"] = response["model"]
    usage = response.get("usage")
    if usage is None:
        return out
    usage = _obj(usage, f"{where}.response.usage", source)
    at = f"{where}.response.usage"
    out["input_tokens"] = _count(usage, "prompt_tokens", at, source)
    out["output_tokens"] = _count(usage, "completion_tokens", at, source)
    details = usage.get("prompt_tokens_details")
    if isinstance(details, dict):
        out["cache_read_tokens"] = _count(
            details, "cached_tokens", f"{at}.prompt_tokens_details", source
        )
    out["cache_write_tokens"] = _count(usage, "cache_creation_input_tokens", at, source)
    return out


def read(values: list[tuple[Any, int | None]], source: str) -> list[Trace]:
    """The one run of a trajectory file."""
    doc = _obj(values[0][0], "document", source)
    info = _obj(doc.get("info", {}), "info", source)
    raw = doc["messages"]
    chat: list[dict[str, Any]] = []
    extras: list[tuple[str, dict[str, Any]]] = []
    ending: dict[str, Any] = {}
    for i, item in enumerate(raw):
        item = _obj(item, f"messages[{i}]", source)
        extra = _obj(item.get("extra") or {}, f"messages[{i}].extra", source)
        if item.get("role") == "exit":
            ending = extra
            continue
        chat.append({k: item[k] for k in _CHAT_KEYS if item.get(k) is not None})
        extras.append((f"messages[{i}].extra", extra))
    try:
        messages = decode_messages(chat)
    except MessageDecodeError as exc:
        raise TraceFormatError(str(exc), source=source) from exc
    if len(messages) != len(chat):
        raise TraceFormatError(
            f"messages: {len(chat)} chat messages decoded to {len(messages)}", source=source
        )
    orphan = first_orphan_result(messages)
    if orphan is not None:
        raise TraceFormatError(
            f"messages: tool result {orphan[1].tool_call_id!r} answers no earlier call",
            source=source,
        )
    config = obj_or_empty(info, "config")
    model_config = obj_or_empty(config, "model")
    model = model_config.get("model_name")
    stem = Path(source).name.split(".")[0]
    trace = from_messages(
        messages,
        trace_id=str(doc.get("instance_id") or stem),
        format=NAME,
        source=source,
        model=model if isinstance(model, str) else None,
    )
    turns: list[Turn] = []
    for turn in trace.turns:
        where, extra = extras[turn.position]
        usage = _usage(extra, where, source)
        turns.append(
            Turn(
                index=turn.index,
                position=turn.position,
                inputs=turn.inputs,
                output=turn.output,
                model=usage.get("model") or trace.model,
                input_tokens=usage.get("input_tokens"),
                output_tokens=usage.get("output_tokens"),
                cache_read_tokens=usage.get("cache_read_tokens"),
                cache_write_tokens=usage.get("cache_write_tokens"),
            )
        )
    if not turns:
        raise TraceFormatError(
            "messages: expected at least one assistant message (a model call)", source=source
        )
    trace.turns = turns
    stats = info.get("model_stats")
    trace.metadata.update(
        {
            "trajectory_format": doc["trajectory_format"],
            "mini_version": info.get("mini_version"),
            "exit_status": ending.get("exit_status", info.get("exit_status")),
            "submission": ending.get("submission", info.get("submission")),
            "model_stats": stats if isinstance(stats, dict) else {},
        }
    )
    note = (
        "mini-swe-agent keeps every message in its context: each call is taken to see the whole "
        "history before it."
    )
    if any(isinstance(m, AIMessage) and m.tool_calls for m in messages):
        note += " The schema of its bash tool is not in the file: counted as zero tokens."
    trace.notes.append(note)
    if all(t.input_tokens is None for t in turns):
        trace.notes.append("No call records its usage (no LiteLLM response in 'extra').")
    return [trace]
