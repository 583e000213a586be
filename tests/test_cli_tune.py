"""`ctxlab tune` on the bundled samples: issue 37's command prints the JSON document it
promises, the same bytes with one worker as with one per core; the front's table fits the
terminal; `--dry-run` replays and writes nothing; a bad space is one located error line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxlab._cli.main import main

REPO = Path(__file__).resolve().parents[1]
COMMAND = [
    "tune", "traces", "--policy", "deepagents", "--space", "trigger=fraction:0.3..0.95",
    "--objective", "cost", "--objective", "needed_lost", "--trials", "8", "--holdout", "0.5",
    "--seed", "1",
]  # fmt: skip
"""Issue 37's done-when command, but for `--db X --format json`."""


@pytest.fixture(scope="module")
def issue_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The command as the issue gives it, in a process of its own, from the repository."""
    db = tmp_path_factory.mktemp("tune") / "x.duckdb"
    proc = subprocess.run(
        [sys.executable, "-m", "ctxlab._cli.main", *COMMAND, "--db", str(db), "--format", "json"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    assert "8/8 trials" in proc.stderr  # the progress bar
    return db, proc.stdout


def test_json_has_the_issues_shape(issue_run: tuple[Path, str]) -> None:
    doc = json.loads(issue_run[1])
    assert doc["policy"] == "deepagents" and doc["objectives"] == ["cost", "needed_lost"]
    assert isinstance(doc["study"], str) and doc["study"]
    assert [t["number"] for t in doc["trials"]] == list(range(8))
    for trial in doc["trials"]:
        assert {"number", "params", "state", "tune", "holdout"} <= set(trial)
        assert set(trial["params"]) == {"trigger"} and trial["state"] == "COMPLETE"
        assert trial["params"]["trigger"].startswith("fraction:")
        assert set(trial["tune"]) == {"cost", "needed_lost"}
    assert doc["pareto"] and set(doc["pareto"]) <= set(range(8))
    for ref in doc["reference"]:
        assert {"label", "params", "tune", "holdout"} <= set(ref)
        assert set(ref["holdout"]) == {"cost", "needed_lost"}
    assert doc["reference"][0]["label"] == "defaults"


def test_one_worker_prints_the_same_bytes(
    issue_run: tuple[Path, str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(REPO)  # the command's `traces` is relative
    code = main(
        [*COMMAND, "--db", str(tmp_path / "y.duckdb"), "--format", "json", "--workers", "1"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert out == issue_run[1]


def test_front_table_fits_the_terminal(
    issue_run: tuple[Path, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("COLUMNS", "72")
    assert main([*COMMAND, "--db", str(issue_run[0])]) == 0  # stored: resumes, replays nothing
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith("study deepagents-") and "8 trials" in lines[0]
    assert all(len(line) <= 72 for line in lines), out
    assert any(line.startswith("defaults") for line in lines)
    assert "on the held-out traces" in " ".join(out.split())


def test_dry_run_replays_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    db = tmp_path / "none.duckdb"
    assert main([*COMMAND, "--db", str(db), "--dry-run", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["replays"]["trials"] == 8 * len(doc["traces"]["tune"])
    assert doc["model_calls"] == 0
    assert not db.exists()


def test_bad_space_is_one_error_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(REPO)
    bad = [*COMMAND[:4], "--space", "trigger=fraction:0.3..1.7", "--db", str(tmp_path / "d")]
    assert main(bad) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxlab: error: space trigger=fraction:0.3..1.7") and "at most 1" in err
