"""The CLI starts without the heavy parts: `--help` imports no data, store or policy library,
and `import ctxlab` is lazy while its public names behave as when they were imported eagerly.

`bench/bench_cli.py` times the start-up; these tests pin what makes it fast.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import ctxlab._cli.commands

REPO = Path(__file__).resolve().parents[1]
HEAVY = {
    "polars",
    "duckdb",
    "pyarrow",
    "numpy",
    "plotly",
    "ipywidgets",
    "langchain_core",
    "langchain",
    "langgraph",
    "langsmith",
    "deepagents",
    "orjson",
    "rich.progress",
}
COMMANDS = sorted(
    m.name.replace("_", "-")  # the module check_replay is the command check-replay
    for m in pkgutil.iter_modules(ctxlab._cli.commands.__path__)
)


def imported_after(code: str) -> list[str]:
    """Top-level packages from HEAVY that a fresh interpreter has imported after `code`."""
    probe = (
        f"{code}\nimport json, sys\nheavy = set({sorted(HEAVY)!r})\n"
        "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules} & heavy)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO
    )
    return json.loads(out.stdout.splitlines()[-1])


def test_import_ctxlab_loads_nothing_heavy() -> None:
    assert imported_after("import ctxlab") == []


@pytest.mark.parametrize("argv", [["--help"], *([c, "--help"] for c in COMMANDS)], ids=str)
def test_help_imports_nothing_heavy(argv: list[str]) -> None:
    code = (
        "import contextlib, io\nfrom ctxlab._cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        f"    main({argv!r})"
    )
    assert imported_after(code) == []


def test_help_lists_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "ctxlab._cli.main", "--help"],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert out.returncode == 0
    for command in COMMANDS:
        assert command in out.stdout


def test_lazy_names_are_the_functions_even_after_their_modules_are_imported() -> None:
    """The verbs are functions, whatever was imported first: no public name is also a module."""
    code = (
        "import ctxlab, ctxlab._ingest.load, ctxlab._replay.replay, ctxlab._store.sweep\n"
        "from ctxlab._replay.replay import replay\nfrom ctxlab._store.sweep import sweep\n"
        "from ctxlab._ingest.load import load\n"
        "assert ctxlab.replay is replay and ctxlab.sweep is sweep and ctxlab.load is load\n"
        "from ctxlab import *\n"
        "assert replay is ctxlab.replay and Store.__module__ == 'ctxlab._store.store'\n"
        "assert policies.DeepAgents and summarizers.Extractive\n"
        "assert set(ctxlab.__all__) <= set(dir(ctxlab))"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_unknown_attribute_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = ctxlab.no_such_name  # type: ignore[attr-defined]
