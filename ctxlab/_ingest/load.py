"""`ctxlab.load`: any trace file (plain, .gz, .xz, .bz2) or directory to a list of `Trace`s.

The format is detected from content, never from the file name, because users rename exports.
LangSmith runs from every file of a directory are merged before traces are built: webhook
deliveries and paged dumps split one trace over several files. Each file is still read and
checked on its own, and each trace built on its own, so one bad file or trace costs only itself.

Only regular files are read, and never past `max_trace_bytes()` once decompressed.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import stat
import warnings
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.format_hints import unknown_format
from ctxlab._ingest.formats import langsmith, registry
from ctxlab._ingest.formats.message_lists import looks_like_message_list, trace_from_list
from ctxlab._ingest.shared_json import SharedLines
from ctxlab._trace import Trace

SUFFIXES = (".json", ".jsonl", ".ndjson", ".gz", ".xz", ".bz2", ".traj", ".eval", ".parquet")


MAX_TRACE_BYTES = 1024**3
"""Default ceiling on a trace file's size once decompressed; `CTXLAB_MAX_TRACE_BYTES` overrides
it, so a small compressed bomb cannot exhaust memory."""

MAX_BYTES_VARIABLE = "CTXLAB_MAX_TRACE_BYTES"


# Recognised by magic bytes, since users rename files.
COMPRESSIONS: tuple[tuple[bytes, str, Callable[[BinaryIO], BinaryIO]], ...] = (
    (b"\x1f\x8b", "gzip", lambda raw: gzip.GzipFile(fileobj=raw)),
    (b"\xfd7zXZ\x00", "xz", lzma.LZMAFile),
    (b"BZh", "bzip2", bz2.BZ2File),
)


class TraceLoadWarning(UserWarning):
    """A file of a directory could not be loaded; the good ones still were."""


class TraceList(list[Trace]):
    """The loaded traces, plus `errors`: files or traces of a directory that failed to load."""

    def __init__(self, traces: list[Trace], errors: list[TraceFormatError] | None = None) -> None:
        super().__init__(traces)
        self.errors: list[TraceFormatError] = list(errors or [])


def max_trace_bytes() -> int:
    """The decompressed-size ceiling: `CTXLAB_MAX_TRACE_BYTES` when set, else the default."""
    raw = os.environ.get(MAX_BYTES_VARIABLE, "").strip()
    if raw.isdigit() and int(raw) > 0:
        return int(raw)
    return MAX_TRACE_BYTES


def _too_large(source: str, limit: int, what: str) -> TraceFormatError:
    return TraceFormatError(
        f"{what} exceeds {limit:,} bytes (the ceiling on a trace file's size; "
        f"set {MAX_BYTES_VARIABLE} to raise it)",
        source=source,
    )


def _decompress(
    data: bytes, name: str, opener: Callable[[BinaryIO], BinaryIO], source: str
) -> bytes:
    """Every member of a compressed stream, read incrementally and never past the ceiling, so
    a bomb is refused before it expands in memory."""
    limit = max_trace_bytes()
    try:
        with opener(io.BytesIO(data)) as stream:
            out = stream.read(limit + 1)
    except (EOFError, OSError, ValueError, zlib.error, lzma.LZMAError) as exc:
        raise TraceFormatError(
            f"truncated or corrupt {name} data ({exc}); expected a complete {name} file",
            source=source,
        ) from exc
    if len(out) > limit:
        raise _too_large(source, limit, f"decompressed {name} data")
    return out


_NOT_REGULAR = "not a regular file (a pipe, device or socket); expected a trace file"


def _read_raw(path: Path, source: str) -> bytes:
    """The file's bytes, refusing what is not a regular file (a FIFO would block, a device
    never ends) and anything past the size ceiling, before reading."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise TraceFormatError(_NOT_REGULAR, source=source)
        with open(path, "rb", opener=lambda p, flags: os.open(p, flags | os.O_NONBLOCK)) as fh:
            info = os.fstat(fh.fileno())
            if not stat.S_ISREG(info.st_mode):
                raise TraceFormatError(_NOT_REGULAR, source=source)
            limit = max_trace_bytes()
            if info.st_size > limit:
                raise _too_large(source, limit, "the file")
            return fh.read()
    except OSError as exc:
        raise TraceFormatError(f"cannot read file: {exc.strerror or exc}", source=source) from exc


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed; text is checked to be UTF-8 (so errors can name the
    line), binary containers (`registry.CONTAINERS`) are left to their opener."""
    source = str(path)
    data = _read_raw(path, source)
    for magic, name, opener in COMPRESSIONS:
        if data.startswith(magic):
            data = _decompress(data, name, opener, source)
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


def _json_error(
    exc: orjson.JSONDecodeError, data: bytes, source: str, line_offset: int = 0
) -> TraceFormatError:
    """One located line for a JSON syntax error, with the line the parser stopped on."""
    text = data.decode("utf-8", "replace")
    pos = min(exc.pos, len(text))
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    stripped = text.rstrip()
    near = text[max(0, pos - 1) : pos + 9]
    if "recursion limit" in exc.msg or "depth limit" in exc.msg:
        what = "JSON nested too deeply (more than 1,024 levels)"
    elif pos >= len(stripped):
        what = "truncated JSON (the file ends mid-value)"
    elif any(word in near for word in ("NaN", "Infinity")):
        what = "NaN or Infinity is not valid JSON (expected a number or null)"
    elif "surrogate" in exc.msg.lower() or "\\ud8" in near.lower() or "\\udc" in near.lower():
        what = "lone UTF-16 surrogate escape in a string (not valid Unicode)"
    else:
        what = f"malformed JSON: {exc.msg}"
    return TraceFormatError(
        f"{what} at column {column}; expected a complete JSON document or one JSON value per line",
        source=source,
        line=line + line_offset,
    )


def read_values(path: Path, shared: SharedLines | None = None) -> list[tuple[Any, int | None]]:
    """The JSON values of a file: one for a JSON document, one per line (numbered) for JSONL.

    `shared` parses the lines instead of `orjson` alone: equal values, but a value repeated
    byte for byte is one object (`ctxlab._ingest.shared_json`; call its `unshare` before
    editing)."""
    data = _read_bytes(path)
    source = str(path)
    opener = registry.container(data)
    if opener is not None:
        return opener(data, source)
    if not data or data.isspace():
        raise TraceFormatError("empty file; expected JSON or JSONL", source=source)
    try:
        return [(orjson.loads(data), None)]
    except orjson.JSONDecodeError as exc:
        document_error = exc
    lines = data.split(b"\n")
    if len(lines) < 2:
        raise _json_error(document_error, data, source)
    values: list[tuple[Any, int | None]] = []
    parse = orjson.loads if shared is None else shared.loads
    for number, line in enumerate(lines, start=1):
        if not line or line.isspace():
            continue
        try:
            values.append((parse(line), number))
        except orjson.JSONDecodeError as exc:
            if not values:  # not JSONL at all: report the document's own error
                raise _json_error(document_error, data, source) from None
            raise _json_error(exc, line, source, number - 1) from None
    return values


_TOO_DEEP = "values nested too deeply to read (expected the nesting of a trace export)"


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "an object with keys " + ", ".join(sorted(map(str, value))[:8])
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return f"a JSON {type(value).__name__}"


def _unknown(value: Any) -> str:
    """The closest formats to `value` and where the rest are listed (`format_hints`)."""
    return unknown_format(value, _describe(value))


def _items(value: dict[str, Any], source: str, line: int | None) -> list[Any]:
    """The run records of an ingestion-ops object, `{"post": [...], "patch": [...]}`."""
    items: list[Any] = []
    for key in ("post", "patch"):
        part = value.get(key)
        if part is None:
            continue
        if not isinstance(part, list):
            raise TraceFormatError(
                f"field {key!r}: expected a list of run records, got {type(part).__name__}",
                source=source,
                line=line,
            )
        items.extend(part)
    return items


def _split(path: Path) -> tuple[list[langsmith.Run], list[Trace], str | None]:
    """LangSmith runs and ready traces of one file, plus its LangSmith shape.

    A file another format claims (`registry.detect`) is read whole by that format's module;
    otherwise its values are LangSmith records (normalised here, so a bad record fails its own
    file only) or message lists."""
    source = str(path)
    shared = SharedLines()
    values = read_values(path, shared)
    reader = registry.detect(values)
    if reader is not None:
        shared.unshare()  # their readers may edit what they parse; LangSmith's copy first
        return [], reader.read(values, source), None
    runs: list[langsmith.Run] = []
    traces: list[Trace] = []
    raw_runs: list[dict[str, Any]] = []
    webhook = False
    for value, line in values:
        items: list[Any]
        indexed = True
        if isinstance(value, dict) and isinstance(value.get("runs"), list):
            items, webhook = value["runs"], True
        elif (
            isinstance(value, dict) and ("post" in value or "patch" in value) and "id" not in value
        ):
            items = _items(value, source, line)
        elif langsmith.looks_like_run(value):
            items, indexed = [value], False
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
            where = f"item {index}: " if indexed else ""
            if not langsmith.looks_like_run(item):
                raise TraceFormatError(
                    f"{where}expected a LangSmith run record (an object with 'id' and "
                    f"'run_type', 'trace_id' or 'dotted_order'); got {_describe(item)}",
                    source=source,
                    line=line,
                )
            try:
                runs.extend(langsmith.flatten([(item, source, line)]))
            except TraceFormatError as exc:
                if not where:
                    raise
                raise TraceFormatError(
                    where + exc.reason, source=source, line=line, run_id=exc.run_id
                ) from exc
            raw_runs.append(item)
    shape = None
    if raw_runs:
        shape = "langsmith-webhook" if webhook else langsmith.detect_shape(raw_runs)
    return runs, traces, shape


def _files(path: Path) -> list[Path]:
    return sorted(p for p in path.rglob("*") if p.is_file() and p.name.lower().endswith(SUFFIXES))


def load_all(paths: list[str | Path]) -> TraceList:
    """Traces from several files and directories; failures are collected, not raised."""
    runs: list[langsmith.Run] = []
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
                file_runs, file_traces, shape = _split(file)
            except TraceFormatError as exc:
                errors.append(exc.located(str(file)))
                continue
            except RecursionError:
                errors.append(TraceFormatError(_TOO_DEEP, source=str(file)))
                continue
            runs.extend(file_runs)
            traces.extend(file_traces)
            if shape:
                shapes[str(file)] = shape
    if runs:
        built, failed = langsmith.traces_from_runs(runs, shapes)
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
