"""`ctxlab.load`: any trace file (plain, .gz, .xz, .bz2) or directory to a list of `Trace`s.

The format is detected from content, never from the file name, because users rename exports.
LangSmith records from every file of a directory are merged before traces are built: webhook
deliveries and paged dumps split one trace over several files.
"""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import warnings
import zlib
from pathlib import Path
from typing import Any

import orjson

from ctxlab.errors import TraceFormatError
from ctxlab.formats import langsmith, registry
from ctxlab.formats.message_lists import looks_like_message_list, trace_from_list
from ctxlab.trace import Trace

SUFFIXES = (".json", ".jsonl", ".ndjson", ".gz", ".xz", ".bz2", ".traj", ".eval", ".parquet")

Record = tuple[dict[str, Any], str, int | None]

# Recognised by magic bytes, since users rename files.
COMPRESSIONS = (
    (b"\x1f\x8b", "gzip", gzip.decompress),
    (b"\xfd7zXZ\x00", "xz", lzma.decompress),
    (b"BZh", "bzip2", bz2.decompress),
)


class TraceLoadWarning(UserWarning):
    """A file of a directory could not be loaded; the good ones still were."""


class TraceList(list[Trace]):
    """The loaded traces, plus `errors`: files or traces of a directory that failed to load."""

    def __init__(self, traces: list[Trace], errors: list[TraceFormatError] | None = None) -> None:
        super().__init__(traces)
        self.errors: list[TraceFormatError] = list(errors or [])


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed; text is checked to be UTF-8 (so errors can name the
    line), binary containers (`registry.CONTAINERS`) are left to their opener."""
    source = str(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"cannot read file: {exc.strerror or exc}", source=source) from exc
    for magic, name, decompress in COMPRESSIONS:
        if data.startswith(magic):
            try:
                data = decompress(data)
            except (EOFError, OSError, ValueError, zlib.error, lzma.LZMAError) as exc:
                raise TraceFormatError(
                    f"truncated or corrupt {name} data ({exc}); expected a complete {name} file",
                    source=source,
                ) from exc
            break
    if registry.container(data) is not None:
        return data
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise TraceFormatError(
            f"invalid UTF-8 at byte {exc.start} (expected UTF-8 JSON text)",
            source=source,
            line=line,
        ) from exc
    return data


def _json_error(text: str, source: str, line_offset: int = 0) -> TraceFormatError:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        end = exc.pos >= len(text.rstrip())
        what = "truncated JSON (the file ends mid-value)" if end else f"malformed JSON: {exc.msg}"
        return TraceFormatError(
            f"{what} at column {exc.colno}; expected a complete JSON document "
            "or one JSON value per line",
            source=source,
            line=exc.lineno + line_offset,
        )
    return TraceFormatError("malformed JSON", source=source)


def read_values(path: Path) -> list[tuple[Any, int | None]]:
    """The JSON values of a file: one for a JSON document, one per line (numbered) for JSONL."""
    data = _read_bytes(path)
    source = str(path)
    opener = registry.container(data)
    if opener is not None:
        return opener(data, source)
    if not data or data.isspace():
        raise TraceFormatError("empty file; expected JSON or JSONL", source=source)
    try:
        return [(orjson.loads(data), None)]
    except orjson.JSONDecodeError:
        pass
    lines = data.split(b"\n")
    if len(lines) < 2:
        raise _json_error(data.decode("utf-8"), source)
    values: list[tuple[Any, int | None]] = []
    for number, line in enumerate(lines, start=1):
        if not line or line.isspace():
            continue
        try:
            values.append((orjson.loads(line), number))
        except orjson.JSONDecodeError:
            if not values:  # not JSONL at all: report the document's own error
                raise _json_error(data.decode("utf-8"), source) from None
            raise _json_error(line.decode("utf-8"), source, number - 1) from None
    return values


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "an object with keys " + ", ".join(sorted(map(str, value))[:8])
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return f"a JSON {type(value).__name__}"


def _unknown(value: Any) -> str:
    others = "".join(f", {module.DESCRIPTION}" for module in registry.FORMATS)
    return (
        "unknown trace format: expected LangSmith runs (objects with 'id' and 'run_type', "
        "'trace_id' or 'dotted_order'), ingestion ops ({'post': [...], 'patch': [...]}), a "
        f"webhook payload ({{'runs': [...]}}), a message list (OpenAI, Anthropic or LangChain)"
        f"{others}; got {_describe(value)}"
    )


def _split(path: Path) -> tuple[list[Record], list[Trace], str | None]:
    """LangSmith records and ready traces of one file, plus its LangSmith shape.

    A file another format claims (`registry.detect`) is read whole by that format's module;
    otherwise its values are LangSmith records or message lists."""
    source = str(path)
    values = read_values(path)
    reader = registry.detect(values)
    if reader is not None:
        return [], reader.read(values, source), None
    records: list[Record] = []
    traces: list[Trace] = []
    raw_runs: list[dict[str, Any]] = []
    webhook = False
    for value, line in values:
        items: list[Any]
        if isinstance(value, dict) and isinstance(value.get("runs"), list):
            items, webhook = value["runs"], True
        elif (
            isinstance(value, dict) and ("post" in value or "patch" in value) and "id" not in value
        ):
            items = [*(value.get("post") or []), *(value.get("patch") or [])]
        elif langsmith.looks_like_run(value):
            items = [value]
        elif isinstance(value, list) and any(langsmith.looks_like_run(v) for v in value):
            items = value
        elif looks_like_message_list(value):
            stem = path.name.split(".")[0]
            trace_id = stem if line is None else f"{stem}:{line}"
            traces.append(trace_from_list(value, source=source, trace_id=trace_id, line=line))
            continue
        else:
            raise TraceFormatError(_unknown(value), source=source, line=line)
        for index, item in enumerate(items):
            if not langsmith.looks_like_run(item):
                raise TraceFormatError(
                    f"item {index}: expected a LangSmith run record (an object with 'id' and "
                    f"'run_type', 'trace_id' or 'dotted_order'); got {_describe(item)}",
                    source=source,
                    line=line,
                )
            records.append((item, source, line))
            raw_runs.append(item)
    shape = None
    if raw_runs:
        shape = "langsmith-webhook" if webhook else langsmith.detect_shape(raw_runs)
    return records, traces, shape


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(SUFFIXES))


def load_all(paths: list[str | Path]) -> TraceList:
    """Traces from several files and directories; failures are collected, not raised."""
    records: list[Record] = []
    shapes: dict[str, str] = {}
    traces: list[Trace] = []
    errors: list[TraceFormatError] = []
    for given in paths:
        path = Path(given)
        if not path.exists():
            errors.append(TraceFormatError("no such file or directory", source=str(path)))
            continue
        for file in _files(path) if path.is_dir() else [path]:
            try:
                file_records, file_traces, shape = _split(file)
            except TraceFormatError as exc:
                errors.append(exc.located(str(file)))
                continue
            records.extend(file_records)
            traces.extend(file_traces)
            if shape:
                shapes[str(file)] = shape
    if records:
        built, failed = langsmith.traces_from_records(records, shapes)
        traces.extend(built)
        errors.extend(failed)
    for module in registry.FORMATS:
        link = getattr(module, "link", None)
        if link is not None:
            traces = link(traces)
    return TraceList(traces, errors)


def load(path: str | Path) -> TraceList:
    """Every trace in a file, `.gz` file or directory, as canonical `Trace`s.

    A bad file raises `TraceFormatError`. In a directory, good traces load and each bad file
    is reported in the result's `errors` and as a `TraceLoadWarning`; nothing is half-loaded.
    """
    result = load_all([path])
    if Path(path).is_dir():
        for error in result.errors:
            warnings.warn(str(error), TraceLoadWarning, stacklevel=2)
        return result
    if result.errors:
        raise result.errors[0]
    return result
