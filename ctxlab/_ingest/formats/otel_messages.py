"""What one model-call span says: its input messages, output, usage, model and tools.

Every generation of the conventions still in use is read, newest first:

* OTel GenAI 1.37+: `gen_ai.input.messages` / `gen_ai.output.messages` (JSON, messages of
  `parts`: text, tool_call, tool_call_response, reasoning, ...), `gen_ai.system_instructions`,
  `gen_ai.tool.definitions`, `gen_ai.provider.name`;
* OTel GenAI up to 1.36: per-message span events (`gen_ai.system.message`, `gen_ai.user.message`,
  `gen_ai.assistant.message`, `gen_ai.tool.message`, `gen_ai.choice`), the body in the event's
  attributes or in `gen_ai.event.content`; and `gen_ai.content.prompt` / `.completion` events;
* the indexed attributes of OpenLLMetry / Traceloop (`gen_ai.prompt.N.role|content|tool_call_id`,
  `gen_ai.completion.N.*`, `...tool_calls.M.id|name|arguments`, `llm.request.functions.N.*`)
  and the JSON `gen_ai.prompt` / `gen_ai.completion` pair;
* OpenInference (`llm.input_messages.N.message.role|content|contents.M.message_content.*|
  tool_calls.M.tool_call.*|tool_call_id`, `llm.output_messages`, `llm.token_count.*`, `llm.tools`);
* the Vercel AI SDK (`ai.prompt.messages`, `ai.response.text|toolCalls|reasoning|object`,
  `ai.usage.*`, `ai.prompt.tools`, `ai.model.id`).

Messages become real `langchain_core` messages; a raw message seen in many spans (every call
repeats the history) is decoded once through a memo keyed by its JSON bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)

from ctxlab._ingest.formats.messages import MessageDecodeError, decode_messages, parse_arguments
from ctxlab._ingest.formats.otel_spans import Event, Span, SpanError

LLM_OPERATIONS = frozenset(
    {"chat", "text_completion", "generate_content", "completion", "call_llm"}
)
"""`gen_ai.operation.name` of a model call (`call_llm`: any-agent, `otel_any_agent`)."""
"""`gen_ai.operation.name` values of a model call (not embeddings, tools or agents)."""

EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
}

INPUT_TOKENS = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.prompt_tokens",
    "llm.token_count.prompt",
    "ai.usage.inputTokens",
    "ai.usage.promptTokens",
)
OUTPUT_TOKENS = (
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.completion_tokens",
    "llm.token_count.completion",
    "ai.usage.outputTokens",
    "ai.usage.completionTokens",
)
CACHE_READ_TOKENS = (
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.usage.cache_read_input_tokens",
    "llm.token_count.prompt_details.cache_read",
    "ai.usage.inputTokenDetails.cacheReadTokens",
    "ai.usage.cachedInputTokens",
)
CACHE_WRITE_TOKENS = (
    "gen_ai.usage.cache_creation.input_tokens",
    "gen_ai.usage.cache_creation_input_tokens",
    "llm.token_count.prompt_details.cache_write",
    "ai.usage.inputTokenDetails.cacheWriteTokens",
)
MODEL_KEYS = (
    "gen_ai.response.model",
    "llm.model_name",
    "ai.response.model",
    "gen_ai.request.model",
    "ai.model.id",
)
PROVIDER_KEYS = (
    "gen_ai.provider.name",
    "gen_ai.system",
    "llm.provider",
    "llm.system",
    "ai.model.provider",
)

INDEXED_FAMILIES = (
    "gen_ai.prompt",
    "gen_ai.completion",
    "llm.input_messages",
    "llm.output_messages",
    "llm.tools",
    "llm.request.functions",
)
INPUT_FAMILIES = ("gen_ai.prompt", "llm.input_messages")
_FAMILY_KEY = re.compile(
    "^(" + "|".join(re.escape(f) for f in INDEXED_FAMILIES) + r")\.(\d+)\.(.+)$", re.DOTALL
)


@dataclass(slots=True)
class Memo:
    """Decoding shared by the spans of one file, because every call repeats the history.

    `messages` maps a raw message's JSON bytes to its decoded messages, so each distinct
    message becomes LangChain objects once. `last` keeps, per message-list attribute, the
    previous span's text, decoded messages and item count: a list that extends it is parsed
    only past the shared prefix, which keeps loading linear in the file's new content.
    Indexed attributes get the same treatment: `inputs` holds the previous span's input-message
    attributes and their grouping, so a span that repeats them (checked at C speed, as a
    subset of its attribute items) only groups its new keys, and `by_object` maps a raw
    message object (kept alive with it) to what was built from it. `missing_ids` holds the
    decoded messages with a tool call or result lacking its id, so the common case is checked
    with one set operation per call.
    """

    messages: dict[bytes, list[BaseMessage]] = field(default_factory=dict)
    last: dict[str, tuple[str, list[BaseMessage], int]] = field(default_factory=dict)
    by_object: dict[int, tuple[Any, Any]] = field(default_factory=dict)
    inputs: tuple[dict[str, Any], dict[str, dict[int, dict[str, Any]]]] | None = None
    missing_ids: set[int] = field(default_factory=set)


@dataclass(slots=True)
class Call:
    """One model-call span, read: `inputs` is None when the span recorded no input messages."""

    span: Span
    inputs: list[BaseMessage] | None
    output: AIMessage | None
    convention: str
    model: str | None = None
    provider: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    max_output_tokens: int | None = None
    tools: list[dict[str, Any]] = field(default_factory=list)


class _Reader:
    """Typed access to one span's attributes; every failure names the span and attribute."""

    def __init__(self, span: Span, memo: Memo) -> None:
        self.span = span
        self.attrs = span.attributes
        self.memo = memo
        self._families: dict[str, list[dict[str, Any]]] | None = None

    def indexed(self, family: str) -> list[dict[str, Any]]:
        """The `family.N.field` attributes as `{field: value}` dicts in index order; one
        pass over the span's new attributes serves every family (a span can hold thousands,
        most repeated from the previous span, see `Memo.inputs`)."""
        if self._families is None:
            self._families = self._group()
        return self._families[family]

    def _group(self) -> dict[str, list[dict[str, Any]]]:
        groups: dict[str, dict[int, dict[str, Any]]] = {f: {} for f in INDEXED_FAMILIES}
        previous = self.memo.inputs
        before: dict[str, dict[int, dict[str, Any]]] = {}
        if previous is not None and previous[0].items() <= self.attrs.items():
            flat, before = dict(previous[0]), previous[1]
            groups.update((name, dict(grouped)) for name, grouped in before.items())
            keys: Any = self.attrs.keys() - flat.keys()
        else:
            flat, keys = {}, self.attrs.keys()
        for key in keys:
            found = _FAMILY_KEY.match(key)
            if found is None:
                continue
            name, digits, rest = found.groups()
            index, value = int(digits), self.attrs[key]
            fields = groups[name].get(index)
            if fields is None:
                groups[name][index] = {rest: value}
            else:
                if fields is before.get(name, {}).get(index):  # the previous span keeps its own
                    fields = groups[name][index] = dict(fields)
                fields[rest] = value
            if name in INPUT_FAMILIES:
                flat[key] = value
        self.memo.inputs = (flat, {f: groups[f] for f in INPUT_FAMILIES})
        return {f: [g[i] for i in sorted(g)] for f, g in groups.items()}

    def fail(self, key: str, what: str) -> SpanError:
        return SpanError(f"{self.span.where}, attribute {key!r}: {what}")

    def text(self, key: str) -> str | None:
        value = self.attrs.get(key)
        if value is None or isinstance(value, str):
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        raise self.fail(key, f"expected a string, got {_kind(value)}")

    def first_text(self, keys: tuple[str, ...]) -> str | None:
        for key in keys:
            value = self.text(key)
            if value:
                return value
        return None

    def count(self, keys: tuple[str, ...]) -> int | None:
        for key in keys:
            value = self.attrs.get(key)
            if value is None:
                continue
            if isinstance(value, int) and not isinstance(value, bool):
                return value
            if isinstance(value, float) and value.is_integer():
                return int(value)
            if isinstance(value, str) and value.strip().isdigit():
                return int(value)
            raise self.fail(key, f"expected a token count (integer), got {_kind(value)}")
        return None

    def document(self, key: str, expected: str) -> Any:
        """A JSON-valued attribute, parsed (exports may already hold it parsed)."""
        value = self.attrs.get(key)
        return self.parse(key, value, expected) if isinstance(value, str) else value

    def parse(self, key: str, text: str, expected: str) -> Any:
        """JSON text an attribute holds, or a located error saying what it should have been."""
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError as exc:
            raise self.fail(key, f"invalid JSON ({exc}); expected {expected}") from None

    def decode(self, raw: list[Any], key: str) -> list[BaseMessage]:
        """Role dicts (OpenAI / Anthropic / LangChain shapes) or parts messages, each once."""
        return self._items(raw, key, 0, _any_message)

    def cached(self, raw: Any, build: Any, key: str, index: int) -> list[BaseMessage]:
        seen = self.memo.by_object.get(id(raw))
        if seen is not None and seen[0] is raw:
            return seen[1]
        memo_key = orjson.dumps(raw, option=orjson.OPT_SORT_KEYS)
        hit = self.memo.messages.get(memo_key)
        if hit is None:
            try:
                hit = build(raw)
            except (MessageDecodeError, TypeError, ValueError) as exc:
                raise self.fail(f"{key} message {index}", str(exc)) from None
            self.memo.messages[memo_key] = hit
            self.memo.missing_ids.update(id(m) for m in hit if lacks_ids(m))
        self.memo.by_object[id(raw)] = (raw, hit)
        return hit

    def message_list(self, key: str, build: Any) -> list[BaseMessage] | None:
        """A message-list attribute (a JSON array), each item decoded by `build`; a list
        extending the one the previous span held is parsed only past the shared prefix."""
        value = self.attrs.get(key)
        if value is None:
            return None
        if not isinstance(value, str):
            if not isinstance(value, list):
                raise self.fail(key, f"expected a JSON array of messages, got {_kind(value)}")
            return self._items(value, key, 0, build)
        text = value.rstrip()
        last = self.memo.last.get(key)
        if last is not None and text == last[0]:
            return list(last[1])
        size = len(last[0]) if last is not None else 0
        if (
            last is not None
            and len(text) > size
            and text[size - 1] == ","
            and text.startswith(last[0][:-1])
        ):
            tail = self.parse(key, "[" + text[size:], "a JSON array of messages")
            messages = [*last[1], *self._items(tail, key, last[2], build)]
            count = last[2] + len(tail)
        else:
            doc = self.parse(key, text, "a JSON array of messages")
            if not isinstance(doc, list):
                raise self.fail(key, f"expected a JSON array of messages, got {_kind(doc)}")
            messages, count = self._items(doc, key, 0, build), len(doc)
        self.memo.last[key] = (text, messages, count)
        return list(messages)

    def _items(self, doc: list[Any], key: str, offset: int, build: Any) -> list[BaseMessage]:
        out: list[BaseMessage] = []
        for index, item in enumerate(doc, start=offset):
            out.extend(self.cached(item, build, key, index))
        return out


def lacks_ids(message: BaseMessage) -> bool:
    """Whether a tool call or tool result was recorded without its id (Gemini records none)."""
    if isinstance(message, AIMessage):
        return any(not call.get("id") for call in message.tool_calls)
    return isinstance(message, ToolMessage) and not message.tool_call_id


def _kind(value: Any) -> str:
    return "null" if value is None else f"a JSON {type(value).__name__}"


def _as_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _indexed(attrs: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    """`prefix.N.field` attributes as a list of `{field: value}` dicts, in index order."""
    groups: dict[int, dict[str, Any]] = {}
    size = len(prefix)
    for key, value in attrs.items():
        if key.startswith(prefix):
            index, _, rest = key[size:].partition(".")
            if index.isdigit() and rest:
                groups.setdefault(int(index), {})[rest] = value
    return [groups[i] for i in sorted(groups)]


# ----------------------------------------------------------------------------- parts (1.37+)


def _parts_message(raw: Any) -> list[BaseMessage]:
    """One semconv 1.37 `{"role", "parts": [...]}` message as LangChain messages."""
    if not isinstance(raw, dict):
        raise MessageDecodeError(f"a message must be an object, got {_kind(raw)}")
    parts = raw.get("parts")
    if not isinstance(parts, list):
        raise MessageDecodeError(f"'parts' must be a list, got {_kind(parts)}")
    role = raw.get("role")
    blocks: list[Any] = []
    calls: list[dict[str, Any]] = []
    results: list[ToolMessage] = []
    for part in parts:
        if not isinstance(part, dict) or not isinstance(part.get("type"), str):
            raise MessageDecodeError(f"a part must be an object with a 'type', got {part!r:.80}")
        kind = part["type"]
        if kind == "text":
            blocks.append({"type": "text", "text": _as_text(part.get("content", ""))})
        elif kind == "tool_call":
            name = part.get("name")
            if not isinstance(name, str):
                raise MessageDecodeError(f"tool_call part has no string 'name' ({part!r:.80})")
            calls.append(
                {
                    "name": name,
                    "args": parse_arguments(part.get("arguments")),
                    "id": part.get("id"),
                    "type": "tool_call",
                }
            )
        elif kind == "tool_call_response":
            results.append(
                ToolMessage(
                    content=_as_text(part.get("response", "")),
                    tool_call_id=str(part.get("id") or ""),
                )
            )
        elif kind == "reasoning":
            blocks.append({"type": "reasoning", "reasoning": _as_text(part.get("content", ""))})
        else:
            blocks.append(part)  # blob, file, uri, server tool calls: kept as they are
    if role is not None and not isinstance(role, str):
        raise MessageDecodeError(f"'role' must be a string, got {_kind(role)}")
    content = _content(blocks)
    if role == "tool" or (results and not blocks and not calls):
        return list(results)
    if role in ("assistant", "model"):  # Gemini calls the assistant "model"
        return [AIMessage(content=content, tool_calls=calls)]
    if role in ("system", "developer"):
        return [SystemMessage(content=content)]
    return [*results, HumanMessage(content=content)]  # user, or a role of the user's own


def _content(blocks: list[Any]) -> str | list[Any]:
    """Plain text when every block is text (joined), else the block list."""
    if all(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
        return "".join(b["text"] for b in blocks)
    return blocks


def _any_message(raw: Any) -> list[BaseMessage]:
    """A semconv parts message, or a role dict in a shape the shared decoders know."""
    if isinstance(raw, dict) and "parts" in raw:
        return _parts_message(raw)
    return decode_messages([raw])


def _system_instructions(doc: Any) -> SystemMessage | None:
    if doc is None:
        return None
    if isinstance(doc, str):
        return SystemMessage(content=doc)
    if isinstance(doc, list):
        texts = [
            _as_text(p.get("content", "")) if isinstance(p, dict) else _as_text(p) for p in doc
        ]
        return SystemMessage(content="\n".join(texts))
    raise MessageDecodeError(f"expected a list of parts or a string, got {_kind(doc)}")


def _document_messages(reader: _Reader, key: str, doc: Any) -> list[BaseMessage] | None:
    """Messages from a JSON document: parts messages, role dicts, or `{"messages": [...]}`."""
    if isinstance(doc, dict) and isinstance(doc.get("messages"), list):
        doc = doc["messages"]
    if not isinstance(doc, list):
        return None
    if any(isinstance(m, dict) and "parts" in m for m in doc):
        out: list[BaseMessage] = []
        for index, item in enumerate(doc):
            out.extend(reader.cached(item, _parts_message, key, index))
        return out
    return reader.decode(doc, key)


def _document_output(reader: _Reader, key: str, doc: Any) -> AIMessage | None:
    """The output message of a JSON completion document in any of its shapes."""
    if isinstance(doc, str):
        return AIMessage(content=doc)
    if isinstance(doc, dict):
        if isinstance(doc.get("choices"), list) and doc["choices"]:
            choice = doc["choices"][0]
            doc = [choice.get("message") if isinstance(choice, dict) else choice]
        elif isinstance(doc.get("text"), str) and "role" not in doc:
            return AIMessage(content=doc["text"])
        elif "role" in doc or "parts" in doc:
            doc = [doc]
    messages = _document_messages(reader, key, doc)
    if not messages:
        return None
    last = messages[-1]
    return last if isinstance(last, AIMessage) else AIMessage(content=last.content)


# ----------------------------------------------------------------------------- per convention


def _genai_json(reader: _Reader) -> tuple[list[BaseMessage] | None, AIMessage | None]:
    inputs = reader.message_list("gen_ai.input.messages", _any_message)
    system = reader.document("gen_ai.system_instructions", "a JSON array of parts")
    if system is not None:
        try:
            message = _system_instructions(system)
        except MessageDecodeError as exc:
            raise reader.fail("gen_ai.system_instructions", str(exc)) from None
        inputs = inputs or []
        if message is not None and not (inputs and isinstance(inputs[0], SystemMessage)):
            inputs.insert(0, message)
    out = reader.document("gen_ai.output.messages", "a JSON array of messages with 'parts'")
    output = None
    if out is not None:
        if not isinstance(out, list):
            raise reader.fail("gen_ai.output.messages", f"expected a JSON array, got {_kind(out)}")
        output = _document_output(reader, "gen_ai.output.messages", out[:1])
    return inputs, output


def _event_body(reader: _Reader, event: Event) -> dict[str, Any]:
    raw = event.attributes.get("gen_ai.event.content")
    if isinstance(raw, str):
        try:
            raw = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            raise reader.fail(
                f"event {event.name} gen_ai.event.content", f"invalid JSON ({exc})"
            ) from None
    if raw is None:
        raw = event.body if event.body is not None else event.attributes
    if isinstance(raw, str):
        raw = {"content": raw}
    if not isinstance(raw, dict):
        raise reader.fail(f"event {event.name}", f"expected an object body, got {_kind(raw)}")
    return raw


def _role_dict(role: str, body: dict[str, Any]) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "content": body.get("content")}
    if body.get("tool_calls"):
        msg["tool_calls"] = body["tool_calls"]
    call_id = body.get("id") or body.get("tool_call_id")
    if role == "tool" and call_id is not None:
        msg["tool_call_id"] = call_id
    return msg


def _events(reader: _Reader) -> tuple[list[BaseMessage] | None, AIMessage | None]:
    raw: list[dict[str, Any]] = []
    output = None
    found = False
    prompt: list[BaseMessage] | None = None  # semconv 1.26: the whole prompt in one event
    for event in reader.span.events:
        role = EVENT_ROLES.get(event.name)
        if role is not None:
            found = True
            raw.append(_role_dict(role, _event_body(reader, event)))
        elif event.name == "gen_ai.choice" and output is None:
            body = _event_body(reader, event)
            message = body.get("message")
            if not isinstance(message, dict):
                message = {k[8:]: v for k, v in body.items() if k.startswith("message.")}
            found = True
            decoded = reader.decode([_role_dict("assistant", message)], "event gen_ai.choice")
            output = decoded[-1] if decoded and isinstance(decoded[-1], AIMessage) else None
        elif event.name in ("gen_ai.content.prompt", "gen_ai.content.completion"):
            key = "gen_ai.prompt" if event.name.endswith("prompt") else "gen_ai.completion"
            sub = _Reader(
                Span(reader.span.trace_id, reader.span.span_id, None, "", None, event.attributes),
                reader.memo,
            )
            doc = sub.document(key, "a JSON message list")
            if key == "gen_ai.prompt":
                prompt = _document_messages(sub, key, doc) or []
            elif output is None:
                output = _document_output(sub, key, doc)
    if prompt is not None:
        return prompt, output
    if not found:
        return None, output
    return reader.decode(raw, "span events"), output


def _blocks_text(content: Any) -> Any:
    """Content OpenLLMetry stored as a JSON string of content blocks (Anthropic `tool_use`,
    `tool_result`, `text`) as those blocks, so tool calls and results pair; other text as is."""
    if not (isinstance(content, str) and content.startswith("[{")):
        return content
    try:
        blocks = orjson.loads(content)
    except orjson.JSONDecodeError:
        return content
    if isinstance(blocks, list) and all(isinstance(b, dict) and "type" in b for b in blocks):
        return blocks
    return content


def _indexed_messages(
    reader: _Reader, family: str, *, inner: str = "", call: str = "", fn: str = ""
) -> list[dict[str, Any]]:
    """Role dicts from indexed attributes (`gen_ai.prompt.N.*`, `llm.input_messages.N.*`)."""
    out = []
    for fields in reader.indexed(family):
        seen = reader.memo.by_object.get(id(fields))
        if seen is not None and seen[0] is fields:
            out.append(seen[1])
            continue
        msg = _indexed_message(fields, inner, call, fn)
        reader.memo.by_object[id(fields)] = (fields, msg)
        out.append(msg)
    return out


def _indexed_message(fields: dict[str, Any], inner: str, call: str, fn: str) -> dict[str, Any]:
    """One message's indexed fields as a role dict the shared decoders read."""
    get = {k[len(inner) :]: v for k, v in fields.items() if k.startswith(inner)}
    msg: dict[str, Any] = {"role": get.get("role") or "user"}
    content = _blocks_text(get.get("content"))
    if content is None:
        blocks: list[dict[str, Any]] = []
        for part in _indexed(get, "contents."):
            text = part.get("message_content.text")
            if text is not None:
                blocks.append({"type": "text", "text": _as_text(text)})
            elif part.get("message_content.image.image.url") is not None:
                url = part["message_content.image.image.url"]
                blocks.append({"type": "image_url", "image_url": {"url": url}})
        content = _content(blocks) if blocks else ""
    msg["content"] = content
    calls = []
    for tc in _indexed(get, "tool_calls."):
        tc = {k[len(call) :]: v for k, v in tc.items() if k.startswith(call)}
        calls.append(
            {
                "id": tc.get("id"),
                "type": "function",
                "function": {
                    "name": tc.get(f"{fn}name") or "",
                    "arguments": tc.get(f"{fn}arguments"),
                },
            }
        )
    if calls:
        msg["tool_calls"] = calls
    if get.get("tool_call_id") is not None:
        msg["tool_call_id"] = get["tool_call_id"]
    if get.get("name") is not None and msg["role"] != "tool":
        msg["name"] = get["name"]
    return msg


def _traceloop(reader: _Reader) -> tuple[list[BaseMessage] | None, AIMessage | None]:
    prompt = _indexed_messages(reader, "gen_ai.prompt")
    completion = _indexed_messages(reader, "gen_ai.completion")
    inputs = reader.decode(prompt, "gen_ai.prompt") if prompt else None
    output = None
    if completion:
        completion[0]["role"] = "assistant"
        decoded = reader.decode(completion[:1], "gen_ai.completion")
        output = decoded[-1] if decoded and isinstance(decoded[-1], AIMessage) else None
    if inputs is None and "gen_ai.prompt" in reader.attrs:
        doc = reader.document("gen_ai.prompt", "a JSON message list")
        inputs = _document_messages(reader, "gen_ai.prompt", doc)
        if inputs is None:
            raise reader.fail("gen_ai.prompt", f"expected a JSON message list, got {_kind(doc)}")
    if output is None and "gen_ai.completion" in reader.attrs:
        doc = reader.document("gen_ai.completion", "a JSON completion")
        output = _document_output(reader, "gen_ai.completion", doc)
    return inputs, output


def _openinference(reader: _Reader) -> tuple[list[BaseMessage] | None, AIMessage | None]:
    kw = {"inner": "message.", "call": "tool_call.", "fn": "function."}
    prompt = _indexed_messages(reader, "llm.input_messages", **kw)
    completion = _indexed_messages(reader, "llm.output_messages", **kw)
    inputs = reader.decode(prompt, "llm.input_messages") if prompt else None
    output = None
    if completion:
        completion[0]["role"] = "assistant"
        decoded = reader.decode(completion[:1], "llm.output_messages")
        output = decoded[-1] if decoded and isinstance(decoded[-1], AIMessage) else None
    return inputs, output


def _vercel_part(part: Any) -> Any:
    """A prompt content part as a LangChain block, without provider options, so a message
    repeated in the next call's prompt equals the output it was built from."""
    if isinstance(part, dict) and part.get("type") == "reasoning":
        return {"type": "reasoning", "reasoning": _as_text(part.get("text", ""))}
    if isinstance(part, dict) and part.get("type") == "text":
        return {"type": "text", "text": _as_text(part.get("text", ""))}
    return part


def _vercel_call(part: dict[str, Any]) -> dict[str, Any]:
    name = part.get("toolName")
    if not isinstance(name, str):
        raise MessageDecodeError(f"tool call has no string 'toolName' ({part!r:.80})")
    return {
        "name": name,
        "args": parse_arguments(part.get("input", part.get("args"))),
        "id": part.get("toolCallId"),
        "type": "tool_call",
    }


def _vercel_result(part: dict[str, Any]) -> ToolMessage:
    output = part.get("output", part.get("result"))
    if isinstance(output, dict) and "value" in output and "type" in output:
        status = "error" if str(output["type"]).startswith("error") else "success"
        return ToolMessage(
            content=_as_text(output["value"]),
            tool_call_id=str(part.get("toolCallId") or ""),
            status=status,
        )
    return ToolMessage(content=_as_text(output), tool_call_id=str(part.get("toolCallId") or ""))


def _vercel_message(raw: Any) -> list[BaseMessage]:
    """One AI SDK language-model prompt message (`ai.prompt.messages`)."""
    if not isinstance(raw, dict):
        raise MessageDecodeError(f"a message must be an object, got {_kind(raw)}")
    role, content = raw.get("role"), raw.get("content")
    if isinstance(content, str):
        parts: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list):
        parts = content
    else:
        raise MessageDecodeError(f"'content' must be a string or a list, got {_kind(content)}")
    if role == "system":
        return [SystemMessage(content=content if isinstance(content, str) else parts)]
    if role == "tool":
        return [_vercel_result(p) for p in parts if isinstance(p, dict)]
    calls = [_vercel_call(p) for p in parts if isinstance(p, dict) and p.get("type") == "tool-call"]
    blocks = [
        _vercel_part(p)
        for p in parts
        if not (isinstance(p, dict) and p.get("type") in ("tool-call", "tool-result"))
    ]
    body = _content(blocks)
    if role == "assistant":
        results = [
            _vercel_result(p)
            for p in parts
            if isinstance(p, dict) and p.get("type") == "tool-result"
        ]
        return [AIMessage(content=body, tool_calls=calls), *results]
    if role == "user":
        return [HumanMessage(content=body)]
    raise MessageDecodeError(f"unknown role {role!r}")


def _vercel(reader: _Reader) -> tuple[list[BaseMessage] | None, AIMessage | None]:
    inputs = reader.message_list("ai.prompt.messages", _vercel_message)
    text = reader.text("ai.response.text")
    if text is None:
        text = reader.text("ai.response.object")
    calls_doc = reader.document("ai.response.toolCalls", "a JSON array of tool calls")
    if calls_doc is not None and not isinstance(calls_doc, list):
        raise reader.fail("ai.response.toolCalls", f"expected a JSON array, got {_kind(calls_doc)}")
    calls = []
    for item in calls_doc or []:
        if not isinstance(item, dict):
            raise reader.fail(
                "ai.response.toolCalls", f"a tool call must be an object: {item!r:.80}"
            )
        try:
            calls.append(_vercel_call(item))
        except MessageDecodeError as exc:
            raise reader.fail("ai.response.toolCalls", str(exc)) from None
    reasoning = reader.text("ai.response.reasoning")
    output = None
    if text is not None or calls or reasoning:
        content: str | list[Any] = text or ""
        if reasoning:
            content = [{"type": "reasoning", "reasoning": reasoning}]
            if text:
                content.append({"type": "text", "text": text})
        output = AIMessage(content=content, tool_calls=calls, id=reader.text("ai.response.id"))
    return inputs, output


def _tools(reader: _Reader) -> list[dict[str, Any]]:
    """Tool schemas the call offered, from whichever convention recorded them."""
    doc = reader.document("gen_ai.tool.definitions", "a JSON array of tool definitions")
    if isinstance(doc, list) and doc:
        return [t for t in doc if isinstance(t, dict)]
    tools = []
    for entry in reader.indexed("llm.tools"):
        schema = entry.get("tool.json_schema")
        if isinstance(schema, str):
            schema = reader.parse("llm.tools", schema, "a tool's JSON schema")
        if isinstance(schema, dict):
            tools.append(schema)
    if tools:
        return tools
    for entry in reader.indexed("llm.request.functions"):
        tools.append({k: entry[k] for k in ("name", "description", "parameters") if k in entry})
    if tools:
        return tools
    listed = reader.attrs.get("ai.prompt.tools")
    for item in listed if isinstance(listed, list) else []:
        if isinstance(item, str):
            item = reader.parse("ai.prompt.tools", item, "a tool definition")
        if isinstance(item, dict):
            tools.append(item)
    return tools


def _max_tokens(reader: _Reader) -> int | None:
    found = reader.count(("gen_ai.request.max_tokens", "ai.settings.maxOutputTokens"))
    if found is not None:
        return found
    params = reader.attrs.get("llm.invocation_parameters")
    if isinstance(params, str):
        try:
            params = orjson.loads(params)
        except orjson.JSONDecodeError:
            return None  # free text some instrumentations write; not a convention field
    if isinstance(params, dict):
        for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
            value = params.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                return value
    return None


# ----------------------------------------------------------------------------- entry points


def is_model_call(span: Span) -> bool:
    """Whether a span is one model call (not an agent, tool, workflow or embedding span)."""
    attrs = span.attributes
    operation = attrs.get("ai.operationId")
    if isinstance(operation, str) or span.name.startswith("ai."):
        name = operation if isinstance(operation, str) else span.name
        return name.endswith((".doGenerate", ".doStream"))
    kind = attrs.get("openinference.span.kind")
    if isinstance(kind, str):
        return kind.upper() == "LLM"
    operation = attrs.get("gen_ai.operation.name")
    if isinstance(operation, str):
        return operation in LLM_OPERATIONS
    kind = attrs.get("traceloop.span.kind") or attrs.get("llm.request.type")
    if isinstance(kind, str) and kind not in ("chat", "completion"):
        return False
    return (
        "gen_ai.input.messages" in attrs
        or "gen_ai.prompt" in attrs
        or any(k.startswith(("gen_ai.prompt.", "llm.input_messages.")) for k in attrs)
        or any(e.name in EVENT_ROLES for e in span.events)
    )


READERS = (
    ("gen_ai.input.messages", _genai_json),
    ("gen_ai span events", _events),
    ("gen_ai.prompt", _traceloop),
    ("openinference", _openinference),
    ("ai.prompt.messages", _vercel),
)


def read_call(span: Span, memo: Memo) -> Call:
    """The call a model-call span records; raises `SpanError` naming span and attribute."""
    reader = _Reader(span, memo)
    inputs: list[BaseMessage] | None = None
    output: AIMessage | None = None
    convention = ""
    for name, read in READERS:
        got_in, got_out = read(reader)
        if got_in is not None and inputs is None:
            inputs, convention = got_in, convention or name
        if got_out is not None and output is None:
            output, convention = got_out, convention or name
        if inputs is not None and output is not None:
            break
    input_tokens = reader.count(INPUT_TOKENS)
    return Call(
        span=span,
        inputs=inputs,
        output=output,
        convention=convention,
        model=reader.first_text(MODEL_KEYS),
        provider=reader.first_text(PROVIDER_KEYS),
        input_tokens=input_tokens or None,
        output_tokens=reader.count(OUTPUT_TOKENS),
        cache_read_tokens=reader.count(CACHE_READ_TOKENS),
        cache_write_tokens=reader.count(CACHE_WRITE_TOKENS),
        max_output_tokens=_max_tokens(reader),
        tools=_tools(reader),
    )
