"""Fact survival speed: Tier 1 of `ctxlab.evaluate` under every preset vs the replays themselves.

For each trace, every preset (`ctxlab policies`) is replayed in turn on the same `Trace` object
with the default offline summariser, as a sweep does, then evaluated (Tier 1: no model). The
ratio is evaluate time over replay time, per preset and over all presets together (each best
of `--repeat`). Fact extraction (`ctxlab._evaluate.facts.extract`) and the search of every message
for
every fact (`ctxlab._evaluate.survival.index`) depend on the trace alone and run once per trace
whatever
the number of policies, so they are timed apart, once, and added to the total once.

    .venv/bin/python -m bench.bench_evaluate                 # 1,000-turn synthetic + real traces
    .venv/bin/python -m bench.bench_evaluate --quick         # 200 turns, no real traces
    .venv/bin/python -m bench.bench_evaluate --real-only
    .venv/bin/python -m bench.bench_evaluate --long-runs     # one message of n equal characters

Timings follow `bench.bench_replay.timed` (garbage collected before, collector paused during).
"""

from __future__ import annotations

import argparse
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.bench_replay import timed
from ctxlab._evaluate.evaluation import evaluate, trace_facts
from ctxlab._evaluate.survival import index
from ctxlab._replay.policies.catalog import PRESETS
from ctxlab._replay.replay import replay
from ctxlab._trace import Trace
from tests.synthetic import make_trace

REAL = Path("/work/shared/data/real-traces")
SAMPLES = Path("/work/shared/data/samples")


def best(repeat: int, fn: Callable[..., Any], *args: Any) -> tuple[Any, float]:
    """(result, seconds) of the fastest of `repeat` calls (`timed` each)."""
    runs = [timed(fn, *args) for _ in range(repeat)]
    return runs[0][0], min(seconds for _, seconds in runs)


def bench_trace(trace: Trace, repeat: int = 3, *, verbose: bool = True) -> tuple[float, ...]:
    """(replay, evaluate, extract, index) seconds over every preset on `trace`: replays and
    evaluations best of `repeat`, extraction and the per-trace search once."""
    facts, extract_s = timed(trace_facts, trace)
    _, index_s = timed(index, trace, facts)
    if verbose:
        print(
            f"\n{trace.trace_id}: {len(trace.turns)} turns, {len(trace.messages)} messages, "
            f"{len(facts)} facts; once per trace: extract {extract_s:.2f} s, "
            f"search of every message {index_s:.2f} s"
        )
        print(f"{'preset':32s} {'replay':>9s} {'evaluate':>9s} {'ratio':>7s} {'events':>7s}")
    total_replay = total_eval = 0.0
    for name in PRESETS:
        try:
            result, replay_s = best(repeat, replay, trace, name)
        except ValueError as exc:  # a preset that needs a window the trace's model lacks
            if verbose:
                print(f"{name:32s} skipped: {str(exc)[:60]}")
            continue
        evaluation, eval_s = best(repeat, evaluate, result)
        total_replay += replay_s
        total_eval += eval_s
        if verbose:
            print(
                f"{name:32s} {replay_s * 1000:7.1f}ms {eval_s * 1000:7.1f}ms "
                f"{eval_s / replay_s:6.2f}x {len(result.event_list):7d}"
                f"   needed_lost {evaluation.needed_lost}"
            )
    if verbose:
        once = extract_s + index_s
        print(
            f"{'all presets':32s} {total_replay:8.2f}s {total_eval:8.2f}s "
            f"{total_eval / total_replay:6.2f}x   (+ once per trace {once:.2f} s: "
            f"{(total_eval + once) / total_replay:.2f}x)"
        )
    return total_replay, total_eval, extract_s, index_s


def real_traces() -> list[Trace]:
    """Every trace ctxlab loads from the team's real files and the samples."""
    from ctxlab._ingest.load import load

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


LONG_RUN_SIZES = (60_000, 120_000, 240_000, 480_000, 960_000)
"""Lengths of the one long message `long_runs` times: linear growth shows as a flat cost per
character from 60,000 on (issue 34: 240,000 cost 8 s, 30 µs a character, before)."""


def long_run_trace(chars: int, char: str, role: str) -> Trace:
    """A four-message conversation whose `role` message ("user" or "tool") is `chars` copies
    of `char`, loaded from a JSON file as a user's would be (separator lines, padding, hex
    dumps and minified files are ordinary tool output)."""
    import json
    import tempfile

    from ctxlab._ingest.load import load

    big = char * chars
    call = {"name": "bash", "arguments": json.dumps({"command": "cat dump"})}
    messages = [
        {"role": "user", "content": big if role == "user" else "show the dump"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [{"id": "c1", "type": "function", "function": call}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": big if role == "tool" else "ok"},
        {"role": "assistant", "content": "done"},
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "long.json"
        path.write_text(json.dumps(messages))
        return load(path)[0]


def long_runs(repeat: int) -> None:
    """`evaluate` against load + replay (Deep Agents) on one message of n equal characters:
    cost per character and the ratio, for a user message and a tool output, ASCII and not."""
    print(
        f"{'message':>14s} {'chars':>9s} {'load+replay':>12s} {'evaluate':>9s} "
        f"{'ns/char':>8s} {'ratio':>6s}"
    )
    for role, char in (("user", "a"), ("tool", "a"), ("user", "0"), ("user", "é"), ("tool", "=")):
        for chars in LONG_RUN_SIZES:
            runs = []
            for _ in range(repeat):  # a fresh trace each time: nothing cached from the last
                trace, load_s = timed(long_run_trace, chars, char, role)
                result, replay_s = timed(replay, trace, "deepagents")
                _, eval_s = timed(evaluate, result)
                runs.append((load_s + replay_s, eval_s))
            before = min(r[0] for r in runs)
            eval_s = min(r[1] for r in runs)
            print(
                f"{role + ' ' + repr(char):>14s} {chars:>9,} {before:>11.3f}s "
                f"{eval_s:>8.3f}s {eval_s / chars * 1e9:>8.0f} {eval_s / before:>6.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 turns, no real traces")
    parser.add_argument("--real-only", action="store_true", help="only the real traces")
    parser.add_argument("--repeat", type=int, default=3, help="best of N (default 3)")
    parser.add_argument(
        "--long-runs", action="store_true", help="one message of n equal characters only"
    )
    args = parser.parse_args()
    if args.long_runs:
        long_runs(args.repeat)
        return
    if not args.real_only:
        turns = 200 if args.quick else 1000
        trace = make_trace(turns, fmt="anthropic", seed=1, model="claude-sonnet-4-5")
        bench_trace(trace, args.repeat)
    if args.quick:
        return
    sums = [0.0, 0.0, 0.0, 0.0]
    for trace in real_traces():
        for i, v in enumerate(bench_trace(trace, args.repeat)):
            sums[i] += v
    replay_s, eval_s, extract_s, index_s = sums
    if replay_s:
        print(
            f"\nreal traces, all presets: replay {replay_s:.2f} s, evaluate {eval_s:.2f} s "
            f"({eval_s / replay_s:.2f}x); once per trace: extract {extract_s:.2f} s, "
            f"search {index_s:.2f} s (with them {(eval_s + extract_s + index_s) / replay_s:.2f}x)"
        )


if __name__ == "__main__":
    main()
