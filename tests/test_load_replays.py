"""Property test: what loads replays and evaluates. For every reader, a real file of its format
with one field swapped for a value of another type (or nested 1,000 levels deep) either
raises a located `TraceFormatError` at load, or loads into traces that replay under every
registered policy and evaluate without an exception.

Complements `tests/test_load_fuzz.py` (which stops at load): text that loaded but broke later
(a text block whose `text` is `true`, a tool definition that is `0`, content nested past
Python's recursion limit, an object where an id belongs) is what this catches."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ctxlab
from ctxlab._errors import TraceFormatError
from ctxlab.policies import get, names
from tests.test_load_fuzz import SWAPS, _values, sources

MAX_BYTES = 40_000
"""Each source cut to this (whole JSONL lines): small traces, so every policy replays fast."""

DEEP = {
    "<deep list>": b"[" * 1_000 + b"]" * 1_000,
    "<deep object>": b'{"a":' * 1_000 + b"{}" + b"}" * 1_000,
    "<deep content>": b'[{"type":"text","text":"x","extra":' + b"[" * 1_000 + b"]" * 1_000 + b"}]",
}
"""Nesting near orjson's limit of 1,024 levels (written as bytes: no encoder goes that deep)."""
WRONG = (
    *SWAPS,
    *DEEP,
    {"type": "text", "text": True},
    [{"type": "text"}],
    [{"type": "text", "text": []}],
)
"""Values of the wrong type: every JSON kind, deep nesting, text blocks whose text is not
text."""


def _small(data: bytes) -> bytes:
    """A JSONL file's first lines up to `MAX_BYTES` (a JSON document stays whole)."""
    if len(data) <= MAX_BYTES or _values(data[: data.find(b"\n")]) is None:
        return data
    return data[: data.rfind(b"\n", 0, MAX_BYTES) + 1]


WINDOW = 200_000
"""Given to every policy with a `window` field, so none stops for want of a model profile."""


def policies() -> list[Any]:
    out = []
    for name in names():
        policy = get(name)
        fields = {f.name for f in dataclasses.fields(policy)}
        out.append(dataclasses.replace(policy, window=WINDOW) if "window" in fields else policy)
    return out


POLICIES = policies()


def field_paths(values: list[Any]) -> list[tuple[Any, ...]]:
    """Every distinct field path of a file's values (list positions as `[]`), sorted: the
    fields a reader may keep, each equally likely to be drawn however often it occurs."""
    found: set[tuple[Any, ...]] = set()

    def walk(node: Any, path: tuple[Any, ...]) -> None:
        if len(found) > 5_000:
            return
        items = node.items() if isinstance(node, dict) else ((None, v) for v in node)
        for key, item in items:
            here = (*path, key)
            found.add(here)
            if isinstance(item, dict | list):
                walk(item, here)

    for value in values:
        if isinstance(value, dict | list):
            walk(value, ())
    return sorted(found, key=repr)


SOURCES = [
    (n, small)
    for n, d in sources()
    if (parsed := _values(small := _small(d))) is not None and field_paths(parsed[0])
]


def swap_field(node: Any, path: tuple[Any, ...], wrong: Any) -> None:
    """Replace every value at `path` (None steps through every list item) with `wrong`."""
    key, rest = path[0], path[1:]
    children = (
        [(node, k) for k in range(len(node))]
        if key is None and isinstance(node, list)
        else [(node, key)]
        if isinstance(node, dict) and key in node
        else []
    )
    for holder, k in children:
        if rest:
            if isinstance(holder[k], dict | list):
                swap_field(holder[k], rest, wrong)
        else:
            holder[k] = wrong


def swapped(data: bytes, rng: random.Random) -> bytes:
    """The file with one field (at every occurrence) set to a wrong-typed value."""
    values, jsonl = _values(data)  # type: ignore[misc]
    paths = field_paths(values)
    wrong = rng.choice(WRONG)
    path = rng.choice(paths)
    for value in values:
        if isinstance(value, dict | list):
            swap_field(value, path, wrong)
    if jsonl:
        out = b"\n".join(orjson.dumps(v) for v in values) + b"\n"
    else:
        out = orjson.dumps(values[0])
    for mark, raw in DEEP.items():
        out = out.replace(orjson.dumps(mark), raw)
    return out


def replays_and_evaluates(path: Path) -> None:
    """Load `path`; a located error, or every trace replayed under every policy and
    evaluated."""
    try:
        traces = ctxlab.load(path)
    except TraceFormatError as exc:
        assert exc.source, f"unlocated error: {exc}"
        return
    for top in traces:
        for trace in top.walk():
            for policy in POLICIES:
                result = ctxlab.replay(trace, policy)
                ctxlab.evaluate(result)


@settings(
    max_examples=80,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(index=st.integers(0, len(SOURCES) - 1), seed=st.integers(0, 2**32 - 1))
def test_what_loads_replays_and_evaluates(
    index: int, seed: int, tmp_path_factory: pytest.TempPathFactory
) -> None:
    name, data = SOURCES[index]
    path = tmp_path_factory.mktemp("swap") / f"{name}.json"
    path.write_bytes(swapped(data, random.Random(seed)))
    replays_and_evaluates(path)


def _source(prefix: str) -> bytes:
    found = [d for n, d in SOURCES if n.startswith(prefix)]
    if not found:
        pytest.skip(f"no {prefix} source (../shared/data absent)")
    return found[0]


CASES = [  # what the issue 34 fuzz run found loading and then failing
    ("agent-aac57f5", ("message", "content", None, "text"), True),
    ("agent-aac57f5", ("message", "content", None, "text"), [1]),
    ("agent-aac57f5", ("message", "content", None, "text"), "<missing>"),
    ("agent-aac57f5", ("message", "content", None, "input"), "<deep object>"),
    ("agent-aac57f5", ("message", "content"), "<deep content>"),
    ("atif", ("agent", "tool_definitions", None), 0),
    ("output", ("history", None, "args", "tools", None), True),
    ("anthropic_managed", (None, "tool_use_id"), {"a": 1}),
    ("anthropic_managed", (None, "agent", "tools", None), 0),
]


@pytest.mark.parametrize(("prefix", "path", "wrong"), CASES)
def test_known_breakers_are_located_or_harmless(
    prefix: str, path: tuple[Any, ...], wrong: Any, tmp_path: Path
) -> None:
    values, jsonl = _values(_source(prefix))  # type: ignore[misc]
    for value in values:
        if isinstance(value, dict | list):
            if wrong == "<missing>":
                _remove(value, path)
            else:
                swap_field(value, path, wrong)
    out = b"\n".join(orjson.dumps(v) for v in values) if jsonl else orjson.dumps(values[0])
    for mark, raw in DEEP.items():
        out = out.replace(orjson.dumps(mark), raw)
    file = tmp_path / f"{prefix}.json"
    file.write_bytes(out)
    replays_and_evaluates(file)


def _remove(node: Any, path: tuple[Any, ...]) -> None:
    """Delete every value at `path` (None steps through list items)."""
    key, rest = path[0], path[1:]
    items = list(node) if key is None and isinstance(node, list) else []
    if isinstance(node, dict) and key in node:
        if not rest:
            del node[key]
            return
        items = [node[key]]
    for item in items:
        if isinstance(item, dict | list):
            _remove(item, rest)


def test_a_trace_built_by_hand_with_bad_blocks_still_replays() -> None:
    """Past the loader (a `Trace` made in code), the counter and the fact extractor still
    walk bad blocks where LangChain's own counter raises: a text block whose text is not text
    is counted as its repr and read as no text, a tool definition that is not one as JSON."""

    from langchain_core.messages import AIMessage, HumanMessage

    from ctxlab._cost.tokens import blocks_size, tool_schema_chars

    human = HumanMessage(content=[{"type": "text", "text": True}, {"type": "text"}, "ask"])
    trace = ctxlab.from_messages([human, AIMessage(content="ok")], tools=[0, {"name": "ls"}])
    assert blocks_size(human.content)[0] == len(repr(human.content[0])) + 0 + 3
    assert tool_schema_chars([0]) == 1
    for policy in POLICIES:
        ctxlab.evaluate(ctxlab.replay(trace, policy))
