"""Output: the recorded ops made reproducible, then written as JSONL compressed with xz."""

from __future__ import annotations

import json
import lzma
import re
import uuid
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .seeded import stable_int

BASE_TIME = datetime(2026, 11, 24, 9, 30, 0, tzinfo=UTC)
ID_NAMESPACE = uuid.UUID("6f1c3a52-9d0e-4c1b-8a57-2b1f0c9e7d44")
UUID_RE = re.compile(
    r"(?<![0-9a-f])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
    r"(?![0-9a-f])"
)
# Random hex ids without dashes: deepagents' history session id, and LangChain's per-process
# `lc_internal_call` token on middleware-internal model calls (the summariser).
HEX_ID_RE = re.compile(r'(?:(?<=session_)|(?<="lc_internal_call": "))[0-9a-f]{32}(?![0-9a-f])')
# The matches of UUID_RE and HEX_ID_RE, found by searches that begin with a literal, which `re`
# skips ahead to, instead of a look-behind tried at every character: the same matches in the
# same order, in a tenth of the time on the long sample's 80 MB (4 s less per regeneration).
UUID_TAIL_RE = re.compile(r"-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?![0-9a-f])")
HEX_ID_AFTER_RES = (
    re.compile(r"session_([0-9a-f]{32})(?![0-9a-f])"),
    re.compile(r'"lc_internal_call": "([0-9a-f]{32})(?![0-9a-f])'),
)
HEX_DIGITS = frozenset("0123456789abcdef")
DOTTED_TS = "%Y%m%dT%H%M%S%fZ"
TOOL_SECONDS = {"run_tests": 6.4, "git_diff": 0.41, "task": 0.0}


def op_seconds(op: dict[str, Any], index: int) -> float:
    """Simulated time since the previous op: model latency, tool time or tracer overhead."""
    jitter = 0.8 + (stable_int(index) % 400) / 1000
    if op["op"] == "patch" and op.get("run_type") == "llm":
        usage = op["extra"]["metadata"]["usage_metadata"]
        return (0.7 + 0.013 * usage["output_tokens"] + 2e-6 * usage["input_tokens"]) * jitter
    if op["op"] == "patch" and op.get("run_type") == "tool":
        return TOOL_SECONDS.get(op["name"], 0.012) * jitter
    return 0.0004 * jitter


def uuid_spans(text: str) -> list[tuple[int, int]]:
    """Where `UUID_RE` matches in `text`, in order: a dashed tail, then its 8 hex digits before
    (not themselves preceded by one). A failed candidate resumes one character on, so a tail
    that overlaps it is still found."""
    spans = []
    pos = 0
    while match := UUID_TAIL_RE.search(text, pos):
        tail = match.start()
        start = tail - 8
        if (
            start >= 0
            and all(c in HEX_DIGITS for c in text[start:tail])
            and (start == 0 or text[start - 1] not in HEX_DIGITS)
        ):
            spans.append((start, match.end()))
            pos = match.end()
        else:
            pos = tail + 1
    return spans


def hex_id_spans(text: str) -> list[tuple[int, int]]:
    """Where `HEX_ID_RE` matches in `text`, in order (the two prefixes never overlap a match)."""
    return sorted(m.span(1) for pattern in HEX_ID_AFTER_RES for m in pattern.finditer(text))


def replace_spans(text: str, spans: Sequence[tuple[int, int]], new: Callable[[str], str]) -> str:
    """`text` with each span's text `t` replaced by `new(t)`, left to right (as `re.sub`)."""
    parts = []
    last = 0
    for start, end in spans:
        parts += [text[last:start], new(text[start:end])]
        last = end
    parts.append(text[last:])
    return "".join(parts)


def normalise_ops(raw_ops: Sequence[bytes], sample: str) -> list[str]:
    """Make the recording reproducible without changing its shape.

    * Times: each run's start/end is replaced by a simulated clock (fixed base, advanced per
      op by plausible latencies), everywhere it appears: `start_time`, `end_time`, event
      times and every `dotted_order` segment. Order and formats are kept.
    * Ids: every UUID (uuid7 run ids, uuid4 message ids, `lc_run--<uuid>-0`, checkpoint
      namespaces) and the random hex ids of `HEX_ID_RE` become a uuid5 of their order of
      first appearance.
    * Host: `extra.runtime.platform`/`runtime_version` get fixed values; `tags` are sorted
      (the tracer builds them from a set, so their order depends on the hash seed).
    """
    clock = BASE_TIME
    starts: dict[str, datetime] = {}
    ends: dict[str, datetime] = {}
    mapping: dict[str, str] = {}

    def new_id(original: str) -> str:
        key = str(uuid.UUID(original))
        if key not in mapping:
            mapping[key] = str(uuid.uuid5(ID_NAMESPACE, f"{sample}:{len(mapping)}"))
        mapped = mapping[key]
        return mapped if "-" in original else uuid.UUID(mapped).hex

    lines = []
    for index, raw in enumerate(raw_ops):
        op = json.loads(raw)
        clock += timedelta(seconds=op_seconds(op, index))
        run_id = op["id"]
        (starts if op["op"] == "post" else ends).setdefault(run_id, clock)
        op["start_time"] = starts[run_id].isoformat()
        if op["op"] == "patch":
            op["end_time"] = ends[run_id].isoformat()
        times = {"start": starts.get(run_id), "end": ends.get(run_id)}
        for event in op.get("events") or []:
            event["time"] = times[event["name"]].isoformat()
        op["dotted_order"] = ".".join(
            f"{starts[segment[22:]]:{DOTTED_TS}}{segment[22:]}"
            for segment in op["dotted_order"].split(".")
        )
        runtime = op.get("extra", {}).get("runtime")
        if runtime:
            runtime.update(platform="linux", runtime_version="3.11")
        if op.get("tags"):
            op["tags"] = sorted(op["tags"])
        line = json.dumps(op, ensure_ascii=False)
        line = replace_spans(line, uuid_spans(line), new_id)  # UUID_RE.sub(new_id, line)
        line = replace_spans(line, hex_id_spans(line), new_id)  # HEX_ID_RE.sub(new_id, line)
        lines.append(line)
    return lines


def write_jsonl_xz(path: Path, lines: Sequence[str]) -> None:
    """JSONL compressed with xz (LZMA), which carries no timestamp or name: reproducible bytes.

    xz, not gzip: every model call of a LangSmith export repeats the whole history, and LZMA's
    megabyte-sized window finds those repeats where gzip's 32 KB window cannot (80 MB of JSONL
    is 0.3 MB as .xz, 12.8 MB as .gz).
    """
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(lzma.compress(data, format=lzma.FORMAT_XZ, preset=6))
