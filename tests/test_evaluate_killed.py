"""A real `kill -9` in the middle of `ctxlab evaluate --model`: every answer the model gave is
already committed to the store, and the rerun asks only the calls not answered and ends with the
same frames as a run never interrupted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import duckdb

from tests.scheduled_model import FOLDER_VARIABLE
from tests.test_sweep_models import chats  # noqa: F401 - the fixture

REPO = Path(__file__).resolve().parents[1]
ANSWERS = 12
"""Answers the interrupted run's model gives before it hangs (and the run is killed)."""


def _evaluate(
    chat: Path, store: Path, folder: Path, answers: int | None = None
) -> subprocess.Popen[str]:
    folder.mkdir(exist_ok=True)
    env = {**os.environ, FOLDER_VARIABLE: str(folder), "PYTHONPATH": str(REPO)}
    env.pop("CTXLAB_TEST_MODEL_ANSWERS", None)
    if answers is not None:
        env |= {"CTXLAB_TEST_MODEL_ANSWERS": str(answers), "CTXLAB_TEST_MODEL_DELAY": "0.05"}
    argv = [sys.executable, "-m", "ctxlab._cli.main", "evaluate", str(chat), "--policy"]
    argv += ["deepagents", "--window", "8000", "--model", "tests.scheduled_model:factory"]
    argv += ["--store", str(store), "--format", "json"]
    return subprocess.Popen(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


def _committed(store: Path) -> int:
    """Probe answers committed to the store (0 while it cannot be opened: not yet made, or
    being written)."""
    try:
        with duckdb.connect(str(store), read_only=True) as con:
            row = con.execute("SELECT count(*) FROM probe_cache").fetchone()
    except duckdb.Error:
        return 0
    assert row is not None
    return int(row[0])


def test_a_killed_evaluation_keeps_every_answer_and_resumes(
    tmp_path: Path,
    chats: list[Path],  # noqa: F811 - the fixture
) -> None:
    chat = chats[0]
    clean = _evaluate(chat, tmp_path / "clean.duckdb", tmp_path / "clean")
    clean_out, clean_err = clean.communicate(timeout=600)
    assert clean.returncode == 0, clean_err
    total = len(_lines(tmp_path / "clean" / "asked"))
    assert total > 2 * ANSWERS

    # The model answers 12 calls, then hangs: every answer it gave must reach the store as it
    # came (written a batch a second, the last ones waited for a next answer that never came).
    store, folder = tmp_path / "s.duckdb", tmp_path / "model"
    stalled = _evaluate(chat, store, folder, answers=ANSWERS)
    deadline = time.monotonic() + 300
    while _committed(store) < ANSWERS:
        assert stalled.poll() is None, stalled.communicate()[1]
        assert time.monotonic() < deadline, f"{_committed(store)} of {ANSWERS} answers stored"
        time.sleep(0.1)
    stalled.send_signal(signal.SIGKILL)
    stalled.wait(timeout=60)
    assert stalled.returncode == -signal.SIGKILL
    assert len(_lines(folder / "answered")) == _committed(store) == ANSWERS

    (folder / "asked").unlink()
    again = _evaluate(chat, store, folder)
    out, err = again.communicate(timeout=600)
    assert again.returncode == 0, err
    assert len(_lines(folder / "asked")) == total - ANSWERS  # only the unanswered calls
    assert json.loads(out) == json.loads(clean_out)  # the same frames as an uninterrupted run
