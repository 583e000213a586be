"""Runs copied from the LangSmith UI: `{"inputs", "outputs", "metadata", "langsmith"}`.

Copying a run in the LangSmith UI gives its payload without the run record around it: no id,
no run_type, no parent, no timestamps (sometimes `name` and `extra` come along). Two kinds
matter for context replay:

* a model call (an `llm` run): `inputs.messages` is LangChain's batched `[[...]]` (or an
  OpenAI / Anthropic request) and `outputs` the generation. It is read by the LangSmith run
  reader as a one-run trace, so the turn holds the exact as-sent input;
* a chain run, usually a LangGraph node or graph whose state has `messages`: the conversation
  is `inputs.messages` followed by the new messages of `outputs.messages` (a graph's output
  state repeats its input, a node's output holds only the update, sometimes inside a LangGraph
  `Command`: `outputs.output[].update.messages`). The per-call input is not
  recorded, so each AI message is taken as a call that saw everything before it.

The model comes from `metadata.ls_model_name` / `ls_provider` or the AI message's
`response_metadata`. A copy has no id, so the trace id is a hash of its content: the same copy
always loads to the same id. A file holds one copy, a JSON list of copies, or one per line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import orjson
from langchain_core.messages import AIMessage, BaseMessage, SystemMessage, ToolMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats import langsmith
from ctxlab._ingest.formats.messages import Memo, MessageDecodeError, decode_messages
from ctxlab._ingest.inputs import Inputs
from ctxlab._trace import Trace, Turn

NAME = "langsmith-copied-run"
DESCRIPTION = (
    "a run copied from the LangSmith UI (an object, or a list of them, with 'inputs', "
    "'outputs' and 'metadata' or 'langsmith', and no 'id')"
)

_RECORD_KEYS = ("id", "run_id", "run_type", "trace_id", "dotted_order", "parent_run_id")

COPIED_NOTE = (
    "One run copied from the LangSmith UI: no run tree, run ids or timestamps; the trace id is "
    "a hash of the copied content."
)

CALL_NOTE = (
    "The copied run is one model call: the history is that call's input and output, and no "
    "earlier call's usage is recorded."
)


def looks_like_copy(obj: Any) -> bool:
    """Whether a JSON value is one run payload copied from the UI (not a run record)."""
    return (
        isinstance(obj, dict)
        and isinstance(obj.get("inputs"), dict)
        and "outputs" in obj
        and ("metadata" in obj or "langsmith" in obj)
        and not any(key in obj for key in _RECORD_KEYS)
    )


def sniff(values: list[tuple[Any, int | None]]) -> bool:
    """Every value is a copied run, or a list holding one (its other items are then reported
    by `read`, located, rather than as an unknown format)."""
    if not values:
        return False
    for value, _ in values:
        if isinstance(value, list):
            if not any(looks_like_copy(item) for item in value):
                return False
        elif not looks_like_copy(value):
            return False
    return True


def content_id(item: dict[str, Any]) -> str:
    """A stable id for a copy: a hash of its content, independent of key order."""
    try:
        data = orjson.dumps(item, option=orjson.OPT_SORT_KEYS)
    except orjson.JSONEncodeError:  # integers beyond 64 bits, which orjson will not write
        data = json.dumps(item, sort_keys=True).encode()
    digest = hashlib.blake2b(data, digest_size=10)
    return f"copied-{digest.hexdigest()}"


def _object(
    item: dict[str, Any], key: str, where: str, source: str, line: int | None
) -> dict[str, Any]:
    """A field that must be a JSON object when present (null counts as empty)."""
    value = item.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TraceFormatError(
            f"{where}field {key!r}: expected a JSON object; got {type(value).__name__}",
            source=source,
            line=line,
        )
    return value


def _is_model_call(inputs: dict[str, Any], outputs: dict[str, Any]) -> bool:
    """An llm run's payload: batched LangChain input, or a generation / completion output."""
    raw = inputs.get("messages")
    if isinstance(raw, list) and raw and isinstance(raw[0], list):
        return True
    if outputs.get("generations") or outputs.get("choices"):
        return True
    return outputs.get("role") == "assistant" and isinstance(outputs.get("content"), list)


def _messages(
    holder: dict[str, Any], what: str, where: str, source: str, line: int | None, memo: Memo
) -> list[BaseMessage]:
    raw = holder.get("messages")
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise TraceFormatError(
            f"{where}field {what}.messages: expected a list of messages; got {type(raw).__name__}",
            source=source,
            line=line,
        )
    try:
        return decode_messages(raw, memo)
    except MessageDecodeError as exc:
        raise TraceFormatError(f"{where}{what}.messages: {exc}", source=source, line=line) from exc


def _output_state(outputs: dict[str, Any]) -> dict[str, Any]:
    """The messages a chain run returned: its state, or the `update` of the LangGraph
    `Command`(s) a node returned (`{"output": [{"update": {"messages": [...]}}]}`)."""
    if "messages" in outputs:
        return outputs
    output = outputs.get("output")
    commands = output if isinstance(output, list) else [output]
    messages: list[Any] = []
    for command in commands:
        update = command.get("update") if isinstance(command, dict) else None
        if isinstance(update, dict) and isinstance(update.get("messages"), list):
            messages.extend(update["messages"])
    return {"messages": messages} if messages else {}


def _conversation(inputs: list[BaseMessage], outputs: list[BaseMessage]) -> list[BaseMessage]:
    """The input state then the output's new messages (a full output state repeats the input).

    Only the output's first messages are compared with the input (by identity first: the
    file's memo decodes an unchanged message once), so a long repeated state is not hashed."""
    if not outputs:
        return list(inputs)
    head = outputs[: len(inputs)]
    if len(head) == len(inputs) and all(a is b for a, b in zip(inputs, head, strict=True)):
        return list(outputs)
    in_prints = [langsmith.fingerprint(m) for m in inputs]
    if len(head) == len(inputs) and [langsmith.fingerprint(m) for m in head] == in_prints:
        return list(outputs)
    seen_ids = {m.id for m in inputs if m.id}
    seen = set(in_prints)
    new = [
        m
        for m in outputs
        if not (m.id and m.id in seen_ids) and langsmith.fingerprint(m) not in seen
    ]
    return [*inputs, *new]


def _model_of(msg: AIMessage, metadata: dict[str, Any]) -> tuple[str | None, str | None]:
    response = msg.response_metadata or {}
    model = metadata.get("ls_model_name") or response.get("model_name") or response.get("model")
    provider = metadata.get("ls_provider") or response.get("model_provider")
    return (str(model) if model else None, str(provider) if provider else None)


def _chain_trace(
    trace_id: str,
    conversation: list[BaseMessage],
    metadata: dict[str, Any],
    name: str,
    source: str,
) -> Trace:
    history: list[BaseMessage] = []
    inserted: list[BaseMessage] = []
    turns: list[Turn] = []
    after_summary = False
    for msg in conversation:
        if langsmith.looks_like_summary(msg):
            inserted.append(msg)
            after_summary = True
            continue
        if isinstance(msg, AIMessage):
            usage: Mapping[str, Any] = msg.usage_metadata or {}
            details = usage.get("input_token_details") or {}
            model, provider = _model_of(msg, metadata)
            turns.append(
                Turn(
                    index=len(turns),
                    position=len(history),
                    inputs=Inputs.prefix(history, len(history)),
                    output=msg,
                    model=model,
                    provider=provider,
                    name=name or None,
                    input_tokens=usage.get("input_tokens") or None,
                    output_tokens=usage.get("output_tokens"),
                    cache_read_tokens=details.get("cache_read"),
                    cache_write_tokens=details.get("cache_creation"),
                    compacted=after_summary,
                )
            )
            after_summary = False
        history.append(msg)
    langsmith.check_pairs(history, source, trace_id)
    notes = [
        "The copied run is a chain run (graph state): the per-call model input is not "
        "recorded, so each model call is taken to have seen every message before it."
    ]
    stand_ins = sum(
        1 for m in history if isinstance(m, ToolMessage) and langsmith.is_replacement(m.content)
    )
    if stand_ins:
        notes.append(
            f"{stand_ins} tool results in the copied state are the harness's stand-ins for "
            "longer originals (offloaded or clipped); a copy has no tool runs to restore them."
        )
    if inserted:
        notes.append(
            "The copied state holds a summary a recorded compaction inserted; it is kept apart "
            "from the full history, and the messages it replaced are not in the copy."
        )
    trace = Trace(
        trace_id=trace_id,
        format=NAME,
        source=source,
        messages=history,
        turns=turns,
        model=next((t.model for t in turns if t.model), None),
        provider=next((t.provider for t in turns if t.provider), None),
        inserted=inserted,
        notes=notes,
    )
    if not (history and isinstance(history[0], SystemMessage)):
        trace.notes.append(
            "The copied state holds no system prompt (LangGraph state does not keep it): "
            "counted as zero tokens."
        )
    trace.notes.extend(langsmith.missing_notes(trace))
    return trace


def _trace(item: Any, where: str, source: str, line: int | None, memo: Memo) -> Trace:
    if not looks_like_copy(item):
        raise TraceFormatError(
            f"{where}expected a run copied from the LangSmith UI (an object with 'inputs' as "
            "an object, 'outputs', and 'metadata' or 'langsmith')",
            source=source,
            line=line,
        )
    trace_id = content_id(item)
    inputs = item["inputs"]
    outputs = _object(item, "outputs", where, source, line)
    extra = _object(item, "extra", where, source, line)
    metadata = {
        **_object(extra, "metadata", where + "extra.", source, line),
        **_object(item, "metadata", where, source, line),
    }
    name = item.get("name") if isinstance(item.get("name"), str) else ""
    if _is_model_call(inputs, outputs):
        record = {
            "id": trace_id,
            "trace_id": trace_id,
            "name": name,
            "run_type": "llm",
            "inputs": inputs,
            "outputs": outputs,
            "extra": {**extra, "metadata": metadata},
        }
        try:
            run = langsmith.normalise(record, source, line)
            trace = langsmith.build_trace(trace_id, [run], NAME)
        except TraceFormatError as exc:
            raise TraceFormatError(f"{where}{exc.reason}", source=source, line=line) from exc
        trace.notes[:0] = [CALL_NOTE]
    else:
        in_msgs = _messages(inputs, "inputs", where, source, line, memo)
        out_msgs = _messages(_output_state(outputs), "outputs", where, source, line, memo)
        if not in_msgs and not out_msgs:
            raise TraceFormatError(
                f"{where}no messages: expected inputs.messages or outputs.messages (a graph "
                "state), or a model call's inputs.messages with its generations",
                source=source,
                line=line,
            )
        try:
            trace = _chain_trace(trace_id, _conversation(in_msgs, out_msgs), metadata, name, source)
        except TraceFormatError as exc:
            raise TraceFormatError(f"{where}{exc.reason}", source=source, line=line) from exc
    trace.notes.insert(0, COPIED_NOTE)
    return trace


def read(values: list[tuple[Any, int | None]], source: str) -> list[Trace]:
    """One trace per copied run; an identical copy twice is one run, loaded once.

    One memo serves the whole file: a graph's output state repeats its input, and copies of
    one conversation's runs repeat each other, so each distinct message is decoded once."""
    traces: list[Trace] = []
    memo: Memo = {}
    seen: set[str] = set()
    for value, line in values:
        listed = isinstance(value, list)
        for index, item in enumerate(value if listed else [value]):
            trace = _trace(item, f"item {index}: " if listed else "", source, line, memo)
            if trace.trace_id not in seen:
                seen.add(trace.trace_id)
                traces.append(trace)
    return traces
