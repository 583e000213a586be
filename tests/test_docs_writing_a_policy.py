"""docs/writing-a-policy.md works as printed: its Python blocks, run in order as one script,
register the example policy, replay, sweep and explore it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import duckdb

REPO = Path(__file__).resolve().parents[1]
DOC = REPO / "docs" / "writing-a-policy.md"


def python_blocks(text: str) -> list[str]:
    """The fenced ```python blocks of a markdown text, as printed."""
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_doc_example_runs_as_printed(tmp_path: Path) -> None:
    blocks = python_blocks(DOC.read_text())
    assert len(blocks) >= 4
    policy_lines = [line for line in blocks[0].splitlines() if line.strip()]
    assert len(policy_lines) <= 60, "the example policy should stay short"
    script = tmp_path / "example.py"
    script.write_text("\n".join(blocks))
    (tmp_path / "traces").symlink_to(REPO / "traces")  # the doc's paths are from the repo root
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    peak, raw = map(int, re.search(r"peak: (\d+) raw: (\d+)", out).groups())
    assert peak < raw * 0.6  # digesting old results must shrink the long session's requests
    assert "mask_observations" in out
    assert "['keep', 'trigger']" in out  # the explorer's sliders are the numeric parameters
    assert "DigestOldResults(keep=1, trigger=20000)" in out
    with duckdb.connect(str(tmp_path / "digest-sweep.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT count(*), count(DISTINCT params) FROM replays WHERE policy = ?",
            ["digest-old-results"],
        ).fetchone()
    assert rows == (6, 6)
