"""Wrong-typed fields, bad JSON, bombs, special files and bad files in a directory: each gives
one located `TraceFormatError` (or, in a directory, costs only its own file)."""

from __future__ import annotations

import gzip
import json
import lzma
import os
from pathlib import Path
from typing import Any

import pytest

import ctxlab
from ctxlab._errors import TraceFormatError
from ctxlab._ingest.load import TraceLoadWarning


def run(**changes: Any) -> dict[str, Any]:
    """A minimal valid LangSmith model-call run, with `changes` applied."""
    record: dict[str, Any] = {
        "id": "r1",
        "trace_id": "r1",
        "run_type": "llm",
        "name": "model",
        "inputs": {"messages": [{"role": "user", "content": "hi"}]},
        "outputs": {"generations": [[{"text": "hello"}]]},
    }
    record.update(changes)
    return record


def write(path: Path, value: Any) -> Path:
    path.write_text(json.dumps(value))
    return path


def located(path: Path, *words: str) -> TraceFormatError:
    with pytest.raises(TraceFormatError) as info:
        ctxlab.load(path)
    message = str(info.value)
    assert message.startswith(str(path)), message
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return info.value


def test_minimal_run_loads(tmp_path: Path) -> None:
    [trace] = ctxlab.load(write(tmp_path / "ok.json", run()))
    assert [m.type for m in trace.messages] == ["human", "ai"]


AI = {"role": "assistant", "content": "x"}
CASES = {
    "extra-number": (run(extra=5), ("run r1", "'extra'", "an object")),
    "metadata-text": (run(extra={"metadata": "x"}), ("run r1", "extra.metadata")),
    "token-usage-bool": (run(token_usage=True), ("run r1", "'token_usage'")),
    "dotted-order-bool": (run(dotted_order=True), ("run r1", "'dotted_order'", "a string")),
    "child-runs-float": (run(child_runs=1.5), ("run r1", "'child_runs'", "list")),
    "id-list": (run(id=[]), ("'id'",)),
    "id-empty": (run(id=""), ("'id'", "non-empty")),
    "ops-patch-number": ({"post": None, "patch": 5}, ("'patch'", "list")),
    "messages-float": (run(inputs={"messages": 1.5}), ("run r1", "list of messages")),
    "generations-float": (run(outputs={"generations": 1.5}), ("run r1", "generations")),
    "tool-calls-negative": (
        run(inputs={"messages": [{"role": "user", "content": "q"}, {**AI, "tool_calls": -1}]}),
        ("run r1", "'tool_calls'", "a list"),
    ),
    "lc-kwargs-bool": (
        run(
            inputs={
                "messages": [
                    {"lc": 1, "type": "constructor", "id": ["HumanMessage"], "kwargs": True}
                ]
            }
        ),
        ("run r1",),
    ),
    "usage-output-list": (
        run(
            outputs={
                "generations": [
                    [
                        {
                            "message": {
                                "type": "ai",
                                "content": "x",
                                "usage_metadata": {
                                    "input_tokens": 1,
                                    "output_tokens": [],
                                    "total_tokens": 1,
                                },
                            }
                        }
                    ]
                ]
            }
        ),
        ("run r1", "usage_metadata.output_tokens"),
    ),
    "llm-output-float": (
        run(outputs={"generations": [[{"text": "x"}]], "llm_output": 1.5}),
        ("run r1", "outputs.llm_output", "an object"),
    ),
    "invocation-params-number": (
        run(extra={"invocation_params": 5}),
        ("run r1", "extra.invocation_params", "an object"),
    ),
    "openai-name-number": (
        run(inputs={"messages": [{"role": "user", "content": "q", "name": 5}]}),
        ("run r1", "'name'", "a string"),
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_wrong_typed_field_is_one_located_error(name: str, tmp_path: Path) -> None:
    value, words = CASES[name]
    located(write(tmp_path / f"{name}.json", value), *words)


def test_missing_id_in_array_names_the_item(tmp_path: Path) -> None:
    located(write(tmp_path / "runs.json", [run(), run(id=None)]), "item 1", "no 'id'")


def test_deep_nesting_is_located(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 2000 + "]" * 2000)
    located(path, "nested too deeply")


@pytest.mark.parametrize("token", ["NaN", "Infinity", "-Infinity"])
def test_nan_in_jsonl_names_the_line(token: str, tmp_path: Path) -> None:
    path = tmp_path / "runs.jsonl"
    path.write_text(
        json.dumps(run()) + "\n" + json.dumps(run(id="r2"))[:-1] + f', "x": {token}}}\n'
    )
    located(path, "line 2", "NaN or Infinity")


def test_nan_in_document_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "run.json"
    path.write_text('{\n "id": "r1",\n "x": NaN\n}')
    located(path, "line 3", "NaN or Infinity")


@pytest.mark.parametrize("suffix", [".json", ".jsonl"])
def test_lone_surrogate_names_the_line(suffix: str, tmp_path: Path) -> None:
    path = tmp_path / f"run{suffix}"
    path.write_text(json.dumps(run()) + "\n" + json.dumps(run(id="r2", name="\ud800x")) + "\n")
    located(path, "line 2", "surrogate")


@pytest.mark.parametrize("compress", [gzip.compress, lzma.compress])
def test_decompression_bomb_is_refused(
    compress: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CTXLAB_MAX_TRACE_BYTES", "100000")
    path = tmp_path / "bomb.json.gz"
    path.write_bytes(compress(b" " * 5_000_000))
    located(path, "exceeds 100,000 bytes", "CTXLAB_MAX_TRACE_BYTES")
    monkeypatch.setenv("CTXLAB_MAX_TRACE_BYTES", "10000000")
    small = tmp_path / "ok.json.gz"
    small.write_bytes(compress(json.dumps(run()).encode()))
    assert len(ctxlab.load(small)) == 1


def test_gzip_of_several_members_or_cut_short(tmp_path: Path) -> None:
    """A gzip file of two members (as `cat a.gz b.gz` makes) loads both records; one cut
    short is refused as truncated. The one-call inflate of a single member hands both to the
    chunked reader."""
    first, second = (json.dumps(run(id=i, trace_id=i)).encode() + b"\n" for i in ("m1", "m2"))
    joined = tmp_path / "joined.jsonl.gz"
    joined.write_bytes(gzip.compress(first) + gzip.compress(second))
    assert sorted(t.trace_id for t in ctxlab.load(joined)) == ["m1", "m2"]
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(first + second)[:-12])
    located(cut, "truncated or corrupt gzip data")


def test_fifo_is_refused_without_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    located(fifo, "not a regular file")


def test_dev_zero_is_refused() -> None:
    located(Path("/dev/zero"), "not a regular file")


def test_bad_files_cost_only_themselves(tmp_path: Path) -> None:
    """One wrong-typed, empty-id, deeply nested or cyclic file; the good traces still load,
    including one whose records are split over two files."""
    write(tmp_path / "good.json", run(id="g1", trace_id="g1"))
    write(tmp_path / "typed.json", run(id="t1", trace_id="t1", extra=5))
    write(tmp_path / "empty-id.json", run(id=""))
    (tmp_path / "deep.json").write_text("[" * 2000 + "]" * 2000)
    cycle = [
        run(id="c1", trace_id=None, parent_run_id="c2"),
        run(id="c2", trace_id=None, parent_run_id="c1"),
    ]
    write(tmp_path / "cycle.json", cycle)
    split = run(id="s1", trace_id="s1")
    write(tmp_path / "split-a.json", {"post": [{k: v for k, v in split.items() if k != "outputs"}]})
    write(
        tmp_path / "split-b.json",
        {"patch": [{"id": "s1", "trace_id": "s1", "outputs": split["outputs"]}]},
    )
    with pytest.warns(TraceLoadWarning):
        result = ctxlab.load(tmp_path)
    assert sorted(t.trace_id for t in result) == ["g1", "s1"]
    assert [m.type for m in next(t for t in result if t.trace_id == "s1").messages] == [
        "human",
        "ai",
    ]
    failed = sorted(Path(e.source or "").name for e in result.errors)
    assert failed == ["cycle.json", "deep.json", "empty-id.json", "typed.json"]


def test_deep_nesting_inside_a_message_is_located(tmp_path: Path) -> None:
    """Nesting orjson accepts (under 1,024 levels) but Python's recursion limit does not."""
    nest = "[" * 1000 + '"x"' + "]" * 1000
    path = tmp_path / "deep-content.json"
    content = '[{"type": "text", "text": "q", "x": NEST}]'.replace("NEST", nest)
    text = json.dumps(run()).replace('"content": "hi"', f'"content": {content}')
    assert nest in text
    path.write_text(text)
    located(path, "run r1", "nested too deeply")


def test_nesting_limit_is_exact() -> None:
    """A value `MAX_NESTING` levels deep passes the check, one level more does not (the block
    itself is the first level)."""
    from ctxlab._ingest.boundary import MAX_NESTING, _too_deep

    def nested(levels: int) -> dict[str, Any]:
        value: Any = "x"
        for _ in range(levels - 1):
            value = [value]
        return {"type": "text", "x": value}

    assert not _too_deep(nested(MAX_NESTING))
    assert _too_deep(nested(MAX_NESTING + 1))
    assert not _too_deep(({"a": [1, (2, {"b": None})]},))


@pytest.mark.parametrize(
    ("text", "values"),
    [
        (b'{"a": 1}\n\n{"b": 2}\n', [({"a": 1}, 1), ({"b": 2}, 3)]),  # JSON Lines
        (b'{"a":\n 1}\n', [({"a": 1}, None)]),  # one document over two lines
        (b'{"a": 1}\n \n\n', [({"a": 1}, None)]),  # one line, then blank ones
    ],
)
def test_each_jsonl_line_is_parsed_once(
    text: bytes, values: list[Any], tmp_path: Path, monkeypatch
) -> None:
    # the whole-file parse is tried only when the first line is not a value of its own
    import orjson

    from ctxlab._ingest import load as load_module

    parsed: list[int] = []

    class Counting:
        JSONDecodeError = orjson.JSONDecodeError

        @staticmethod
        def loads(data: bytes) -> Any:
            parsed.append(len(data))
            return orjson.loads(data)

    monkeypatch.setattr(load_module, "orjson", Counting)
    path = tmp_path / "values.jsonl"
    path.write_bytes(text)
    assert load_module.read_values(path) == values
    if values[0][1] is not None:
        assert sum(parsed) == sum(len(line) for line in text.split(b"\n"))
