"""Property test: `ctxlab.load` on a mutated trace file returns traces or raises a located
`TraceFormatError`, never another exception, and finishes quickly.

The inputs are real exports of every format (the team's shared real traces when present, and
always the repository's own samples), mutated the ways real files break: truncation, byte
flips, a JSON value swapped for one of another type, a removed key, duplicated ids and
parent-id cycles. Hypothesis is derandomized so a failure reproduces in CI.
"""

from __future__ import annotations

import bz2
import copy
import gzip
import lzma
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxlab
from ctxlab._errors import TraceFormatError

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "data" / "real-traces"
MAX_BYTES = 400_000
"""Sources are cut to this many bytes (whole JSONL lines) so each example loads quickly."""

ID_KEYS = ("id", "uuid", "run_id", "span_id", "spanId", "event_id")
PARENT_KEYS = ("parent_run_id", "parentUuid", "parent_id", "parentSpanId", "parent_span_id")
NUMBER = re.compile(rb"-?[0-9]+(?:\.[0-9]+)?")
TOKENS = (b"NaN", b"Infinity", b"-Infinity", b'"\\ud800"', b"[" * 1100 + b"]" * 1100)
SWAPS: tuple[Any, ...] = (
    None,
    True,
    False,
    0,
    -1,
    1.5,
    "",
    "x",
    [],
    {},
    [1],
    {"a": 1},
    1e308,
    2**63 - 1,
)


def _decompressed(path: Path) -> bytes:
    data = path.read_bytes()
    for magic, opener in (
        (b"\x1f\x8b", gzip.decompress),
        (b"\xfd7zXZ\x00", lzma.decompress),
        (b"BZh", bz2.decompress),
    ):
        if data.startswith(magic):
            return opener(data)
    return data


def _cut(data: bytes) -> bytes:
    """A JSONL file's first lines up to `MAX_BYTES`; a JSON document stays whole."""
    if len(data) <= MAX_BYTES or b"\n" not in data.strip():
        return data
    try:
        orjson.loads(data.split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        return data
    return data[: data.rfind(b"\n", 0, MAX_BYTES) + 1]


def sources(shared: Path | None = SHARED, limit: int | None = MAX_BYTES) -> list[tuple[str, bytes]]:
    """(name, decompressed bytes) of every sample small enough to fuzz."""
    found: list[Path] = []
    if shared is not None and shared.is_dir():
        found += sorted(p for p in shared.rglob("*") if p.is_file() and p.suffix != ".txt")
    found += sorted((REPO / "tests" / "data").rglob("*.*"))
    found.append(REPO / "traces" / "deepagents_short_session.jsonl.xz")
    out = generated()
    for path in found:
        if not path.is_file() or path.suffix in (".md", ".py", ".txt"):
            continue
        data = _decompressed(path)
        if limit is not None:
            if len(data) > 8 * limit and b"\n" not in data.strip():
                continue  # a large JSON document: too slow to load hundreds of times
            data = _cut(data)
        out.append((path.name.split(".")[0], data))
    return out


def generated() -> list[tuple[str, bytes]]:
    """Shapes no file here holds, built from the repository's own samples and test builders:
    an OpenAI message list, a run copied from the LangSmith UI, an ATIF trajectory."""
    from langchain_core.messages import convert_to_openai_messages

    from tests.langsmith_shapes import merged_runs
    from tests.test_format_atif import conformant
    from tests.test_format_langsmith_shapes import copy_of

    sample = REPO / "traces" / "deepagents_short_session.jsonl.xz"
    (trace,) = ctxlab.load(sample)
    runs = merged_runs([orjson.loads(line) for line in _decompressed(sample).splitlines() if line])
    return [
        ("message-list", orjson.dumps(convert_to_openai_messages(trace.messages))),
        ("langsmith-copied-run", orjson.dumps(copy_of(runs[0]))),
        ("atif", orjson.dumps(conformant())),
    ]


def _values(data: bytes) -> tuple[list[Any], bool] | None:
    """The file's JSON values and whether it is JSONL, or None when it is not JSON text."""
    try:
        return [orjson.loads(data)], False
    except orjson.JSONDecodeError:
        pass
    try:
        return [orjson.loads(line) for line in data.splitlines() if line.strip()], True
    except orjson.JSONDecodeError:
        return None


def _nodes(value: Any, out: list[tuple[Any, Any]], limit: int = 20_000) -> None:
    """(container, key) of every JSON value below `value`, breadth first, up to `limit`."""
    queue = [value]
    while queue and len(out) < limit:
        node = queue.pop(0)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, item in items:
            out.append((node, key))
            if isinstance(item, dict | list):
                queue.append(item)


def _dicts_with(values: list[Any], keys: tuple[str, ...]) -> list[dict[str, Any]]:
    nodes: list[tuple[Any, Any]] = []
    _nodes(values, nodes)
    found = [n[k] for n, k in nodes if isinstance(n[k], dict)]
    return [d for d in found if any(k in d for k in keys)]


def mutate(data: bytes, rng: random.Random) -> bytes:
    """One mutation of a file's bytes, chosen by `rng`."""
    kind = rng.choice(("truncate", "flip", "token", "swap", "swap", "remove", "duplicate", "cycle"))
    if kind == "truncate":
        return data[: rng.randrange(len(data) + 1)]
    if kind == "flip":
        out = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            if out:
                out[rng.randrange(len(out))] = rng.randrange(256)
        return bytes(out)
    if kind == "token":  # a number replaced by what orjson rejects and lenient parsers accept
        found = NUMBER.search(data, rng.randrange(len(data) + 1))
        if found is None:
            return data
        return data[: found.start()] + rng.choice(TOKENS) + data[found.end() :]
    parsed = _values(data)
    if parsed is None:
        return data[: rng.randrange(len(data) + 1)]
    values, jsonl = parsed
    for _ in range(rng.randint(1, 3)):
        _mutate_values(values, kind, rng)
    if jsonl:
        return b"\n".join(orjson.dumps(v) for v in values) + b"\n"
    return orjson.dumps(values[0])


def _mutate_values(values: list[Any], kind: str, rng: random.Random) -> None:
    if kind in ("swap", "remove"):
        nodes: list[tuple[Any, Any]] = []
        _nodes(values, nodes)
        if kind == "remove":
            nodes = [(n, k) for n, k in nodes if isinstance(n, dict)]
        if not nodes:
            return
        node, key = rng.choice(nodes)
        if kind == "remove":
            del node[key]
        else:
            # a fresh copy: the containers of SWAPS would otherwise be shared between the
            # mutations of one run and could end up holding themselves (orjson then fails)
            node[key] = copy.deepcopy(rng.choice(SWAPS))
        return
    holders = _dicts_with(values, ID_KEYS)
    if len(holders) < 2:
        return
    a, b = rng.sample(holders, 2)
    key_a = next(k for k in ID_KEYS if k in a)
    key_b = next(k for k in ID_KEYS if k in b)
    if kind == "duplicate":
        a[key_a] = b[key_b]
        return
    parent = next((k for k in PARENT_KEYS if k in a), PARENT_KEYS[0])
    a[parent] = b[key_b]
    b[next((k for k in PARENT_KEYS if k in b), parent)] = a[key_a]


def outcome(path: Path) -> str:
    """'loaded' or 'located'; any other exception propagates."""
    try:
        ctxlab.load(path)
    except TraceFormatError as exc:
        assert exc.source, f"unlocated error: {exc}"
        return "located"
    return "loaded"


SOURCES = sources()


@settings(
    max_examples=500,
    deadline=5000,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(index=st.integers(0, len(SOURCES) - 1), seed=st.integers(0, 2**32 - 1))
def test_mutated_files_load_or_raise_located(
    index: int, seed: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    name, data = SOURCES[index]
    path = tmp_path_factory.mktemp("fuzz") / f"{name}.mutated"
    path.write_bytes(mutate(data, random.Random(seed)))
    outcome(path)
