"""`ctxlab.tune` on the bundled samples: a real Optuna study over real replays into a real
DuckDB store; a study killed with SIGKILL resumes to the same trials, rows and bytes.

Lean on purpose: a handful of trials, the hold-out split puts the long sample in the tuning
set and the short one aside (seed 1), and one worker.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb
import pytest

import ctxlab
from ctxlab._errors import TuneError
from ctxlab._store.store import Store

REPO = Path(__file__).resolve().parents[1]
SPACE = {"window": "20000..120000/1000", "trigger": "fraction:0.3..0.95"}


@pytest.fixture(scope="module")
def traces() -> list[ctxlab.Trace]:
    return list(ctxlab.load(REPO / "traces"))


@pytest.fixture(scope="module")
def fresh(traces: list[ctxlab.Trace], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 10-trial study run through, once for the module: its store."""
    db = tmp_path_factory.mktemp("fresh") / "fresh.duckdb"
    _study(traces, db)
    return db


def _study(traces: list[ctxlab.Trace], db: Path, trials: int = 10) -> ctxlab.TuneStudy:
    return ctxlab.tune(
        traces, "deepagents", SPACE, ("cost", "needed_lost"), trials, holdout=0.5, seed=1, db=db
    )


def _rows(db: Path) -> dict[str, list[tuple]]:
    """Every tune row but timings and write times, in key order."""
    with duckdb.connect(str(db), read_only=True) as con:
        return {
            "trials": con.execute(
                "SELECT trial_key, number, kind, label, state, params, tune, holdout, feasible "
                "FROM tune_trials ORDER BY trial_key"
            ).fetchall(),
            "params": con.execute("SELECT * FROM tune_params ORDER BY param_key").fetchall(),
            "results": con.execute(
                "SELECT * EXCLUDE (seconds) FROM tune_results ORDER BY result_key"
            ).fetchall(),
        }


def test_study_reports_front_holdout_and_references(traces, fresh: Path) -> None:
    study = _study(traces, fresh)  # stored: read back, nothing replayed
    doc = study.to_json()
    assert doc["policy"] == "deepagents" and doc["objectives"] == ["cost", "needed_lost"]
    assert [t["number"] for t in doc["trials"]] == list(range(10))
    assert all(t["state"] == "COMPLETE" and set(t["tune"]) == {"cost", "needed_lost"}
               for t in doc["trials"])  # fmt: skip
    assert doc["traces"]["tune"] and doc["traces"]["holdout"]
    assert doc["pareto"], "no feasible setting on the front"
    for t in doc["trials"]:  # held-out values exactly for the front
        assert (t["holdout"] is not None) == (t["number"] in doc["pareto"])
    labels = [r["label"] for r in doc["reference"]]
    assert labels[0] == "defaults"
    for ref in doc["reference"]:
        assert ref["tune"] is not None and ref["holdout"] is not None
    # a trial's tune value is what replaying its setting measures
    first = study.front()[0]
    tuned = [t for t in traces if t.trace_id in doc["traces"]["tune"]]
    direct = ctxlab.replay(tuned[0], study.policy_for(first.number))
    assert first.tune is not None
    assert first.tune["needed_lost"].mean == ctxlab.evaluate(direct).needed_lost
    assert first.tune["cost"].sd == 0.0  # one tuning trace
    rows = Store(fresh).query(
        "SELECT count(*) AS n, count(DISTINCT result_key) AS d FROM tune_results"
    )
    assert rows["n"].item() == rows["d"].item() == 10 + len(doc["pareto"]) + 2 * len(labels)


def test_killed_study_resumes_to_the_same_trials_and_bytes(
    traces, fresh: Path, tmp_path: Path
) -> None:
    db = tmp_path / "killed.duckdb"
    script = (
        "import ctxlab, sys, json\n"
        f"s = ctxlab.tune({str(REPO / 'traces')!r}, 'deepagents', {SPACE!r}, "
        "('cost', 'needed_lost'), 10, holdout=0.5, seed=1, db=sys.argv[1])\n"
        "print(json.dumps(s.to_json()))\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(db)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    done = 0
    deadline = time.monotonic() + 240
    while done < 3 and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
        if db.exists():
            try:
                with duckdb.connect(str(db), read_only=True) as con:
                    done = con.execute(
                        "SELECT count(*) FROM tune_trials WHERE state = 'COMPLETE'"
                    ).fetchone()[0]  # type: ignore[index]
            except duckdb.Error:
                continue  # the study holds the file for a write
    assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = _rows(db)
    completed = [t for t in before["trials"] if t[4] == "COMPLETE" and t[2] == "trial"]
    assert 3 <= len(completed) < 10, "not killed mid-study"
    resumed = subprocess.run(
        [sys.executable, "-c", script, str(db)], capture_output=True, text=True, check=True
    )
    after = _rows(db)
    assert set(before["results"]) <= set(after["results"])  # nothing rewritten
    trials = [t for t in after["trials"] if t[2] == "trial"]
    assert [t[1] for t in trials] == list(range(10)) and {t[4] for t in trials} == {"COMPLETE"}
    assert after == _rows(fresh)
    assert resumed.stdout.strip() == json.dumps(_study(traces, fresh).to_json())


def test_same_study_name_with_other_settings_is_refused(traces, tmp_path: Path) -> None:
    db = tmp_path / "s.duckdb"
    ctxlab.tune(traces, "deepagents", SPACE, ("peak",), 1, holdout=0.5, seed=1, db=db, study="x")
    with pytest.raises(TuneError, match="stored with other objectives"):
        ctxlab.tune(
            traces, "deepagents", SPACE, ("cumulative",), 1, holdout=0.5, seed=1, db=db, study="x"
        )


@pytest.mark.parametrize(
    ("space", "objectives", "message"),
    [
        ({"windw": "1..2"}, ("cost",), "unknown parameter"),
        ({"trigger": "fraction:0.3..1.5"}, ("cost",), "a fraction is at most 1"),
        ({"window": "9..3"}, ("cost",), "low end must be below"),
        ({"window": "1000..2000"}, ("speed",), "unknown objective 'speed'"),
        ({"window": "1000..2000"}, ("needed_lost:colour",), "unknown objective"),
    ],
)
def test_bad_requests_are_refused_before_any_work(
    traces, tmp_path: Path, space: dict, objectives: tuple, message: str
) -> None:
    with pytest.raises(TuneError, match=message):
        ctxlab.tune(traces, "deepagents", space, objectives, 2, db=tmp_path / "s.duckdb")
    assert not (tmp_path / "s.duckdb").exists()
