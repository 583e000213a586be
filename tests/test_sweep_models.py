"""Sweeps with a model: a cell whose model call fails is a row with its error, the other cells
complete, the CLI exits 3 with one line, and a rerun asks only what was not answered (the
answers a failed cell did get are stored and reused)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from ctxlab._cli.main import main
from ctxlab._replay.model_calls import CallSettings
from ctxlab._store.store import Store
from ctxlab._store.sweep import sweep
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import LLM
from tests.cli_text import messages
from tests.scheduled_model import FOLDER_VARIABLE, ScheduledModel

GRID = {"trigger": ["fraction:0.3", "fraction:0.5"]}
STABLE = [
    "trace_id",
    "trigger",
    "turns",
    "events",
    "peak_context_tokens",
    "cumulative_input_tokens",
    "needed_lost",
]
NO_RETRY = CallSettings(retries=0)
MARK = "trace 2 step 20:"
"""Trace 2's summary requests fail from the one holding its step 20 on: its cells get answers
(stored) before they fail."""


@pytest.fixture
def chats(tmp_path: Path) -> list[Path]:
    """Two 30-turn conversations (OpenAI messages files): at an 8,000-token window Deep Agents
    summarises each 3 to 7 times per cell."""
    paths = []
    for seed in (1, 2):
        msgs = [{"role": "system", "content": "You are a coding agent."}]
        for i in range(30):
            words = " ".join(f"word{seed}_{i}_{k}" for k in range(150))
            msgs.append({"role": "user", "content": f"trace {seed} step {i}: {words}"})
            msgs.append({"role": "assistant", "content": f"done step {i} of trace {seed}"})
        path = tmp_path / f"chat{seed}.json"
        path.write_text(json.dumps({"model": "gpt-4o", "messages": msgs}))
        paths.append(path)
    return paths


def _model(folder: Path, **kw) -> ScheduledModel:
    folder.mkdir(exist_ok=True)
    return ScheduledModel(folder=str(folder), **kw)


def _sweep(chats: list[Path], model: ScheduledModel, store: Path, workers: int) -> pl.DataFrame:
    return sweep(
        [str(p) for p in chats],
        DeepAgents(window=8000),
        GRID,
        store=store,
        summarizer=LLM(model, calls=NO_RETRY),
        workers=workers,
        progress=False,
        batch_seconds=0.0,
    )


@pytest.mark.parametrize("workers", [1, 2])
def test_failed_cells_are_rows_and_a_rerun_asks_only_what_failed(
    tmp_path: Path, chats: list[Path], workers: int
) -> None:
    model = _model(tmp_path / "model")
    (tmp_path / "model" / "failing").write_text(MARK)
    store = tmp_path / "s.duckdb"
    first = _sweep(chats, model, store, workers)
    assert first.height == 4
    failed = first.filter(pl.col("error").is_not_null())
    assert failed["trace_id"].to_list() == ["chat2", "chat2"]
    assert all("provider unavailable" in e and "'chat2'" in e for e in failed["error"])
    assert failed["turns"].null_count() == 2  # a failed cell has no replay columns
    assert first.filter(pl.col("error").is_null())["turns"].to_list() == [30, 30]
    asked, refused = model.asked(), set(model.asked("failed"))
    answered = set(asked) - refused
    assert refused and len(Store(store).summaries()) == len(answered)  # failed cells' too

    (tmp_path / "model" / "failing").unlink()
    model.forget()
    second = _sweep(chats, model, store, workers)
    again = model.asked()
    assert second["error"].null_count() == 4
    assert refused <= set(again)  # the failed requests are asked again ...
    assert not set(again) & answered  # ... and no answered one is

    clean = _model(tmp_path / "clean")
    whole = _sweep(chats, clean, tmp_path / "whole.duckdb", workers)
    assert second.select(STABLE).equals(whole.select(STABLE))
    assert set(again) | answered == set(clean.asked())  # together: what one clean run asks


def test_an_overflow_no_cut_can_fit_is_a_failed_row(tmp_path: Path, chats: list[Path]) -> None:
    """A model whose window cannot hold even the prompt: every summary fails with the sizes;
    the cells are rows with the located error, and the sweep still returns them all."""
    model = _model(tmp_path / "model", window=300)
    out = _sweep(chats, model, tmp_path / "s.duckdb", 1)
    assert out.height == 4 and out["error"].null_count() == 0
    assert all(e.startswith("trace 'chat") and ", turn " in e for e in out["error"])
    assert all("does not fit" in e for e in out["error"])


def test_cli_exits_3_with_one_line_and_a_rerun_completes(
    tmp_path: Path, chats: list[Path], capsys: pytest.CaptureFixture, monkeypatch
) -> None:
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "failing").write_text(MARK)
    monkeypatch.setenv(FOLDER_VARIABLE, str(folder))
    argv = [
        "sweep",
        *map(str, chats),
        "--db",
        str(tmp_path / "s.duckdb"),
        "--policy",
        "deepagents",
        "--window",
        "8000",
        "--grid",
        "trigger=fraction:0.3,fraction:0.5",
        "--model",
        "tests.scheduled_model:factory",
        "--retries",
        "0",
        "--workers",
        "1",
        "--format",
        "csv",
    ]
    assert main(argv) == 3
    out, err = capsys.readouterr()
    rows = list(pl.read_csv(out.encode())["error"])
    assert rows[:2] == [None, None] and all("provider unavailable" in e for e in rows[2:])
    lines = [m for m in messages(err) if m.startswith("ctxlab:")]
    assert len(lines) == 1 and "2 of 4 cells failed" in lines[0]
    assert "run the same command again to retry only those" in lines[0]
    assert "Traceback" not in err
    (folder / "failing").unlink()
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "error" not in pl.read_csv(out.encode()).columns and "ctxlab: error" not in err
