"""Replay speed: ctxlab's DeepAgents policy vs driving the real deepagents middleware.

Same trace, same decisions (asserted here too), one run:

    .venv/bin/python -m bench.bench_replay            # 1,000 turns + scaling 250..2,000
    .venv/bin/python -m bench.bench_replay --quick    # smaller, for a smoke run

Timings follow `timeit`: garbage collected before, collector paused during each timed call
(both sides alike), best of several. `first` = the first replay of a freshly built trace (every
message measured, every derived form built: what a sweep worker pays for each trace, and what
the first slider move pays); each repeat builds a new trace. `repeat` = a replay of a trace
object already replayed once (sizes and derived forms cached per message object). The real
middleware is timed in hooks mode (tests/deepagents_oracle.py) on a freshly built trace too.
"""

from __future__ import annotations

import argparse
import gc
import time
from collections.abc import Callable
from typing import Any

from ctxlab._replay.replay import replay
from ctxlab._trace import Trace
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import Fixed
from tests.deepagents_oracle import run_oracle
from tests.synthetic import make_trace

SUMMARY = Fixed("S" * 1600)
MODEL = "claude-sonnet-4-5"  # 200k window, 3.3 chars/token, 64k output reserved
TRIGGERS = (0.85, 0.25)


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


def _trace(turns: int) -> Trace:
    return make_trace(turns, fmt="anthropic", seed=1, model=MODEL, big=0.03)


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, float]:
    """(result, seconds) of one call, the way `timeit` measures it."""
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        result = fn(*args, **kwargs)
        return result, time.perf_counter() - start
    finally:
        gc.enable()


def _real(turns: int, trigger: float) -> tuple[Any, float]:
    trace = _trace(turns)
    return timed(
        run_oracle,
        trace,
        window=200_000,
        anthropic=True,
        max_tokens=64_000,
        tools=trace.tools,
        summary_text=SUMMARY.text,
        settings=_oracle_settings(trigger),
    )


def measure(turns: int, trigger: float, first: int, repeat: int, real: int) -> dict[str, Any]:
    """Best-of timings (seconds) for one size and trigger; checks both sides agree."""
    firsts = []
    for _ in range(first):
        trace = _trace(turns)  # new message objects: nothing measured or derived yet
        ours, seconds = timed(replay, trace, _policy(trigger), SUMMARY)
        firsts.append(seconds)
    repeats = [timed(replay, trace, _policy(trigger), SUMMARY)[1] for _ in range(repeat)]
    reals = []
    for _ in range(real):
        oracle, seconds = _real(turns, trigger)
        reals.append(seconds)
    assert [(c.turn, c.context_tokens, c.messages) for c in ours.calls] == oracle.turns
    assert len(oracle.events) == len(ours.event_list)
    return {
        "turns": turns,
        "messages": len(trace.messages),
        "big_results": sum(
            1 for m in trace.messages if m.type == "tool" and len(str(m.content)) > 80_000
        ),
        "events": len(ours.event_list),
        "first": min(firsts),
        "repeat": min(repeats),
        "real": min(reals),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    size = 250 if args.quick else 1000
    scales = (125, 250) if args.quick else (250, 500, 1000, 2000)
    replay(_trace(20), _policy(0.25), SUMMARY)  # imports and first-use setup, not replay work
    run_oracle(_trace(20), window=200_000, anthropic=True, max_tokens=64_000)

    print(f"### {size} turns, real middleware vs ctxlab (best of 3 / 5 / 5)\n")
    print(
        "| trigger | messages | >80k results | events | real middleware | ctxlab first "
        "| ctxlab repeat | speedup first | speedup repeat |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    main_rows = {}
    for trigger in TRIGGERS:
        r = main_rows[trigger] = measure(size, trigger, first=5, repeat=5, real=3)
        print(
            f"| {trigger} | {r['messages']} | {r['big_results']} | {r['events']} "
            f"| {r['real']:.2f} s | {r['first'] * 1000:.1f} ms | {r['repeat'] * 1000:.1f} ms "
            f"| {r['real'] / r['first']:.0f}x | {r['real'] / r['repeat']:.0f}x |",
            flush=True,
        )

    print("\n### Scaling (best of 3 / 3 / 1; the 1,000-turn rows are the table above)\n")
    print(
        "| trigger | turns | messages | real middleware | ctxlab first | ctxlab repeat "
        "| first µs/turn | repeat µs/turn | speedup first | speedup repeat |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for trigger in TRIGGERS:
        for turns in scales:
            r = main_rows[trigger] if turns == size else measure(turns, trigger, 3, 3, 1)
            print(
                f"| {trigger} | {turns} | {r['messages']} | {r['real']:.2f} s "
                f"| {r['first'] * 1000:.1f} ms | {r['repeat'] * 1000:.1f} ms "
                f"| {r['first'] / turns * 1e6:.0f} | {r['repeat'] / turns * 1e6:.0f} "
                f"| {r['real'] / r['first']:.0f}x | {r['real'] / r['repeat']:.0f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()
