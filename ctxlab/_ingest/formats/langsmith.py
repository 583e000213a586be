"""LangSmith run exports, in every shape users have, to canonical `Trace`s.

A LangSmith trace is a tree of runs; the conversation is nowhere stored as one object. The
model calls (`run_type == "llm"`) each carry their full as-sent input, so the conversation is
rebuilt from them (shared/research/trace-formats.md §4.2):

1. records from any export shape are normalised to one run dict and merged by id (ingestion
   post/patch ops, webhook deliveries split over files, paged dumps all overlap);
2. model calls are split by scope: calls inside a `tool` run belong to a subagent spawned by
   that tool call, the others to the top-level agent;
3. inside a scope, calls are grouped into streams by their ancestor path (the agent loop's
   calls all sit under the same graph node and middleware chain; planners, judges and the
   harness's own summariser calls sit elsewhere); the stream holding the call with the
   longest input is the agent, the rest are harness calls;
4. the agent's calls are chained: a call whose input extends the previous input + output adds
   the new tail to the full history; one that does not is a recorded compaction point, and only
   messages never seen before (and not inserted summaries) are added.
"""

from __future__ import annotations

import ast
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.fields import FieldTypeError, obj, seq, text
from ctxlab._ingest.formats.messages import (
    Memo,
    MessageDecodeError,
    decode_message,
    decode_messages,
)
from ctxlab._ingest.inputs import Inputs, Recorder
from ctxlab._messages import first_orphan_result, is_summary
from ctxlab._trace import Trace, Turn

SUMMARY_PREFIXES = (
    "You are in the middle of a conversation that has been summarized.",
    "Here is a summary of the conversation to date:",
)

_RUN_KEYS = ("run_type", "dotted_order", "trace_id", "parent_run_id", "parent_run_ids")


def looks_like_run(obj: Any) -> bool:
    """Whether a JSON object is a LangSmith run record in any export shape."""
    if not isinstance(obj, dict):
        return False
    if "run_id" in obj and ("run_type" in obj or "trace_id" in obj):
        return True  # langsmith CLI flattened export
    return "id" in obj and (
        any(k in obj for k in _RUN_KEYS) or ("end_time" in obj and "outputs" in obj)
    )


@dataclass(slots=True)
class Run:
    """One normalised run record; later records for the same id fill or overwrite fields."""

    id: str
    trace_id: str | None = None
    parent_id: str | None = None
    name: str = ""
    run_type: str = ""
    dotted_order: str | None = None
    start_time: str | None = None
    inputs: dict[str, Any] | None = None
    outputs: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    line: int | None = None
    children: list[Run] = field(default_factory=list)

    @property
    def metadata(self) -> dict[str, Any]:
        return self.extra.get("metadata") or {}

    @property
    def sort_key(self) -> tuple[str, str]:
        return (self.dotted_order or "", _time_key(self.start_time))


def _time_key(value: Any) -> str:
    """A sortable UTC timestamp from any of the four time spellings seen in exports."""
    if not value:
        return ""
    text = str(value).replace(" ", "T")
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).strftime("%Y%m%dT%H%M%S%f")
    except ValueError:
        return text


def _dotted_id(segment: str) -> str | None:
    """The run id of one `<timestamp>Z<uuid>` segment of a dotted order."""
    if "Z" not in segment:
        return None
    return segment[segment.find("Z") + 1 :] or None


def id_from_dotted(dotted: Any) -> str | None:
    """The run id a dotted order ends in (its last `<timestamp>Z<uuid>` segment), or None."""
    if not isinstance(dotted, str) or not dotted:
        return None
    return _dotted_id(dotted.split(".")[-1])


def _parent_from_dotted(dotted: str | None) -> str | None:
    if not dotted or "." not in dotted:
        return None
    return _dotted_id(dotted.split(".")[-2])


_PROFILE_REPR = re.compile(r"\bprofile=(\{[^{}]*\})")


def serialized_profile(serialized: Any) -> dict[str, Any] | None:
    """The model profile a chat model run was configured with, from its `serialized` form.

    LangChain records a chat model either as a constructor (`kwargs.profile`) or, for models
    it cannot serialise, as a `repr` holding `profile={...}`. The profile's `max_input_tokens`
    is the window the recorded harness used (deepagents computes its fractions from it), so
    reproducing a recording needs it even when it differs from the public model data.
    """
    if not isinstance(serialized, dict):
        return None
    kwargs = serialized.get("kwargs")
    if isinstance(kwargs, dict) and isinstance(kwargs.get("profile"), dict):
        return kwargs["profile"]
    found = _PROFILE_REPR.search(str(serialized.get("repr") or ""))
    if found is None:
        return None
    try:
        value = ast.literal_eval(found.group(1))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def record_id(record: dict[str, Any], source: str, line: int | None) -> str:
    """A run record's id (`id`, or `run_id` in CLI exports) as a non-empty string."""
    rid = record.get("id") or record.get("run_id")
    if rid is None or rid == "" or rid == [] or rid == {}:
        raise TraceFormatError(
            "run record has no 'id' (or 'run_id'); expected a non-empty string",
            source=source,
            line=line,
        )
    if isinstance(rid, bool) or not isinstance(rid, str | int):
        raise TraceFormatError(
            f"field 'id': expected a string, got {type(rid).__name__}",
            source=source,
            line=line,
        )
    return str(rid)


def normalise(record: dict[str, Any], source: str, line: int | None) -> Run:
    """One run record from any shape (legacy, REST, v2, CLI, op) as a `Run`; a field of the
    wrong type raises `TraceFormatError` naming the run and the field."""
    rid = record_id(record, source, line)
    try:
        return _normalise(record, rid, source, line)
    except FieldTypeError as exc:
        raise TraceFormatError(str(exc), source=source, line=line, run_id=rid) from exc


def _normalise(record: dict[str, Any], rid: str, source: str, line: int | None) -> Run:
    parents = seq(record, "parent_run_ids")
    parent = text(record, "parent_run_id") or (
        text({"p": parents[-1]}, "p", "parent_run_ids") if parents else None
    )
    extra = dict(obj(record, "extra"))
    metadata = dict(obj(extra, "metadata", "extra.metadata"))
    for key in ("custom_metadata", "metadata"):  # CLI export, v2 API
        if isinstance(record.get(key), dict):
            metadata.update(record[key])
    if "tool_call_id" in record and "tool_call_id" not in extra:
        extra["tool_call_id"] = record["tool_call_id"]
    extra["metadata"] = metadata
    if record.get("inputs_s3_urls"):
        extra["inputs_s3_urls"] = record["inputs_s3_urls"]
    profile = serialized_profile(record.get("serialized"))
    if profile is not None:
        extra["model_profile"] = profile
    usage: dict[str, Any] = {}
    token_usage = obj(record, "token_usage")
    for key in ("prompt_tokens", "completion_tokens", "total_tokens"):
        value = record.get(key, token_usage.get(key))
        if value is not None:
            usage[key] = value
    details = obj(record, "prompt_token_details")
    if isinstance(details.get("raw"), dict):
        details = details["raw"]
    if details:
        usage["prompt_token_details"] = details
    dotted = text(record, "dotted_order")
    trace_id = text(record, "trace_id")
    start = record.get("start_time")
    error = record.get("error")
    return Run(
        id=rid,
        trace_id=trace_id or None,
        parent_id=parent or _parent_from_dotted(dotted),
        name=str(record.get("name") or ""),
        run_type=str(record.get("run_type") or "").lower(),
        dotted_order=dotted,
        start_time=str(start) if start else None,
        inputs=record.get("inputs") if isinstance(record.get("inputs"), dict) else None,
        outputs=record.get("outputs") if isinstance(record.get("outputs"), dict) else None,
        extra=extra,
        error=str(error) if error else None,
        usage=usage,
        source=source,
        line=line,
    )


def _merge(into: Run, new: Run) -> None:
    """Ingestion ops and overlapping deliveries: later non-empty fields win."""
    for name in ("trace_id", "parent_id", "dotted_order", "start_time", "error"):
        value = getattr(new, name)
        if value:
            setattr(into, name, value)
    for name in ("name", "run_type"):
        if getattr(new, name):
            setattr(into, name, getattr(new, name))
    if new.inputs:
        into.inputs = new.inputs
    if new.outputs:
        into.outputs = new.outputs
    if new.extra:
        metadata = {**into.metadata, **new.metadata}
        into.extra = {**into.extra, **new.extra, "metadata": metadata}
    into.usage.update(new.usage)


def flatten(records: Iterable[tuple[dict[str, Any], str, int | None]]) -> Iterator[Run]:
    """Runs from records, unnesting `child_runs` trees (`read_run(load_child_runs=True)`)."""
    stack = list(records)
    stack.reverse()
    while stack:
        record, source, line = stack.pop()
        run = normalise(record, source, line)
        children = record.get("child_runs") or []
        if not isinstance(children, list):
            raise TraceFormatError(
                f"field 'child_runs': expected a list of runs, got {type(children).__name__}",
                source=source,
                line=line,
                run_id=run.id,
            )
        for child in reversed(children):
            if isinstance(child, dict):
                child = dict(child)
                child.setdefault("parent_run_id", run.id)
                child.setdefault("trace_id", run.trace_id or run.id)
                stack.append((child, source, line))
        yield run


def merge_runs(pieces: Iterable[Run]) -> dict[str, Run]:
    """Every run once, by id, whatever order and however many pieces the records came in."""
    runs: dict[str, Run] = {}
    for run in pieces:
        if run.id in runs:
            _merge(runs[run.id], run)
        else:
            runs[run.id] = run
    return runs


def _root_of(run: Run, runs: dict[str, Run]) -> str:
    seen = {run.id}
    current = run
    while current.parent_id and current.parent_id in runs:
        current = runs[current.parent_id]
        if current.id in seen:
            raise TraceFormatError(
                "parent-id cycle: following parent_run_id comes back to this run",
                source=run.source,
                run_id=current.id,
            )
        seen.add(current.id)
    return current.id


def _top_of(run: Run, runs: dict[str, Run]) -> str:
    """The root a run descends from; when the export left the root out, the dotted order's
    first segment still names it, so its children stay one trace."""
    top = runs[_root_of(run, runs)]
    if top.parent_id and top.dotted_order:
        return _dotted_id(top.dotted_order.split(".", 1)[0]) or top.id
    return top.id


def group_traces(
    runs: dict[str, Run], errors: list[TraceFormatError] | None = None
) -> dict[str, list[Run]]:
    """Runs by trace: `trace_id` when exports carry it, else the root reached via parents
    (parent ids or dotted orders).

    A run caught in a parent-id cycle has no root; with `errors` given it is reported there
    (once per cycle) and left out, so the cycle costs only the runs in it, not other traces.
    """
    groups: dict[str, list[Run]] = defaultdict(list)
    for run in runs.values():
        try:
            top = _top_of(run, runs)
        except TraceFormatError as exc:
            if errors is None:
                raise
            if not any(e.source == exc.source and e.reason == exc.reason for e in errors):
                errors.append(exc)
            continue
        groups[run.trace_id or top].append(run)
    for members in groups.values():
        members.sort(key=lambda r: r.sort_key)
    return dict(groups)


# ----------------------------------------------------------------------------- model calls


def _decode(raw: Any, run: Run, what: str, memo: Memo | None = None) -> list[BaseMessage]:
    try:
        return decode_messages(raw, memo)
    except MessageDecodeError as exc:
        raise TraceFormatError(
            f"{what}: {exc}", source=run.source, line=run.line, run_id=run.id
        ) from exc


def _raw_inputs(inputs: dict[str, Any]) -> Any:
    """The messages value of a model call's inputs, in any input shape; None without one."""
    raw = inputs.get("messages")
    if raw is None and isinstance(inputs.get("input"), list):
        raw = inputs["input"]  # OpenAI Responses
    if raw is None and isinstance(inputs.get("prompts"), list):
        raw = [str(p) for p in inputs["prompts"][:1]]
    return raw


def call_inputs(run: Run, memo: Memo | None = None) -> list[BaseMessage]:
    """The as-sent messages of a model call, from any input shape."""
    inputs = run.inputs or {}
    raw = _raw_inputs(inputs)
    if raw is None:
        hint = ""
        if run.extra.get("inputs_s3_urls"):
            hint = (
                " (LangSmith offloaded this run's inputs to S3: export it hydrated, e.g. read_run)"
            )
        elif not inputs:
            hint = " (exported without inputs? `langsmith` CLI exports need --include-io or --full)"
        raise TraceFormatError(
            f"model call has no input messages: expected inputs.messages{hint}",
            source=run.source,
            line=run.line,
            run_id=run.id,
        )
    if isinstance(raw, list) and raw and isinstance(raw[0], list):
        raw = raw[0]  # LangChain batches: [[...]]
    messages = _decode(raw, run, "input messages", memo)
    system = inputs.get("system")
    if system and not (messages and isinstance(messages[0], SystemMessage)):
        content = system if isinstance(system, str | list) else str(system)
        messages.insert(0, SystemMessage(content=content))
    return messages


def check_piece(run: Run) -> None:
    """Raise `TraceFormatError` if what this piece of a run carries cannot be read: a model
    call's input messages and output, when present. A piece may lack either (a delivery, then
    its patch); the merge fills them in. Run on pieces found in several files, before they
    merge, so a bad copy is blamed on its own file."""
    if run.run_type != "llm":
        return
    if run.inputs and _raw_inputs(run.inputs) is not None:
        call_inputs(run)
    if run.outputs:
        call_output(run)


def _generation_message(gen: Any) -> Any:
    if isinstance(gen, list):
        gen = gen[0] if gen else None
    if not isinstance(gen, dict):
        return None
    if gen.get("message") is not None:
        return gen["message"]
    return {"type": "ai", "content": gen.get("text") or ""}


def call_output(run: Run, memo: Memo | None = None) -> AIMessage | None:
    """The AIMessage a model call produced, or None for errored / unfinished calls."""
    out = run.outputs or {}
    raw: Any = None
    try:
        generations = seq(out, "generations", "outputs.generations")
        choices = seq(out, "choices", "outputs.choices")
        choice = obj({"c": choices[0]}, "c", "outputs.choices[0]") if choices else {}
        message = obj(choice, "message", "outputs.choices[0].message")
    except FieldTypeError as exc:
        raise TraceFormatError(str(exc), source=run.source, line=run.line, run_id=run.id) from exc
    if generations:
        raw = _generation_message(generations[0])
    elif choices:
        raw = dict(message)
        raw.setdefault("role", "assistant")
        if out.get("id"):
            raw.setdefault("id", out["id"])
    elif isinstance(out.get("content"), list) and out.get("role") == "assistant":
        raw = out  # Anthropic Message
    elif isinstance(out.get("messages"), list) and out["messages"]:
        raw = out["messages"][-1]
    elif isinstance(out.get("output"), str | dict):
        raw = (
            out["output"]
            if isinstance(out["output"], dict)
            else {"type": "ai", "content": out["output"]}
        )
    if raw is None:
        return None
    msgs = _decode([raw], run, "output message", memo)
    msg = msgs[-1] if msgs else None
    if msg is not None and not isinstance(msg, AIMessage):
        msg = AIMessage(content=msg.content, id=msg.id)
    return msg


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


@dataclass(frozen=True, slots=True)
class Usage:
    """Recorded token usage of one call; input counts include cached prompt tokens."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None


def call_usage(run: Run, output: AIMessage | None) -> Usage:
    """Usage from wherever this export kept it, most specific source first.

    Zero input tokens means "not reported" (custom wrappers report 0), not an empty prompt.
    """
    out = run.outputs or {}
    candidates: list[dict[str, Any]] = []
    if output is not None and output.usage_metadata:
        candidates.append(dict(output.usage_metadata))
    for holder in (run.metadata, out):
        if isinstance(holder.get("usage_metadata"), dict):
            candidates.append(holder["usage_metadata"])
    for um in candidates:
        inp = _int(um.get("input_tokens"))
        if inp:
            details = obj(um, "input_token_details", "usage_metadata.input_token_details")
            return Usage(
                inp,
                _int(um.get("output_tokens")),
                _int(details.get("cache_read")),
                _int(details.get("cache_creation")),
            )
    llm_output = obj(out, "llm_output", "outputs.llm_output")
    raw = out.get("usage") or llm_output.get("token_usage") or llm_output.get("usage")
    if isinstance(raw, dict):
        if "prompt_tokens" in raw:  # OpenAI
            cached = obj(raw, "prompt_tokens_details").get("cached_tokens")
            if _int(raw.get("prompt_tokens")):
                return Usage(
                    _int(raw["prompt_tokens"]), _int(raw.get("completion_tokens")), _int(cached)
                )
        elif "input_tokens" in raw:  # Anthropic: input_tokens excludes the cache
            read = _int(raw.get("cache_read_input_tokens")) or 0
            write = _int(raw.get("cache_creation_input_tokens")) or 0
            base = _int(raw.get("input_tokens")) or 0
            if base + read + write:
                return Usage(base + read + write, _int(raw.get("output_tokens")), read, write)
    prompt = _int(run.usage.get("prompt_tokens"))
    if prompt:
        details = obj(run.usage, "prompt_token_details")
        return Usage(
            prompt, _int(run.usage.get("completion_tokens")), _int(details.get("cache_read"))
        )
    return Usage()


def call_model(run: Run, output: AIMessage | None) -> tuple[str | None, str | None]:
    """(model name, provider) as recorded."""
    md = run.metadata
    params = obj(run.extra, "invocation_params", "extra.invocation_params")
    inputs = run.inputs or {}
    outputs = run.outputs or {}
    response = output.response_metadata if output is not None else {}
    model = (
        md.get("ls_model_name")
        or params.get("model")
        or params.get("model_name")
        or response.get("model_name")
        or response.get("model")
        or outputs.get("model")
        or inputs.get("model")
    )
    provider = md.get("ls_provider") or response.get("model_provider")
    if not provider and params.get("_type"):
        provider = str(params["_type"]).split("-")[0]
    return (str(model) if model else None, str(provider) if provider else None)


def call_tools(run: Run) -> list[dict[str, Any]]:
    params = obj(run.extra, "invocation_params", "extra.invocation_params")
    inputs = run.inputs or {}
    for holder in (params, inputs):
        for key in ("tools", "functions"):
            if isinstance(holder.get(key), list) and holder[key]:
                return list(holder[key])
    return []


def call_max_tokens(run: Run) -> int | None:
    params = obj(run.extra, "invocation_params", "extra.invocation_params")
    inputs = run.inputs or {}
    for holder in (params, inputs):
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            value = _int(holder.get(key))
            if value:
                return value
    return _int(run.metadata.get("ls_max_tokens"))


# ----------------------------------------------------------------------------- conversation


def fingerprint(msg: BaseMessage) -> str:
    """Identity of a message's model-visible payload (not its metadata or cache markers)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(msg.type.encode())
    content = msg.content
    if isinstance(content, str):
        h.update(content.encode("utf-8", "surrogatepass"))
    else:
        for block in content:
            if isinstance(block, dict):
                block = {k: v for k, v in block.items() if k != "cache_control"}
            h.update(repr(block).encode("utf-8", "surrogatepass"))
    if isinstance(msg, AIMessage):
        for call in msg.tool_calls:
            h.update(
                repr((call["name"], call["args"], call.get("id"))).encode("utf-8", "surrogatepass")
            )
    if isinstance(msg, ToolMessage):
        h.update(msg.tool_call_id.encode())
    return h.hexdigest()


def looks_like_summary(msg: BaseMessage) -> bool:
    """A message a recorded compaction inserted: marked as a summary (`is_summary`), or, for
    exports that lost the marker, a human message opening with an upstream summary prefix."""
    if is_summary(msg):
        return True
    return isinstance(msg, HumanMessage) and msg.text.startswith(SUMMARY_PREFIXES)


@dataclass(slots=True)
class ModelCall:
    """One recorded LLM run with its decoded input messages and output."""

    run: Run
    inputs: list[BaseMessage]
    output: AIMessage | None


def _stream_key(run: Run, runs: dict[str, Run]) -> tuple[str, ...]:
    path: list[str] = [run.name]
    current = run
    while current.parent_id and current.parent_id in runs:
        current = runs[current.parent_id]
        path.append(current.name)
    agent = run.metadata.get("lc_agent_name") or ""
    return (str(agent), *reversed(path))


def _chain(calls: list[ModelCall]) -> tuple[list[BaseMessage], list[Turn], list[BaseMessage]]:
    """Full history, turns and inserted messages from an agent's calls in order."""
    history: list[BaseMessage] = []
    seen_ids: set[str] = set()
    seen_prints: set[str] = set()
    inserted: list[BaseMessage] = []
    turns: list[Turn] = []
    prev_sent: list[str] | None = None
    prints_by_object: dict[int, str] = {}  # decoded messages are shared between calls
    recorder = Recorder()

    def fp(msg: BaseMessage) -> str:
        key = id(msg)
        if key not in prints_by_object:
            prints_by_object[key] = fingerprint(msg)
        return prints_by_object[key]

    def add(msg: BaseMessage) -> None:
        history.append(msg)
        if msg.id:
            seen_ids.add(msg.id)
        seen_prints.add(fp(msg))

    for call in calls:
        lead = 0
        while lead < len(call.inputs) and isinstance(call.inputs[lead], SystemMessage):
            lead += 1
        body = call.inputs[lead:]
        prints = [fp(m) for m in body]
        if prev_sent is None:
            for msg in call.inputs:
                add(msg)
            compacted = False
        elif prints[: len(prev_sent)] == prev_sent:
            for msg in body[len(prev_sent) :]:
                (inserted.append if looks_like_summary(msg) else add)(msg)
            compacted = False
        else:
            for msg, printed in zip(body, prints, strict=True):
                if (msg.id and msg.id in seen_ids) or printed in seen_prints:
                    continue
                (inserted.append if looks_like_summary(msg) else add)(msg)
            compacted = True
        position = len(history)
        if call.output is not None:
            add(call.output)
        turns.append(_turn(call, len(turns), position, compacted, recorder))
        prev_sent = prints + ([fp(call.output)] if call.output is not None else [])
    return history, turns, inserted


@contextmanager
def _fields_of(run: Run) -> Iterator[None]:
    """Report a wrong-typed field read inside the block as an error naming `run`."""
    try:
        yield
    except FieldTypeError as exc:
        raise TraceFormatError(str(exc), source=run.source, line=run.line, run_id=run.id) from exc


def _turn(
    call: ModelCall,
    index: int,
    position: int,
    compacted: bool = False,
    recorder: Recorder | None = None,
) -> Turn:
    """A recorded call as a `Turn`; harness calls have no place in the history (position -1).
    The agent's calls pass a `recorder`, so each call's inputs share the previous call's."""
    with _fields_of(call.run):
        usage = call_usage(call.run, call.output)
        model, provider = call_model(call.run, call.output)
        max_tokens = call_max_tokens(call.run)
    return Turn(
        index=index,
        position=position,
        inputs=Inputs.of(call.inputs) if recorder is None else recorder.snapshot(call.inputs),
        output=call.output,
        model=model,
        provider=provider,
        run_id=call.run.id,
        name=call.run.name,
        input_tokens=usage.input_tokens,
        output_tokens=usage.output_tokens,
        cache_read_tokens=usage.cache_read,
        cache_write_tokens=usage.cache_write,
        max_output_tokens=max_tokens,
        compacted=compacted,
        started_at=call.run.start_time,
    )


_CALL_ID_IN_REPR = re.compile(r"tool_call_id='([^']+)'")


def tool_call_id_of(run: Run) -> str | None:
    """The id of the tool call a tool run executed, from wherever the export kept it."""
    if run.extra.get("tool_call_id"):
        return str(run.extra["tool_call_id"])
    out = (run.outputs or {}).get("output")
    if isinstance(out, dict):
        kwargs = out["kwargs"] if isinstance(out.get("kwargs"), dict) else out
        if kwargs.get("tool_call_id"):
            return str(kwargs["tool_call_id"])
        found = _CALL_ID_IN_REPR.search(str(out.get("repr") or ""))
        if found:
            return found.group(1)
    return None


def _tool_output_text(run: Run) -> str | list[Any] | None:
    """What the tool itself returned, before any middleware replaced it with a stub."""
    out = (run.outputs or {}).get("output")
    if isinstance(out, str):
        return None if out.startswith("content=") else out
    if isinstance(out, dict) and (isinstance(out.get("kwargs"), dict) or "content" in out):
        try:
            msgs = decode_message(out)
        except (MessageDecodeError, TypeError, ValueError):
            return None
        if len(msgs) == 1 and isinstance(msgs[0], ToolMessage):
            return msgs[0].content
    return None


REPLACEMENT_MARKERS = (
    "Tool result too large",
    "[Output was truncated due to context window size limits",
)


def is_replacement(content: str | list[Any]) -> bool:
    """Whether an as-sent tool result is a harness's stand-in for a longer original."""
    text = content if isinstance(content, str) else str(content)
    return text.startswith(REPLACEMENT_MARKERS[0]) or REPLACEMENT_MARKERS[1] in text


def _restore_tool_results(history: list[BaseMessage], tool_runs: list[Run]) -> int:
    """Put back tool results the recorded harness replaced (offload stubs, overflow clips).

    Tool runs execute inside the harness's tool wrapper, so their output is what the tool
    returned; the state (and every later model input) holds the harness's replacement. Only
    recognised replacements are restored, so a tool run that logged a repr is never mistaken
    for the result.
    """
    by_call: dict[str, str | list[Any]] = {}
    for run in tool_runs:
        call_id = tool_call_id_of(run)
        text = _tool_output_text(run)
        if call_id and text is not None:
            by_call[call_id] = text
    restored = 0
    for i, msg in enumerate(history):
        if isinstance(msg, ToolMessage) and msg.tool_call_id in by_call:
            original = by_call[msg.tool_call_id]
            if original != msg.content and is_replacement(msg.content):
                history[i] = msg.model_copy(update={"content": original})
                restored += 1
    return restored


def check_pairs(history: list[BaseMessage], source: str, run_id: str | None) -> None:
    orphan = first_orphan_result(history)
    if orphan is not None:
        raise TraceFormatError(
            f"tool result for call {orphan[1].tool_call_id!r} has no matching tool call "
            "in an earlier AI message",
            source=source,
            run_id=run_id,
        )


def root_run_id(run: Run, runs: dict[str, Run], scope: str | None) -> str:
    """The run a scope's calls descend from: the trace's root run for the top level, the
    outermost run inside the spawning tool run for a subagent.

    When the export left the root run out, the first segment of a dotted order still names
    it, and so does `trace_id` (the root's id, by LangSmith's definition).
    """
    current = run
    while current.parent_id and current.parent_id in runs and current.parent_id != scope:
        current = runs[current.parent_id]
    if scope is not None or current.parent_id is None:
        return current.id
    if current.dotted_order:
        first = _dotted_id(current.dotted_order.split(".", 1)[0])
        if first:
            return first
    return current.trace_id or current.id


def _scope_of(run: Run, runs: dict[str, Run]) -> str | None:
    """Id of the nearest enclosing tool run (a subagent's spawn), or None for the top level."""
    current = run
    while current.parent_id and current.parent_id in runs:
        current = runs[current.parent_id]
        if current.run_type == "tool":
            return current.id
    return None


def missing_notes(trace: Trace) -> list[str]:
    """One sentence for each thing a trace's runs do not carry (`Trace.notes`).

    A model call's recorded input is exact, so a missing system prompt there means the agent
    had none; only a copied graph state can lack one the model was sent."""
    notes = []
    if not trace.tools:
        notes.append("No tool schemas are recorded: counted as zero tokens.")
    if not any(t.input_tokens for t in trace.turns):
        notes.append("No recorded token usage: input tokens are counted, not read.")
    if trace.model is None:
        notes.append(
            "No model name is recorded (metadata.ls_model_name or the output's response_metadata)."
        )
    return notes


def recorded_model_settings(calls: list[ModelCall]) -> dict[str, Any]:
    """What the agent's chat model recorded of its own configuration: `llm_type` (LangChain's
    `_type` in the invocation parameters, which decides its approximate counter: 3.3 characters
    per token for `anthropic-chat` only) and `model_profile` (see `serialized_profile`)."""
    out: dict[str, Any] = {}
    for call in calls:
        params = call.run.extra.get("invocation_params")
        llm_type = params.get("_type") if isinstance(params, dict) else None
        if isinstance(llm_type, str) and "llm_type" not in out:
            out["llm_type"] = llm_type
        profile = call.run.extra.get("model_profile")
        if isinstance(profile, dict) and "model_profile" not in out:
            out["model_profile"] = profile
        if len(out) == 2:
            break
    return out


def build_trace(
    trace_id: str,
    members: list[Run],
    fmt: str,
    *,
    scope: str | None = None,
    parent: str | None = None,
    parent_call: str | None = None,
) -> Trace:
    """The trace of one scope (top level, or one tool run's subagent) of a run tree."""
    runs = {r.id: r for r in members}
    source = members[0].source if members else ""
    llm_runs = [r for r in members if r.run_type == "llm" and _scope_of(r, runs) == scope]
    if not llm_runs:
        raise TraceFormatError(
            "trace has no model calls (expected runs with run_type 'llm' carrying inputs)",
            source=source,
            run_id=trace_id,
        )
    streams: dict[tuple[str, ...], list[ModelCall]] = defaultdict(list)
    longest: tuple[int, tuple[str, ...]] | None = None
    memo: Memo = {}
    for run in llm_runs:
        call = ModelCall(run, call_inputs(run, memo), call_output(run, memo))
        key = _stream_key(run, runs)
        if run.metadata.get("lc_source") == "summarization":
            key = ("<summarization>", *key)
        streams[key].append(call)
        size = len(call.inputs)
        if key[0] != "<summarization>" and (longest is None or size >= longest[0]):
            longest = (size, key)
    main_key = longest[1] if longest else next(iter(streams))
    main = streams[main_key]
    history, turns, inserted = _chain(main)
    tool_runs = [r for r in members if r.run_type == "tool" and _scope_of(r, runs) == scope]
    restored = _restore_tool_results(history, tool_runs)
    check_pairs(history, source, trace_id)
    harness = [c for k, calls in streams.items() if k != main_key for c in calls]
    harness.sort(key=lambda c: c.run.sort_key)
    model = next((t.model for t in turns if t.model), None)
    provider = next((t.provider for t in turns if t.provider), None)
    tools: list[dict[str, Any]] = []
    for call in main:
        with _fields_of(call.run):
            tools = call_tools(call.run)
        if tools:
            break
    trace = Trace(
        trace_id=trace_id,
        format=fmt,
        source=source,
        messages=history,
        turns=turns,
        tools=tools,
        model=model,
        provider=provider,
        parent_trace_id=parent,
        parent_tool_call_id=parent_call,
        harness_calls=[_turn(call, i, -1) for i, call in enumerate(harness)],
        inserted=inserted,
        metadata={
            "restored_tool_results": restored,
            "root_run_id": root_run_id(main[0].run, runs, scope),
            **recorded_model_settings(main),
        },
    )
    trace.notes.extend(missing_notes(trace))
    spawned = [
        r
        for r in members
        if r.run_type == "tool"
        and _scope_of(r, runs) == scope
        and any(_scope_of(x, runs) == r.id for x in members if x.run_type == "llm")
    ]
    for tool_run in spawned:
        call_id = tool_call_id_of(tool_run)
        sub_id = f"{trace_id}/{call_id or tool_run.id}"
        trace.subagents.append(
            build_trace(
                sub_id, members, fmt, scope=tool_run.id, parent=trace_id, parent_call=call_id
            )
        )
    return trace


def detect_shape(records: list[dict[str, Any]]) -> str:
    """Which LangSmith export shape these records are, for the `format` users see."""
    first = records[0] if records else {}
    if "run_id" in first:
        return "langsmith-cli"
    if "project_id" in first or str(first.get("run_type", "")).isupper():
        return "langsmith-v2"
    ids = [str(r.get("id")) for r in records]
    if len(ids) != len(set(ids)) or any(r.get("op") for r in records):
        return "langsmith-ops"
    if any(r.get("child_runs") for r in records):
        return "langsmith-run-tree"
    return "langsmith-runs"


def traces_from_records(
    records: list[tuple[dict[str, Any], str, int | None]], shapes: dict[str, str]
) -> tuple[list[Trace], list[TraceFormatError]]:
    """Traces from run records (possibly from several files); bad traces are reported apart.

    `shapes` names the export shape of each source file, for the trace's `format`.
    """
    return traces_from_runs(list(flatten(records)), shapes)


def traces_from_runs(
    pieces: list[Run], shapes: dict[str, str]
) -> tuple[list[Trace], list[TraceFormatError]]:
    """Traces from normalised runs (pieces of one run may come from several files); a trace
    that fails, or a parent-id cycle, is reported apart and costs no other trace."""
    runs = merge_runs(pieces)
    traces: list[Trace] = []
    errors: list[TraceFormatError] = []
    groups = group_traces(runs, errors)
    for trace_id, members in groups.items():
        try:
            fmt = shapes.get(members[0].source, "langsmith-runs")
            traces.append(build_trace(trace_id, members, fmt))
        except TraceFormatError as exc:
            errors.append(exc)
        except RecursionError:
            errors.append(
                TraceFormatError(
                    "values nested too deeply to read (expected the nesting of a trace export)",
                    source=members[0].source,
                    run_id=trace_id,
                )
            )
    return traces, errors
