"""Memory in proportion to the file: a 10 KB gzip of 10 MB of `{}` lines (3.5 million values
no reader claims) is refused at its first line, with a peak RSS within 150 MB of inspecting a
one-line file (it peaked at 820 MB when every line was parsed before the format was known)."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

import pytest

import ctxlab

WRAPPER = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "ctxlab._cli.main", "inspect", sys.argv[1]],
                      capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(done.stderr)
"""


def inspect_peak(path: Path) -> tuple[int, int, str]:
    """(exit code, peak RSS in KB, stderr) of `ctxlab inspect path` in a process of its own."""
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(path)], capture_output=True, text=True, check=True
    ).stdout
    head, _, err = out.partition("\n")
    code, peak = map(int, head.split())
    return code, peak, err


def test_ten_megabytes_of_empty_objects_cost_what_one_line_does(tmp_path: Path) -> None:
    bomb = tmp_path / "empty.jsonl.gz"
    bomb.write_bytes(gzip.compress(b"{}\n" * 3_500_000))
    small = tmp_path / "small.jsonl"
    small.write_bytes(b"{}\n")
    code, big_peak, err = inspect_peak(bomb)
    assert code == 2 and "line 1: unknown trace format" in " ".join(err.split())
    _, small_peak, _ = inspect_peak(small)
    assert big_peak - small_peak < 150_000, (big_peak, small_peak)


def test_parquet_data_counts_against_the_one_ceiling(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A small Parquet file whose row groups decompress past `CTXLAB_MAX_TRACE_BYTES` is
    refused before any column is read, as a gzip or an `.eval` member would be."""
    from tests.langsmith_shapes import as_parquet
    from tests.test_load_errors import GOOD, llm_run

    runs = [*GOOD, llm_run("r2", [{"type": "human", "content": "x" * 400_000}], parent="t1")]
    path = as_parquet(runs, tmp_path / "runs.parquet")
    size = path.stat().st_size
    assert size < 100_000
    monkeypatch.setenv("CTXLAB_MAX_TRACE_BYTES", str(size + 1))
    with pytest.raises(ctxlab.TraceFormatError, match="Parquet data, uncompressed, exceeds"):
        ctxlab.load(path)
    monkeypatch.delenv("CTXLAB_MAX_TRACE_BYTES")
    assert [t.trace_id for t in ctxlab.load(path)] == ["t1"]
