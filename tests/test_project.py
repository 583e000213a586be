"""The promises the repository itself makes: the README's commands and a clean lint."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    return [
        next(line for line in b.splitlines() if line and not line.startswith("#")) for b in blocks
    ]


def test_readme_has_exactly_two_commands_and_ci_runs_the_second() -> None:
    demo, tests = readme_commands()
    assert "ctxlab demo" in demo and "pytest" in tests
    ci = (REPO / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == tests


def test_ruff_clean() -> None:
    ruff = shutil.which("ruff", path=str(Path(sys.executable).parent)) or shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed")
    out = subprocess.run([ruff, "check", str(REPO)], capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
