"""`ctxlab._ingest.shared_json.SharedLines` parses JSON Lines to exactly what `orjson.loads` gives
per
line (types, key order, errors), shares values repeated byte for byte, and `unshare` undoes it.
"""

from __future__ import annotations

import lzma
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab import load
from ctxlab._ingest import shared_json
from ctxlab._ingest.shared_json import MIN_BYTES, SharedLines

REPO = Path(__file__).resolve().parents[1]

leaves = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=300)
)
values = st.recursive(
    leaves,
    lambda inner: (
        st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=8), inner, max_size=6)
    ),
    max_leaves=40,
)


@contextmanager
def split_small() -> Iterator[None]:
    """Split and look up values from a few bytes on, so short test lines take every path."""
    saved = shared_json.MIN_BYTES, shared_json.SPLIT_BYTES
    shared_json.MIN_BYTES, shared_json.SPLIT_BYTES = 8, 16
    try:
        yield
    finally:
        shared_json.MIN_BYTES, shared_json.SPLIT_BYTES = saved


def exact(value: Any) -> bytes:
    """The value as orjson writes it: tells 1 from 1.0 and keeps key order."""
    return orjson.dumps(value)


def objects(value: Any, seen: dict[int, int] | None = None) -> dict[int, int]:
    """How many times each dict and list object is reached from `value`."""
    seen = {} if seen is None else seen
    if isinstance(value, dict | list):
        seen[id(value)] = seen.get(id(value), 0) + 1
        for child in value.values() if isinstance(value, dict) else value:
            objects(child, seen)
    return seen


@settings(max_examples=150, deadline=None)
@given(st.lists(values, min_size=1, max_size=5), st.lists(st.integers(0, 4), max_size=8))
def test_lines_parse_as_orjson_parses_them(pool: list[Any], picks: list[int]) -> None:
    # lines that repeat earlier values, inside bigger ones, as a LangSmith export does
    lines = [
        orjson.dumps({"history": [pool[i % len(pool)] for i in picks[:k]], "n": k})
        for k in range(len(picks) + 1)
    ]
    lines += [orjson.dumps(v) for v in pool]
    with split_small():
        parser = SharedLines()
        for line in lines:
            assert exact(parser.loads(line)) == exact(orjson.loads(line))


BIG = {"messages": [{"role": "user", "content": "x" * 50}, {"role": "ai", "content": "y" * 60}]}


@pytest.mark.parametrize(
    "line",
    [
        orjson.dumps(BIG) + b"\r",  # a CRLF file split on LF
        b"  " + orjson.dumps(BIG) + b" \t",
        orjson.dumps(BIG, option=orjson.OPT_INDENT_2).replace(b"\n", b" "),
    ],
)
def test_whitespace_around_values_parses_as_orjson_parses_it(line: bytes) -> None:
    with split_small():
        parser = SharedLines()
        assert exact(parser.loads(line)) == exact(parser.loads(line)) == exact(orjson.loads(line))


@pytest.mark.parametrize(
    "line",
    [
        b'{"a": [1, 2,]}' + b" " * MIN_BYTES,
        b'{"a": "' + b"x" * MIN_BYTES + b'", "b": NaN}',
        b'{"a": ["\\ud800' + b"y" * MIN_BYTES + b'"]}',
        b'{"a": [1e400, "' + b"z" * MIN_BYTES + b'"]}',
        b"[" * 1100 + b"]" * 1100,
        b'{"a": 1} {"b": 2}' + b" " * MIN_BYTES,
        b"\xef\xbb\xbf" + orjson.dumps(BIG),  # a byte order mark
    ],
)
def test_bad_lines_raise_orjsons_own_error(line: bytes) -> None:
    with pytest.raises(orjson.JSONDecodeError) as expected:
        orjson.loads(line)
    with split_small(), pytest.raises(orjson.JSONDecodeError) as got:
        SharedLines().loads(line)
    assert str(got.value) == str(expected.value)


def test_repeats_are_shared_until_unshared() -> None:
    message = {"role": "user", "content": "read the file " * 700}  # over SPLIT_BYTES
    lines = [orjson.dumps({"messages": [message] * k, "k": k}) for k in (1, 2, 3)]
    parser = SharedLines()
    parsed = [parser.loads(line) for line in lines]
    first = parsed[0]["messages"][0]
    assert all(m is first for p in parsed for m in p["messages"])
    parser.unshare()
    assert [exact(p) for p in parsed] == [exact(orjson.loads(line)) for line in lines]
    counts = objects(parsed)
    assert max(counts.values()) == 1  # every dict and list reached once: nothing shared


def test_a_file_that_does_not_repeat_itself_stops_sharing(monkeypatch) -> None:
    monkeypatch.setattr(shared_json, "PROBE_BYTES", 50_000)
    parser = SharedLines()
    for i in range(40):
        line = orjson.dumps({"i": i, "text": f"line {i} " * 400})
        assert parser.loads(line) == orjson.loads(line)
    assert not parser.sharing
    repeated = orjson.dumps({"a": "same " * 100, "b": "same " * 100})
    once, again = parser.loads(repeated), parser.loads(repeated)
    assert once == again and once is not again


def test_the_long_sample_loads_the_same_and_shares_its_repeats() -> None:
    path = REPO / "traces" / "deepagents_long_session.jsonl.xz"
    lines = [ln for ln in lzma.decompress(path.read_bytes()).split(b"\n") if ln.strip()]
    parser = SharedLines()
    shared = [parser.loads(line) for line in lines]
    assert parser.sharing
    assert exact(shared) == exact([orjson.loads(line) for line in lines])
    counts = objects(shared)
    assert sum(n - 1 for n in counts.values()) > 10_000  # histories repeat: objects reused
    assert len(load(path)[0].turns) > 100


def _probe_reader(seen: list[list[tuple[Any, int | None]]]) -> type:
    """A format that claims files of `{"probe": ...}` lines and keeps the values it is given
    in `seen` (it builds no trace)."""

    class Reader:
        DESCRIPTION = "test"

        @staticmethod
        def sniff(values: list[tuple[Any, int | None]]) -> bool:
            return all(isinstance(v, dict) and "probe" in v for v, _ in values)

        @staticmethod
        def read(values: list[tuple[Any, int | None]], source: str) -> list:
            seen.append(values)
            return []

    return Reader


def test_other_formats_get_values_of_their_own(tmp_path: Path, monkeypatch) -> None:
    # readers other than LangSmith's may edit what they parse: `load` unshares first
    from ctxlab._ingest.formats import registry

    seen: list[list[tuple[Any, int | None]]] = []
    monkeypatch.setattr(registry, "FORMATS", (_probe_reader(seen), *registry.FORMATS))
    big = {"text": "repeated " * 100}
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps({"probe": i, "big": big}) for i in range(5)))
    load(path)
    counts = objects([v for v, _ in seen[0]])
    assert max(counts.values()) == 1


def test_only_langsmith_and_message_list_files_are_parsed_with_lookups(
    tmp_path: Path, monkeypatch
) -> None:
    # a format reader's values are unshared (parsed again) before it reads them, so `load`
    # parses its file plainly; a LangSmith export still shares its repeats
    from ctxlab._ingest.formats import registry

    looked_up: list[int] = []
    split = SharedLines._value

    def spy(self: SharedLines, raw: Any, depth: int, reused: list[Any]) -> Any:
        looked_up.append(len(raw))
        return split(self, raw, depth, reused)

    monkeypatch.setattr(SharedLines, "_value", spy)
    monkeypatch.setattr(registry, "FORMATS", (_probe_reader([]), *registry.FORMATS))
    big = {"text": "repeated " * 2000}  # over SPLIT_BYTES
    path = tmp_path / "t.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps({"probe": i, "big": big}) for i in range(300)))
    load(path)
    assert looked_up == []
    load(REPO / "traces" / "deepagents_short_session.jsonl.xz")
    assert looked_up
