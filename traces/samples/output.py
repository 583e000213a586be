"""Output: the recorded ops made reproducible, then written as JSONL compressed with xz."""

from __future__ import annotations

import json
import lzma
import re
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .seeded import stable_int

BASE_TIME = datetime(2026, 11, 24, 9, 30, 0, tzinfo=UTC)
ID_NAMESPACE = uuid.UUID("6f1c3a52-9d0e-4c1b-8a57-2b1f0c9e7d44")
UUID_RE = re.compile(r"(?<![0-9a-f])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                     r"(?![0-9a-f])")
# Random hex ids without dashes: deepagents' history session id, and LangChain's per-process
# `lc_internal_call` token on middleware-internal model calls (the summariser).
HEX_ID_RE = re.compile(r'(?:(?<=session_)|(?<="lc_internal_call": "))[0-9a-f]{32}(?![0-9a-f])')
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

    def new_id(match: re.Match[str]) -> str:
        original = match.group(0)
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
        line = HEX_ID_RE.sub(new_id, UUID_RE.sub(new_id, line))
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
