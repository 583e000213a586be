"""Fact survival speed: Tier 1 of `ctxlab.evaluate` under every preset vs the replays themselves.

For each trace, every preset (`ctxlab policies`) is replayed in turn on the same `Trace` object
with the default offline summariser, as a sweep does, then evaluated (Tier 1: no model). The
ratio is evaluate time over replay time, per preset and over all presets together. Fact
extraction (`ctxlab.facts.extract`) runs once per trace whatever the number of policies, so it is
timed apart and added to the total once; so is the per-trace search of every message for every
fact, which the first evaluation pays.

    .venv/bin/python -m bench.bench_evaluate                 # 1,000-turn synthetic + real traces
    .venv/bin/python -m bench.bench_evaluate --quick         # 200 turns, no real traces
    .venv/bin/python -m bench.bench_evaluate --real-only

Timings follow `bench.bench_replay.timed` (garbage collected before, collector paused during).
"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path

from bench.bench_replay import timed
from ctxlab.evaluation import evaluate, trace_facts
from ctxlab.policies.catalog import PRESETS
from ctxlab.replay import replay
from ctxlab.trace import Trace
from tests.synthetic import make_trace

REAL = Path("/work/shared/data/real-traces")
SAMPLES = Path("/work/shared/data/samples")


def bench_trace(trace: Trace, *, verbose: bool = True) -> tuple[float, float, float]:
    """(replay seconds, evaluate seconds, extract seconds) over every preset on `trace`."""
    facts, extract_s = timed(trace_facts, trace)
    if verbose:
        print(
            f"\n{trace.trace_id}: {len(trace.turns)} turns, {len(trace.messages)} messages, "
            f"{len(facts)} facts (extract {extract_s:.2f} s, once per trace)"
        )
        print(f"{'preset':32s} {'replay':>9s} {'evaluate':>9s} {'ratio':>7s} {'events':>7s}")
    total_replay = total_eval = 0.0
    for name in PRESETS:
        try:
            result, replay_s = timed(replay, trace, name)
        except ValueError as exc:  # a preset that needs a window the trace's model lacks
            if verbose:
                print(f"{name:32s} skipped: {str(exc)[:60]}")
            continue
        evaluation, eval_s = timed(evaluate, result)
        total_replay += replay_s
        total_eval += eval_s
        if verbose:
            print(
                f"{name:32s} {replay_s * 1000:7.1f}ms {eval_s * 1000:7.1f}ms "
                f"{eval_s / replay_s:6.2f}x {len(result.event_list):7d}"
                f"   needed_lost {evaluation.needed_lost}"
            )
    if verbose:
        print(
            f"{'all presets':32s} {total_replay:8.2f}s {total_eval:8.2f}s "
            f"{total_eval / total_replay:6.2f}x   (+ extract {extract_s:.2f} s: "
            f"{(total_eval + extract_s) / total_replay:.2f}x)"
        )
    return total_replay, total_eval, extract_s


def real_traces() -> list[Trace]:
    """Every trace ctxlab loads from the team's real files and the samples."""
    from ctxlab.load import load

    out: list[Trace] = []
    files = sorted(p for p in REAL.rglob("*") if p.is_file() and p.name != "SOURCE.txt")
    files += sorted(SAMPLES.glob("*.json"))
    for path in files:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out.extend(t for t in load(path) if t.turns)
            except Exception as exc:  # noqa: BLE001 - a file ctxlab cannot read is reported
                print(f"skipped {path.name}: {type(exc).__name__}: {str(exc)[:80]}")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 turns, no real traces")
    parser.add_argument("--real-only", action="store_true", help="only the real traces")
    args = parser.parse_args()
    if not args.real_only:
        turns = 200 if args.quick else 1000
        bench_trace(make_trace(turns, fmt="anthropic", seed=1, model="claude-sonnet-4-5"))
    if args.quick:
        return
    sums = [0.0, 0.0, 0.0]
    for trace in real_traces():
        for i, v in enumerate(bench_trace(trace)):
            sums[i] += v
    replay_s, eval_s, extract_s = sums
    if replay_s:
        print(
            f"\nreal traces, all presets: replay {replay_s:.2f} s, evaluate {eval_s:.2f} s "
            f"({eval_s / replay_s:.2f}x), extract {extract_s:.2f} s "
            f"(with it {(eval_s + extract_s) / replay_s:.2f}x)"
        )


if __name__ == "__main__":
    main()
