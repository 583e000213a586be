"""Stage-engine replay CPU at two trace lengths: does a catalogue preset grow linearly?

    .venv/bin/python -m bench.bench_engine                      # 1,000 and 10,000 turns, 3 rounds
    .venv/bin/python -m bench.bench_engine --sizes 1000 --rounds 1 --presets raw
    .venv/bin/python -m bench.bench_engine --profile clear-tool-uses --sizes 10000

Issue 16 asks that a replay at 10,000 turns cost at most ten times the 1,000-turn one. Every
catalogue preset runs on the stage engine (`ctxlab._replay.policies.engine.StageRun`), so this times
`ctxlab.replay(trace, preset)` on bench_widgets' synthetic trace (process CPU time, so the
other jobs on a shared box move it less than the wall clock), median of `--rounds`, and prints
the growth. The load average is printed with each size.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics
import time
from pathlib import Path

import ctxlab
from bench.bench_widgets import synthetic

PRESETS = (
    "raw",
    "claude-code",
    "clear-tool-uses",
    "inspect-edit",
    "jetbrains-hybrid",
    "observation-masking",
)


def loadavg() -> str:
    """The 1-minute load average (other jobs share the box)."""
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "?"


def cpu_ms(trace: ctxlab.Trace, preset: str) -> float:
    """CPU milliseconds of one replay (collector off, as the widgets' timings)."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        ctxlab.replay(trace, preset)
        return (time.process_time() - start) * 1000
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--presets", nargs="+", default=list(PRESETS))
    parser.add_argument("--profile", metavar="PRESET", help="cProfile one replay instead")
    args = parser.parse_args()
    if args.profile:
        trace = synthetic(args.sizes[0])
        ctxlab.replay(trace, args.profile)  # warm the per-message caches as a repeat replay
        cProfile.runctx(
            "ctxlab.replay(trace, p)",
            {"ctxlab": ctxlab, "trace": trace, "p": args.profile},
            {},
            "/tmp/bench_engine.prof",
        )
        pstats.Stats("/tmp/bench_engine.prof").sort_stats("cumulative").print_stats(25)
        return
    medians: dict[tuple[str, int], float] = {}
    for turns in args.sizes:
        trace = synthetic(turns)
        print(f"{turns} turns, load {loadavg()}", flush=True)
        for preset in args.presets:
            ctxlab.replay(trace, preset)  # the first replay measures each message once
            runs = [cpu_ms(trace, preset) for _ in range(args.rounds)]
            medians[preset, turns] = statistics.median(runs)
            print(f"  {preset:22s} {medians[preset, turns]:9.1f} ms  {runs}", flush=True)
        print(f"  load after {loadavg()}", flush=True)
    if len(args.sizes) == 2:
        a, b = args.sizes
        print(f"growth {a} -> {b} turns ({b / a:g}x):")
        for preset in args.presets:
            print(f"  {preset:22s} {medians[preset, b] / medians[preset, a]:6.1f}x")


if __name__ == "__main__":
    main()
