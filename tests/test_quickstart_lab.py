"""`ctxlab quickstart --lab` as a user runs it: the real console script starts real JupyterLab,
prints a URL with a token, and that URL opens the quickstart in real chromium (Playwright, Debian's
/usr/bin/chromium, no browser download); then Ctrl-C (SIGINT to its process group, as a terminal
sends it) or SIGTERM stops Lab, its kernels and its port.

test_browser.py starts JupyterLab itself, so it cannot catch a broken `--lab` (a wrong URL, a
fixed port, a refusal to run as root, a Ctrl-C that orphans kernels); this file does. Jupyter's
config, data, runtime, settings and workspace folders are temporary, so the user's are neither
read nor written; the runtime folder is also where a clean shutdown must leave no server or
kernel files. Skips cleanly without chromium or playwright.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.waiting import Lines

REPO = Path(__file__).resolve().parents[1]
CTXLAB = Path(sys.executable).parent / "ctxlab"  # the console script `pip install -e .` made
NOTEBOOK = "notebooks/01_quickstart.ipynb"
CHROMIUM = os.environ.get("CTXLAB_CHROMIUM") or shutil.which("chromium") or "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
]  # fmt: skip
URL_RE = re.compile(r"^\s*(http://127\.0\.0\.1:(\d+)/\S*lab/tree/\S+)$", re.MULTILINE)


@dataclass
class Lab:
    """A running `ctxlab quickstart --lab`: its process, the URL it printed and where it logs."""

    proc: subprocess.Popen
    url: str
    port: int
    token: str
    base: str
    runtime: Path
    stdout: Path
    stderr: Path
    output: Lines

    def api(self, path: str, token: str | None = None) -> object:
        """GET a Jupyter REST endpoint with the printed token (or `token`), decoded."""
        query = urllib.parse.urlencode({"token": self.token if token is None else token})
        with urllib.request.urlopen(f"{self.base}{path}?{query}", timeout=10) as resp:
            return json.load(resp)

    def logs(self) -> str:
        """Both output streams, for failure messages."""
        return f"--- stdout\n{self.stdout.read_text()}\n--- stderr\n{self.stderr.read_text()}"


def _lab_env(home: Path) -> dict[str, str]:
    """The caller's environment with temporary Jupyter folders and no API keys: the test must
    neither read the user's Lab settings nor leave workspaces, runtime files or news opt-ins."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    for name in ("JUPYTER_CONFIG_DIR", "JUPYTER_DATA_DIR", "JUPYTER_RUNTIME_DIR"):
        env[name] = str(home / name.lower())
    env["JUPYTERLAB_SETTINGS_DIR"] = str(home / "settings")
    env["JUPYTERLAB_WORKSPACES_DIR"] = str(home / "workspaces")
    # Lab checkpoints a notebook when it opens it; send that to the temp dir, not to an
    # untracked notebooks/.ipynb_checkpoints/ in the clone other people are working in
    config = home / "jupyter_config_dir"
    config.mkdir(parents=True, exist_ok=True)
    (config / "jupyter_server_config.json").write_text(
        json.dumps({"FileCheckpoints": {"checkpoint_dir": str(home / "checkpoints")}})
    )
    return env


def _start(home: Path, *flags: str) -> Lab:
    """Run the console script from the clone like a user in a terminal would (SIGINT at its
    default, its own process group, so a group SIGINT is exactly a terminal's Ctrl-C), and
    return once it printed its URL. The command itself waits for the server to answer before
    printing, so the URL line is the readiness signal under test."""
    if not CTXLAB.exists():
        pytest.skip(f"no console script at {CTXLAB} (pip install -e .)")
    stdout, stderr = home / "stdout.log", home / "stderr.log"
    with open(stderr, "w") as err:
        proc = subprocess.Popen(
            [str(CTXLAB), "quickstart", "--lab", "--port", "0", "--no-browser", "--offline",
             *flags],
            cwd=REPO, env=_lab_env(home), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=err, text=True, start_new_session=True,
            # a shell running pytest in the background may have SIGINT ignored; a terminal's
            # foreground command has it at its default, which is what Ctrl-C relies on
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        )  # fmt: skip
    assert proc.stdout is not None
    output = Lines(proc.stdout, log=stdout)  # each line as printed, also kept in stdout.log
    try:  # a hang guard, not a timing assertion
        match = output.wait(URL_RE.pattern, "lab URL printed", 180)
    except (TimeoutError, EOFError) as exc:
        _kill(proc)
        pytest.fail(f"{exc}\n--- stderr\n{stderr.read_text()}")
    url, port = match.group(1), int(match.group(2))
    token = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("token", [""])[0]
    return Lab(
        proc, url, port, token, f"http://127.0.0.1:{port}/", home / "jupyter_runtime_dir",
        stdout, stderr, output,
    )  # fmt: skip


def _kill(proc: subprocess.Popen) -> None:
    """Last resort after a failed test: no JupyterLab or kernel may outlive it. Lab runs in its
    own session, so killing the command's process group would orphan it: ask the command to
    stop Lab first (SIGTERM), then SIGKILL whatever is still below it."""
    if proc.poll() is not None:
        return
    below = _descendants(proc.pid)
    os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        for pid in [proc.pid, *below]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def _stop_and_check(lab: Lab, sig: signal.Signals, kernel_pids: list[int]) -> None:
    """Send `sig` to the command's process group and check the clean-shutdown contract: exit
    code 0, a "stopped" line, the port closed, Jupyter's server and kernel files removed from
    the runtime folder (only its own cleanup does that, a SIGKILL would not) and no kernel left."""
    os.killpg(lab.proc.pid, sig)
    try:
        code = lab.proc.wait(timeout=45)  # a hang guard, not a timing assertion
    except subprocess.TimeoutExpired:
        _kill(lab.proc)
        pytest.fail(f"ctxlab quickstart --lab ignored {sig.name}:\n{lab.logs()}")
    lab.output.wait_end("ctxlab quickstart --lab's output", 30)  # its last lines are read
    assert code == 0, lab.logs()
    assert "JupyterLab stopped (exit code 0)" in lab.stdout.read_text(), lab.logs()
    with socket.socket() as s, pytest.raises(ConnectionRefusedError):
        s.connect(("127.0.0.1", lab.port))
    with socket.socket() as s:  # nothing listens: a server could bind it again right away
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", lab.port))
        s.listen()
    leftovers = sorted(p.name for p in lab.runtime.glob("*.json"))
    assert leftovers == [], f"runtime files left behind: {leftovers}\n{lab.logs()}"
    for pid in kernel_pids:
        assert not _alive(pid), f"kernel {pid} outlived JupyterLab"


def _alive(pid: int) -> bool:
    """Whether `pid` is a live (not zombie) process."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def _descendants(pid: int) -> list[int]:
    """All processes below `pid` (Lab and its kernels), from /proc's children lists."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        for task in Path(f"/proc/{current}/task").glob("*"):
            try:
                kids = [int(k) for k in (task / "children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _repo_notebooks() -> dict[str, bytes]:
    """What Lab could write into the clone's notebooks/ folder: names and the quickstart's bytes."""
    folder = REPO / "notebooks"
    names = {p.name: b"" for p in folder.iterdir()}
    return {**names, NOTEBOOK: (REPO / NOTEBOOK).read_bytes()}


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """Per-test Jupyter home (config, data, runtime, settings, workspaces, logs)."""
    return tmp_path


@pytest.fixture
def chromium() -> Iterator[str]:
    """Debian's chromium and playwright, or a clean skip."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no chromium at {CHROMIUM} (apt-get install chromium)")
    pytest.importorskip("playwright", reason="playwright not installed (pip install '.[test]')")
    yield CHROMIUM


def _first_cells() -> tuple[str, str]:
    """The first markdown heading and the first code line of the quickstart, from the file, so
    the test follows edits to the notebook instead of pinning its wording."""
    cells = json.loads((REPO / NOTEBOOK).read_text())["cells"]
    markdown = next("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    code = next("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    heading = next(line for line in markdown.splitlines() if line.startswith("#"))
    first_code = next(line for line in code.splitlines() if line.strip())
    return heading.lstrip("#").strip(), first_code.strip()


def test_lab_url_opens_quickstart_in_chromium_and_ctrl_c_stops_it(
    home: Path, chromium: str
) -> None:
    from playwright.sync_api import sync_playwright

    token = "ctxlab-quickstart-lab-test"
    before = _repo_notebooks()
    lab = _start(home, "--token", token)
    try:
        assert lab.token == token, lab.logs()
        assert urllib.parse.urlsplit(lab.url).path == f"/lab/tree/{NOTEBOOK}"
        listing = lab.api("api/contents/notebooks")
        assert NOTEBOOK in [item["path"] for item in listing["content"]]
        with pytest.raises(urllib.error.HTTPError) as denied:
            lab.api("api/contents/notebooks", token="wrong-token")
        assert denied.value.code == 403

        heading, first_code = _first_cells()
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, headless=True,
                                        args=CHROMIUM_ARGS)  # fmt: skip
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            try:
                page.goto(lab.url, wait_until="domcontentloaded")  # verbatim, as printed
                tab = ".lm-DockPanel-tabBar .lm-TabBar-tab.lm-mod-current .lm-TabBar-tabLabel"
                page.locator(tab).filter(has_text=Path(NOTEBOOK).name).wait_for(timeout=90_000)
                page.locator(".jp-NotebookPanel .jp-Notebook").first.wait_for(timeout=60_000)
                page.wait_for_function(
                    "(text) => [...document.querySelectorAll("
                    "'.jp-NotebookPanel .jp-MarkdownCell .jp-RenderedMarkdown h1')]"
                    ".some((h) => h.textContent.includes(text))",
                    arg=heading,
                    timeout=60_000,
                )
                page.wait_for_function(
                    "(text) => document.querySelector("
                    "'.jp-NotebookPanel .jp-CodeCell .cm-content')?.textContent.includes(text)",
                    arg=first_code,
                    timeout=60_000,
                )
                # the browser's session started a kernel for this notebook, and it came up.
                # Asked of the server (the page's toolbar says "idle" before any kernel
                # exists, and this Lab does not expose its app object to the page): the one
                # wait in the suite that asks again, every 0.3 s, for the kernel's state.
                deadline = time.monotonic() + 120  # a hang guard, not a timing assertion
                while not any(
                    s["path"] == NOTEBOOK and s["kernel"]["execution_state"] == "idle"
                    for s in lab.api("api/sessions")
                ):
                    assert time.monotonic() < deadline, f"no idle kernel\n{lab.logs()}"
                    page.wait_for_timeout(300)
            except Exception:
                page.screenshot(path=str(home / "quickstart_lab_failure.png"))
                raise
            finally:
                browser.close()
        kernels = [pid for pid in _descendants(lab.proc.pid) if _alive(pid)]
        assert len(kernels) >= 2, "expected JupyterLab and a kernel below ctxlab"
        _stop_and_check(lab, signal.SIGINT, kernels)
        assert _repo_notebooks() == before, "opening the notebook in Lab wrote into the clone"
        assert (home / "checkpoints").is_dir()  # so the config above is what kept it clean
    finally:
        _kill(lab.proc)


def test_lab_default_token_and_sigterm(home: Path) -> None:
    """Without `--token` the command still prints a URL whose token the server accepts (Jupyter
    generated it; the command read it back), and SIGTERM stops it as cleanly as Ctrl-C."""
    lab = _start(home)
    try:
        assert len(lab.token) >= 32, lab.logs()
        listing = lab.api("api/contents/notebooks")
        assert NOTEBOOK in [item["path"] for item in listing["content"]]
        with pytest.raises(urllib.error.HTTPError) as denied:
            lab.api("api/contents/notebooks", token="")
        assert denied.value.code == 403
        _stop_and_check(lab, signal.SIGTERM, [])
    finally:
        _kill(lab.proc)
