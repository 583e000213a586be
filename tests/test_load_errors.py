"""Bad input: one clear error naming the file, line or run, and nothing half-loaded."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

import ctxlab
from ctxlab._cli.main import main
from tests.cli_text import messages


def llm_run(rid: str, messages: list, parent: str | None = None, output: str = "ok") -> dict:
    return {
        "id": rid,
        "trace_id": "t1",
        "parent_run_id": parent,
        "run_type": "llm",
        "name": "ChatX",
        "inputs": {"messages": [messages]},
        "outputs": {"generations": [[{"message": {"type": "ai", "content": output}}]]},
    }


GOOD = [
    {"id": "t1", "trace_id": "t1", "run_type": "chain", "name": "agent", "inputs": {}},
    llm_run("r1", [{"type": "human", "content": "hi"}], parent="t1"),
]


def write(path: Path, text: str | bytes) -> Path:
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    return path


def test_good_baseline(tmp_path: Path) -> None:
    (trace,) = ctxlab.load(write(tmp_path / "ok.json", json.dumps(GOOD)))
    assert len(trace.messages) == 2 and len(trace.turns) == 1


def test_malformed_json_names_file_and_line(tmp_path: Path) -> None:
    path = write(tmp_path / "bad.json", '{"id": "a",\n "run_type": llm}\n')
    with pytest.raises(ctxlab.TraceFormatError) as err:
        ctxlab.load(path)
    assert str(path) in str(err.value) and "line 2" in str(err.value)
    assert "malformed JSON" in str(err.value)


def test_truncated_json(tmp_path: Path) -> None:
    text = json.dumps(GOOD, indent=1)
    path = write(tmp_path / "cut.json", text[: len(text) // 2])
    with pytest.raises(ctxlab.TraceFormatError, match="truncated JSON"):
        ctxlab.load(path)


def test_truncated_jsonl_line_is_named(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in GOOD]
    path = write(tmp_path / "cut.jsonl", lines[0] + "\n" + lines[1][:40] + "\n")
    with pytest.raises(ctxlab.TraceFormatError) as err:
        ctxlab.load(path)
    assert err.value.line == 2 and "line 2" in str(err.value)


def test_truncated_gzip(tmp_path: Path) -> None:
    data = gzip.compress(json.dumps(GOOD).encode())
    with pytest.raises(ctxlab.TraceFormatError, match="gzip"):
        ctxlab.load(write(tmp_path / "cut.json.gz", data[:-12]))


def test_invalid_utf8_names_line(tmp_path: Path) -> None:
    body = json.dumps(GOOD[0]) + "\n" + json.dumps(GOOD[1])
    path = write(
        tmp_path / "latin.jsonl", body.replace("hi", "h\udcff").encode("utf-8", "surrogateescape")
    )
    with pytest.raises(ctxlab.TraceFormatError) as err:
        ctxlab.load(path)
    assert "invalid UTF-8" in str(err.value) and err.value.line == 2


def test_unknown_format(tmp_path: Path) -> None:
    with pytest.raises(ctxlab.TraceFormatError, match="unknown trace format.*keys foo"):
        ctxlab.load(write(tmp_path / "x.json", json.dumps({"foo": 1})))


def test_empty_file(tmp_path: Path) -> None:
    with pytest.raises(ctxlab.TraceFormatError, match="empty file"):
        ctxlab.load(write(tmp_path / "e.json", "  \n"))


def test_run_missing_inputs_names_run(tmp_path: Path) -> None:
    runs = json.loads(json.dumps(GOOD))
    del runs[1]["inputs"]
    with pytest.raises(ctxlab.TraceFormatError) as err:
        ctxlab.load(write(tmp_path / "m.json", json.dumps(runs)))
    assert err.value.run_id == "r1" and "inputs.messages" in str(err.value)


def test_record_without_id(tmp_path: Path) -> None:
    runs = [*GOOD, {"run_type": "tool", "trace_id": "t1", "name": "x"}]
    with pytest.raises(ctxlab.TraceFormatError, match="item 2: expected a LangSmith run record"):
        ctxlab.load(write(tmp_path / "noid.json", json.dumps(runs)))


def test_tool_result_without_its_call(tmp_path: Path) -> None:
    msgs = [
        {"type": "human", "content": "hi"},
        {"type": "tool", "content": "42", "tool_call_id": "call_9"},
    ]
    runs = [GOOD[0], llm_run("r1", msgs, parent="t1")]
    with pytest.raises(ctxlab.TraceFormatError, match="call_9.*no matching tool call"):
        ctxlab.load(write(tmp_path / "orphan.json", json.dumps(runs)))
    plain = [
        {"role": "user", "content": "x"},
        {"role": "tool", "tool_call_id": "c1", "content": "y"},
    ]
    with pytest.raises(ctxlab.TraceFormatError, match="c1"):
        ctxlab.load(write(tmp_path / "orphan_plain.json", json.dumps(plain)))


def test_parent_id_cycle(tmp_path: Path) -> None:
    runs = [
        {"id": "a", "parent_run_id": "b", "run_type": "chain", "name": "a"},
        {"id": "b", "parent_run_id": "a", "run_type": "chain", "name": "b"},
    ]
    with pytest.raises(ctxlab.TraceFormatError, match="cycle"):
        ctxlab.load(write(tmp_path / "cycle.json", json.dumps(runs)))


def test_directory_loads_good_files_and_reports_bad(tmp_path: Path) -> None:
    write(tmp_path / "a_good.json", json.dumps(GOOD))
    write(tmp_path / "b_bad.json", "{not json")
    write(
        tmp_path / "c_plain.json",
        json.dumps([{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]),
    )
    with pytest.warns(ctxlab.TraceLoadWarning, match="b_bad.json"):
        traces = ctxlab.load(tmp_path)
    assert sorted(t.format for t in traces) == ["langsmith-runs", "openai-messages"]
    assert [Path(e.source).name for e in traces.errors] == ["b_bad.json"]


def test_cli_prints_one_line_and_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    bad = write(tmp_path / "bad.json", "[1, 2")
    assert main(["inspect", str(bad)]) == 2
    err = messages(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("ctxlab: error: ") and "bad.json" in err[0]


def test_cli_entry_point_inspect_json(tmp_path: Path) -> None:
    good = write(tmp_path / "good.json", json.dumps(GOOD))
    out = subprocess.run(
        [sys.executable, "-m", "ctxlab._cli.main", "inspect", str(good), "--json"],
        capture_output=True,
        text=True,
        check=True,
    )
    (row,) = json.loads(out.stdout)["traces"]
    assert set(row) == {
        "trace_id",
        "format",
        "model",
        "messages",
        "turns",
        "subagents",
        "recorded_compactions",
        "recorded_input_tokens",
        "notes",
        "source",
    }
    assert row["source"] == str(good)
    assert row["messages"] == 2 and row["turns"] == 1 and row["trace_id"] == "t1"
