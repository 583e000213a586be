"""`ctxlab.load`: any trace file (plain, .gz, .xz, .bz2) or directory to a list of `Trace`s.

The format is detected from content, never from the file name, because users rename exports.
LangSmith runs from every file of a directory are merged before traces are built: webhook
deliveries and paged dumps split one trace over several files. Each file is still read and
checked on its own, and each trace built on its own, so one bad file or trace costs only itself.

Only regular files are read, and never past `max_trace_bytes()` once decompressed.
"""

from __future__ import annotations

import bz2
import errno
import gzip
import io
import lzma
import os
import stat
import warnings
import zlib
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, islice
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.boundary import check_trace
from ctxlab._ingest.ceiling import (  # noqa: F401 - MAX_* re-exported: where users looked
    CHUNK,
    MAX_BYTES_VARIABLE,
    MAX_TRACE_BYTES,
    max_trace_bytes,
    too_large,
)
from ctxlab._ingest.format_hints import unknown_format
from ctxlab._ingest.formats import langsmith, registry
from ctxlab._ingest.formats.message_lists import looks_like_message_list, trace_from_list
from ctxlab._ingest.shared_json import SharedLines
from ctxlab._trace import Trace

SUFFIXES = (".json", ".jsonl", ".ndjson", ".gz", ".xz", ".bz2", ".traj", ".eval", ".parquet")


# Recognised by magic bytes, since users rename files.
COMPRESSIONS: tuple[tuple[bytes, str, Callable[[BinaryIO], io.BufferedIOBase]], ...] = (
    (b"\x1f\x8b", "gzip", lambda raw: gzip.GzipFile(fileobj=raw)),
    (b"\xfd7zXZ\x00", "xz", lzma.LZMAFile),
    (b"BZh", "bzip2", bz2.BZ2File),
)


class TraceLoadWarning(UserWarning):
    """A file of a directory could not be loaded; the good ones still were."""


class TraceList(list[Trace]):
    """The loaded traces, in file order, plus `errors` (files or traces of a directory that
    failed to load, each once) and `skipped` (entries of a directory with a trace file's name
    that are not regular files: pipes, sockets, devices, broken or looping links)."""

    def __init__(
        self,
        traces: list[Trace],
        errors: list[TraceFormatError] | None = None,
        skipped: list[TraceFormatError] | None = None,
    ) -> None:
        super().__init__(traces)
        self.errors: list[TraceFormatError] = list(errors or [])
        self.skipped: list[TraceFormatError] = list(skipped or [])


def _decompress(
    data: bytes,
    name: str,
    opener: Callable[[BinaryIO], io.BufferedIOBase],
    source: str,
    limit: int,
) -> bytes:
    """Every member of a compressed stream, read a chunk at a time and refused as soon as it
    passes the ceiling (`limit`), so a bomb never expands in memory."""
    if name == "gzip":
        whole = _one_gzip_member(data, limit)
        if whole is not None:
            return whole
    out = bytearray()
    try:
        with opener(io.BytesIO(data)) as stream:
            while chunk := stream.read(CHUNK):
                out += chunk
                if len(out) > limit:
                    raise too_large(source, limit, f"decompressed {name} data")
    except (EOFError, OSError, ValueError, zlib.error, lzma.LZMAError) as exc:
        raise TraceFormatError(
            f"truncated or corrupt {name} data ({exc}); expected a complete {name} file",
            source=source,
        ) from exc
    return bytes(out)


def _one_gzip_member(data: bytes, limit: int) -> bytes | None:
    """A gzip file of one whole member within `limit`, in one zlib call; None for anything
    else (several members, past the limit, damaged), which the chunked stream then reads and
    judges. `GzipFile`'s chunked reads were a sixth of loading a 10 kB session."""
    inflate = zlib.decompressobj(wbits=31)  # 16 + 15: a gzip header and trailer
    try:
        out = inflate.decompress(data, limit + 1)
    except zlib.error:
        return None
    if not inflate.eof or inflate.unused_data or len(out) > limit:
        return None
    return out


_NOT_REGULAR = "not a regular file (a pipe, device or socket); expected a trace file"


def _read_raw(path: Path, source: str, limit: int) -> bytes:
    """The file's bytes, refusing what is not a regular file (a FIFO would block, a device
    never ends) and anything past the size ceiling (`limit`), before reading. The file is
    opened without blocking and read with `os.read`: a buffered file object and its opener
    were a twentieth of loading a 13 kB session."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise TraceFormatError(_NOT_REGULAR, source=source)
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise TraceFormatError(_NOT_REGULAR, source=source)
            if info.st_size > limit:
                raise too_large(source, limit, "the file")
            # One byte more than the size: all of it, and the end seen, in one call.
            data = os.read(fd, info.st_size + 1)
            if len(data) != info.st_size:  # it changed, or a read stopped at 2 GB: read on
                parts = [data]
                while chunk := os.read(fd, CHUNK):
                    parts.append(chunk)
                data = b"".join(parts)
        finally:
            os.close(fd)
    except OSError as exc:
        raise TraceFormatError(f"cannot read file: {exc.strerror or exc}", source=source) from exc
    return data


def _read_bytes(path: Path) -> bytes:
    """The file's bytes, decompressed; text is checked to be UTF-8 (so errors can name the
    line), binary containers (`registry.CONTAINERS`) are left to their opener."""
    source = str(path)
    limit = max_trace_bytes()
    data = _read_raw(path, source, limit)
    for magic, name, opener in COMPRESSIONS:
        if data.startswith(magic):
            data = _decompress(data, name, opener, source, limit)
            break
    if registry.container(data) is not None or data.isascii():  # ASCII: UTF-8 already
        return data
    try:
        data.decode("utf-8")  # builds the whole text only to check it: past ASCII only
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
    if "memory" in exc.msg.lower():  # orjson's "Not enough memory": the file is not at fault
        return TraceFormatError(_NO_MEMORY, source=source)
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
    return list(iter_values(path, shared))


def iter_values(path: Path, shared: SharedLines | None = None) -> Iterator[tuple[Any, int | None]]:
    """`read_values` one value at a time: a JSONL file's lines are parsed as they are asked
    for, so a caller that stops early (an unknown format on line 1) never parses the rest."""
    data = _read_bytes(path)
    source = str(path)
    opener = registry.container(data)
    if opener is not None:
        yield from opener(data, source)
        return
    if not data or data.isspace():
        raise TraceFormatError("empty file; expected JSON or JSONL", source=source)
    parse = orjson.loads if shared is None else shared.loads
    lines = _lines(data)
    if b"\n" in data.strip():
        # Two non-blank lines: a first line that parses is a whole value with more after it,
        # which no JSON document is, so the file is JSON Lines and the whole-document parse
        # (it read the first line again, only to fail) is skipped.
        number, line = next(lines)
        try:
            value = parse(line)
        except orjson.JSONDecodeError:
            pass  # a document spread over lines (or no JSON): judged whole below
        else:
            yield value, number
            for number, line in lines:
                try:
                    value = parse(line)
                except orjson.JSONDecodeError as exc:
                    raise _json_error(exc, line, source, number - 1) from None
                yield value, number
            return
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise _json_error(exc, data, source) from None
    yield document, None


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """The non-blank lines of `data`, numbered from 1, found one at a time (`split` would
    hold every line at once: 3.5 million of them for 10 MB of `{}` lines)."""
    start, number, size = 0, 1, len(data)
    while start < size:
        end = data.find(b"\n", start)
        if end < 0:
            end = size
        line = data[start:end]
        if line and not line.isspace():
            yield number, line
        start, number = end + 1, number + 1


SNIFF_VALUES = 200
"""Values a format is recognised from (`registry.detect`): the first lines of a JSONL file, or
its one document. The rest is parsed only once a reader is chosen, and LangSmith records and
message lists one at a time, so a file no reader claims stops at its first line."""

_TOO_DEEP = "values nested too deeply to read (expected the nesting of a trace export)"


def _unencodable(exc: orjson.JSONEncodeError) -> str:
    """The line for a value a reader could not turn back into JSON text (a tool's arguments,
    an attribute kept as text): orjson stops at 255 levels of nesting, as `RecursionError`
    stops the parser, and at integers beyond 64 bits."""
    if "ecursion" in str(exc):
        return _TOO_DEEP
    return f"a value that cannot be written back as JSON text ({exc}); expected JSON values"


_NO_MEMORY = (
    "too large for memory (not enough memory to read this file); split it, or load it on a "
    "machine with more memory"
)


def _describe(value: Any) -> str:
    if isinstance(value, dict):
        return "an object with keys " + ", ".join(sorted(map(str, value))[:8])
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return f"a JSON {type(value).__name__}"


def _unknown(value: Any) -> str:
    """The closest formats to `value` and where the rest are listed (`format_hints`)."""
    return unknown_format(value, _describe(value))


def _items(value: dict[str, Any], source: str, line: int | None) -> list[tuple[str, Any]]:
    """The run records of an ingestion-ops object, `{"post": [...], "patch": [...]}`, each with
    its name in the file (`patch[0]`). The JS SDK writes patches without `id`: they name their
    run by `trace_id` and `dotted_order`, whose last segment ends in the run's id
    (`langsmith.id_from_dotted`), so the id is taken from there."""
    items: list[tuple[str, Any]] = []
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
        for index, item in enumerate(part):
            name = f"{key}[{index}]"
            if isinstance(item, dict) and "id" not in item and "run_id" not in item:
                rid = langsmith.id_from_dotted(item.get("dotted_order"))
                if rid is None:
                    missing = (
                        "dotted_order"
                        if "dotted_order" not in item
                        else "run id at the end of its dotted_order"
                    )
                    raise TraceFormatError(
                        f"{name}: no 'id', and no {missing} to take it from "
                        f"(keys: {', '.join(sorted(item)) or 'none'})",
                        source=source,
                        line=line,
                    )
                item = {**item, "id": rid}
            items.append((name, item))
    return items


def _record_kind(value: Any) -> str | None:
    """What `_split` takes a value for when no format reader claims the file: a webhook
    delivery (`runs`), an ingestion-ops object (`post`/`patch`), a run, a list of runs, a
    message list; None for anything else (an unknown format)."""
    if isinstance(value, dict) and isinstance(value.get("runs"), list):
        return "webhook"
    if isinstance(value, dict) and ("post" in value or "patch" in value) and "id" not in value:
        return "ops"
    if langsmith.looks_like_run(value):
        return "run"
    if isinstance(value, list) and any(langsmith.looks_like_run(v) for v in value):
        return "runs"
    if looks_like_message_list(value):
        return "messages"
    return None


def _split(path: Path) -> tuple[list[langsmith.Run], list[Trace], str | None]:
    """LangSmith runs and ready traces of one file, plus its LangSmith shape.

    A file another format claims (`registry.detect`) is read whole by that format's module;
    otherwise its values are LangSmith records (normalised here, so a bad record fails its own
    file only) or message lists."""
    source = str(path)
    shared = SharedLines()
    stream = iter_values(path, shared)
    # Sharing pays only for LangSmith records and message lists: a format reader's values are
    # unshared (parsed again) before it reads them, and a file whose first value is neither
    # record nor list is a reader's or refused at that value. So the first line is parsed
    # plainly and decides for the head (a look-up per member of the head's long lines was a
    # seventh of loading an OpenHands V1 file of two lines).
    shared.paused = True
    head = list(islice(stream, 1))
    shared.paused = not head or _record_kind(head[0][0]) is None
    head += islice(stream, SNIFF_VALUES - 1)
    reader = registry.detect(head)
    shared.paused = reader is not None
    if reader is not None:
        values = head + list(stream)
        shared.unshare()  # their readers may edit what they parse; LangSmith's copy first
        return [], reader.read(values, source), None
    runs: list[langsmith.Run] = []
    traces: list[Trace] = []
    raw_runs: list[dict[str, Any]] = []
    webhook = False
    for value, line in chain(head, stream):  # one at a time: a bad line stops the read
        items: list[tuple[str, Any]]
        indexed = True
        kind = _record_kind(value)
        if kind == "webhook":
            items, webhook = [(f"item {i}", v) for i, v in enumerate(value["runs"])], True
        elif kind == "ops":
            items = _items(value, source, line)
        elif kind == "run":
            items, indexed = [("", value)], False
        elif kind == "runs":
            items = [(f"item {i}", v) for i, v in enumerate(value)]
        elif kind == "messages":
            stem = path.name.split(".")[0]
            trace_id = stem if line is None else f"{stem}:{line}"
            traces.append(trace_from_list(value, source=source, trace_id=trace_id, line=line))
            continue
        else:
            raise TraceFormatError(_unknown(value), source=source, line=line)
        for name, item in items:
            where = f"{name}: " if indexed else ""
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


def _files(path: Path) -> tuple[list[Path], list[TraceFormatError]]:
    """The trace files under a directory, sorted, and the entries named like one that are not
    regular files (each with why it was skipped): a FIFO would block a read, a device never
    ends, a link loop or a dangling link has nothing to read."""
    files: list[Path] = []
    skipped: list[TraceFormatError] = []
    for entry in sorted(path.rglob("*")):
        if not entry.name.lower().endswith(SUFFIXES):
            continue
        try:
            mode = os.stat(entry).st_mode
        except OSError as exc:
            why = "a link that loops" if exc.errno == errno.ELOOP else "a dangling link"
            skipped.append(TraceFormatError(f"skipped: {why}", source=str(entry)))
            continue
        if stat.S_ISREG(mode):
            files.append(entry)
        elif not stat.S_ISDIR(mode):
            skipped.append(TraceFormatError(f"skipped: {_NOT_REGULAR}", source=str(entry)))
    return files, skipped


def _file_order(traces: list[Trace], files: list[str]) -> list[Trace]:
    """`traces` in the order of the files they came from (a stable sort: each file's own
    order kept); LangSmith traces, built after every file was read, go back among them."""
    rank = {name: i for i, name in enumerate(files)}
    return sorted(traces, key=lambda t: rank.get(t.source, len(rank)))


def _unique_ids(traces: list[Trace]) -> None:
    """Give each trace of a load its own id: a repeated id (the same session exported twice,
    ATIF's `NORMALIZED_SESSION_ID`) gets `-2`, `-3`, ... in load order; its subagents' ids,
    which start with it, follow."""
    taken = {t.trace_id for t in traces}
    seen: set[str] = set()
    for trace in traces:
        old = trace.trace_id
        if old not in seen:
            seen.add(old)
            continue
        n = 2
        while f"{old}-{n}" in taken:
            n += 1
        new = f"{old}-{n}"
        taken.add(new)
        seen.add(new)
        _rename(trace, old, new)


def _rename(trace: Trace, old: str, new: str) -> None:
    """Rename a trace from `old` to `new`, and the subagents under it that carry its id."""
    trace.trace_id = new + trace.trace_id[len(old) :]
    for sub in trace.subagents:
        if sub.parent_trace_id == old:
            sub.parent_trace_id = new
        if sub.trace_id.startswith(old + "/"):
            _rename(sub, old, new)


def _unshared_errors(
    pieces: list[tuple[str, list[langsmith.Run]]],
) -> tuple[list[langsmith.Run], list[TraceFormatError]]:
    """The LangSmith runs of the files that read well on their own, and an error for each file
    that does not.

    Runs merge by id across files (a webhook delivery, then its patch), so a malformed copy of
    a run in one file would replace the good record of another and fail under the good file's
    name. A run found in several files is therefore checked piece by piece before the merge;
    a file with a bad piece is reported once, by its own name, and none of its runs merge."""
    files_of: dict[str, set[str]] = {}
    for source, runs in pieces:
        for run in runs:
            files_of.setdefault(run.id, set()).add(source)
    kept: list[langsmith.Run] = []
    errors: list[TraceFormatError] = []
    for source, runs in pieces:
        try:
            for run in runs:
                if len(files_of[run.id]) > 1:
                    langsmith.check_piece(run)
        except TraceFormatError as exc:
            errors.append(exc.located(source))
            continue
        kept.extend(runs)
    return kept, errors


def _checked(traces: list[Trace], errors: list[TraceFormatError]) -> list[Trace]:
    """The traces replay and evaluation can walk (`boundary.check_trace`); each other one
    becomes an error in `errors`, costing only itself."""
    kept = []
    for trace in traces:
        try:
            check_trace(trace)
        except TraceFormatError as exc:
            errors.append(exc)
            continue
        kept.append(trace)
    return kept


def _once(errors: list[TraceFormatError]) -> list[TraceFormatError]:
    """Each error once (a subagent file read with its session and again on its own)."""
    seen: set[str] = set()
    out = []
    for error in errors:
        if str(error) not in seen:
            seen.add(str(error))
            out.append(error)
    return out


_MISSING = frozenset({errno.ENOENT, errno.ENOTDIR, errno.EBADF, errno.ELOOP})
"""The `os.stat` errors that mean "nothing there" (those `Path.exists` answers False for)."""


def load_all(paths: list[str | Path]) -> TraceList:
    """Traces from several files and directories, in file order; failures are collected, not
    raised, and each file is read on its own, so a bad file costs only itself."""
    return _load_all(paths)[0]


def _load_all(paths: list[str | Path]) -> tuple[TraceList, bool]:
    """`load_all`, and whether a path given was a directory (for `load`, which would
    otherwise look at the path once more)."""
    directory = False
    pieces: list[tuple[str, list[langsmith.Run]]] = []
    shapes: dict[str, str] = {}
    traces: list[Trace] = []
    errors: list[TraceFormatError] = []
    skipped: list[TraceFormatError] = []
    order: list[str] = []
    for given in paths:
        path = given if isinstance(given, Path) else Path(given)
        try:
            mode = os.stat(path).st_mode  # one look, where exists() and is_dir() took two
        except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
            if isinstance(exc, OSError) and exc.errno not in _MISSING:
                raise
            errors.append(TraceFormatError("no such file or directory", source=str(path)))
            continue
        files = [path]
        if stat.S_ISDIR(mode):
            directory = True
            files, passed = _files(path)
            skipped.extend(passed)
        for file in files:
            order.append(str(file))
            try:
                file_runs, file_traces, shape = _split(file)
            except TraceFormatError as exc:
                errors.append(exc.located(str(file)))
                continue
            except RecursionError:
                errors.append(TraceFormatError(_TOO_DEEP, source=str(file)))
                continue
            except orjson.JSONEncodeError as exc:  # a reader re-encoding a value as JSON text
                errors.append(TraceFormatError(_unencodable(exc), source=str(file)))
                continue
            except MemoryError:
                errors.append(TraceFormatError(_NO_MEMORY, source=str(file)))
                continue
            if file_runs:
                pieces.append((str(file), file_runs))
            traces.extend(file_traces)
            if shape:
                shapes[str(file)] = shape
    runs, bad = _unshared_errors(pieces)
    errors.extend(bad)
    if runs:
        built, failed = langsmith.traces_from_runs(runs, shapes)
        traces.extend(built)
        errors.extend(failed)
    for link in registry.links():
        traces = link(traces)
    traces = _file_order(_checked(traces, errors), order)
    _unique_ids(traces)
    return TraceList(traces, _once(errors), skipped), directory


def load(path: str | Path) -> TraceList:
    """Every trace in a file, `.gz` file or directory, as canonical `Trace`s.

    A bad file raises `TraceFormatError`. In a directory, good traces load and each bad file
    is reported in the result's `errors` and as a `TraceLoadWarning`; nothing is half-loaded.
    """
    result, directory = _load_all([path])
    if directory:
        for error in [*result.errors, *result.skipped]:
            warnings.warn(str(error), TraceLoadWarning, stacklevel=2)
        return result
    if result.errors:
        raise result.errors[0]
    return result


Source = str | os.PathLike[str] | Trace | Iterable[str | os.PathLike[str] | Trace]
"""What the functions that take traces accept: a path (file, `.gz` file or directory), a
`Trace`, or a collection of them."""


def given_traces(source: Source) -> TraceList:
    """The traces `source` names, as given (subagents inside their parents): the `Trace`s
    themselves, then every path's traces loaded together (`load_all`: failures are collected in
    `errors` and `skipped`, not raised). A string is a path, never a list of letters; anything
    but a path or a `Trace` is a `TypeError` saying what was given."""
    if isinstance(source, Trace | str | os.PathLike):
        items: list[Any] = [source]
    elif isinstance(source, bytes) or not isinstance(source, Iterable):
        raise TypeError(
            "traces must be a path, a Trace, or a list of paths or traces; "
            f"got {type(source).__name__}"
        )
    else:
        items = list(source)
    traces: list[Trace] = []
    paths: list[str | Path] = []
    for item in items:
        if isinstance(item, Trace):
            traces.append(item)
        elif isinstance(item, str | os.PathLike):
            paths.append(Path(item))
        else:
            raise TypeError(
                f"traces: each item must be a path or a Trace; got {type(item).__name__}"
            )
    if not paths:
        return TraceList(traces)
    loaded = load_all(paths)
    return TraceList([*traces, *loaded], loaded.errors, loaded.skipped)


def top_traces(source: Source) -> list[Trace]:
    """The traces `source` names, subagents inside their parents: a path is loaded as `load`
    loads it, a trace stands for itself, and in a collection the first file that fails to
    load raises."""
    if isinstance(source, str | os.PathLike):
        return load(os.fspath(source))
    found = given_traces(source)
    if found.errors:
        raise found.errors[0]
    return found


def traces_of(source: Source) -> list[Trace]:
    """Every trace `source` names (`top_traces`), subagents included (depth first), as the CLI
    walks them. The twins of the commands (`ctxlab.compare`, `ctxlab.calibrate`,
    `ctxlab.check_replay`) take their traces through here."""
    return [t for top in top_traces(source) for t in top.walk()]
