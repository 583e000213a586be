"""The quickstart in a real browser: JupyterLab on 127.0.0.1, Playwright driving Debian's
chromium (no browser download), run all cells, move the scrubber's turn slider, and check that
the chart (a plotly FigureWidget) and the context strip (an HTML widget) changed in the DOM.

Python-side tests cannot see the widget manager, anywidget's ESM, the comm round trip or the
renderers; this one does. Recipe and timings: ../shared/research/jupyter-testing.md (section 3).
Screenshots go to `$CTXLAB_ARTIFACTS` (else pytest's tmp dir). Skips cleanly without chromium.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("CTXLAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "ctxlab-browser-test"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip
CHART_TITLE = ".ctx-chart.js-plotly-plot .gtitle"  # add_class lands on the plotly div itself
CURSOR = ".ctx-chart.js-plotly-plot .scatterlayer .trace:last-child .point"
STRIP = ".ctx-strip .ctx-strip-inner"
EXPLORER_TITLE = ".ctx-explorer-chart.js-plotly-plot .gtitle"
KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle';
}"""


@pytest.fixture(scope="module")
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = Path(os.environ.get("CTXLAB_ARTIFACTS") or tmp_path_factory.mktemp("artifacts"))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """JupyterLab serving a copy of the notebooks (Lab autosaves; the repo's copies stay clean)
    beside a link to the sample traces, isolated config dirs, no outbound calls."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    pytest.importorskip("playwright", reason="playwright not installed (pip install '.[test]')")
    root = tmp_path_factory.mktemp("labroot")
    home = tmp_path_factory.mktemp("labhome")
    shutil.copytree(REPO / "notebooks", root / "notebooks")
    (root / "traces").symlink_to(REPO / "traces")
    settings = home / "settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false"}')
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        JUPYTER_PLATFORM_DIRS="1",
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        CTXLAB_FIGURES=str(root / "figures"),
    )
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
        "--LabApp.extension_manager=readonly",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    log_path = root / "jupyterlab.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            cmd, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True,
        )  # fmt: skip
        base, deadline = f"http://127.0.0.1:{port}", time.time() + 90
        try:
            while True:
                try:
                    urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=2).close()
                    break
                except OSError:
                    if proc.poll() is not None or time.time() > deadline:
                        pytest.fail("JupyterLab did not start:\n" + log_path.read_text())
                    time.sleep(0.25)
            yield base
        finally:
            proc.send_signal(signal.SIGTERM)  # the server shuts its kernels down, then exits
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


def _wait_text(page, css: str, text: str, timeout: int = 120_000) -> None:
    page.wait_for_function(
        "([css, text]) => document.querySelector(css)?.textContent.includes(text)",
        arg=[css, text],
        timeout=timeout,
    )


def test_quickstart_scrubber_in_jupyterlab(lab: str, artifacts: Path) -> None:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        console: list[str] = []
        page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
        try:
            page.goto(
                f"{lab}/lab/tree/notebooks/01_quickstart.ipynb?reset&token={TOKEN}",
                wait_until="domcontentloaded",
            )
            page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(
                state="visible", timeout=90_000
            )
            page.wait_for_function(KERNEL_IDLE, timeout=120_000)
            page.evaluate("window.jupyterapp.commands.execute('notebook:run-all-cells')")

            page.locator(CHART_TITLE).wait_for(state="visible", timeout=180_000)
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
            _wait_text(page, CHART_TITLE, f"turn {turn + 1}:")
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
            browser.close()
