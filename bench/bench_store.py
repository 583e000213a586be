"""Store and sweep throughput: turn rows written per second, sweep cells per second.

Run: `.venv/bin/python -m bench.bench_store`. Writes into a temporary folder.

* Turn rows: 1,000 replays x 1,000 turns (1M rows, plus their events) saved in one
  `Store.save_many` call: Arrow frames inserted inside one transaction.
* Sweep: a 12-cell grid over synthetic traces with 1 and 2 worker processes, cells per second
  for the sweep call itself (hash, plan, replay in workers, write). Each run is a fresh
  interpreter whose own imports are warmed by an untimed one-cell sweep, so the 1-process run
  is not charged the parent's imports while the 2-process run pays all of its own start-up
  (fork server, workers, sending traces); traces are stored first and timed apart. The two
  configurations alternate `--repeats` times, since other work on the machine makes single
  runs noisy; best and median are printed with the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from multiprocessing import forkserver
from pathlib import Path

import polars as pl

from ctxlab._store.store import TURN_COLUMNS, SavedReplay, Store
from ctxlab._store.sweep import sweep
from ctxlab.policies import DeepAgents
from tests.synthetic import make_trace

GRID = {
    "trigger": ["fraction:0.25", "fraction:0.5", "fraction:0.7", "fraction:0.85"],
    "keep": ["messages:6", "messages:20", "fraction:0.1"],
}


def synthetic_saved(replays: int, turns: int) -> list[SavedReplay]:
    """Replay results with realistic columns, made directly (the write path is what we time)."""
    base = pl.DataFrame(
        {c: pl.int_range(0, turns, eager=True) * (i + 1) for i, c in enumerate(TURN_COLUMNS)}
    )
    events = pl.DataFrame(
        {
            "seq": [0, 1],
            "kind": ["offload_tool_result", "summarize"],
            "turn": [10, 500],
            "messages": [[20], list(range(30))],
            "tokens_before": [30000, 170000],
            "tokens_after": [400, 20000],
            "file_path": ["/large_tool_results/x", "/conversation_history/s.md"],
            "reason": ["> 80000 chars", "fraction 0.85"],
        }
    )
    files = pl.DataFrame(
        {
            "path": ["/large_tool_results/x"],
            "bytes": [5],
            "sha256": ["2cf24dba"],
            "content": ["hello"],
        }
    )
    return [
        SavedReplay(
            f"r{i:06d}", "t", "trace", "deepagents", f'{{"i": {i}}}', "default", base, events, files
        )
        for i in range(replays)
    ]


def bench_rows(folder: Path, replays: int, turns: int) -> None:
    saved = synthetic_saved(replays, turns)
    store = Store(folder / "rows.duckdb")
    start = time.perf_counter()
    store.save_many(saved)
    took = time.perf_counter() - start
    rows = store.query("SELECT count(*) AS n FROM turns")["n"][0]
    print(f"turn rows: {rows:,} in {took:.2f} s = {rows / took:,.0f} rows/s")


def one_sweep(folder: Path, n_traces: int, turns: int, workers: int) -> dict[str, float]:
    """One timed sweep in this interpreter (run by `bench_sweep` in a fresh one)."""
    traces = [
        make_trace(turns, seed=s, model="claude-sonnet-4-5", provider="anthropic")
        for s in range(n_traces)
    ]
    sweep(traces[:1], DeepAgents(), {}, store=folder / "warm.duckdb", workers=1, progress=False)
    store = Store(folder / "sweep.duckdb")
    start = time.perf_counter()
    store.add(traces)  # once per trace, whatever the grid: timed apart from the cells
    ingest = time.perf_counter() - start
    start, cpu = time.perf_counter(), time.process_time()
    sweep(traces, DeepAgents(), GRID, store=store, workers=workers, progress=False)
    took, cpu = time.perf_counter() - start, time.process_time() - cpu
    cells = n_traces * len(GRID["trigger"]) * len(GRID["keep"])
    server, workers_cpu = _fork_server_cpu()
    return {
        "cells": cells,
        "seconds": took,
        "parent_cpu": cpu,
        "server_cpu": server,
        "workers_cpu": workers_cpu,
        "ingest": ingest,
    }


def _fork_server_cpu() -> tuple[float, float]:
    """CPU seconds of the fork server itself (its imports) and of the workers it reaped.

    Workers are the fork server's children, not ours, so `os.times()` cannot see them; the
    kernel adds a reaped child's time to its parent's `cutime`/`cstime` in /proc. Together
    with the parent's time this is the 2-process run's total CPU, which other load on the
    machine inflates far less than wall time. Zeros when no fork server ran."""
    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    if pid is None:
        return 0.0, 0.0
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    utime, stime, cutime, cstime = (int(f) for f in fields[11:15])
    tick = os.sysconf("SC_CLK_TCK")
    return (utime + stime) / tick, (cutime + cstime) / tick


def bench_sweep(n_traces: int, turns: int, repeats: int) -> None:
    runs: dict[int, list[dict[str, float]]] = {1: [], 2: []}
    for _ in range(repeats):
        for workers in (1, 2):
            load = os.getloadavg()[0]
            out = subprocess.run(
                [sys.executable, "-m", "bench.bench_store", "--one-sweep", str(workers)]
                + ["--traces", str(n_traces), "--sweep-turns", str(turns)],
                check=True,
                capture_output=True,
                text=True,
                cwd=Path(__file__).resolve().parents[1],
            )
            run = {**json.loads(out.stdout.splitlines()[-1]), "load": load}
            runs[workers].append(run)
            cpu = run["parent_cpu"] + run["server_cpu"] + run["workers_cpu"]
            print(
                f"sweep, {workers} process(es): {run['cells']:.0f} cells of {turns} turns in "
                f"{run['seconds']:.2f} s = {run['cells'] / run['seconds']:.2f} cells/s; CPU "
                f"{cpu:.1f} s (parent {run['parent_cpu']:.1f}, fork server "
                f"{run['server_cpu']:.1f}, workers {run['workers_cpu']:.1f}); traces stored "
                f"before in {run['ingest']:.2f} s; load average {load:.2f}",
                flush=True,
            )
    rate = {w: [r["cells"] / r["seconds"] for r in rs] for w, rs in runs.items()}
    for label, pick in (("best", max), ("median", statistics.median)):
        one, two = pick(rate[1]), pick(rate[2])
        print(f"{label}: 1 process {one:.2f} cells/s, 2 processes {two:.2f} cells/s", end="")
        print(f" = {two / one:.2f}x")
    print(f"load average now {os.getloadavg()[0]:.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--traces", type=int, default=8)
    parser.add_argument("--sweep-turns", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3, help="1- and 2-process runs, alternated")
    parser.add_argument("--skip-rows", action="store_true", help="only the sweep benchmark")
    parser.add_argument("--one-sweep", type=int, metavar="WORKERS", help=argparse.SUPPRESS)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.one_sweep:
            run = one_sweep(Path(tmp), args.traces, args.sweep_turns, args.one_sweep)
            print(json.dumps(run))
            return
        if not args.skip_rows:
            bench_rows(Path(tmp), args.replays, args.turns)
    bench_sweep(args.traces, args.sweep_turns, args.repeats)


if __name__ == "__main__":
    main()
