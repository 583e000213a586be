"""`ctxlab tune --ray ADDRESS` on a local Ray cluster of the test's own (the sweep test's
`RayHead`): a grid-sampler study gives the same trials, front and reference points as the
same study run locally, and only the driver writes the store."""

from __future__ import annotations

import json
from concurrent.futures import Future
from pathlib import Path

import pytest

import ctxlab
from ctxlab._cli.main import main
from tests.test_sweep import RayHead, ray_head  # noqa: F401 (the fixture)

REPO = Path(__file__).resolve().parents[1]
GRID = ["--space", "trigger=fraction:0.5,fraction:0.8", "--space", "window=30000,60000"]


def test_grid_study_on_ray_gives_the_local_trials(
    tmp_path: Path,
    ray_head: tuple[Future[str], RayHead],  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    up, _ = ray_head
    local = ctxlab.tune(
        REPO / "traces",
        "deepagents",
        {"trigger": "fraction:0.5,fraction:0.8", "window": "30000,60000"},
        ("cost", "needed_lost"),
        trials=10,  # the grid has 4 points: the study stops there
        holdout=0.5,
        seed=3,
        sampler="grid",
        db=tmp_path / "local.duckdb",
        workers=1,
    ).to_json()
    assert len(local["trials"]) == 4
    drawn = {tuple(sorted(t["params"].items())) for t in local["trials"]}
    assert len(drawn) == 4  # every grid point once
    monkeypatch.chdir(REPO)
    db = str(tmp_path / "ray.duckdb")
    argv = ["tune", "traces", "--policy", "deepagents", *GRID, "--trials", "10",
            "--holdout", "0.5", "--seed", "3", "--sampler", "grid",
            "--db", db, "--format", "json", "--ray", up.result()]  # fmt: skip
    assert main(argv) == 0
    on_ray = json.loads(capsys.readouterr().out)
    assert on_ray == local
