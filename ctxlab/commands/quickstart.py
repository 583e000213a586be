"""`ctxlab quickstart [--out DIR] [--lab]`: the quickstart notebook, headless or in JupyterLab.

Headless (the default, and the end of the README's main command) it executes
`notebooks/01_quickstart.ipynb` top to bottom in a fresh kernel, with `$CTXLAB_FIGURES` pointing
at `--out` (default `data/figures/`), and prints the figures it wrote (PDF, PNG, SVG, HTML): a
new user sees real output without opening a browser. `--lab` opens JupyterLab on the notebook
instead, to scrub and tune interactively. The executed notebook is not saved: its widget state
would add megabytes of JavaScript to the repository.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
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
    parser.add_argument("--lab", action="store_true", help="open JupyterLab on the notebook")
    parser.add_argument(
        "--notebook", default=str(NOTEBOOK), help="notebook to run (default: the quickstart)"
    )
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell (default 600)")
    parser.set_defaults(run=run)


def run_notebook(notebook: Path, figures: Path, timeout: int = 600) -> list[Path]:
    """Execute `notebook` in a fresh kernel (cwd = its folder) with `$CTXLAB_FIGURES=figures`;
    return the files it wrote there, sorted."""
    import nbformat
    from nbclient import NotebookClient

    figures.mkdir(parents=True, exist_ok=True)
    nb = nbformat.read(notebook, as_version=4)
    # Look the "python3" kernel up in this environment first, so a user-level kernelspec for
    # another Python (without ctxlab) cannot take the run over.
    here = str(Path(sys.prefix) / "share" / "jupyter")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        [here, *[p for p in os.environ.get("JUPYTER_PATH", "").split(os.pathsep) if p]]
    )
    env = {**os.environ, "CTXLAB_FIGURES": str(figures), "JUPYTER_PLATFORM_DIRS": "1"}
    started = time.time() - 1
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        store_widget_state=False,
        resources={"metadata": {"path": str(notebook.parent)}},
    )
    client.execute(env=env)
    return sorted(p for p in figures.iterdir() if p.is_file() and p.stat().st_mtime >= started)


def open_lab(notebook: Path) -> int:
    """JupyterLab on the notebook, rooted at the repository (blocks until Lab exits)."""
    cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--ServerApp.root_dir={REPO}",
        str(notebook.relative_to(REPO) if notebook.is_relative_to(REPO) else notebook),
    ]
    print("starting JupyterLab:", " ".join(cmd), flush=True)
    return subprocess.call(cmd, cwd=REPO)


def run(args: argparse.Namespace) -> int:
    notebook = Path(args.notebook).resolve()
    if not notebook.exists():
        print(
            f"ctxlab: error: {notebook}: no such notebook (run from a clone of the repository)",
            file=sys.stderr,
        )
        return 2
    if args.lab:
        return open_lab(notebook)
    out = Path(args.out).resolve()
    print(f"ctxlab quickstart: running {notebook.name} headless ...", flush=True)
    start = time.perf_counter()
    try:
        written = run_notebook(notebook, out, args.timeout)
    except Exception as exc:  # nbclient's CellExecutionError carries the cell and traceback
        print(f"ctxlab: error: {notebook.name} failed:\n{exc}", file=sys.stderr)
        return 1
    print(f"ran in {time.perf_counter() - start:.1f} s; figures written:")
    for path in written:
        print(path)
    return 0
