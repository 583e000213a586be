"""Billed tokens (`ctxlab._cost.billing`): what billing a replay costs beside the replay itself.

    .venv/bin/python -m bench.bench_billing            # 1,000 turns
    .venv/bin/python -m bench.bench_billing --quick    # 200 turns (smoke run)

Synthetic traces as bench_replay builds them (Anthropic format, Claude, with recorded usage:
`calibrated`; OpenAI format, gpt-4o: `exact`). Per policy: a warm replay (the trace replayed
once before, as a slider's next move finds it), billing that replay (`billed_tokens`, the
biller fitted and the trace's messages tokenised once before: what each move pays), and once
per trace the one-time cost (fit the biller, tokenise every message). For deepagents the
direct count of every rebuilt request (`recount`, O(n^2)) is timed once for comparison, and a
ThresholdExplorer slider move is timed with the cost readout (billed tokens) it now shows.
Best of `--repeat`, collector paused as in bench_replay.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from bench.bench_replay import timed
from ctxlab._cost.billing import billed_tokens, biller_of, recount
from ctxlab._replay.policies.catalog import PRESETS
from ctxlab._replay.replay import replay
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import Fixed
from tests.synthetic import make_trace

SUMMARY = Fixed("S" * 1600)
TRACES = {"calibrated": ("anthropic", "claude-sonnet-4-5"), "exact": ("openai", "gpt-4o")}


def _policies() -> dict[str, Any]:
    return {
        "deepagents 0.25": DeepAgents(
            trigger=("fraction", 0.25),
            truncate_args_settings={"trigger": ("fraction", 0.25), "keep": ("fraction", 0.10)},
        ),
        "observation-masking": PRESETS["observation-masking"](),
        "clear-tool-uses": PRESETS["clear-tool-uses"](),
        "jetbrains-hybrid": PRESETS["jetbrains-hybrid"](),
        "claude-code": PRESETS["claude-code"](window=100_000),
    }


def _best(fn: Any, repeat: int) -> tuple[Any, float]:
    results = [timed(fn) for _ in range(repeat)]
    return results[-1][0], min(s for _, s in results)


def measure(turns: int, repeat: int) -> None:
    print(f"### {turns} turns: replay vs billing it (best of {repeat})\n")
    print("| trace (method) | policy | events | replay | billing | billing / replay |")
    print("|---|---|---|---|---|---|")
    for method, (fmt, model) in TRACES.items():
        trace = make_trace(turns, fmt=fmt, seed=1, model=model, big=0.03, usage=fmt == "anthropic")
        start = time.perf_counter()
        biller = biller_of(trace)
        first = replay(trace, "raw")
        billed_tokens(first, biller)  # every message of the trace tokenised once
        once = time.perf_counter() - start
        assert biller.method == method, (biller.method, method)
        for name, policy in _policies().items():
            replay(trace, policy, SUMMARY)  # warm: sizes and derived forms cached
            result, seconds = _best(lambda p=policy, t=trace: replay(t, p, SUMMARY), repeat)
            fresh = [replay(trace, policy, SUMMARY) for _ in range(repeat)]
            costs = [timed(billed_tokens, r, biller)[1] for r in fresh]
            billing = min(costs)
            print(
                f"| {trace.trace_id} ({method}) | {name} | {len(result.event_list)} "
                f"| {seconds * 1000:.1f} ms | {billing * 1000:.1f} ms "
                f"| {billing / seconds:.0%} |",
                flush=True,
            )
        print(f"\nOne-time per trace ({method}): fit + tokenise every message {once:.2f} s\n")
        if method == "calibrated":
            result = replay(trace, _policies()["deepagents 0.25"], SUMMARY)
            fast, seconds = timed(billed_tokens, result, biller)
            slow, direct = timed(recount, result, biller)
            assert fast == slow
            print(
                f"deepagents 0.25: incremental {seconds * 1000:.1f} ms, direct recount of "
                f"every request {direct:.2f} s ({direct / seconds:.0f}x)\n",
                flush=True,
            )
            _explorer(trace, repeat)


def _explorer(trace: Any, repeat: int) -> None:
    """A ThresholdExplorer trigger move: re-replay, readout (cost on billed tokens), chart."""
    from ctxlab.widgets import ThresholdExplorer

    explorer = ThresholdExplorer(trace, debounce=0)
    slider = explorer.control("trigger")
    moves = []
    for i in range(repeat * 2):
        slider.value = 0.30 + 0.05 * (i % 6)  # fires apply() synchronously outside a kernel
        moves.append(explorer.last_latency_ms or 0.0)
    result = explorer.replay
    assert result is not None
    bill_ms = timed(billed_tokens, result, biller_of(trace))[1]
    print(
        f"ThresholdExplorer trigger move (cost readout on billed tokens): median "
        f"{sorted(moves)[len(moves) // 2]:.0f} ms, of which billing about {bill_ms * 1000:.0f} ms"
        "\n",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    measure(200 if args.quick else 1000, args.repeat)


if __name__ == "__main__":
    main()
