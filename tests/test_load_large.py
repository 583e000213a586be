"""A large valid file at the size ceiling gets a result, and one past it a one-line error: the
1 GB case of bench/README.md ("A 1 GB session"), at a size CI can afford, with
`CTXLAB_MAX_TRACE_BYTES` lowered so that the file sits just under (or over) the ceiling exactly
as the 1 GB file sits under the default 1 GiB one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from bench.make_session import write
from tests.cli_text import messages

WRAPPER = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "ctxlab._cli.main", *sys.argv[1:]],
                      capture_output=True, text=True)
print(done.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
print(done.stderr)
"""

SIZE = 3 * 1024 * 1024
"""The session's size: about 1,600 model calls and 2,400 messages."""


def run_peak(argv: list[str], ceiling: int | None = None) -> tuple[int, int, str]:
    """(exit code, peak RSS in KB, stderr) of `ctxlab ARGV` in a process of its own."""
    env = dict(os.environ)
    env.pop("CTXLAB_MAX_TRACE_BYTES", None)
    if ceiling is not None:
        env["CTXLAB_MAX_TRACE_BYTES"] = str(ceiling)
    out = subprocess.run(
        [sys.executable, "-c", WRAPPER, *argv], capture_output=True, text=True, check=True, env=env
    ).stdout
    head, _, err = out.partition("\n")
    code, peak = map(int, head.split())
    return code, peak, err


def test_a_session_at_the_ceiling_loads_and_replays_and_one_past_it_is_refused(
    tmp_path: Path,
) -> None:
    session = tmp_path / "session.jsonl"
    size = write(session, SIZE)
    small = tmp_path / "small.jsonl"
    write(small, 2_000)
    _, small_peak, _ = run_peak(["inspect", str(small)])

    code, peak, err = run_peak(["inspect", str(session)], ceiling=size)
    assert code == 0, err
    # Measured: +12 MB for inspect, +136 MB for replay (its token counters' tables included)
    assert (peak - small_peak) * 1024 < 150e6 + 10 * size, (peak, small_peak)
    code, peak, err = run_peak(["replay", str(session)], ceiling=size)
    assert code == 0, err
    assert (peak - small_peak) * 1024 < 200e6 + 10 * size, (peak, small_peak)

    code, _, err = run_peak(["inspect", str(session)], ceiling=size - 1)
    (line,) = messages(err)
    assert code == 2 and line.startswith(f"ctxlab: error: {session}: the file exceeds")
    assert "CTXLAB_MAX_TRACE_BYTES" in line
