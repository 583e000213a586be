"""Slider moves against the real deepagents middleware, long traces, and figure export.

    .venv/bin/python -m bench.bench_widgets              # 1,000 turns + 10,000-turn scaling
    .venv/bin/python -m bench.bench_widgets --real       # also the real files in --data
    .venv/bin/python -m bench.bench_widgets --quick      # 200 turns, fewer moves (smoke run)
    .venv/bin/python -m bench.bench_widgets --export     # also plots.export per format
    .venv/bin/python -m bench.bench_widgets --no-scaling  # the move tables only
    .venv/bin/python -m bench.bench_widgets --only digest-old-results  # those rows only

*A slider move* is `ThresholdExplorer(trace, debounce=0)` from a slider's `value` being set (what
a release delivers to the kernel) to the new data being in the `FigureWidget` (its update
message sent) and the readout rewritten: re-replay with the offline summariser, metrics, trace
data, in-place update. Inside JupyterLab add the explorer's debounce (30 ms) and the browser's
comm round trip and plotly.js redraw. Moves run on an event loop, as in a kernel; *busy* is
the same move until the loop has run what the move deferred past the chart (`after_redraw`:
freeing the replaced replay), so it is how long the kernel is kept from the next move. The
cost readout (full replay and bill) waits until the sliders rest (`price_after`) and is
timed apart, as CPU milliseconds once per preset (*at rest*).

The moves run on two 1,000-turn traces: the bench's own (`synthetic`, Anthropic format) and a
held-out one (`held_out`: OpenAI format, another seed and model), plus the real traces with
`--real`. The policy built in docs/writing-a-policy.md (`digest-old-results`, its first code
block run as printed) is in the dropdown with the presets.

*The yardstick* is the real deepagents middleware (tests/deepagents_oracle.py, hooks mode, as
bench.bench_replay drives it) replaying the same trace once, timed in the same run (collector
paused, like `timeit`): every move is printed as `middleware / move`, so a machine twice as slow
or twice as loaded gives the same ratios (the CPU ratio, CPU time of the middleware over a
move's CPU time, is the steadier on a shared box). Goal at 1,000 turns: deepagents' median
move at least 400x faster, every catalogue preset's at least 200x, each p90 at least half of that.

Each preset (every name `ctxlab policies` lists) is picked in the dropdown, then one slider
moves through five values from its default and back (`first visit`); the same five moves again
are `seen before`. Deep Agents moves every one of its five sliders. Medians and p90s are over
the first visits: a value seen before is no cheaper by design, but per-message forms derived on
a first visit (a new truncation length) are cached.

*Scaling* builds 1,000- and 10,000-turn traces (`tests.synthetic`) and times a repeat replay,
an explorer move and a scrubber move on each; then, traced by `tracemalloc` in a phase of its
own, the memory the trace holds and what an explorer adds after five moves, so growth can be
compared with the trace's own size.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import tempfile
import time
import tracemalloc
import types
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import plotly.graph_objects as go

import ctxlab
from ctxlab import plots
from ctxlab._view.widgets import Scrubber, ThresholdExplorer
from ctxlab._view.widgets._common import update_in_place
from ctxlab.policies import DeepAgents
from tests.deepagents_oracle import run_oracle
from tests.synthetic import make_trace

MODEL = "claude-sonnet-4-5"
DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "real-traces"

DEEPAGENTS_MOVES = {
    "trigger": [0.25, 0.3, 0.5, 0.7, 0.85, 0.4, 0.2, 0.15],
    "keep": [0.05, 0.2, 0.1, 0.3, 0.02],
    "window": [150_000, 100_000, 300_000, 200_000],
    "tool_limit": [5_000, 10_000, 40_000, 20_000],
    "max_arg_length": [500, 5_000, 200, 2_000],
}

PRESET_SLIDER = {
    "langchain-summarization": "trigger",
    "clear-tool-uses": "trigger",
    "observation-masking": "n",
    "openhands-llm-summarizing": "max_size",
    "openhands-recent": "max_events",
    "jetbrains-hybrid": "n",
    "claude-code": "autocompact_buffer",
    "codex": "auto_compact_fraction",
    "inspect-edit": "threshold",
    "inspect-summary": "threshold",
    "digest-old-results": "trigger",
}
"""The slider moved for a preset (any other preset: its first slider)."""

TARGET = {"deepagents": 400.0}
PRESET_TARGET = 200.0
BUSY_TARGET = 200.0
"""Every policy: the kernel busy per move (chart plus readouts) at least this much faster."""
DOCS_POLICY = Path(__file__).resolve().parents[1] / "docs" / "writing-a-policy.md"


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(0.9 * (len(ordered) - 1))))]


def timed(
    fn: Callable[..., Any], *args: Any, cpu: list[float] | None = None, **kwargs: Any
) -> tuple[Any, float]:
    """(result, seconds) of one call, collector paused (as `timeit` and bench.bench_replay);
    its CPU seconds appended to `cpu` when given."""
    gc.collect()
    gc.disable()
    try:
        start, used = time.perf_counter(), time.process_time()
        result = fn(*args, **kwargs)
        seconds = time.perf_counter() - start
        if cpu is not None:
            cpu.append(time.process_time() - used)
        return result, seconds
    finally:
        gc.enable()


def synthetic(turns: int) -> ctxlab.Trace:
    """The benchmark trace (bench.bench_replay's, provider set so prices apply)."""
    return make_trace(turns, fmt="anthropic", seed=1, model=MODEL, provider="anthropic", big=0.03)


def held_out(turns: int) -> ctxlab.Trace:
    """A second trace the move tables were not tuned on: OpenAI format, another seed and
    model (a 4-characters-per-token counter), bigger results more often."""
    return make_trace(turns, fmt="openai", seed=7, model="gpt-4.1", provider="openai", big=0.05)


def register_docs_policy() -> None:
    """Run docs/writing-a-policy.md's first Python block as printed: it defines and
    registers `digest-old-results`, which the explorer's dropdown then lists."""
    text = DOCS_POLICY.read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    module = sys.modules["docs_policy"] = types.ModuleType("docs_policy")  # for @dataclass
    exec(compile(block, str(DOCS_POLICY), "exec"), module.__dict__)  # noqa: S102


def middleware_seconds(trace: ctxlab.Trace) -> tuple[float, float]:
    """(wall, CPU) seconds the real deepagents middleware takes to replay `trace` once, with
    the window, counter and output reserve ctxlab's Deep Agents policy resolves for it."""
    settings = DeepAgents().resolve(trace)
    cpu: list[float] = []
    _, seconds = timed(
        run_oracle,
        trace,
        window=settings.window or 200_000,
        anthropic=(trace.provider or "") == "anthropic",
        max_tokens=settings.max_output_tokens,
        tools=trace.tools,
        cpu=cpu,
    )
    return seconds, cpu[0]


_LOOP = asyncio.new_event_loop()
"""Moves run on an event loop, as in a kernel: readouts a widget defers past the redraw
(`ctxlab._view.widgets._common.after_redraw`: the bill and its cost) run after the clock stops,
before the next move."""


def _move(
    slider: Any, value: Any, cpu: list[float] | None = None, busy: list[float] | None = None
) -> float:
    """Wall milliseconds of one move, release to chart sent (its CPU milliseconds appended to
    `cpu`; to `busy`, its wall milliseconds until the loop has run what it deferred)."""

    async def release() -> float:
        start, used = time.perf_counter(), time.process_time()
        slider.value = value  # what a release delivers to the kernel
        chart = (time.perf_counter() - start) * 1000
        if cpu is not None:
            cpu.append((time.process_time() - used) * 1000)
        await asyncio.sleep(0)  # one turn of the loop: what the move deferred runs
        if busy is not None:
            busy.append((time.perf_counter() - start) * 1000)
        return chart

    return _LOOP.run_until_complete(release())


def at_rest(ex: ThresholdExplorer) -> float:
    """CPU milliseconds of the cost readout the last move left for when the sliders rest
    (None-priced traces: none); the loop idles until it has run."""
    used = time.process_time()
    _LOOP.run_until_complete(asyncio.sleep(ex._price_after + 0.05))
    return (time.process_time() - used) * 1000


Moves = tuple[str, list[float], list[float], list[float], list[float], float]
"""(slider, first visits' ms, seen-before ms, first visits' CPU ms, busy ms, at-rest CPU ms)."""


def deepagents_moves(ex: ThresholdExplorer, quick: bool) -> Moves:
    """Every Deep Agents slider through its values (first visits), then again (seen before)."""
    ex.choice.value = "deepagents"
    first: list[float] = []
    again: list[float] = []
    cpu: list[float] = []
    busy: list[float] = []
    for name, values in DEEPAGENTS_MOVES.items():
        slider = ex.control(name)
        start = slider.value
        first.extend(_move(slider, v, cpu, busy) for v in values[: 3 if quick else None])
        again.extend(_move(slider, v) for v in values[: 3 if quick else None])
        slider.value = start
    return "5 sliders", first, again, cpu, busy, at_rest(ex)


def preset_moves(ex: ThresholdExplorer, name: str, quick: bool) -> Moves | None:
    """Pick preset `name`, move one slider through five values and back, twice; None when
    the preset has no slider."""
    ex.choice.value = name
    names = [c.name for c in ex.controls]
    if not names:
        return None
    wanted = PRESET_SLIDER.get(name)
    slider = ex.control(wanted if wanted in names else names[0])
    lo, hi, start = slider.min, slider.max, slider.value
    span = (hi - lo) or 1
    values = [start * 0.9 + lo * 0.1, lo + span * 0.6, lo + span * 0.3, lo + span * 0.45, start]
    if isinstance(slider.value, int):
        values = [int(v) for v in values]
    values = values[: 3 if quick else None]
    cpu: list[float] = []
    busy: list[float] = []
    first = [_move(slider, v, cpu, busy) for v in values]
    again = [_move(slider, v) for v in values]
    return slider.description, first, again, cpu, busy, at_rest(ex)


def move_table(
    trace: ctxlab.Trace, label: str, quick: bool, only: frozenset[str] = frozenset()
) -> list[dict[str, Any]]:
    """Every preset's moves on `trace` (those named in `only`, when given) as ratios to the
    middleware timed in the same run."""
    print(f"\n### {label}: {len(trace.turns)} turns, {len(trace.messages)} messages\n", flush=True)
    ex = ThresholdExplorer(trace, debounce=0)
    deepagents_moves(ex, quick=True)  # first-use setup (imports, caches) before any timing
    real = middleware_seconds(trace)
    print(f"real deepagents middleware, one replay: {real[0]:.2f} s ({real[1]:.2f} s CPU)\n")
    print(
        "| preset | slider | median | p90 | seen before (median) | median ratio | p90 ratio "
        "| CPU ratio (median) | busy (median) | busy ratio | at rest (CPU) "
        "| target (median / p90 / busy) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    rows = []
    if not only or "deepagents" in only:
        rows.append(_row("deepagents", *deepagents_moves(ex, quick), real))
        _print_row(rows[0])
    for name in ex.policies:
        if name == "deepagents" or (only and name not in only):
            continue
        found = preset_moves(ex, name, quick)
        if found is None:
            print(f"| {name} | (no slider) | | | | | | | | | | |", flush=True)
            continue
        rows.append(_row(name, *found, real))
        _print_row(rows[-1])
    return rows


def _row(
    name: str,
    slider: str,
    first: list[float],
    again: list[float],
    cpu: list[float],
    busy: list[float],
    rest: float,
    real: tuple[float, float],
) -> dict[str, Any]:
    median, p90 = statistics.median(first), _p90(first)
    busy_median = statistics.median(busy)
    return {
        "name": name,
        "slider": slider,
        "median": median,
        "p90": p90,
        "again": statistics.median(again),
        "ratio": real[0] * 1000 / median,
        "ratio_p90": real[0] * 1000 / p90,
        "ratio_cpu": real[1] * 1000 / statistics.median(cpu),
        "busy": busy_median,
        "ratio_busy": real[0] * 1000 / busy_median,
        "rest": rest,
        "target": TARGET.get(name, PRESET_TARGET),
    }


def _print_row(r: dict[str, Any]) -> None:
    met = (
        r["ratio"] >= r["target"]
        and r["ratio_p90"] >= r["target"] / 2
        and r["ratio_busy"] >= BUSY_TARGET
    )
    print(
        f"| {r['name']} | {r['slider']} | {r['median']:.1f} ms | {r['p90']:.1f} ms "
        f"| {r['again']:.1f} ms | {r['ratio']:.0f}x | {r['ratio_p90']:.0f}x "
        f"| {r['ratio_cpu']:.0f}x | {r['busy']:.1f} ms | {r['ratio_busy']:.0f}x "
        f"| {r['rest']:.0f} ms "
        f"| {r['target']:.0f}x / {r['target'] / 2:.0f}x / {BUSY_TARGET:.0f}x"
        f"{' met' if met else ''} |",
        flush=True,
    )


def memory_mb(turns: int) -> tuple[float, float]:
    """(MB the trace holds, MB an explorer adds after five moves) as `tracemalloc` counts the
    Python allocations still alive; a phase of its own, since tracing slows everything."""
    gc.collect()
    tracemalloc.start()
    try:
        trace = synthetic(turns)
        gc.collect()
        held = tracemalloc.get_traced_memory()[0]
        ex = ThresholdExplorer(trace, debounce=0)
        for value in (0.5, 0.3, 0.7, 0.4, 0.85):
            ex.control("trigger").value = value
        gc.collect()
        total = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    return held / 2**20, (total - held) / 2**20


def long_trace_round(turns: int, quick: bool) -> tuple[dict[str, float], int]:
    """Replay (best of 3), explorer trigger moves and scrubber moves on a fresh synthetic trace
    of `turns` turns, Deep Agents at its defaults: wall and CPU milliseconds, and the trace's
    message count."""
    trace = synthetic(turns)
    policy = DeepAgents()
    ctxlab.replay(trace, policy)  # every message measured once
    replay_cpu: list[float] = []
    replay_s = min(timed(ctxlab.replay, trace, policy, cpu=replay_cpu)[1] for _ in range(3))
    ex, ex_shown, ex_priced = built_on_loop(partial(ThresholdExplorer, trace, debounce=0))
    slider = ex.control("trigger")
    move_cpu: list[float] = []
    values = (0.5, 0.3, 0.7, 0.4, 0.85)[: 3 if quick else None]
    moves = [_move(slider, v, move_cpu) for v in values]
    s, shown, cards = built_on_loop(partial(Scrubber, ex.replay, trace, turn=0))
    n = len(trace.turns)
    scrub_cpu: list[float] = []
    scrub = [_move(s.slider, t, scrub_cpu) for t in range(0, n, max(1, n // (10 if quick else 40)))]
    messages = len(trace.messages)
    del ex, s, trace
    gc.collect()
    return {
        "replay": replay_s * 1000,
        "move": statistics.median(moves),
        "scrub": statistics.median(scrub),
        "replay_cpu": min(replay_cpu) * 1000,
        "move_cpu": statistics.median(move_cpu),
        "scrub_cpu": statistics.median(scrub_cpu),
        "shown": shown,
        "cards": cards,
        "ex_shown": ex_shown,
        "ex_priced": ex_priced,
    }, messages


def built_on_loop(make: Callable[[], Any]) -> tuple[Any, float, float]:
    """`make()` run as a kernel runs a cell (on the event loop): the widget, wall milliseconds
    to the constructor's return (the chart can be drawn), then until what it defers past the
    first draw (`after_redraw`: an explorer's bill, a scrubber's bill and event cards) is done."""

    async def build() -> tuple[Any, float]:
        start = time.perf_counter()
        widget = make()
        return widget, (time.perf_counter() - start) * 1000

    start = time.perf_counter()
    widget, shown = _LOOP.run_until_complete(build())
    _LOOP.run_until_complete(asyncio.sleep(0))  # the deferred work, if that turn did not run it
    return widget, shown, (time.perf_counter() - start) * 1000 - shown


def scaling(sizes: tuple[int, ...], quick: bool) -> None:
    """Replay, explorer move, scrubber move and memory at each size (one fresh trace each)."""
    print("\n### Long traces (Deep Agents at its defaults; moves: trigger slider, 5 values)\n")
    print(
        "| turns | messages | replay (repeat) | explorer move (median) | scrubber move (median) "
        "| CPU: replay / move / scrub | explorer shown / priced | scrubber shown / cards "
        "| trace MB | explorer MB (after 5 moves) |"
    )
    print("|---:|---:|---:|---:|---:|---|---|---|---:|---:|")
    rows = {}
    for turns in sizes:
        r, messages = long_trace_round(turns, quick)
        trace_mb, explorer_mb = memory_mb(turns)
        rows[turns] = r = {**r, "trace_mb": trace_mb, "explorer_mb": explorer_mb}
        print(
            f"| {turns:,} | {messages:,} | {r['replay']:.0f} ms | {r['move']:.0f} ms "
            f"| {r['scrub']:.1f} ms | {r['replay_cpu']:.0f} / {r['move_cpu']:.0f} / "
            f"{r['scrub_cpu']:.1f} ms | {r['ex_shown'] / 1000:.2f} / {r['ex_priced'] / 1000:.2f} s "
            f"| {r['shown'] / 1000:.2f} / {r['cards'] / 1000:.2f} s "
            f"| {trace_mb:.0f} | {explorer_mb:.0f} |",
            flush=True,
        )
    small, large = min(rows), max(rows)
    if small != large:
        print(f"\ngrowth from {small:,} to {large:,} turns ({large / small:.0f}x the turns):")
        for key, label in (
            ("replay", "replay"),
            ("move", "explorer move"),
            ("scrub", "scrubber move"),
            ("replay_cpu", "replay, CPU"),
            ("move_cpu", "explorer move, CPU"),
            ("scrub_cpu", "scrubber move, CPU"),
            ("ex_shown", "explorer shown"),
            ("ex_priced", "explorer priced"),
            ("shown", "scrubber shown"),
            ("cards", "event cards"),
            ("trace_mb", "trace memory"),
            ("explorer_mb", "explorer memory"),
        ):
            a, b = rows[small][key], rows[large][key]
            print(f"  {label:20s} {b / a:5.1f}x" if a > 0 else f"  {label:20s} n/a")


def real_traces(folder: Path, min_turns: int) -> list[tuple[str, ctxlab.Trace]]:
    """Every trace of `min_turns` or more in the real files under `folder`."""
    found = []
    for path in sorted(folder.glob("*/*")):
        if path.name == "SOURCE.txt" or path.is_dir():
            continue
        try:
            loaded = ctxlab.load(path)
        except Exception as exc:  # noqa: BLE001 - a bench reports and goes on
            print(f"(skipped {path.name}: {exc})")
            continue
        for trace in loaded if isinstance(loaded, list) else [loaded]:
            if len(trace.turns) >= min_turns:
                found.append((f"{path.parent.name}/{path.name}", trace))
    return found


def export_times(trace: ctxlab.Trace) -> None:
    replay = ctxlab.replay(trace, DeepAgents(stress=0.25))
    fig = plots.context_tokens(replay)
    with tempfile.TemporaryDirectory() as tmp:
        for label, ext in (("cold", "pdf"), ("warm", "pdf"), ("warm", "png"), ("-", "html")):
            start = time.perf_counter()
            path = plots.export(fig, Path(tmp) / f"f.{ext}")
            took = time.perf_counter() - start
            print(f"  export {label:4} {ext:4} {took:6.2f} s  {path.stat().st_size / 1e3:8.0f} kB")
    start = time.perf_counter()
    plots.KALEIDO.stop()  # what interpreter exit adds once a static export has run
    print(f"  browser stop     {time.perf_counter() - start:6.2f} s")


def figure_build(trace: ctxlab.Trace) -> None:
    """`plots.context_tokens` (a fresh, validated figure) against the replay it draws; then
    what a slider move does instead (`context_trace_dicts` from a fresh replay's counts, and
    `update_in_place` into the explorer's `FigureWidget`), against the same replay."""
    policy = DeepAgents(trigger=("fraction", 0.25), keep=("fraction", 0.10))
    other = DeepAgents(trigger=("fraction", 0.5), keep=("fraction", 0.10))
    replay = ctxlab.replay(trace, policy)
    replays = [timed(ctxlab.replay, trace, policy)[1] for _ in range(5)]
    builds = [timed(plots.context_tokens, replay)[1] for _ in range(5)]
    r, b = statistics.median(replays) * 1000, statistics.median(builds) * 1000
    print(f"\nfigure build {b:.1f} ms vs its replay {r:.1f} ms: {b / r:.0%} (target < 20%)")
    widget = go.FigureWidget(plots.context_tokens(replay))
    pair = (ctxlab.replay(trace, other), replay)

    def in_place(shown: ctxlab.Replay) -> None:
        shown.__dict__.pop("counts", None)  # a move's replay is new: its counts are not built
        update_in_place(widget, plots.context_trace_dicts(shown))

    moves = [timed(in_place, pair[i % 2])[1] for i in range(10)]
    m = statistics.median(moves) * 1000
    print(f"figure update in place (a move: trace dicts + one update) {m:.1f} ms: {m / r:.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 turns, fewer moves")
    parser.add_argument("--real", action="store_true", help="also every real trace in --data")
    parser.add_argument("--data", type=Path, default=DATA, help=f"real traces (default {DATA})")
    parser.add_argument("--min-turns", type=int, default=50, help="real traces shorter: skipped")
    parser.add_argument("--no-scaling", action="store_true", help="skip the 10,000-turn rows")
    parser.add_argument("--export", action="store_true", help="also time plots.export")
    parser.add_argument("--scaling-only", action="store_true", help="only the long-trace rows")
    parser.add_argument("--export-only", action="store_true", help="only the export rows")
    parser.add_argument(
        "--no-held-out", action="store_true", help="skip the second (held-out) trace's table"
    )
    parser.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="POLICY",
        help="move tables: only this policy's row (repeatable); skips the figure rows",
    )
    args = parser.parse_args()
    only = frozenset(args.only)
    register_docs_policy()
    turns = 200 if args.quick else 1000
    if args.scaling_only:
        scaling((200, 2000) if args.quick else (1000, 10_000), args.quick)
        return
    trace = synthetic(turns)
    if args.export_only:
        export_times(trace)
        return
    move_table(trace, "synthetic", args.quick, only)
    if not args.no_held_out:
        move_table(held_out(turns), "held out", args.quick, only)
    if not only:
        figure_build(trace)
    if args.real:
        for label, real in real_traces(args.data, args.min_turns):
            move_table(real, label, args.quick, only)
    if not args.no_scaling:
        scaling((200, 2000) if args.quick else (1000, 10_000), args.quick)
    if args.export:
        export_times(trace)


if __name__ == "__main__":
    main()
