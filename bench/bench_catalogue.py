"""Replay time of every catalogue preset on a 1,000-turn trace: first replay and repeat.

    .venv/bin/python -m bench.bench_catalogue            # 1,000 turns, best of 3
    .venv/bin/python -m bench.bench_catalogue --quick    # 200 turns, best of 1

The trace is the replay benchmark's (`tests/synthetic.py`, Anthropic format, seed 1,
`claude-sonnet-4-5`: 200k window). Presets run with their upstream defaults, except that
`langchain-summarization` gets `trigger=("fraction", 0.85)` (its class default, None, never
acts). The summariser is `Fixed` so the numbers are the policy's own; the offline `Extractive`
summariser adds a few milliseconds per summary on top. Timings follow `timeit` (garbage collected
before, collector paused during the call). *first* builds a fresh trace each time (every message
measured and every derived form built); *repeat* replays the same trace objects again, which is
what a slider move or a sweep cell after the first pays.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import time
from typing import Any

import ctxlab
from ctxlab._replay.policies import catalog
from ctxlab.summarizers import Fixed
from tests.synthetic import make_trace

MODEL = "claude-sonnet-4-5"
PARAMS: dict[str, dict[str, Any]] = {"langchain-summarization": {"trigger": ("fraction", 0.85)}}
SUMMARY = Fixed("summary " * 300)


def _trace(turns: int) -> ctxlab.Trace:
    return make_trace(turns, fmt="anthropic", seed=1, model=MODEL, big=0.03)


def _timed(trace: ctxlab.Trace, policy: Any) -> tuple[Any, float]:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = ctxlab.replay(trace, policy, SUMMARY)
        return result, time.perf_counter() - start
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    turns, best = (200, 1) if args.quick else (1000, 3)
    ctxlab.replay(_trace(20), catalog.get("raw"))  # imports and model profiles, once
    print(f"{turns} turns, best of {best}; ms")
    print("| preset | events | first | repeat | repeat µs/turn |")
    print("|---|---|---|---|---|")
    repeats = []
    for name in catalog.PRESETS:
        policy = catalog.get(name, **PARAMS.get(name, {}))
        firsts = []
        for _ in range(best):
            trace = _trace(turns)
            result, seconds = _timed(trace, policy)
            firsts.append(seconds)
        again = [_timed(trace, policy)[1] for _ in range(best + 2)]
        repeats.append(min(again))
        print(
            f"| {name} | {len(result.event_list)} | {min(firsts) * 1e3:.1f} | "
            f"{min(again) * 1e3:.1f} | {min(again) * 1e6 / turns:.0f} |"
        )
    print(f"median repeat {statistics.median(repeats) * 1e3:.1f} ms, max {max(repeats) * 1e3:.1f}")


if __name__ == "__main__":
    main()
