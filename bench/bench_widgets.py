"""Widget latency on a 1,000-turn trace, and figure export cold vs warm.

    .venv/bin/python -m bench.bench_widgets            # 1,000 turns
    .venv/bin/python -m bench.bench_widgets --quick    # 200 turns, fewer moves

*Slider latency* is what the kernel spends between a slider's release reaching Python (the
`value` trait changing) and the new figure being in the FigureWidget (the `batch_update` that
sends it to the browser has returned): re-replay with the offline summariser, metrics, traces,
in-place update, readout. Outside a kernel the explorer's debounce is bypassed, so add its wait
(`ThresholdExplorer.debounce`, default 30 ms) for release-to-figure inside JupyterLab; the
browser's own redraw comes on top (0.3-0.6 s round trips in the research notes' measurements
include kernel, websocket and plotly.js).

*Export* times `plots.export` per format: the first static export of a process starts kaleido's
chromium (cold); later ones reuse it (warm).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import ctxlab
from ctxlab import plots
from ctxlab.policies import DeepAgents
from ctxlab.widgets import Scrubber, ThresholdExplorer
from tests.synthetic import make_trace

MODEL = "claude-sonnet-4-5"

MOVES = {
    "trigger": [0.25, 0.3, 0.5, 0.7, 0.85, 0.4, 0.2, 0.15],
    "keep": [0.05, 0.2, 0.1, 0.3, 0.02],
    "window": [150_000, 100_000, 300_000, 200_000],
    "tool_limit": [5_000, 10_000, 40_000, 20_000],
    "max_arg_length": [500, 5_000, 200, 2_000],
}


def _stats(ms: list[float]) -> str:
    ms = sorted(ms)
    p90 = ms[min(len(ms) - 1, int(round(0.9 * (len(ms) - 1))))]
    return f"median {statistics.median(ms):.1f} ms, p90 {p90:.1f} ms, max {ms[-1]:.1f} ms"


def explorer_latency(trace: ctxlab.Trace, quick: bool) -> list[float]:
    """Each slider through its values, then through them again (a user going back and forth:
    message forms derived on the first visit of a value are cached), then the replay alone."""
    ex = ThresholdExplorer(trace, debounce=0)
    first: list[float] = []
    again: list[float] = []
    for name, values in MOVES.items():
        slider = ex.control(name)
        for bucket in (first, again):
            for value in values[: 3 if quick else None]:
                start = time.perf_counter()
                slider.value = value  # what a release delivers to the kernel
                bucket.append((time.perf_counter() - start) * 1000)
                assert ex.replay is not None and ex.last_latency_ms is not None
        slider.value = values[-1]
    replay_ms = []
    for _ in range(5):
        start = time.perf_counter()
        ctxlab.replay(trace, ex.policy, ex.summarizer)
        replay_ms.append((time.perf_counter() - start) * 1000)
    print(f"  explorer, first visit of a value  {_stats(first)}  over {len(first)} moves")
    print(f"  explorer, value seen before       {_stats(again)}  over {len(again)} moves")
    print(f"  of which the replay alone         {_stats(replay_ms)}")
    return first + again


CATALOGUE = {
    "langchain-summarization": "trigger",
    "clear-tool-uses": "trigger",
    "sliding-window": None,
    "observation-masking": "n",
    "openhands-llm-summarizing": "max_size",
    "openhands-recent": "max_events",
    "jetbrains-hybrid": "n",
    "claude-code": "autocompact_buffer",
    "codex": "auto_compact_fraction",
    "inspect-edit": "threshold",
    "inspect-summary": "threshold",
}
"""Catalogue presets and the slider moved for each (None: the first slider)."""


def catalogue_latency(trace: ctxlab.Trace, quick: bool) -> None:
    """Per preset: pick it in the dropdown, then move one slider through five values (from
    its default down to a quarter of its range above the minimum and back)."""
    ex = ThresholdExplorer(trace, debounce=0)
    for name, control in CATALOGUE.items():
        if name not in ex.policies:
            continue
        ex.choice.value = name
        names = [c.name for c in ex.controls]
        if not names:
            continue
        slider = ex.control(control if control in names else names[0])
        lo, hi, start = slider.min, slider.max, slider.value
        span = (hi - lo) or 1
        values = [start * 0.9 + lo * 0.1, lo + span * 0.6, lo + span * 0.3, lo + span * 0.45, start]
        if isinstance(slider.value, int):
            values = [int(v) for v in values]
        ms = []
        for value in values[: 3 if quick else None]:
            t = time.perf_counter()
            slider.value = value
            ms.append((time.perf_counter() - t) * 1000)
        print(f"  {name:30s} {slider.description:28s} {_stats(ms)}")


def scrubber_latency(trace: ctxlab.Trace, quick: bool) -> list[float]:
    policy = DeepAgents(stress=0.25)
    s = Scrubber(ctxlab.replay(trace, policy), trace, policy=policy, turn=0)
    n = len(trace.turns)
    ms = []
    for turn in range(0, n, max(1, n // (10 if quick else 40))):
        start = time.perf_counter()
        s.slider.value = turn
        ms.append((time.perf_counter() - start) * 1000)
    print(f"  scrubber turn slider    {_stats(ms)}  over {len(ms)} moves")
    return ms


def export_times(trace: ctxlab.Trace) -> None:
    replay = ctxlab.replay(trace, DeepAgents(stress=0.25))
    fig = plots.context_tokens(replay)
    with tempfile.TemporaryDirectory() as tmp:
        for label, ext in (
            ("cold", "pdf"),
            ("warm", "pdf"),
            ("warm", "png"),
            ("warm", "svg"),
            ("warm", "pdf"),
            ("-", "html"),
        ):
            start = time.perf_counter()
            path = plots.export(fig, Path(tmp) / f"f.{ext}")
            took = time.perf_counter() - start
            print(f"  export {label:4} {ext:4} {took:6.2f} s  {path.stat().st_size / 1e3:8.0f} kB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    turns = 200 if args.quick else 1000
    trace = make_trace(turns, fmt="anthropic", seed=1, model=MODEL, provider="anthropic", big=0.03)
    print(f"trace: {turns} turns, {len(trace.messages)} messages")
    explorer_latency(trace, args.quick)
    print("  catalogue presets in the explorer (slider release to new figure):")
    catalogue_latency(trace, args.quick)
    scrubber_latency(trace, args.quick)
    export_times(trace)


if __name__ == "__main__":
    main()
