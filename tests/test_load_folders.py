"""Folders: each file is read and judged on its own, so one bad file sinks nothing.

Good files load (and `ctxlab load` stores them), each bad file is one error naming it, once;
entries named like a trace file that are not regular files are listed as skipped; traces
come in file order with ids unique within the load; the exit code says "some files failed"
(3) apart from bad input with nothing done (2)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

import ctxlab
from ctxlab._cli.main import main
from tests.test_load_errors import GOOD, llm_run

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data" / "real-traces"
SESSION = "ae4a77f8-aedd-4bc1-888f-c94edc91af04"
MESSAGES = [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]


def write(path: Path, value: object) -> Path:
    path.write_text(value if isinstance(value, str) else json.dumps(value))
    return path


def test_inspect_json_lists_good_traces_with_source_and_the_bad_file(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    write(tmp_path / "a_good.json", GOOD)
    write(tmp_path / "b_bad.json", "{not json")
    write(tmp_path / "c_plain.json", MESSAGES)
    assert main(["inspect", str(tmp_path), "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert [(t["trace_id"], Path(t["source"]).name) for t in out["traces"]] == [
        ("t1", "a_good.json"),
        ("c_plain", "c_plain.json"),
    ]
    (error,) = out["errors"]
    assert Path(error["source"]).name == "b_bad.json" and "b_bad.json" in error["error"]
    assert out["skipped"] == []


def test_load_stores_the_good_files_and_exits_3(tmp_path: Path, capsys) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    write(folder / "a_good.json", GOOD)
    write(folder / "b_bad.json", "[1, 2")
    db = tmp_path / "store.duckdb"
    assert main(["load", str(folder), "--db", str(db)]) == 3
    assert ctxlab.Store(db).query("SELECT trace_id FROM traces")["trace_id"].to_list() == ["t1"]
    assert "b_bad.json" in capsys.readouterr().err


def test_nothing_loaded_is_still_exit_2(tmp_path: Path) -> None:
    write(tmp_path / "bad.json", "[1, 2")
    assert main(["inspect", str(tmp_path)]) == 2


def test_a_bad_copy_of_a_run_in_a_later_file_sinks_only_itself(tmp_path: Path) -> None:
    """The same run in two files: the later copy's messages are malformed. It used to replace
    the good record in the merge and fail under the good file's name."""
    write(tmp_path / "a_good.json", GOOD)
    bad = llm_run("r1", [{"type": "human", "content": "hi"}], parent="t1")
    bad["outputs"] = {"generations": [[{"message": {"type": "ai", "content": 5}}]]}
    write(tmp_path / "b_copy.json", [bad])
    with pytest.warns(ctxlab.TraceLoadWarning):
        traces = ctxlab.load(tmp_path)
    assert [t.trace_id for t in traces] == ["t1"]
    assert traces[0].turns[0].output.content == "ok"
    assert [Path(e.source).name for e in traces.errors] == ["b_copy.json"]


def test_special_entries_are_listed_as_skipped(tmp_path: Path) -> None:
    write(tmp_path / "good.json", MESSAGES)
    os.mkfifo(tmp_path / "pipe.jsonl")
    (tmp_path / "loop.json").symlink_to("loop.json")
    (tmp_path / "gone.json").symlink_to("missing.json")
    result = ctxlab._ingest.load.load_all([tmp_path])
    assert [t.trace_id for t in result] == ["good"] and result.errors == []
    assert {Path(e.source).name: e.reason for e in result.skipped} == {
        "gone.json": "skipped: a dangling link",
        "loop.json": "skipped: a link that loops",
        "pipe.jsonl": "skipped: not a regular file (a pipe, device or socket); expected a "
        "trace file",
    }


def test_ids_are_unique_within_a_load_and_traces_in_file_order(tmp_path: Path) -> None:
    """Message lists take their file's name as id: three `chat.json` in three folders."""
    for folder in ("c", "a", "b"):
        (tmp_path / folder).mkdir()
        write(tmp_path / folder / "chat.json", MESSAGES)
    write(tmp_path / "a" / "z_runs.json", GOOD)
    write(tmp_path / "a" / "chat-2.json", MESSAGES)  # already holds the first suffix
    traces = ctxlab.load(tmp_path)
    assert [(t.trace_id, t.source[len(str(tmp_path)) :]) for t in traces] == [
        ("chat-2", "/a/chat-2.json"),
        ("chat", "/a/chat.json"),
        ("t1", "/a/z_runs.json"),
        ("chat-3", "/b/chat.json"),
        ("chat-4", "/c/chat.json"),
    ]


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/data not present")
def test_a_truncated_subagent_file_is_reported_once_and_its_session_loads(
    tmp_path: Path,
) -> None:
    source = SHARED / "claude-code-session-compacted"
    shutil.copytree(source / SESSION, tmp_path / SESSION)
    shutil.copy(source / f"{SESSION}.jsonl.gz", tmp_path)
    agent = tmp_path / SESSION / "subagents" / "agent-aac57f5.jsonl.gz"
    import gzip

    cut = gzip.decompress(agent.read_bytes())[:3000]
    agent.unlink()
    (agent.parent / "agent-aac57f5.jsonl").write_bytes(cut)
    with pytest.warns(ctxlab.TraceLoadWarning):
        traces = ctxlab.load(tmp_path)
    assert [Path(e.source).name for e in traces.errors] == ["agent-aac57f5.jsonl"]
    (session,) = [t for t in traces if t.trace_id == SESSION]
    assert any("agent-aac57f5.jsonl left out" in note for note in session.notes)
