"""Inspect AI's `.eval` log container: a zip of JSON members, opened into one EvalLog document.

An `.eval` file holds `header.json` (the EvalLog without samples; absent while a run is still
going, when `_journal/start.json` holds the eval spec), one `samples/<id>_epoch_<n>.json` per
sample, and summaries ctxlab does not need. The opener assembles the members into the shape of a
`.json` EvalLog (`{..header, "samples": [...]}`) so one reader handles both. Only zips that look
like Inspect logs are claimed; the total decompressed size is capped, since a small zip can
expand to gigabytes.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Iterator
from typing import Any

import orjson
import zstandard

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.ceiling import max_trace_bytes, too_large

MAGIC = b"PK\x03\x04"
"""A zip file's local-header signature."""


HEADERS = ("header.json", "_journal/start.json")
"""Where the eval spec lives: the finished log's header, else the journal of a running one."""

SAMPLES_DIR = "samples/"

ZIP_ZSTANDARD = 93
"""The zip compression method for Zstandard, which Inspect writes by default; Python's
`zipfile` cannot read it before 3.14, so such members are decompressed here."""

_CHUNK = 1 << 20
_LOCAL_HEADER = struct.Struct("<4s22xHH")
"""A zip local file header: signature, fields ctxlab skips, then name and extra lengths."""


def _zstd_chunks(data: bytes, info: zipfile.ZipInfo) -> Iterator[bytes]:
    """A Zstandard member's decompressed bytes, from its compressed bytes in the archive."""
    offset = info.header_offset
    magic, name_len, extra_len = _LOCAL_HEADER.unpack_from(data, offset)
    if magic != MAGIC:
        raise zipfile.BadZipFile("bad local file header")
    start = offset + _LOCAL_HEADER.size + name_len + extra_len
    compressed = data[start : start + info.compress_size]
    if len(compressed) < info.compress_size:
        raise EOFError("member data ends early")
    crc = 0
    with zstandard.ZstdDecompressor().stream_reader(compressed) as reader:
        while chunk := reader.read(_CHUNK):
            crc = zlib.crc32(chunk, crc)
            yield chunk
    if crc != info.CRC:
        raise zipfile.BadZipFile("CRC-32 mismatch")


def _chunks(archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo) -> Iterator[bytes]:
    if info.compress_type == ZIP_ZSTANDARD:
        yield from _zstd_chunks(data, info)
        return
    with archive.open(info) as member:
        while chunk := member.read(_CHUNK):
            yield chunk


def _read_member(
    archive: zipfile.ZipFile, data: bytes, info: zipfile.ZipInfo, budget: list[int], source: str
) -> bytes:
    """A member's bytes, read in chunks so a lying size field cannot exceed the budget."""
    out = bytearray()
    try:
        for chunk in _chunks(archive, data, info):
            budget[0] -= len(chunk)
            if budget[0] < 0:
                limit = max_trace_bytes()
                raise too_large(source, limit, f"the .eval log (at member {info.filename!r})")
            out += chunk
    except (
        zipfile.BadZipFile,
        zlib.error,
        zstandard.ZstdError,
        struct.error,
        EOFError,
        OSError,
        NotImplementedError,
    ) as exc:
        raise TraceFormatError(
            f"zip member {info.filename!r} is corrupt or truncated ({exc}); expected a complete "
            ".eval log",
            source=source,
        ) from exc
    return bytes(out)


def _json_member(
    archive: zipfile.ZipFile, data: bytes, name: str, budget: list[int], source: str
) -> Any:
    raw = _read_member(archive, data, archive.getinfo(name), budget, source)
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise TraceFormatError(
            f"zip member {name!r} is not valid JSON ({exc}); expected a JSON object",
            source=source,
        ) from exc


def open_eval(data: bytes, source: str) -> list[tuple[Any, int | None]]:
    """The `.eval` zip as one EvalLog-shaped JSON value, for `ctxlab._ingest.formats.inspect_ai`."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (
        zipfile.BadZipFile,
        zlib.error,
        EOFError,
        OSError,
        ValueError,
        NotImplementedError,
    ) as exc:
        raise TraceFormatError(
            f"corrupt or truncated zip archive ({exc}); expected an Inspect .eval log",
            source=source,
        ) from exc
    with archive:
        names = archive.namelist()
        header_name = next((n for n in HEADERS if n in names), None)
        if header_name is None:
            shown = ", ".join(names[:5]) or "no members"
            raise TraceFormatError(
                "a zip archive that is not an Inspect AI log: expected header.json or "
                f"_journal/start.json and samples/<id>_epoch_<n>.json members; got {shown}",
                source=source,
            )
        budget = [max_trace_bytes()]  # the members ctxlab reads, all together
        header = _json_member(archive, data, header_name, budget, source)
        if not isinstance(header, dict):
            raise TraceFormatError(
                f"zip member {header_name!r} must be a JSON object (the eval log header), "
                f"got {type(header).__name__}",
                source=source,
            )
        samples = [
            _json_member(archive, data, name, budget, source)
            for name in names
            if name.startswith(SAMPLES_DIR) and name.endswith(".json")
        ]
    return [({**header, "samples": samples}, None)]
