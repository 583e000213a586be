"""Store and sweep throughput: turn rows written per second, sweep cells per second.

Run: `.venv/bin/python -m bench.bench_store`. Writes into a temporary folder.

* Turn rows: 1,000 replays x 1,000 turns (1M rows, plus their events) saved in one
  `Store.save_many` call: Arrow frames inserted inside one transaction.
* Sweep: a 12-cell grid over the same traces with 1 and 2 worker processes (fresh stores,
  traces stored first and timed apart), cells per second for the sweep call itself (plan,
  replay in workers, write).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import polars as pl

from ctxlab.policies import DeepAgents
from ctxlab.store import TURN_COLUMNS, SavedReplay, Store
from ctxlab.sweep import sweep
from tests.synthetic import make_trace


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


def bench_sweep(folder: Path, n_traces: int, turns: int) -> None:
    traces = [
        make_trace(turns, seed=s, model="claude-sonnet-4-5", provider="anthropic")
        for s in range(n_traces)
    ]
    grid = {
        "trigger": ["fraction:0.25", "fraction:0.5", "fraction:0.7", "fraction:0.85"],
        "keep": ["messages:6", "messages:20", "fraction:0.1"],
    }
    cells = n_traces * 12
    rates = {}
    for workers in (1, 2):
        store = Store(folder / f"sweep{workers}.duckdb")
        start = time.perf_counter()
        store.add(traces)  # once per trace, whatever the grid: timed apart from the cells
        ingest = time.perf_counter() - start
        start = time.perf_counter()
        sweep(traces, DeepAgents(), grid, store=store, workers=workers, progress=False)
        took = time.perf_counter() - start
        rates[workers] = cells / took
        print(
            f"sweep, {workers} process(es): {cells} cells of {turns} turns in {took:.2f} s "
            f"= {rates[workers]:.1f} cells/s (traces stored before in {ingest:.2f} s)"
        )
    print(f"speedup 2 vs 1: {rates[2] / rates[1]:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replays", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--traces", type=int, default=8)
    parser.add_argument("--sweep-turns", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        bench_rows(Path(tmp), args.replays, args.turns)
        bench_sweep(Path(tmp), args.traces, args.sweep_turns)


if __name__ == "__main__":
    main()
