"""Slider release to redrawn chart, end to end: JupyterLab in headless chromium, 1,000 turns.

    .venv/bin/python -m bench.bench_browser             # 1,000 turns, 20 moves (~2 min)
    .venv/bin/python -m bench.bench_browser --quick     # 200 turns, 6 moves
    .venv/bin/python -m bench.bench_browser --policy observation-masking --slider n --start 10

A notebook builds `ThresholdExplorer` (default debounce) on the synthetic 1,000-turn trace of
`bench.bench_widgets`; Playwright presses an arrow key on the *trigger* slider's handle (or
`--slider` of `--policy`; one key press is one release: the sliders do not update
continuously) and waits for the chart's `plotly_afterplot`. Server and browser come from
`tests/browser_lab.py`, as in the browser test.

Each move is cut into stages by clocks on both sides (one machine, so the kernel's `time.time()`
and the page's `performance.timeOrigin + now()` agree to well under a millisecond):

- *widget js*: key down to the slider's update leaving the page's websocket;
- *comm in*: that message to the kernel observing the new value;
- *debounce*: the explorer's wait (`ThresholdExplorer.debounce`) before it re-replays;
- *kernel*: the Python handler (`apply`: re-replay, metrics, traces) until the figure's
  update is sent on its comm;
- *comm out*: that send to the update reaching the page's websocket;
- *plotly.js*: the update's arrival to the `plotly_afterplot` that follows the move's last
  figure message (widget model, `Plotly.update`, redraw; a move that sent its changes as
  several messages pays a redraw for each, and the chart is whole only after the last);
- *paint*: that `plotly_afterplot` to the next animation frame.

`figure msgs` counts the figure messages each move sent to the page.

It also prints how long the chart took to appear after the cell ran (kernel replay, plotly's
bundle reaching the page and being imported once, first draw): the chart is a `ChartWidget`,
whose small loader meets anywidget's 2 s module deadline however long plotly.js takes
(`ctxlab/_view/widgets/chart.py`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import nbformat

from tests.browser_lab import (
    chromium_missing,
    chromium_page,
    jupyterlab,
    kernel_print,
    open_notebook,
    run_cells,
    wait_widget,
)

REPO = Path(__file__).resolve().parents[1]
CHART = ".ctx-explorer-chart.js-plotly-plot"
READOUT = ".ctx-explorer .ctx-readout"
HANDLE = ".ctx-explorer .{css} .noUi-handle"

KERNEL_CELL = """
import time
from ctxlab.widgets import ThresholdExplorer
from tests.synthetic import make_trace

RECEIVED, APPLIED, SENT = [], [], []


class TimedExplorer(ThresholdExplorer):
    \"\"\"The explorer, with the kernel's side of each move timed (epoch ms).\"\"\"

    def apply(self):
        start = time.time() * 1000
        super().apply()
        APPLIED.append((start, time.time() * 1000))


trace = make_trace({turns}, fmt="anthropic", seed=1, model="claude-sonnet-4-5",
                   provider="anthropic", big=0.03)
explorer = TimedExplorer(trace, policy={policy!r})
explorer.control({slider!r}).value = {start}
explorer.control({slider!r}).observe(lambda c: RECEIVED.append(time.time() * 1000), names="value")
_send = explorer.figure.comm.send


def timed_send(*args, **kwargs):
    SENT.append(time.time() * 1000)
    return _send(*args, **kwargs)


explorer.figure.comm.send = timed_send
explorer
"""

# Timestamps (epoch ms) of the page's websocket traffic that carries widget messages, of key
# presses and of the chart's redraws, kept on `window.__bench`.
PAGE_HOOKS = r"""
window.__bench = {sent: [], figure: [], keys: [], afterplot: [], paint: []};
const now = () => performance.timeOrigin + performance.now();
const text = (data) => typeof data === 'string' ? data
  : data instanceof Blob ? '' : new TextDecoder().decode(data);
// a figure message: plotly's widget sends each update, then resets the trait to {} (no redraw)
const figure = (s) => s.includes('_py2js_') && !/"state":\{"_py2js_\w+":(\{\}|null)\}/.test(s);
const NativeSend = WebSocket.prototype.send;
WebSocket.prototype.send = function (data) {
  if (text(data).includes('"method":"update"')) window.__bench.sent.push(now());
  return NativeSend.call(this, data);
};
const NativeAdd = WebSocket.prototype.addEventListener;
WebSocket.prototype.addEventListener = function (type, fn, ...rest) {
  if (type !== 'message') return NativeAdd.call(this, type, fn, ...rest);
  return NativeAdd.call(this, type, (e) => {
    const t = now();
    if (figure(text(e.data))) window.__bench.figure.push(t);
    return fn.call(this, e);
  }, ...rest);
};
const onmessage = Object.getOwnPropertyDescriptor(WebSocket.prototype, 'onmessage');
Object.defineProperty(WebSocket.prototype, 'onmessage', {
  set(fn) {
    onmessage.set.call(this, (e) => {
      const t = now();
      if (figure(text(e.data))) window.__bench.figure.push(t);
      return fn.call(this, e);
    });
  },
  get() { return onmessage.get.call(this); },
});
document.addEventListener('keydown',
  (e) => window.__bench.keys.push(performance.timeOrigin + e.timeStamp), true);
"""

LISTEN = """(css) => {
  const gd = document.querySelector(css);
  gd.on('plotly_afterplot', () => {
    const b = window.__bench;
    b.afterplot.push(performance.timeOrigin + performance.now());
    requestAnimationFrame(() => b.paint.push(performance.timeOrigin + performance.now()));
  });
}"""


STAGES = ["widget js", "comm in", "debounce", "kernel", "comm out", "plotly.js", "paint", "total"]


def _css_class(policy: str, slider: str) -> str:
    """The CSS class `ThresholdExplorer` gives `policy`'s control `slider` (from its label)."""
    from ctxlab.widgets import ThresholdExplorer
    from tests.synthetic import make_trace

    trace = make_trace(5, seed=1, model="claude-sonnet-4-5", provider="anthropic")
    explorer = ThresholdExplorer(trace, policy=policy)
    return f"ctx-{explorer.control(slider).description.split()[0].lower()}"


def _first_after(times: list[float], t: float) -> float:
    return next(x for x in times if x >= t)


def _p90(values: list[float]) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]


def measure(
    turns: int,
    moves: int,
    artifacts: Path | None = None,
    start: float = 0.45,
    policy: str = "deepagents",
    slider: str = "trigger",
) -> tuple[list[dict[str, float]], float]:
    """Stage durations (ms) of `moves` releases of `policy`'s `slider` from `start` on a
    `turns`-turn trace, and the seconds from running the notebook's cell to the chart's first
    draw."""
    tmp = Path(tempfile.mkdtemp(prefix="ctxlab-bench-browser-"))
    try:
        root, home = tmp / "root", tmp / "home"
        root.mkdir()
        home.mkdir()
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                     "language": "python"}  # fmt: skip
        cell = KERNEL_CELL.format(turns=turns, policy=policy, slider=slider, start=start).strip()
        nb.cells = [nbformat.v4.new_code_cell(cell)]
        nbformat.write(nb, root / "bench.ipynb")
        env = {"PYTHONPATH": str(REPO), "CTXLAB_FIGURES": str(tmp / "figures")}
        with jupyterlab(root, home, env) as base, chromium_page() as page:
            page.add_init_script(PAGE_HOOKS)
            open_notebook(page, base, "bench.ipynb")
            ran = time.perf_counter()
            run_cells(page)
            wait_widget(page, f"{CHART} .gtitle", timeout=300_000)
            first_draw = time.perf_counter() - ran
            page.locator(READOUT).wait_for(state="attached", timeout=60_000)
            page.wait_for_function(
                "() => window.jupyterapp.shell.currentWidget.sessionContext.session.kernel"
                ".status === 'idle'",
                timeout=120_000,
            )
            page.evaluate(LISTEN, CHART)
            handle = page.locator(HANDLE.format(css=_css_class(policy, slider))).first
            handle.scroll_into_view_if_needed()
            handle.focus()
            page.wait_for_timeout(1000)  # let the first render's afterplots pass
            marks = []
            for i in range(moves):
                before = page.evaluate("Date.now()")
                replays = int(page.locator(READOUT).get_attribute("data-replays") or 0)
                handle.press("ArrowLeft" if (i // 5) % 2 == 0 else "ArrowRight")
                page.wait_for_function(
                    "([css, n]) => Number(document.querySelector(css)?.dataset.replays) > n",
                    arg=[READOUT, replays],
                    timeout=60_000,
                )
                page.wait_for_function(
                    "(t) => window.__bench.paint.some((x) => x > t) && "
                    "window.__bench.figure.some((x) => x > t)",
                    arg=before,
                    timeout=60_000,
                )
                page.wait_for_timeout(400)  # trailing redraws land before the next move
                marks.append(before)
            page_times = page.evaluate("window.__bench")
            kernel = json.loads(
                kernel_print(
                    page, "import json; print(json.dumps([RECEIVED, APPLIED, SENT]))"
                ).strip()
            )
            if artifacts is not None:
                artifacts.mkdir(parents=True, exist_ok=True)
                page.locator(".ctx-explorer").first.screenshot(
                    path=str(artifacts / "bench_browser.png")
                )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    received, applied, sent = kernel
    out = []
    for before, until in zip(marks, [*marks[1:], float("inf")], strict=True):
        key = _first_after(page_times["keys"], before)
        sent_page = _first_after(page_times["sent"], key)
        got = _first_after(received, sent_page)
        start, end = next((a, b) for a, b in applied if a >= got)
        fig_sent = _first_after(sent, start)
        arrived = _first_after(page_times["figure"], fig_sent)
        messages = [t for t in page_times["figure"] if arrived <= t < until]
        drawn = _first_after(page_times["afterplot"], messages[-1])
        painted = _first_after(page_times["paint"], drawn)
        out.append(
            {
                "widget js": sent_page - key,
                "comm in": got - sent_page,
                "debounce": start - got,
                "kernel": fig_sent - start,
                "comm out": arrived - fig_sent,
                "plotly.js": drawn - arrived,
                "paint": painted - drawn,
                "total": painted - key,
                "handler": end - start,
                "figure msgs": len(messages),
            }
        )
    return out, first_draw


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 turns, 6 moves")
    parser.add_argument("--turns", type=int, default=None, help="trace length (default 1000)")
    parser.add_argument("--moves", type=int, default=None, help="slider moves (default 20)")
    parser.add_argument("--artifacts", type=Path, default=None, help="folder for a screenshot")
    parser.add_argument(
        "--trigger",
        type=float,
        default=0.45,
        help="the trigger slider's start (default 0.45, where every release changes the "
        "summaries; at 0.85 the input budget decides and a release only moves the line)",
    )
    parser.add_argument(
        "--policy",
        default="deepagents",
        help="the explorer's policy (default deepagents); with --slider and --start",
    )
    parser.add_argument("--slider", default="trigger", help="the control moved (default trigger)")
    parser.add_argument(
        "--start", type=float, default=None, help="its start (default: --trigger's value)"
    )
    args = parser.parse_args()
    if reason := chromium_missing():
        raise SystemExit(f"bench_browser: {reason}")
    turns = args.turns or (200 if args.quick else 1000)
    moves = args.moves or (6 if args.quick else 20)
    start = time.perf_counter()
    begin = args.trigger if args.start is None else args.start
    rows, first_draw = measure(turns, moves, args.artifacts, begin, args.policy, args.slider)
    print(
        f"{turns} turns, {moves} releases of {args.policy}'s {args.slider} slider from "
        f"{begin}, ThresholdExplorer (default debounce), "
        f"JupyterLab + headless chromium; {time.perf_counter() - start:.0f} s in all"
    )
    print(f"chart first drawn {first_draw:.1f} s after its cell ran (replay, plotly load, draw)")
    print(f"{'stage':<10} {'median ms':>10} {'p90 ms':>8} {'share':>6}")
    total = statistics.median(r["total"] for r in rows)
    for stage in STAGES:
        values = [r[stage] for r in rows]
        med = statistics.median(values)
        print(f"{stage:<10} {med:>10.1f} {_p90(values):>8.1f} {med / total:>6.0%}")
    handler = [r["handler"] for r in rows]
    print(f"(whole Python handler incl. readout: median {statistics.median(handler):.1f} ms, "
          f"p90 {_p90(handler):.1f} ms)")  # fmt: skip
    counts = sorted({r["figure msgs"] for r in rows})
    print(f"figure msgs per move: {', '.join(map(str, counts))}")


if __name__ == "__main__":
    main()
