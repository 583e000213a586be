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
import zipfile
import zlib
from typing import Any

import orjson

from ctxlab.errors import TraceFormatError

MAGIC = b"PK\x03\x04"
"""A zip file's local-header signature."""

MAX_UNCOMPRESSED_BYTES = 2 * 1024**3
"""Most bytes the members ctxlab reads may decompress to, all together."""

HEADERS = ("header.json", "_journal/start.json")
"""Where the eval spec lives: the finished log's header, else the journal of a running one."""

SAMPLES_DIR = "samples/"

_CHUNK = 1 << 20


def _read_member(archive: zipfile.ZipFile, name: str, budget: list[int], source: str) -> bytes:
    """A member's bytes, read in chunks so a lying size field cannot exceed the budget."""
    out = bytearray()
    try:
        with archive.open(name) as member:
            while chunk := member.read(_CHUNK):
                budget[0] -= len(chunk)
                if budget[0] < 0:
                    raise TraceFormatError(
                        f"zip member {name!r}: the log decompresses to more than "
                        f"{MAX_UNCOMPRESSED_BYTES:,} bytes (a zip bomb or an unusually large "
                        "log); expected an Inspect .eval log under that size",
                        source=source,
                    )
                out += chunk
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
        raise TraceFormatError(
            f"zip member {name!r} is corrupt or truncated ({exc}); expected a complete .eval log",
            source=source,
        ) from exc
    return bytes(out)


def _json_member(archive: zipfile.ZipFile, name: str, budget: list[int], source: str) -> Any:
    data = _read_member(archive, name, budget, source)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise TraceFormatError(
            f"zip member {name!r} is not valid JSON ({exc}); expected a JSON object",
            source=source,
        ) from exc


def open_eval(data: bytes, source: str) -> list[tuple[Any, int | None]]:
    """The `.eval` zip as one EvalLog-shaped JSON value, for `ctxlab.formats.inspect_ai`."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, zlib.error, EOFError, OSError, ValueError) as exc:
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
        budget = [MAX_UNCOMPRESSED_BYTES]
        header = _json_member(archive, header_name, budget, source)
        if not isinstance(header, dict):
            raise TraceFormatError(
                f"zip member {header_name!r} must be a JSON object (the eval log header), "
                f"got {type(header).__name__}",
                source=source,
            )
        samples = [
            _json_member(archive, name, budget, source)
            for name in names
            if name.startswith(SAMPLES_DIR) and name.endswith(".json")
        ]
    return [({**header, "samples": samples}, None)]
