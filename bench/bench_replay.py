"""Replay speed: ctxlab's DeepAgents policy vs driving the real deepagents middleware.

Same trace, same decisions (asserted here too), one run:

    .venv/bin/python -m bench.bench_replay            # 1,000 turns + scaling 250..2,000
    .venv/bin/python -m bench.bench_replay --quick    # smaller, for a smoke run

Timings follow `timeit`: garbage collected before, collector paused during each timed call
(both sides alike). `cold` = the first replay of freshly built message objects (every message
measured once); `warm` = a replay of a trace already replayed (sizes cached per message object:
what a slider or a sweep pays). The real middleware is timed in hooks mode
(tests/deepagents_oracle.py).
"""

from __future__ import annotations

import argparse
import gc
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from deepagents_oracle import run_oracle  # noqa: E402
from synthetic import make_trace  # noqa: E402

from ctxlab.policies import DeepAgents  # noqa: E402
from ctxlab.replay import replay  # noqa: E402
from ctxlab.summarizers import Fixed  # noqa: E402

SUMMARY = Fixed("S" * 1600)
MODEL = "claude-sonnet-4-5"  # 200k window, 3.3 chars/token, 64k output reserved


def _policy(trigger: float) -> DeepAgents:
    if trigger == 0.85:
        return DeepAgents()  # deepagents' own defaults for the model
    return DeepAgents(
        trigger=("fraction", trigger),
        truncate_args_settings={"trigger": ("fraction", trigger), "keep": ("fraction", 0.10)},
    )


def _oracle_settings(trigger: float) -> dict | None:
    if trigger == 0.85:
        return None
    return {
        "trigger": ("fraction", trigger),
        "keep": ("fraction", 0.10),
        "truncate_args_settings": {"trigger": ("fraction", trigger), "keep": ("fraction", 0.10)},
    }


def _trace(turns: int):
    return make_trace(turns, fmt="anthropic", seed=1, model=MODEL, big=0.03)


def timed(fn, *args, **kwargs):
    """(result, seconds) of one call, the way `timeit` measures it."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        return result, time.perf_counter() - start
    finally:
        gc.enable()


def measure(turns: int, trigger: float, repeats: int = 5, oracle: bool = True) -> dict:
    """Timings (seconds) for one size and trigger; checks both sides agree."""
    trace = _trace(turns)
    ours, cold = timed(replay, trace, _policy(trigger), SUMMARY)
    warm = [timed(replay, trace, _policy(trigger), SUMMARY)[1] for _ in range(repeats)]
    row = {
        "turns": turns,
        "messages": len(trace.messages),
        "big_results": sum(
            1 for m in trace.messages if m.type == "tool" and len(str(m.content)) > 80_000
        ),
        "trigger": trigger,
        "events": len(ours.event_list),
        "cold": cold,
        "warm": statistics.median(warm),
    }
    if oracle:
        real, row["real"] = timed(
            run_oracle,
            _trace(turns),
            window=200_000,
            anthropic=True,
            max_tokens=64_000,
            tools=trace.tools,
            summary_text=SUMMARY.text,
            settings=_oracle_settings(trigger),
        )
        assert [(c.turn, c.context_tokens, c.messages) for c in ours.calls] == real.turns
        assert len(real.events) == len(ours.event_list)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    size = 250 if args.quick else 1000
    replay(_trace(20), _policy(0.25), SUMMARY)  # imports and first-use setup, not replay work
    scales = (125, 250) if args.quick else (250, 500, 1000, 2000)
    print(f"### {size} turns, real middleware vs ctxlab\n")
    print(
        "| trigger | messages | >80k results | events | real middleware | ctxlab cold "
        "| ctxlab warm | speedup cold | speedup warm |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for trigger in (0.85, 0.25):
        r = measure(size, trigger)
        print(
            f"| {trigger} | {r['messages']} | {r['big_results']} | {r['events']} "
            f"| {r['real']:.2f} s | {r['cold'] * 1000:.0f} ms | {r['warm'] * 1000:.1f} ms "
            f"| {r['real'] / r['cold']:.0f}x | {r['real'] / r['warm']:.0f}x |"
        )
    print("\n### Scaling (trigger 0.25)\n")
    print(
        "| turns | messages | real middleware | ctxlab cold | ctxlab warm "
        "| warm µs/turn | speedup warm |"
    )
    print("|---|---|---|---|---|---|---|")
    for turns in scales:
        r = measure(turns, 0.25, repeats=3)
        print(
            f"| {turns} | {r['messages']} | {r['real']:.2f} s | {r['cold'] * 1000:.0f} ms "
            f"| {r['warm'] * 1000:.1f} ms | {r['warm'] / turns * 1e6:.0f} "
            f"| {r['real'] / r['warm']:.0f}x |"
        )


if __name__ == "__main__":
    main()
