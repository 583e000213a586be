"""The notebooks run top to bottom headless (nbclient, a real kernel) and write their figures
to `$CTXLAB_FIGURES`, never into the repository; they are committed without outputs.

The quickstart runs through `ctxlab quickstart`, the README's command, so the command and the
notebook are tested together.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from tests.cli_text import messages

REPO = Path(__file__).resolve().parents[1]
NOTEBOOKS = REPO / "notebooks"


def _kernel_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}  # stay offline
    env.update(
        CTXLAB_FIGURES=str(tmp_path / "figures"),
        CTXLAB_STORE=str(tmp_path / "store.duckdb"),
        JUPYTER_PLATFORM_DIRS="1",
    )
    return env


def _valid(path: Path) -> bool:
    data = path.read_bytes()
    return {
        ".pdf": data[:5] == b"%PDF-",
        ".png": data[:8] == b"\x89PNG\r\n\x1a\n",
        ".svg": b"<svg" in data[:2000],
        ".html": b"Plotly.newPlot" in data,
    }[path.suffix]


def _repo_figures() -> dict[str, float]:
    folder = REPO / "data" / "figures"
    return {p.name: p.stat().st_mtime for p in folder.glob("*")} if folder.is_dir() else {}


STRIPPED_METADATA = {
    "kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"},
    "language_info": {"name": "python"},
}
"""All a committed notebook's metadata holds: what Lab needs to pick the kernel."""


def test_notebooks_are_committed_without_outputs() -> None:
    found = sorted(NOTEBOOKS.glob("*.ipynb"))
    assert [p.name for p in found] == [
        "01_quickstart.ipynb",
        "02_prompt_diff.ipynb",
        "03_compare_and_sweep.ipynb",
        "04_what_was_lost.ipynb",
        "05_tune.ipynb",
    ]
    for path in found:
        nb = nbformat.read(path, as_version=4)
        nbformat.validate(nb)
        for cell in nb.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, path.name
        assert "widgets" not in nb.metadata, f"{path.name} carries saved widget state"
        # nbstripout's shape: no cell metadata, and the notebook's only the kernel's name and
        # language, nothing a kernel or a Lab session adds (versions, widget state, run times)
        assert all(not cell.metadata for cell in nb.cells), f"{path.name}: cell metadata"
        assert dict(nb.metadata) == STRIPPED_METADATA, (path.name, dict(nb.metadata))


@pytest.mark.parametrize(
    ("name", "figures"),
    [
        ("02_prompt_diff.ipynb", ["prompt_diff_anchors.pdf"]),
        ("03_compare_and_sweep.ipynb", ["sweep_heatmap.pdf", "compare_cumulative.pdf"]),
        ("04_what_was_lost.ipynb", ["retention.pdf", "retention.png"]),
        ("05_tune.ipynb", ["pareto_deepagents.pdf", "pareto_masking.pdf"]),
    ],
)
def test_notebook_runs_headless(tmp_path: Path, name: str, figures: list[str]) -> None:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        store_widget_state=False,
        resources={"metadata": {"path": str(NOTEBOOKS)}},
    )
    client.execute(env=_kernel_env(tmp_path))
    errors = [o for c in nb.cells for o in c.get("outputs", []) if o.output_type == "error"]
    assert not errors
    for fig in figures:
        assert _valid(tmp_path / "figures" / fig), fig
    widgets = [
        o
        for c in nb.cells
        for o in c.get("outputs", [])
        if "application/vnd.jupyter.widget-view+json" in o.get("data", {})
    ]
    assert widgets, "the widget cell displayed no widget"


def test_quickstart_command_runs_the_notebook(tmp_path: Path) -> None:
    out = tmp_path / "figures"
    before = _repo_figures()
    proc = subprocess.run(
        [sys.executable, "-m", "ctxlab._cli.main", "quickstart", "--out", str(out)],
        capture_output=True,
        text=True,
        env=_kernel_env(tmp_path),
        cwd=REPO,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    progress = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    assert progress and all(re.fullmatch(r"\[\d+/\d+\] .+ \.\.\. \d+\.\d s", p) for p in progress)
    assert "without encryption" not in proc.stderr  # the kernel talks over Unix sockets
    printed = [Path(line) for line in proc.stdout.splitlines() if line.startswith(str(out))]
    suffixes = {p.suffix for p in printed}
    assert {".pdf", ".png", ".svg", ".html"} <= suffixes
    for path in printed:
        assert path.exists() and _valid(path), path
    assert _repo_figures() == before, "the test wrote figures into the repository"


def test_quickstart_command_reports_a_missing_notebook(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ctxlab._cli.main",
            "quickstart",
            "--notebook",
            str(tmp_path / "x.ipynb"),
        ],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert proc.returncode == 2
    (line,) = messages(proc.stderr)
    assert line.endswith("x.ipynb: no such notebook (run from a clone of the repository)")


LAB_METADATA = {
    "kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"},
    "language_info": {
        "codemirror_mode": {"name": "ipython", "version": 3},
        "file_extension": ".py",
        "mimetype": "text/x-python",
        "name": "python",
        "nbconvert_exporter": "python",
        "pygments_lexer": "ipython3",
        "version": "3.11.7",
    },
}
"""What JupyterLab 4 puts into a notebook's metadata once its kernel reports itself."""


def _saved_by_lab(tmp_path: Path, on_disk: dict, metadata: dict) -> dict:
    """Save, through jupyter_server's real contents manager with ctxlab's extension hook, the
    notebook `on_disk` (already in `tmp_path`) with `metadata` as Lab sends it; what is written."""
    from jupyter_server.services.contents.filemanager import FileContentsManager

    from ctxlab._view.lab_save import keep_stripped

    (tmp_path / "n.ipynb").write_text(json.dumps(on_disk))
    manager = FileContentsManager(root_dir=str(tmp_path))
    manager.register_pre_save_hook(keep_stripped)
    content = {**on_disk, "metadata": metadata}
    manager.save({"type": "notebook", "format": "json", "content": content}, "n.ipynb")
    return json.loads((tmp_path / "n.ipynb").read_text())


def test_a_lab_save_keeps_a_stripped_notebook_stripped(tmp_path: Path) -> None:
    committed = REPO / "notebooks" / "01_quickstart.ipynb"
    on_disk = json.loads(committed.read_text())
    saved = _saved_by_lab(tmp_path, on_disk, LAB_METADATA)
    assert saved["metadata"] == STRIPPED_METADATA
    assert (tmp_path / "n.ipynb").read_bytes() == committed.read_bytes()  # byte for byte


def test_a_lab_save_leaves_other_notebooks_and_other_kernels_alone(tmp_path: Path) -> None:
    on_disk = json.loads((REPO / "notebooks" / "01_quickstart.ipynb").read_text())
    other_kernel = {**LAB_METADATA, "kernelspec": {"name": "ir", "language": "R"}}
    assert _saved_by_lab(tmp_path, on_disk, other_kernel)["metadata"] == other_kernel
    unstripped = {**on_disk, "metadata": LAB_METADATA}  # a notebook not committed stripped
    changed = {**LAB_METADATA, "widgets": {"state": {}}}
    assert _saved_by_lab(tmp_path, unstripped, changed)["metadata"] == changed
