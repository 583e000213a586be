"""`ctxlab quickstart [--out DIR] [--lab]`: the quickstart notebook, headless or in JupyterLab.

Headless (the default, and the end of the README's main command) it executes
`notebooks/01_quickstart.ipynb` top to bottom in a fresh kernel, with `$CTXLAB_FIGURES` pointing
at `--out` (default `data/figures/`), and prints the figures it wrote (PDF, PNG, SVG, HTML): a
new user sees real output without opening a browser. A line per cell says what runs and how
long it took; the kernel talks over Unix sockets, not TCP (`_kernel_manager`). `--lab` opens
JupyterLab on the notebook instead, to scrub and tune interactively: it prints the URL (with
its token) once the server answers, and Ctrl-C stops Lab and its kernels cleanly (`--port`,
`--token`, `--no-browser` and `--offline` exist for headless machines and for
tests/test_quickstart_lab.py). The executed notebook is not saved: its widget state would add
megabytes of JavaScript to the repository.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse
from pathlib import Path
from typing import TYPE_CHECKING

from ctxlab._cli import flags
from ctxlab._cli.tables import clip, fit, terminal_width

if TYPE_CHECKING:
    from jupyter_client.manager import KernelManager
    from nbformat import NotebookNode

REPO = Path(__file__).resolve().parents[3]
NOTEBOOK = REPO / "notebooks" / "01_quickstart.ipynb"


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "quickstart",
        help="run the quickstart notebook headless and write its figures (or --lab)",
        description="Execute notebooks/01_quickstart.ipynb headless (sample trace, replay, "
        "widgets, figure export) and print the figures it wrote; --lab opens it in JupyterLab.",
    )
    parser.add_argument(
        "--out", default="data/figures", help="folder for the figures (default: data/figures)"
    )
    parser.add_argument(
        "--lab",
        action="store_true",
        help="open JupyterLab on the notebook; prints its URL (with token); Ctrl-C stops it",
    )
    lab = parser.add_argument_group("--lab options")
    lab.add_argument(
        "--port",
        type=port,
        default=None,
        help="port for JupyterLab (default: 8888 or the next free one; 0: any free port)",
    )
    lab.add_argument(
        "--token", default=None, help="access token for JupyterLab (default: a random one)"
    )
    lab.add_argument(
        "--no-browser",
        dest="browser",
        action="store_false",
        help="do not open a browser, only print the URL",
    )
    lab.add_argument(
        "--offline",
        action="store_true",
        help="no news feed, update check or PyPI calls from JupyterLab (air-gapped, tests)",
    )
    parser.add_argument(
        "--notebook", default=str(NOTEBOOK), help="notebook to run (default: the quickstart)"
    )
    parser.add_argument(
        "--timeout",
        type=flags.positive_int("a whole number of seconds, 1 or more"),
        default=600,
        help="seconds per cell (default: %(default)s)",
    )
    parser.set_defaults(run=run)


def port(text: str) -> int:
    """`--port`: a TCP port number, 0 (any free port) to 65535."""
    value = flags.count("a port number from 0 (any free port) to 65535")(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: use a port number from 0 (any free port) to 65535"
        )
    return value


def _jupyter_path() -> str:
    """`$JUPYTER_PATH` with this environment's share/jupyter first, so a user-level "python3"
    kernelspec for another Python (without ctxlab) cannot take the run or the Lab kernel over."""
    here = str(Path(sys.prefix) / "share" / "jupyter")
    rest = [p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p and p != here]
    return os.pathsep.join([here, *rest])


def _kernel_manager(kernel_name: str, sockets: Path) -> KernelManager:
    """A kernel manager whose kernel talks over Unix sockets in `sockets` (a private temporary
    folder), not TCP: ipykernel warns that unencrypted TCP can be read by other local users,
    and IPC cannot. Windows has no IPC transport, so it stays on TCP there."""
    from jupyter_client.manager import KernelManager

    if os.name != "posix":
        return KernelManager(kernel_name=kernel_name)
    return KernelManager(kernel_name=kernel_name, transport="ipc", ip=str(sockets / "kernel"))


class Progress:
    """One line per code cell while the notebook runs headless, `[2/6] Replay it under Deep
    Agents' policy: policy = DeepAgents(stress=0.1) ... 1.2 s`: the section (`##`) heading
    above the cell and its first line of code, then how long it took, so the run is never
    silent for long."""

    def __init__(self, nb: NotebookNode, width: int) -> None:
        self.labels: dict[int, str] = {}
        heading = "set-up"  # cells above the first section heading (under the title)
        for index, cell in enumerate(nb.cells):
            lines = [line.strip() for line in cell.source.splitlines() if line.strip()]
            if cell.cell_type == "markdown" and lines and lines[0].startswith("##"):
                heading = lines[0].lstrip("#").strip()
            elif cell.cell_type == "code":
                first = next((line for line in lines if not line.startswith("#")), "")
                self.labels[index] = ": ".join(p for p in (heading, first) if p)
        self.order = {index: n for n, index in enumerate(self.labels, 1)}
        self.width = width
        self.started = 0.0

    def start(self, cell: NotebookNode, cell_index: int, **_: object) -> None:
        if cell_index not in self.order:
            return
        prefix = f"[{self.order[cell_index]}/{len(self.order)}] "
        room = self.width - len(prefix) - len(" ... 999.9 s")
        print(prefix + clip(self.labels[cell_index], room) + " ...", end="", flush=True)
        self.started = time.perf_counter()

    def done(
        self, cell: NotebookNode, cell_index: int, execute_reply: dict | None = None, **_: object
    ) -> None:
        if cell_index not in self.order:
            return
        took = time.perf_counter() - self.started
        failed = (execute_reply or {}).get("content", {}).get("status") == "error"
        print(f" {'failed after ' if failed else ''}{took:.1f} s", flush=True)


def run_notebook(
    notebook: Path, figures: Path, timeout: int = 600, progress: bool = False
) -> list[Path]:
    """Execute `notebook` in a fresh kernel (cwd = its folder) with `$CTXLAB_FIGURES=figures`,
    printing a line per cell if `progress`; return the files it wrote there, sorted."""
    import nbformat
    from nbclient import NotebookClient

    figures.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(notebook, as_version=4)
    # Look the "python3" kernel up in this environment first, so a user-level kernelspec for
    # another Python (without ctxlab) cannot take the run over.
    os.environ["JUPYTER_PATH"] = _jupyter_path()
    env = {**os.environ, "CTXLAB_FIGURES": str(figures), "JUPYTER_PLATFORM_DIRS": "1"}
    started = time.time() - 1
    hooks = {}
    if progress:
        shown = Progress(nb, terminal_width())
        hooks = {"on_cell_start": shown.start, "on_cell_executed": shown.done}
    with tempfile.TemporaryDirectory(prefix="ctxlab-kernel-") as sockets:
        km = _kernel_manager("python3", Path(sockets))
        client = NotebookClient(
            nb,
            km=km,
            timeout=timeout,
            kernel_name="python3",
            store_widget_state=False,
            resources={"metadata": {"path": str(notebook.parent)}},
            **hooks,
        )
        try:
            client.execute(env=env)
        finally:  # nbclient leaves a kernel manager it was handed running: stop it here
            if client.kc is not None:
                client.kc.stop_channels()
            if km.has_kernel:
                km.shutdown_kernel()
    return sorted(p for p in figures.iterdir() if p.is_file() and p.stat().st_mtime >= started)


class _Stop(Exception):
    """SIGTERM/SIGHUP turned into an exception, so they stop JupyterLab like Ctrl-C does."""


def _raise_stop(signum: int, frame: object) -> None:
    raise _Stop(signum)


def _read_json(path: Path) -> dict | None:
    """The server-info file, or None while it is missing or half written."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _wait_ready(proc: subprocess.Popen, info_file: Path) -> dict | None:
    """Wait until JupyterLab answers `/api/status` with its token; return its server info (which
    holds the real port: `--port 0` or a busy default let Jupyter pick), or None if it exited.

    The info file is Jupyter's own record of a running server (what `jupyter server list` reads),
    so the URL printed below is the one the server actually bound, not a guess."""
    import urllib.request

    while proc.poll() is None:
        info = _read_json(info_file)
        if info and info.get("url"):
            query = urllib.parse.urlencode({"token": info.get("token", "")})
            try:
                urllib.request.urlopen(f"{info['url']}api/status?{query}", timeout=2).close()
                return info
            except OSError:
                pass
        time.sleep(0.2)
    return None


def _wait_interruptibly(proc: subprocess.Popen) -> int:
    """`proc.wait()` that Ctrl-C can break. A plain blocking wait is not enough: importing ctxlab
    starts native threads (polars, jemalloc), the kernel may hand SIGINT to one of them, and then
    the main thread's waitpid() is never interrupted, so Python would not run its handler until
    Lab exited on its own. A short timeout lets the main thread run pending handlers."""
    while True:
        try:
            return proc.wait(timeout=0.5)
        except subprocess.TimeoutExpired:
            continue


def _stop_lab(proc: subprocess.Popen, grace: float = 30.0) -> int | None:
    """SIGTERM JupyterLab (it shuts its kernels down, removes its runtime files and exits);
    SIGKILL its process group only if that hangs or a second Ctrl-C insists. Return its exit
    code, or None if it had to be killed."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        return proc.wait(timeout=grace)
    except (subprocess.TimeoutExpired, KeyboardInterrupt, _Stop):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        return None


def open_lab(
    notebook: Path,
    port: int | None = None,
    token: str | None = None,
    open_browser: bool = True,
    offline: bool = False,
) -> int:
    """JupyterLab on the notebook, rooted at the repository; blocks until Ctrl-C (or SIGTERM).

    Lab runs in its own session with no terminal stdin: Ctrl-C reaches only this process, which
    stops Lab with SIGTERM so jupyter_server shuts its kernels down and frees the port (a raw
    SIGINT would ask "Shut down this Jupyter server (y/[n])?" or kill it mid-cleanup). Once the
    server answers, the URL with its token is printed, so a user can open it even with
    `--no-browser` or when Jupyter's own browser launch fails. `port=None` means Jupyter's
    default 8888 or the next free one; an explicit port must be free (0: any free port)."""
    from jupyter_core.paths import jupyter_runtime_dir

    from ctxlab._view.lab_save import LAB_FLAGS

    root = REPO if notebook.is_relative_to(REPO) else notebook.parent
    rel = notebook.relative_to(root).as_posix()
    runtime = Path(jupyter_runtime_dir())
    cmd = [
        sys.executable, "-m", "jupyterlab", rel,
        f"--ServerApp.root_dir={root}", "--ServerApp.ip=127.0.0.1",
        *LAB_FLAGS,  # saving a committed (stripped) notebook keeps it stripped: git stays clean
    ]  # fmt: skip
    if port is not None:
        cmd += [f"--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    if token is not None:
        cmd.append(f"--IdentityProvider.token={token}")
    if not open_browser:
        cmd.append("--no-browser")
    if offline:  # no news feed, no update check, no PyPI queries from the extension manager
        cmd += [
            "--LabApp.news_url=None",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            "--LabApp.extension_manager=readonly",
        ]
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        cmd.append("--allow-root")  # containers and CI run as root; Lab refuses without this
    env = {**os.environ, "JUPYTER_PATH": _jupyter_path()}
    print("ctxlab quickstart: starting JupyterLab:", " ".join(cmd), flush=True)
    previous = {s: signal.signal(s, _raise_stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    proc = subprocess.Popen(
        cmd, cwd=root, env=env, stdin=subprocess.DEVNULL, start_new_session=True
    )
    try:
        try:
            info = _wait_ready(proc, runtime / f"jpserver-{proc.pid}.json")
            if info is None:
                print(
                    f"ctxlab: error: JupyterLab exited with code {proc.returncode} before it "
                    "was ready (its log is above)",
                    file=sys.stderr,
                )
                return proc.returncode or 1
            url = f"{info['url']}lab/tree/{urllib.parse.quote(rel)}"
            if info.get("token"):
                url += "?" + urllib.parse.urlencode({"token": info["token"]})
            print(
                f"\nctxlab quickstart: JupyterLab is ready; open the quickstart notebook at\n\n"
                f"    {url}\n\nPress Ctrl-C to stop JupyterLab and its kernels.\n",
                flush=True,
            )
            code = _wait_interruptibly(proc)
            print(f"ctxlab quickstart: JupyterLab exited with code {code}", file=sys.stderr)
            return code
        except (KeyboardInterrupt, _Stop):
            print("\nctxlab quickstart: stopping JupyterLab ...", flush=True)
            stopped = _stop_lab(proc)
            if stopped is None:
                print("ctxlab: error: JupyterLab did not stop; killed it", file=sys.stderr)
                return 1
            print(f"ctxlab quickstart: JupyterLab stopped (exit code {stopped})", flush=True)
            return 0 if stopped in (0, -signal.SIGTERM) else stopped
    finally:
        if proc.poll() is None:
            _stop_lab(proc)
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run(args: argparse.Namespace) -> int:
    """Entry point of `ctxlab quickstart`: headless run (default) or JupyterLab (`--lab`)."""
    notebook = Path(args.notebook).resolve()
    if not notebook.is_file():
        print(
            fit(
                f"ctxlab: error: {notebook}: no such notebook (run from a clone of the repository)",
                paths=True,
            ),
            file=sys.stderr,
        )
        return 2
    if args.lab:
        return open_lab(notebook, args.port, args.token, args.browser, args.offline)
    out = Path(args.out).resolve()
    print(f"ctxlab quickstart: running {notebook.name} headless ...", flush=True)
    start = time.perf_counter()
    try:
        written = run_notebook(notebook, out, args.timeout, progress=True)
    except Exception as exc:  # nbclient's CellExecutionError carries the cell and traceback
        print(f"ctxlab: error: {notebook.name} failed:\n{exc}", file=sys.stderr)
        return 1
    print(f"ran in {time.perf_counter() - start:.1f} s; figures written:")
    for path in written:
        print(path)
    return 0
