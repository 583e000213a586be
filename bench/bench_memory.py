"""Long traces: memory a trace holds and how replay, explorer and scrubber moves scale.

    .venv/bin/python -m bench.bench_memory                 # 1,000 and 10,000 turns, 3 rounds
    .venv/bin/python -m bench.bench_memory --quick         # 200 and 2,000 turns, 1 round
    .venv/bin/python -m bench.bench_memory --memory-only   # only the tracemalloc phase

Issue 16 asks that at 10,000 turns replay, an explorer move and a scrubber move grow at most
linearly from 1,000 turns, and that memory stays proportional to the trace. This script prints
both halves:

* *Memory*: `tracemalloc` (Python allocations still alive) while a synthetic trace is built
  (`tests.synthetic`, the replay benchmark's trace) and while each real Claude Code session in
  --data is loaded (with its subagents), with the number of message references the turns'
  inputs expose (`sum(len(turn.inputs))`, which grows with the square of the turns when every
  call sees the whole history) and the number actually stored (`ctxlab._ingest.inputs`: each shared
  list once), so the MB can be read against them; then, as bench.bench_widgets measures it,
  what a `ThresholdExplorer` adds after five trigger moves. Traced in a phase of its own:
  tracing slows everything.
* *Time*: bench.bench_widgets' long-trace measurement (Deep Agents at its defaults with the
  offline summariser: a repeat replay, five trigger moves of a `ThresholdExplorer`, a scrubber
  moved over 40 turns), repeated `--rounds` times on fresh traces; medians over the rounds of
  each round's median (best for the replay), wall clock and CPU. The box is shared: the load
  average is printed before and after each round.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ctxlab
from bench.bench_widgets import DATA, long_trace_round, memory_mb, synthetic


def loadavg() -> str:
    """The 1-minute load average (other jobs share the box)."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def references(trace: ctxlab.Trace) -> tuple[int, int]:
    """(message references the turns' inputs expose, i.e. what a tuple per turn stores;
    references actually stored: each shared list once), over the trace and its subagents."""
    exposed = 0
    shared: dict[int, int] = {}
    for t in trace.walk():
        for turn in (*t.turns, *t.harness_calls):
            exposed += len(turn.inputs)
            parts = getattr(turn.inputs, "parts", None)
            if parts is None:  # a tuple of its own
                shared[id(turn)] = len(turn.inputs)
            else:
                shared.update((id(base), len(base)) for base, _, _ in parts)
    return exposed, sum(shared.values())


def allocated(build: Callable[[], Any]) -> tuple[Any, int]:
    """(what `build()` returns, bytes of Python allocations it leaves alive)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = build()
        gc.collect()
        return result, tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()


def traced_mb(build: Callable[[], Any]) -> tuple[Any, float]:
    """(what `build()` returns, MB of Python allocations it leaves alive)."""
    result, held = allocated(build)
    return result, held / 2**20


def memory_rows(sizes: tuple[int, ...], data: Path) -> None:
    """MB held by each synthetic trace and each real Claude Code session."""
    print(f"\n### Memory (tracemalloc; load average {loadavg()})\n")
    print("| trace | turns | messages | input refs | stored refs | MB | KB per turn |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for turns in sizes:
        trace, mb = traced_mb(lambda turns=turns: synthetic(turns))
        _print_memory(f"synthetic {turns:,}", trace, mb)
        del trace
    print("\n| synthetic turns | trace MB | explorer MB after 5 trigger moves |")
    print("|---:|---:|---:|")
    memory_mb(50)  # imports and first-use caches, so they are not counted below
    for turns in sizes:
        held, added = memory_mb(turns)  # bench_widgets' own phase: trace, then explorer
        print(f"| {turns:,} | {held:.1f} | {added:.1f} |", flush=True)
    print()
    print("| trace | turns | messages | input refs | stored refs | MB | KB per turn |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for path in sorted(data.glob("claude-code-session*/*.jsonl*")):
        loaded, mb = traced_mb(lambda path=path: ctxlab.load(path))
        trace = loaded[0] if isinstance(loaded, list) else loaded
        _print_memory(f"{path.parent.name}/{path.name[:12]}…", trace, mb)
        del loaded, trace


def _print_memory(label: str, trace: ctxlab.Trace, mb: float) -> None:
    turns = sum(len(t.turns) for t in trace.walk())
    messages = sum(len(t.messages) for t in trace.walk())
    exposed, stored = references(trace)
    print(
        f"| {label} | {turns:,} | {messages:,} | {exposed:,} | {stored:,} "
        f"| {mb:.1f} | {mb * 1024 / max(1, turns):.1f} |",
        flush=True,
    )


def one_round(turns: int, quick: bool) -> dict[str, float]:
    """Replay, explorer move and scrubber move on a fresh trace (bench_widgets' long-trace
    measurement): wall and CPU milliseconds."""
    return long_trace_round(turns, quick)[0]


def time_rows(sizes: tuple[int, ...], rounds: int, quick: bool) -> None:
    """Medians over `rounds` rounds of each size, then the growth from the smallest size."""
    print("\n### Time (Deep Agents at its defaults; ms, median of rounds)\n")
    results: dict[int, list[dict[str, float]]] = {n: [] for n in sizes}
    loads: list[str] = [loadavg()]
    for r in range(rounds):
        for turns in sizes:
            results[turns].append(one_round(turns, quick))
            loads.append(loadavg())
            print(f"(round {r + 1}, {turns:,} turns done, load {loads[-1]})", flush=True)
    keys = ("replay", "move", "scrub", "replay_cpu", "move_cpu", "scrub_cpu")
    med = {n: {k: statistics.median(x[k] for x in results[n]) for k in keys} for n in sizes}
    print(
        "\n| turns | replay (repeat) | explorer move | scrubber move | CPU: replay / move / scrub |"
    )
    print("|---:|---:|---:|---:|---|")
    for n in sizes:
        m = med[n]
        print(
            f"| {n:,} | {m['replay']:.0f} | {m['move']:.0f} | {m['scrub']:.1f} "
            f"| {m['replay_cpu']:.0f} / {m['move_cpu']:.0f} / {m['scrub_cpu']:.1f} |"
        )
    small, large = min(sizes), max(sizes)
    print(f"\ngrowth {small:,} -> {large:,} turns ({large / small:.0f}x the turns):")
    for k in keys:
        print(f"  {k:12s} {med[large][k] / med[small][k]:5.1f}x")
    print(f"load averages during the rounds: {' '.join(loads)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 and 2,000 turns, 1 round")
    parser.add_argument("--rounds", type=int, default=3, help="timing rounds (median taken)")
    parser.add_argument("--data", type=Path, default=DATA, help=f"real traces (default {DATA})")
    parser.add_argument("--memory-only", action="store_true", help="skip the timing rounds")
    parser.add_argument("--time-only", action="store_true", help="skip the memory phase")
    args = parser.parse_args()
    sizes = (200, 2000) if args.quick else (1000, 10_000)
    if not args.time_only:
        memory_rows(sizes, args.data)
    if not args.memory_only:
        time_rows(sizes, 1 if args.quick else args.rounds, args.quick)


if __name__ == "__main__":
    main()
