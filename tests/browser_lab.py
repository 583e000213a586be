"""JupyterLab on 127.0.0.1 driven by Playwright through Debian's chromium: the launch code
the browser test (tests/test_browser.py) and the browser benchmark (bench/bench_browser.py)
share. Recipe: ../shared/research/jupyter-testing.md (section 3).

The server gets isolated config dirs, no outbound calls and no news toast; the browser is the
system chromium (no Playwright download). `open_notebook` returns once the notebook's kernel is
idle and connected, so cells can be run at once.

The charts are `ctxlab._view.widgets.chart.ChartWidget`s: plotly FigureWidgets whose anywidget
module is
a small loader, so anywidget's 2 s module deadline is met however long plotly.js (5 MB) takes to
load on a busy machine (`ctxlab/_view/widgets/chart.py` says why). So a notebook runs as a user runs
it, all cells at once (`run_all`); `run_cells` runs it a slice at a time where a caller wants to
act between cells.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ctxlab._view.lab_save import LAB_FLAGS
from tests.waiting import Lines, wait_port

CHROMIUM = os.environ.get("CTXLAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
TOKEN = "ctxlab-browser-test"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip
KERNEL_IDLE = """() => {
  const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
  return !!k && k.status === 'idle' && k.connectionStatus === 'connected';
}"""
SETTINGS: Mapping[str, Mapping[str, Any]] = {
    "apputils-extension/notification": {"fetchNews": "false"},  # no news toast over the cells
}


def chromium_missing() -> str | None:
    """Why a browser run cannot happen here (no chromium, no playwright), else None."""
    if not Path(CHROMIUM).exists():
        return f"no chromium at {CHROMIUM} (apt-get install chromium)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "playwright not installed (pip install '.[test]')"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def jupyterlab(root: Path, home: Path, env: Mapping[str, str] = {}) -> Iterator[str]:
    """Serve `root` with JupyterLab (config under `home`); yields the base URL. The server is
    stopped (SIGTERM: it shuts its kernels down) when the block ends. `env` adds variables."""
    for name, values in SETTINGS.items():
        path = home / "settings" / "@jupyterlab" / f"{name}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    environ = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environ.update(
        JUPYTER_PLATFORM_DIRS="1",
        JUPYTER_CONFIG_DIR=str(home / "config"),
        JUPYTER_DATA_DIR=str(home / "data"),
        JUPYTER_RUNTIME_DIR=str(home / "runtime"),
        JUPYTERLAB_SETTINGS_DIR=str(home / "settings"),
        JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
        **env,
    )
    port = free_port()
    cmd = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}", "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={TOKEN}", f"--ServerApp.root_dir={root}",
        "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
        "--LabApp.extension_manager=readonly",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        *LAB_FLAGS,  # as `ctxlab quickstart --lab` runs it: saving keeps notebooks stripped
    ]  # fmt: skip
    log_path = home / "jupyterlab.log"
    proc = subprocess.Popen(
        cmd, env=environ, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        stdin=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    assert proc.stdout is not None
    output = Lines(proc.stdout, log=log_path)
    base = f"http://127.0.0.1:{port}"
    try:
        try:  # the server logs its URL once set up, and binds its port on its loop's first turn
            output.wait(rf"{re.escape(base)}/", f"JupyterLab's 'running at {base}' line", 180)
            wait_port(port, "JupyterLab", 60, alive=lambda: proc.poll() is None)
        except (TimeoutError, EOFError) as exc:
            raise RuntimeError(f"JupyterLab did not start: {exc}\n{output.text}") from None
        urllib.request.urlopen(f"{base}/api/status?token={TOKEN}", timeout=30).close()
        yield base
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@contextmanager
def chromium_page(console: list[str] | None = None) -> Iterator[Any]:
    """A Playwright page in headless chromium (1400x1000); browser messages go to `console`."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            if console is not None:
                page.on("console", lambda m: console.append(f"{m.type}: {m.text}"))
            yield page
        finally:
            browser.close()


def open_notebook(page: Any, base: str, path: str) -> None:
    """Open `path` (relative to the server root) and wait until its kernel can run cells."""
    page.goto(f"{base}/lab/tree/{path}?reset&token={TOKEN}", wait_until="domcontentloaded")
    page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(state="visible", timeout=90_000)
    page.wait_for_function(KERNEL_IDLE, timeout=120_000)


def run_cells(page: Any, through: str | None = None) -> None:
    """Run the open notebook's cells one at a time, each once the previous one finished, from
    where the last call stopped through the first code cell containing `through` (to the end
    when None). Returns when they have run; their widgets may still be rendering."""
    page.evaluate(
        """async (through) => {
          const app = window.jupyterapp;
          const nb = app.shell.currentWidget.content;
          let i = window.__nextCell || 0;
          for (; i < nb.widgets.length; i++) {
            const cell = nb.widgets[i];
            nb.activeCellIndex = i;
            await app.commands.execute('notebook:run-cell');
            if (through !== null && cell.model.type === 'code'
                && cell.model.sharedModel.getSource().includes(through)) { i++; break; }
          }
          window.__nextCell = i;
        }""",
        through,
    )


def run_all(page: Any) -> None:
    """Run every cell of the open notebook as a user does (Run > Run All Cells); returns once the
    kernel has run them all (widgets may still be rendering)."""
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(KERNEL_IDLE, timeout=300_000)


def wait_widget(page: Any, css: str, timeout: int = 120_000) -> None:
    """Until an element matching `css` is in the page (drawn, whether scrolled into view
    or not)."""
    page.locator(css).first.wait_for(state="attached", timeout=timeout)


def wait_text(page: Any, css: str, text: str, timeout: int = 120_000) -> None:
    """Until the first element matching `css` contains `text`."""
    page.wait_for_function(
        "([css, text]) => document.querySelector(css)?.textContent.includes(text)",
        arg=[css, text],
        timeout=timeout,
    )


_KERNEL_PRINT = """async (code) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  let out = '';
  const future = kernel.requestExecute({code, store_history: false});
  let error = null;
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') out += msg.content.text;
    if (msg.header.msg_type === 'error') error = `${msg.content.ename}: ${msg.content.evalue}`;
  };
  await future.done;
  return [out, error];
}"""


def kernel_print(page: Any, code: str) -> str:
    """Run `code` in the open notebook's kernel (outside its history) and return what it
    printed: what the kernel holds, to compare with what the page shows. An exception in the
    kernel raises `RuntimeError` with its name and message."""
    out, error = page.evaluate(_KERNEL_PRINT, code)
    if error is not None:
        raise RuntimeError(f"kernel raised {error} running {code!r}")
    return out
