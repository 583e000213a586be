"""Every widget in a 1,000-pixel notebook column, measured in JupyterLab: what the browser
test (tests/test_browser.py) checks and what `python -m tests.widget_fit OUT_DIR` screenshots.

`CELLS` build each widget on the bundled long session (one cell each, the widget last, so it
is the cell's output). `fit_column` narrows the page until the notebook's output column is
`COLUMN` pixels wide; `measure` reads, for each widget, its box, and every element inside it
whose content is wider than its box while it cannot scroll (text cut off), every native dropdown
whose chosen option's text is wider than the room beside its arrow (cut whatever its tooltip),
and every cut label without a tooltip (`title`).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

COLUMN = 1000

SETUP = """import ctxlab
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import DEFAULT_PROMPT
from ctxlab.widgets import Compare, PromptDiff, Retention, Scrubber, ThresholdExplorer
trace = ctxlab.load("traces/deepagents_long_session.jsonl.xz")[0]
policy = DeepAgents(stress=0.10)
replay = ctxlab.replay(trace, policy)
policies = {"deepagents": DeepAgents(), "stress 0.10": policy,
            "observation-masking": ctxlab.policies.get("observation-masking")}
replays = [ctxlab.replay(trace, p) for p in policies.values()]
evaluations = [ctxlab.evaluate(r) for r in replays]"""

WIDGETS = {
    "scrubber": "Scrubber(replay, trace, policy=policy, turn=80)",
    "explorer": "ThresholdExplorer(trace)",
    "prompt_diff": 'PromptDiff(trace, DEFAULT_PROMPT, "Summarise the session for a coding agent.")',
    "compare": "Compare(*replays, labels=list(policies), trace=trace)",
    "retention": "Retention(*evaluations, labels=list(policies))",
    "scrubber_facts": "Scrubber(replays[1], evaluation=evaluations[1])",
}
"""Widget name -> the expression that builds it (its cell's output)."""

CELLS = [SETUP, *(f"w_{name} = {expr}\nw_{name}.add_class('ctx-fit-{name}')\nw_{name}"
                  for name, expr in WIDGETS.items())]  # fmt: skip

FIT_COLUMN = (
    """() => document.querySelector('.jp-OutputArea-output').getBoundingClientRect().width"""
)

MEASURE = """(css) => {
  const root = document.querySelector(css);
  if (!root) return null;
  const r = root.getBoundingClientRect();
  const cut = [];
  const untipped = [];
  for (const el of root.querySelectorAll('*')) {
    if (el.closest('svg') || el.closest('.js-plotly-plot')) continue;  // plotly lays out itself
    if (el.closest('.slider-container')) continue;  // a slider's track and handle, no text
    const style = getComputedStyle(el);
    if (style.display === 'none' || style.visibility === 'hidden') continue;
    const scrolls = ['auto', 'scroll'].includes(style.overflowX);
    const over = el.scrollWidth > el.clientWidth + 1 && el.clientWidth > 0;
    if (over && !scrolls && style.textOverflow !== 'ellipsis') {
      cut.push(`${el.className || el.tagName}: ${(el.textContent || '').slice(0, 40)}`);
    }
    if (over && style.textOverflow === 'ellipsis' && !el.title && !el.closest('[title]')) {
      untipped.push((el.textContent || '').slice(0, 40));
    }
  }
  // a native dropdown never reports its text as overflowing: measure the chosen option's text
  // in the select's own font against the room left of its arrow
  const pen = document.createElement('canvas').getContext('2d');
  for (const el of root.querySelectorAll('select')) {
    if (el.selectedIndex < 0) continue;
    const style = getComputedStyle(el);
    pen.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const text = el.options[el.selectedIndex].text;
    const room = el.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    if (pen.measureText(text).width > room) cut.push(`select: ${text.slice(0, 60)}`);
  }
  const blocks = [...root.querySelectorAll('.ctx-block')];
  return {left: r.left, width: r.width, scrollWidth: root.scrollWidth, cut, untipped,
          blocks: blocks.length, tipped: blocks.filter((b) => b.title.trim() !== '').length};
}"""


def fit_column(page: Any) -> float:
    """Resize the page so the notebook's output column is `COLUMN` pixels wide; its width."""
    for _ in range(3):
        width = page.evaluate(FIT_COLUMN)
        size = page.viewport_size
        page.set_viewport_size({"width": int(size["width"] + COLUMN - width), "height": 1000})
        page.wait_for_timeout(300)
    return page.evaluate(FIT_COLUMN)


def measure(page: Any, name: str) -> dict[str, Any] | None:
    """The box of widget `name` and what inside it is cut off (see the module docstring)."""
    return page.evaluate(MEASURE, f".ctx-fit-{name}")


def screenshot(page: Any, name: str, path: Path) -> None:
    """A PNG of widget `name` whole: the page made taller than the widget (Lab's status bar
    and the end of its notebook panel no longer cover its lower part), then scrolled to it."""
    widget = page.locator(f".ctx-fit-{name}").first
    height = widget.evaluate("(el) => el.getBoundingClientRect().height")
    page.set_viewport_size({"width": page.viewport_size["width"], "height": int(height) + 400})
    widget.scroll_into_view_if_needed()
    page.wait_for_timeout(300)  # the scrolled-to cells are drawn on the next frames
    widget.screenshot(path=str(path))


def main(out: Path) -> None:
    """Run the cells in JupyterLab, print each widget's measures, screenshot each widget."""
    import shutil
    import tempfile

    from tests.browser_lab import chromium_page, jupyterlab, open_notebook, run_all, wait_widget
    from tests.test_browser import write_notebook

    repo = Path(__file__).resolve().parents[1]
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        root, home = Path(tmp) / "root", Path(tmp) / "home"
        root.mkdir()
        home.mkdir()
        (root / "traces").symlink_to(repo / "traces")
        write_notebook(root / "fit.ipynb", CELLS)
        env = {"PYTHONPATH": str(repo)}
        with jupyterlab(root, home, env) as base, chromium_page() as page:
            open_notebook(page, base, "fit.ipynb")
            run_all(page)
            for name in WIDGETS:
                wait_widget(page, f".ctx-fit-{name}")
            print("column", fit_column(page))
            page.wait_for_timeout(3000)
            for name in WIDGETS:
                print(name, measure(page, name))
            for name in WIDGETS:
                screenshot(page, name, out / f"{name}.png")
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
