"""`ctxlab calibrate`: the JSON row shape, the table within the terminal, fits saved with --db
and borrowed by a trace without usage, and bad input as one error line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab._cli.main import main
from ctxlab._store.store import Store

REPO = Path(__file__).resolve().parents[1]
SHORT = REPO / "traces" / "deepagents_short_session.jsonl.xz"
KEYS = [
    "trace_id",
    "model",
    "method",
    "calls_with_usage",
    "policy_counter_error_median",
    "billed_error_median",
    "fit",
]


@pytest.fixture
def bare_claude(tmp_path: Path) -> Path:
    """A Claude conversation as a plain message list: no recorded usage."""
    msgs = [{"role": "system", "content": "You are terse."}]
    for i in range(6):
        msgs += [
            {"role": "user", "content": f"step {i} " + "word " * 300},
            {"role": "assistant", "content": f"done {i}"},
        ]
    path = tmp_path / "bare.json"
    path.write_text(json.dumps({"model": "claude-sonnet-4-5", "messages": msgs}))
    return path


def _json(argv: list[str], capsys: pytest.CaptureFixture) -> list[dict]:
    assert main([*argv, "--json"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)["traces"]


def test_json_rows(capsys: pytest.CaptureFixture) -> None:
    rows = _json(["calibrate", str(SHORT)], capsys)
    assert rows and all(list(r) == KEYS for r in rows)
    main_row = rows[0]
    assert main_row["method"] == "calibrated" and main_row["calls_with_usage"] == 6
    assert set(main_row["fit"]) == {
        "family",
        "scale",
        "per_message",
        "offset",
        "encoding",
        "deltas",
        "held_out_error_median",
    }
    assert main_row["fit"]["family"] == "claude-sonnet-4-5"
    assert 0 <= main_row["billed_error_median"] < main_row["policy_counter_error_median"] + 5


def test_table_fits_the_terminal(capsys: pytest.CaptureFixture, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    assert main(["calibrate", str(SHORT)]) == 0
    out = capsys.readouterr().out
    assert all(len(line) <= 80 for line in out.splitlines())
    assert "calibrated" in out and "policy_" in out
    assert "1 calibration: 1 calibrated" in out


def test_db_saves_fits_and_bare_traces_borrow_them(
    tmp_path: Path, bare_claude: Path, capsys: pytest.CaptureFixture
) -> None:
    (alone,) = _json(["calibrate", str(bare_claude)], capsys)
    assert (alone["method"], alone["calls_with_usage"], alone["billed_error_median"]) == (
        "estimated",
        0,
        None,
    )
    db = tmp_path / "s.duckdb"
    fitted = _json(["calibrate", str(SHORT), "--db", str(db)], capsys)
    assert Store(db, read_only=True).calibrations().height == len(fitted)
    (borrowed,) = _json(["calibrate", str(bare_claude), "--db", str(db)], capsys)
    best = max(fitted, key=lambda r: r["calls_with_usage"])
    assert borrowed["method"] == "calibrated"
    assert borrowed["fit"]["scale"] == best["fit"]["scale"]
    assert borrowed["fit"]["offset"] == 0.0


def test_real_traces_json(shared: Path, capsys: pytest.CaptureFixture) -> None:
    rows = _json(
        [
            "calibrate",
            str(shared / "data/real-traces/claude-code-session-compacted"),
            str(shared / "data/real-traces/inspect-ai-log"),
        ],
        capsys,
    )
    by_model = {r["model"]: r for r in rows}
    assert by_model["gpt-4o-mini-2024-07-18"]["method"] == "exact"
    assert by_model["claude-opus-4-6"]["calls_with_usage"] == 84
    assert by_model["claude-haiku-4-5-20251001"]["billed_error_median"] <= 8


def test_bad_path_is_one_error_line(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["calibrate", str(tmp_path / "missing.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxlab: error:") and "Traceback" not in err
