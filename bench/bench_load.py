"""Loading a ~100 MB LangSmith export, as a ratio to plain JSON parsing of the same bytes.

Run: `.venv/bin/python bench/bench_load.py` (writes bench/out/export.jsonl first if missing).
The baseline is `json.loads` on every line, the least any loader must do; ctxlab's number is
the full `ctxlab.load` (read, parse, merge runs, decode messages, rebuild the conversation).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import ctxlab
from bench.make_export import write


def best_of(fn, repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", type=Path, default=Path("bench/out/export.jsonl"))
    parser.add_argument("--turns", type=int, default=210, help="210 turns is about 100 MB")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not args.path.exists():
        args.path.parent.mkdir(parents=True, exist_ok=True)
        write(args.path, args.turns)
    size_mb = args.path.stat().st_size / 1e6

    def plain() -> None:
        with args.path.open("rb") as fh:
            for line in fh:
                json.loads(line)

    def ours() -> None:
        (trace,) = ctxlab.load(args.path)
        assert len(trace.turns) > 0

    baseline = best_of(plain, args.repeat)
    loaded = best_of(ours, args.repeat)
    (trace,) = ctxlab.load(args.path)
    print(f"export: {size_mb:.1f} MB, {len(trace.turns)} turns, {len(trace.messages)} messages")
    print(f"json.loads per line: {baseline:.2f} s  ({size_mb / baseline:.0f} MB/s)")
    print(f"ctxlab.load:         {loaded:.2f} s  ({size_mb / loaded:.0f} MB/s)")
    print(f"ratio: {loaded / baseline:.2f}x")


if __name__ == "__main__":
    main()
