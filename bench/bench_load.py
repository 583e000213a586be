"""Loading a ~100 MB LangSmith export, as a ratio to plain JSON parsing of the same bytes.

Run: `.venv/bin/python bench/bench_load.py` (writes bench/out/export.jsonl first if missing).
The baseline is `json.loads` on every line, the least any loader must do; ctxlab's number is
the full `ctxlab.load` (read, parse, merge runs, decode messages, rebuild the conversation).

`--real` also times files not made for this bench: the bundled samples and the JSON Lines
files in ../shared/data/real-traces and ../shared/data/corpus, each against `json.loads` per
line of its decompressed bytes (decompression counted on both sides).
"""

from __future__ import annotations

import argparse
import gzip
import json
import lzma
import os
import timeit
from pathlib import Path

import ctxlab
from bench.make_export import write


def best_of(fn, repeat: int) -> float:
    """The best time of one call, over `repeat` timings that each run enough calls to last
    0.2 s (`timeit`'s autorange): a small real file loads in a fraction of a millisecond, and
    one call a timing measured the clock's jitter (its ratio swung by 0.5x between runs)."""
    timer = timeit.Timer(fn)
    number, _ = timer.autorange()
    return min(timer.repeat(repeat, number)) / number


REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CTXLAB_SHARED", REPO.parent / "shared")) / "data"
"""../shared/data, or the shared folder `CTXLAB_SHARED` names (as the tests read it)."""
REAL = SHARED / "real-traces"
CORPUS = SHARED / "corpus"


def real_files() -> list[Path]:
    """The bundled samples, then every JSON Lines file under ../shared/data/real-traces and
    ../shared/data/corpus (the public files found for issue 32)."""
    found = sorted((REPO / "traces").glob("*.jsonl.xz"))
    for folder in (REAL, CORPUS):
        found += sorted(p for p in folder.rglob("*.jsonl*") if p.is_file())
    return found


def decompressed(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix == ".gz":
        return gzip.decompress(data)
    return data


def real_rows(repeat: int) -> None:
    """One row per real file: json.loads per line (after decompression) against ctxlab.load."""
    print("\n| file | MB | json.loads per line | ctxlab.load | ratio |")
    print("|---|---:|---:|---:|---:|")
    for path in real_files():
        size = len(decompressed(path)) / 1e6

        def plain(path: Path = path) -> None:
            for line in decompressed(path).split(b"\n"):
                if line.strip():
                    json.loads(line)

        def ours(path: Path = path) -> None:
            ctxlab.load(path)

        base, took = best_of(plain, repeat), best_of(ours, repeat)
        name = path.relative_to(REPO if path.is_relative_to(REPO) else SHARED)
        print(
            f"| {str(name)[:60]} | {size:.1f} | {base * 1000:.0f} ms | {took * 1000:.0f} ms "
            f"| {took / base:.1f}x |",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--path", type=Path, default=Path("bench/out/export.jsonl"))
    parser.add_argument("--turns", type=int, default=210, help="210 turns is about 100 MB")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--real", action="store_true", help="also the samples and real files")
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
    print(f"ctxlab._ingest.load:         {loaded:.2f} s  ({size_mb / loaded:.0f} MB/s)")
    print(f"ratio: {loaded / baseline:.2f}x")
    if args.real:
        real_rows(args.repeat)


if __name__ == "__main__":
    main()
