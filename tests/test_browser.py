"""The quickstart in a real browser: JupyterLab on 127.0.0.1, Playwright driving Debian's
chromium (no browser download), run all cells, move the scrubber's turn slider, and check that
the chart (a plotly FigureWidget) and the context strip (an HTML widget) changed in the DOM.

Python-side tests cannot see the widget manager, anywidget's ESM, the comm round trip or the
renderers; this one does. Recipe and timings: ../shared/research/jupyter-testing.md (section 3);
launch code shared with bench/bench_browser.py: tests/browser_lab.py (which also says why the
notebook runs in two slices: anywidget gives each FigureWidget model 2 s to load its module).
Screenshots go to `$CTXLAB_ARTIFACTS` (else pytest's tmp dir). Skips cleanly without chromium.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.browser_lab import (
    chromium_missing,
    chromium_page,
    jupyterlab,
    open_notebook,
    run_cells,
    wait_text,
    wait_widget,
)

REPO = Path(__file__).resolve().parents[1]
CHART_TITLE = ".ctx-chart.js-plotly-plot .gtitle"  # add_class lands on the plotly div itself
CURSOR = ".ctx-chart.js-plotly-plot .scatterlayer .trace:last-child .point"
STRIP = ".ctx-strip .ctx-strip-inner"
EXPLORER_TITLE = ".ctx-explorer-chart.js-plotly-plot .gtitle"


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("CTXLAB_ARTIFACTS") or tmp_path_factory.mktemp("artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """JupyterLab serving a copy of the notebooks (Lab autosaves; the repo's copies stay clean)
    beside a link to the sample traces, isolated config dirs, no outbound calls."""
    if reason := chromium_missing():
        pytest.skip(reason)
    root = tmp_path_factory.mktemp("labroot")
    home = tmp_path_factory.mktemp("labhome")
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    (root / "traces").symlink_to(REPO / "traces")
    try:
        with jupyterlab(root, home, {"CTXLAB_FIGURES": str(root / "figures")}) as base:
            yield base
    except RuntimeError as exc:
        pytest.fail(str(exc))


def test_quickstart_scrubber_in_jupyterlab(lab: str, artifacts: Path) -> None:
    console: list[str] = []
    with chromium_page(console) as page:
        try:
            open_notebook(page, lab, "notebooks/01_quickstart.ipynb")
            # one FigureWidget loading at a time, with the kernel idle (tests/browser_lab.py)
            run_cells(page, through="Scrubber(")
            wait_widget(page, CHART_TITLE)
            run_cells(page, through="ThresholdExplorer(")
            wait_widget(page, EXPLORER_TITLE)
            run_cells(page)
            page.locator(STRIP).wait_for(state="attached", timeout=60_000)
            title = page.locator(CHART_TITLE).text_content() or ""
            assert title.startswith("turn ") and "tokens" in title
            turn = int(page.locator(STRIP).get_attribute("data-turn") or -1)
            assert title.startswith(f"turn {turn}:")
            strip_before = page.locator(STRIP).inner_html()
            assert page.locator(f"{STRIP} .ctx-block").count() > 1
            cursor_before = page.locator(CURSOR).first.get_attribute("transform")
            page.locator(".ctx-scrubber").first.scroll_into_view_if_needed()
            page.locator(".ctx-scrubber").first.screenshot(
                path=str(artifacts / "scrubber_before.png")
            )

            # browser -> kernel observer -> FigureWidget batch_update + strip HTML -> DOM
            handle = page.locator(".ctx-turn .noUi-handle").first
            handle.focus()
            handle.press("ArrowRight")
            wait_text(page, CHART_TITLE, f"turn {turn + 1}:")
            page.wait_for_function(
                "([css, t]) => document.querySelector(css)?.dataset.turn === String(t)",
                arg=[STRIP, turn + 1],
                timeout=60_000,
            )
            assert page.locator(STRIP).inner_html() != strip_before
            assert page.locator(CURSOR).first.get_attribute("transform") != cursor_before
            assert page.locator(".ctx-turn .widget-readout").first.inner_text().strip() == str(
                turn + 1
            )
            page.locator(".ctx-scrubber").first.screenshot(
                path=str(artifacts / "scrubber_after.png")
            )

            # the explorer: a released slider goes through the kernel's debounce (call_later on
            # the kernel's event loop) and re-replays: the replay counter and chart change
            readout = ".ctx-explorer .ctx-readout"
            page.locator(readout).wait_for(state="attached", timeout=60_000)
            assert page.locator(readout).get_attribute("data-replays") == "0"
            title_before = page.locator(EXPLORER_TITLE).text_content()
            trigger = page.locator(".ctx-explorer .ctx-trigger .noUi-handle").first
            trigger.scroll_into_view_if_needed()
            trigger.focus()
            for _ in range(60):  # 0.85 -> 0.25 of the window: the sample now summarises
                trigger.press("ArrowLeft")
            page.wait_for_function(
                "(css) => Number(document.querySelector(css)?.dataset.replays) >= 1",
                arg=readout,
                timeout=60_000,
            )
            page.wait_for_function(
                "([css, old]) => document.querySelector(css)?.textContent !== old",
                arg=[EXPLORER_TITLE, title_before],
                timeout=60_000,
            )
            page.locator(".ctx-explorer").first.screenshot(path=str(artifacts / "explorer.png"))
        except Exception:
            page.screenshot(path=str(artifacts / "browser_failure.png"))
            raise
        finally:
            (artifacts / "browser_console.log").write_text("\n".join(console))
