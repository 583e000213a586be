"""OpenTelemetry span containers to one flat `Span` shape, whatever tool wrote the file.

Users hand over spans in several wrappings, all carrying the same attribute names:

* OTLP JSON (`{"resourceSpans": [{"resource", "scopeSpans": [{"spans": [...]}]}]}`, also the
  collector's file exporter, one such batch per line, and Tempo's `{"batches": [...]}`), where
  attributes are typed key-value lists (`{"key", "value": {"stringValue"|"intValue"|...}}`);
* plain span lists: the JS SDK's in-memory exporter (`spanContext`, `startTime: [s, ns]`),
  Python's `span.to_json()` and Phoenix's REST spans (`context`, ISO `start_time`), with flat
  attribute dicts, and Langfuse observations keeping the OTel attributes under
  `metadata.attributes`;
* a bare attribute map (one span's attributes and nothing else), as instrumentation test
  fixtures keep them.

Nested attribute objects (Phoenix stores `{"llm": {"input_messages": [...]}}`) are flattened to
the dotted, indexed keys the conventions define, so the message readers see one spelling.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.fields import obj_or_empty

ATTRIBUTE_PREFIXES = ("gen_ai.", "llm.", "ai.", "openinference.", "traceloop.")
"""Attribute families of the GenAI conventions; a bare map with such keys is one span."""

JSON_VALUED = frozenset(
    {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.definitions",
        "gen_ai.prompt",
        "gen_ai.completion",
        "ai.prompt.messages",
        "ai.prompt.tools",
        "ai.response.toolCalls",
        "input.value",
        "output.value",
    }
)
"""Attributes holding one JSON document: kept whole when an export stored them parsed."""

_OTLP_VALUE_KEYS = (
    "stringValue",
    "intValue",
    "doubleValue",
    "boolValue",
    "arrayValue",
    "kvlistValue",
    "bytesValue",
)


@dataclass(slots=True)
class Event:
    """One span event: its name, time (ns since the epoch, when known) and attributes."""

    name: str
    time: int | None
    attributes: dict[str, Any]
    body: Any = None


@dataclass(slots=True)
class Span:
    """One span as the readers need it; `where` names it in error messages."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int | None
    attributes: dict[str, Any]
    events: list[Event] = field(default_factory=list)
    line: int | None = None
    order: int = 0

    @property
    def where(self) -> str:
        return f"span {self.span_id}"

    @property
    def started_at(self) -> str | None:
        """The start time as an ISO 8601 UTC timestamp."""
        if self.start is None:
            return None
        seconds, nanos = divmod(self.start, 1_000_000_000)
        stamp = datetime.fromtimestamp(seconds, UTC).replace(microsecond=nanos // 1000)
        return stamp.isoformat().replace("+00:00", "Z")


class SpanError(ValueError):
    """A container field has the wrong shape; the reader adds file and line."""


def _otlp_value(value: Any, key: str) -> Any:
    """A Python value from an OTLP typed `AnyValue`."""
    if not isinstance(value, dict):
        raise SpanError(f"attribute {key!r}: expected an OTLP value object, got {_kind(value)}")
    if not value:
        return None
    for name in _OTLP_VALUE_KEYS:
        if name in value:
            raw = value[name]
            break
    else:
        raise SpanError(
            f"attribute {key!r}: expected one of {', '.join(_OTLP_VALUE_KEYS)}, "
            f"got keys {sorted(value)}"
        )
    if name == "intValue":
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise SpanError(f"attribute {key!r}: intValue must be an integer, got {_kind(raw)}")
        try:
            return int(raw)
        except ValueError:
            raise SpanError(f"attribute {key!r}: intValue {raw!r} is not an integer") from None
    if name == "arrayValue":
        values = raw.get("values", []) if isinstance(raw, dict) else None
        if not isinstance(values, list):
            raise SpanError(f"attribute {key!r}: arrayValue must hold a 'values' list")
        return [_otlp_value(v, key) for v in values]
    if name == "kvlistValue":
        values = raw.get("values", []) if isinstance(raw, dict) else None
        if not isinstance(values, list):
            raise SpanError(f"attribute {key!r}: kvlistValue must hold a 'values' list")
        return otlp_attributes(values)
    return raw


def otlp_attributes(items: Any) -> dict[str, Any]:
    """A flat dict from an OTLP attribute list `[{"key", "value": {...}}]`."""
    if not isinstance(items, list):
        raise SpanError(f"'attributes' must be a list of key-value objects, got {_kind(items)}")
    out: dict[str, Any] = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("key"), str):
            raise SpanError(
                f"attribute entry must be an object with a string 'key', got {item!r:.80}"
            )
        out[item["key"]] = _otlp_value(item.get("value", {}), item["key"])
    return out


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if prefix in JSON_VALUED:
        out[prefix] = value
    elif isinstance(value, dict):
        for key, item in value.items():
            _flatten(f"{prefix}.{key}" if prefix else str(key), item, out)
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for index, item in enumerate(value):
            _flatten(f"{prefix}.{index}", item, out)
    else:
        out[prefix] = value


def flat_attributes(value: Any) -> dict[str, Any]:
    """Attributes as one flat dotted dict, from an OTLP list, a flat dict or a nested dict."""
    if isinstance(value, list):
        return otlp_attributes(value)
    if not isinstance(value, dict):
        raise SpanError(f"'attributes' must be an object or a list, got {_kind(value)}")
    types = set(map(type, value.values()))  # C speed: spans can hold thousands of attributes
    if dict not in types and list not in types:
        return value  # already flat: the common case costs no copy
    if all(not isinstance(v, dict | list) or k in JSON_VALUED for k, v in value.items()):
        return value
    out: dict[str, Any] = {}
    _flatten("", value, out)
    return out


def _kind(value: Any) -> str:
    return "null" if value is None else f"a JSON {type(value).__name__}"


def _time_ns(value: Any) -> int | None:
    """Nanoseconds since the epoch from unix nanos (int or string), `[s, ns]` or ISO text."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value * 1e9) if value < 1e11 else int(value)
    if isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) for v in value):
        return value[0] * 1_000_000_000 + value[1]
    if isinstance(value, str):
        text = value.strip()
        if text.isdigit():
            return int(text)
        try:
            stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            raise SpanError(
                f"start time {value!r} is neither unix nanoseconds nor ISO 8601"
            ) from None
        if stamp.tzinfo is None:
            stamp = stamp.replace(tzinfo=UTC)
        return int(stamp.timestamp()) * 1_000_000_000 + stamp.microsecond * 1000
    raise SpanError(f"start time must be a number, [s, ns] or ISO text, got {_kind(value)}")


def _text_id(value: Any, what: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, str):
        return value[2:] if value.startswith("0x") else value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        # a 128-bit trace id written as a JSON integer (any-agent) is past what the JSON
        # parser keeps exactly; the spans of one trace still share the one rounded value
        return str(int(value))
    raise SpanError(f"{what} must be a string or an integer, got {_kind(value)}")


def _first(obj: dict[str, Any], *keys: str) -> Any:
    for key in keys:
        value = obj.get(key)
        if value is not None:
            return value
    return None


def _events(raw: Any) -> list[Event]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise SpanError(f"'events' must be a list, got {_kind(raw)}")
    out = []
    for event in raw:
        if not isinstance(event, dict):
            raise SpanError(f"an event must be an object, got {_kind(event)}")
        name = event.get("name")
        if not isinstance(name, str):
            raise SpanError(f"an event has no string 'name' (got {_kind(name)})")
        attributes = event.get("attributes")
        if isinstance(attributes, list):
            attributes = otlp_attributes(attributes)
        elif attributes is None:
            attributes = {}
        elif not isinstance(attributes, dict):
            raise SpanError(f"event {name!r}: 'attributes' must be an object or a list")
        out.append(
            Event(
                name=name,
                time=_time_ns(_first(event, "timeUnixNano", "time_unix_nano", "time", "timestamp")),
                attributes=attributes,  # bodies keep their nesting (tool_calls, message)
                body=event.get("body"),
            )
        )
    return out


def span_from(obj: dict[str, Any], *, default_trace: str, line: int | None, order: int) -> Span:
    """One span from any of the plain span shapes (see the module docstring)."""
    context = _first(obj, "spanContext", "context")
    context = context if isinstance(context, dict) else {}
    metadata = obj_or_empty(obj, "metadata")
    attributes = _first(obj, "attributes")
    if attributes is None and isinstance(metadata.get("attributes"), dict):
        attributes = metadata["attributes"]  # Langfuse keeps the OTel attributes here
    if attributes is None:
        prefixed = {k[11:]: v for k, v in obj.items() if k.startswith("attributes.")}
        attributes = prefixed  # Phoenix span dataframe records
    span_id = _text_id(
        _first(obj, "spanId", "span_id", "context.span_id", "id")
        or _first(context, "spanId", "span_id"),
        "span id",
    )
    trace_id = _text_id(
        _first(obj, "traceId", "trace_id", "context.trace_id")
        or _first(context, "traceId", "trace_id"),
        "trace id",
    )
    parent = obj.get("parentSpanContext")
    if not isinstance(parent, dict):
        parent = obj.get("parent")  # any-agent's AgentTrace: the parent's span context
    parent_id = _text_id(
        _first(obj, "parentSpanId", "parent_span_id", "parent_id", "parentObservationId")
        or (parent.get("spanId") if isinstance(parent, dict) else None),
        "parent span id",
    )
    name = obj.get("name")
    span_id = span_id or f"#{order}"
    try:
        start = _time_ns(
            _first(obj, "startTimeUnixNano", "start_time_unix_nano", "startTime", "start_time")
        )
        flat = flat_attributes(attributes)
        events = _events(obj.get("events"))
    except SpanError as exc:
        raise SpanError(f"span {span_id}: {exc}") from None
    return Span(
        trace_id=trace_id or default_trace,
        span_id=span_id,
        parent_id=parent_id,
        name=str(name) if name is not None else "",
        start=start,
        attributes=flat,
        events=events,
        line=line,
        order=order,
    )


def looks_like_span(obj: Any) -> bool:
    """Whether a JSON object is one span in a shape `span_from` reads."""
    if not isinstance(obj, dict) or "run_type" in obj:
        return False
    if "spanContext" in obj or "context.span_id" in obj or "spanId" in obj:
        return True
    if "traceId" in obj and ("startTime" in obj or "attributes" in obj):
        return True  # Langfuse observation
    context = obj.get("context")
    return isinstance(context, dict) and "span_id" in context


def looks_like_attribute_map(obj: Any) -> bool:
    """Whether a JSON object is a bare span-attribute map of the GenAI conventions."""
    return (
        isinstance(obj, dict)
        and bool(obj)
        and any(isinstance(k, str) and k.startswith(ATTRIBUTE_PREFIXES) for k in obj)
        and not any(k in obj for k in ("id", "run_type", "type", "role", "messages"))
    )


def span_list(obj: Any) -> list[Any] | None:
    """The spans of a `{"spans": [...]}` document (any-agent's `AgentTrace.model_dump`: spans
    as the Python SDK's `ReadableSpan.to_json()` writes them, plus `final_output`), or None."""
    if not isinstance(obj, dict) or not isinstance(obj.get("spans"), list):
        return None
    spans = obj["spans"]
    return spans if spans and looks_like_span(spans[0]) else None


def otlp_batches(obj: Any) -> list[Any] | None:
    """The resource-span batches of an OTLP JSON (or Tempo) document, or None."""
    if not isinstance(obj, dict):
        return None
    for key in ("resourceSpans", "resource_spans", "batches"):
        if isinstance(obj.get(key), list):
            return obj[key]
    return None


def otlp_spans(batches: list[Any], *, line: int | None, start_order: int) -> list[Span]:
    """Spans of OTLP resource-span batches (scope spans, or the older library spans)."""
    out: list[Span] = []
    for batch in batches:
        if not isinstance(batch, dict):
            raise SpanError(f"a resourceSpans entry must be an object, got {_kind(batch)}")
        scopes = _first(batch, "scopeSpans", "scope_spans", "instrumentationLibrarySpans") or []
        if not isinstance(scopes, list):
            raise SpanError(f"'scopeSpans' must be a list, got {_kind(scopes)}")
        for scope in scopes:
            spans = scope.get("spans") if isinstance(scope, dict) else None
            if not isinstance(spans, list):
                raise SpanError("a scopeSpans entry must hold a 'spans' list")
            for raw in spans:
                if not isinstance(raw, dict):
                    raise SpanError(f"a span must be an object, got {_kind(raw)}")
                trace_id = _text_id(_first(raw, "traceId", "trace_id"), "traceId")
                if trace_id is None:
                    raise SpanError(f"span {raw.get('spanId')!r} has no traceId")
                out.append(
                    span_from(raw, default_trace=trace_id, line=line, order=start_order + len(out))
                )
    return out


def spans_of(values: list[tuple[Any, int | None]], source: str, stem: str) -> list[Span]:
    """Every span of a file's JSON values, in file order; errors name the file and line."""
    spans: list[Span] = []
    for value, line in values:
        try:
            batches = otlp_batches(value)
            if batches is not None:
                spans.extend(otlp_spans(batches, line=line, start_order=len(spans)))
                continue
            if isinstance(value, dict) and isinstance(value.get("data"), list):
                value = value["data"]  # Phoenix REST page
            elif span_list(value) is not None:
                value = span_list(value)  # any-agent's AgentTrace ({"spans": [...], ...})
            items = value if isinstance(value, list) else [value]
            default = stem if line is None else f"{stem}:{line}"
            for index, item in enumerate(items):
                item_batches = otlp_batches(item)
                if item_batches is not None:  # a list of OTLP exports
                    spans.extend(otlp_spans(item_batches, line=line, start_order=len(spans)))
                elif looks_like_span(item):
                    spans.append(
                        span_from(item, default_trace=default, line=line, order=len(spans))
                    )
                elif looks_like_attribute_map(item):
                    spans.append(
                        Span(
                            trace_id=default,
                            span_id=f"#{len(spans)}",
                            parent_id=None,
                            name="",
                            start=None,
                            attributes=flat_attributes(item),
                            line=line,
                            order=len(spans),
                        )
                    )
                else:
                    raise SpanError(
                        f"item {index}: expected a span (with 'spanContext', 'context' or "
                        "'spanId') or a GenAI attribute map"
                    )
        except SpanError as exc:
            raise TraceFormatError(str(exc), source=source, line=line) from exc
    return spans
