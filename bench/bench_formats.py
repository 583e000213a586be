"""Loading each real trace file of ../shared/data, as a ratio to `json.loads` on the same bytes.

Run: `.venv/bin/python -m bench.bench_formats [--shared PATH]`.
Every file is decompressed into a temporary folder first, so both sides see the same plain bytes:
the baseline parses them (`json.loads` of the whole document, or of every line of a JSONL file),
the least any loader must do; ctxlab's number is the full `ctxlab.load` of that file (read,
detect the format, parse, decode messages, rebuild the conversation and its turns). Each side
is repeated until it has run for at least `--min-time` seconds and the best mean is kept, since
most real files are small and a single run would measure the timer.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import ctxlab

REPO = Path(__file__).resolve().parents[1]


def per_call(fn: Callable[[], object], min_time: float, rounds: int = 3) -> float:
    """Best over `rounds` of the mean time of `fn`, each round running at least `min_time`."""
    best = float("inf")
    for _ in range(rounds):
        count, start = 0, time.perf_counter()
        while True:
            fn()
            count += 1
            elapsed = time.perf_counter() - start
            if elapsed >= min_time:
                break
        best = min(best, elapsed / count)
    return best


def parse_all(data: bytes) -> None:
    """What any loader must at least do: parse the JSON document, or every JSONL line."""
    try:
        json.loads(data)
    except json.JSONDecodeError:
        for line in data.splitlines():
            if line.strip():
                json.loads(line)


def plain_files(shared: Path, out: Path) -> list[tuple[str, Path]]:
    """Every real trace file, decompressed under `out` (a Claude Code session keeps its
    `subagents/` folder beside it, as on disk)."""
    files = []
    for path in sorted((shared / "data" / "real-traces").rglob("*.gz")):
        rel = path.relative_to(shared / "data" / "real-traces")
        target = out / rel.with_suffix("")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(gzip.decompress(path.read_bytes()))
        if "subagents" not in rel.parts:
            files.append((str(rel), target))
    return files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared")
    parser.add_argument("--min-time", type=float, default=0.3)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, path in plain_files(args.shared, Path(tmp)):
            data = path.read_bytes()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    traces = ctxlab.load(path)
            except ctxlab.TraceFormatError as exc:
                rows.append((name, len(data), None, None, None, str(exc).split(": ")[-1][:40]))
                continue
            base = per_call(lambda d=data: parse_all(d), args.min_time)
            ours = per_call(lambda p=path: ctxlab.load(p), args.min_time)
            turns = sum(len(t.turns) for trace in traces for t in trace.walk())
            fmt = traces[0].format
            rows.append((name, len(data), fmt, turns, ours / base, f"{ours * 1e3:.1f} ms"))
    print(f"{'file':<92} {'KB':>7} {'format':<18} {'turns':>5} {'ratio':>6}  load")
    for name, size, fmt, turns, ratio, note in rows:
        shown = f"{ratio:.2f}x" if ratio is not None else "-"
        print(f"{name:<92} {size / 1e3:>7.0f} {fmt or '-':<18} {turns or 0:>5} {shown:>6}  {note}")


if __name__ == "__main__":
    main()
