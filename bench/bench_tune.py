"""`ctxlab.tune` overhead and scaling (issue 37's done-when), each as a ratio in one run.

Run: `.venv/bin/python -m bench.bench_tune [--traces 6] [--trials 24] [--repeats 1]`.
Writes into a temporary folder.

* **Overhead.** One study with one worker (the replays in this process): its wall time
  against the sum of the replays and evaluations it ran, each timed where it ran
  (`tune_results.seconds`: replay, evaluation and measures of one trace under one setting).
  Issue 37 asks for at most 1.3x.
* **Two workers.** The same study (a fresh store) with two local worker processes against
  one worker; issue 37 asks for at least 1.8x. Both runs pay their own start-up (the fork
  server, sending the traces to each worker).
* **The command.** Issue 37's `ctxlab tune traces ... --trials 8 --holdout 0.5 --seed 1 --db X
  --format json` in a process of its own, from the repository (imports, loading the bundled
  samples, the study), against the replays and evaluations it ran; at most 10x.

The traces: the two bundled samples and the real files of the shared data (`CTXLAB_SHARED`,
else `../shared`; those whose model genai-prices knows, since cost is an objective), and
`--synthetic N` synthetic 150-turn Anthropic sessions (`tests.synthetic`) for more work per
trial. Imports and trace loading are warmed before the timed studies. The machine is
shared: the load average is printed beside each result.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ctxlab
from ctxlab._store.store import Store
from tests.synthetic import make_trace

REPO = Path(__file__).resolve().parents[1]
SPACE = {"window": "8000..200000/1000", "trigger": "fraction:0.3..0.95", "keep": "messages:2..30"}
COMMAND = [
    "tune", "traces", "--policy", "deepagents", "--space", "trigger=fraction:0.3..0.95",
    "--objective", "cost", "--objective", "needed_lost", "--trials", "8", "--holdout", "0.5",
    "--seed", "1", "--format", "json",
]  # fmt: skip


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _work_seconds(db: Path, study: str) -> tuple[float, int]:
    """The seconds of every replay and evaluation a study ran, and how many it ran."""
    row = (
        Store(db)
        .query("SELECT sum(seconds) AS s, count(*) AS n FROM tune_results WHERE study = ?", [study])
        .row(0)
    )
    return float(row[0]), int(row[1])


def real_traces() -> list[ctxlab.Trace]:
    """The shared data's real files whose model has a price (none without the shared data)."""
    from ctxlab._cost.pricing import rates_for
    from ctxlab._evaluate.metrics import model_of

    root = Path(os.environ.get("CTXLAB_SHARED", REPO.parent / "shared")) / "data"
    folders = [root / "real-traces", root / "samples"]
    found = ctxlab.load_all([f for f in folders if f.is_dir()])
    return [t for t in found if rates_for(model_of(t), None) is not None]


def _study(traces: list[ctxlab.Trace], db: Path, trials: int, workers: int) -> tuple[float, str]:
    start = time.perf_counter()
    found = ctxlab.tune(
        traces,
        "deepagents",
        SPACE,
        ("cost", "needed_lost"),
        trials,
        holdout=0.3,
        seed=1,
        db=db,
        workers=workers,
    )
    return time.perf_counter() - start, found.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synthetic", type=int, default=0, help="synthetic traces to add")
    parser.add_argument("--trials", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    traces = [*ctxlab.load(REPO / "traces"), *real_traces()] + [
        make_trace(150, fmt="anthropic", seed=s, model="claude-sonnet-4-5", provider="anthropic")
        for s in range(args.synthetic)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        # warm imports, price tables and the fork server's first start
        ctxlab.tune(traces[:2], "deepagents", SPACE, ("cost",), 1, holdout=0.5, db=folder / "w")
        print(f"{len(traces)} traces, {args.trials} trials; load average {_load()}")
        for repeat in range(args.repeats):
            one_db, two_db = folder / f"one{repeat}.duckdb", folder / f"two{repeat}.duckdb"
            one, name = _study(traces, one_db, args.trials, 1)
            work, replays = _work_seconds(one_db, name)
            print(
                f"1 worker: {one:.2f} s wall, {replays} replays+evaluations {work:.2f} s: "
                f"overhead {one / work:.3f}x (target <= 1.3x); load {_load()}"
            )
            two, name2 = _study(traces, two_db, args.trials, 2)
            assert name2 == name
            print(
                f"2 workers: {two:.2f} s wall: speed-up {one / two:.2f}x (target >= 1.8x); "
                f"load {_load()}"
            )
        db = folder / "cli.duckdb"
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "ctxlab._cli.main", *COMMAND, "--db", str(db)],
            cwd=REPO,
            capture_output=True,
            text=True,
            check=True,
        )
        wall = time.perf_counter() - start
        name = proc.stdout.split('"study": "', 1)[1].split('"', 1)[0]
        work, replays = _work_seconds(db, name)
        print(
            f"ctxlab tune (issue's command): {wall:.2f} s wall, {replays} replays+evaluations "
            f"{work:.2f} s: {wall / work:.1f}x (target < 10x); load {_load()}"
        )


if __name__ == "__main__":
    main()
