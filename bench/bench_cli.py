"""CLI start-up: `ctxlab --help` and `ctxlab <cmd> --help` against importing LangChain's messages.

Run: `.venv/bin/python -m bench.bench_cli [--repeat 20]`. Every command runs as a fresh
process, round-robin (one of each per round, so a busy machine slows all of them alike);
the table gives the median wall time and its ratio to the baseline,
`python -c "import langchain_core.messages"` (what any ctxlab command that touches a trace
pays at least). `python -c pass` is the interpreter's own start-up, for scale. The target is
`ctxlab --help` within 1.5x of the baseline.
"""

from __future__ import annotations

import argparse
import os
import pkgutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import ctxlab._cli.commands

BASELINE = "import langchain_core.messages"
TARGET = 1.5


def commands(ctxlab_exe: str) -> dict[str, list[str]]:
    """Label -> argv: the interpreter floor, the baseline, `--help` and every `<cmd> --help`."""
    runs = {
        "python -c pass": [sys.executable, "-c", "pass"],
        f'python -c "{BASELINE}"': [sys.executable, "-c", BASELINE],
        "ctxlab --help": [ctxlab_exe, "--help"],
    }
    for info in sorted(pkgutil.iter_modules(ctxlab._cli.commands.__path__), key=lambda m: m.name):
        runs[f"ctxlab {info.name} --help"] = [ctxlab_exe, info.name, "--help"]
    return runs


def time_once(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=20, help="runs of each command (default 20)")
    parser.add_argument(
        "--ctxlab",
        default=str(Path(sys.executable).parent / "ctxlab"),
        help="the console script to time (default: the one beside this interpreter)",
    )
    args = parser.parse_args()
    runs = commands(args.ctxlab)
    for argv in runs.values():  # warm the file cache and byte-code before timing
        time_once(argv)
    times: dict[str, list[float]] = {label: [] for label in runs}
    for _ in range(args.repeat):
        for label, argv in runs.items():
            times[label].append(time_once(argv))
    medians = {label: statistics.median(t) for label, t in times.items()}
    baseline = medians[f'python -c "{BASELINE}"']
    print(f"median of {args.repeat} runs each, round-robin; load average {os.getloadavg()[0]:.1f}")
    print()
    print("| command | median | ratio to baseline |")
    print("|---|---|---|")
    for label, median in medians.items():
        print(f"| `{label}` | {median * 1000:.0f} ms | {median / baseline:.2f}x |")
    ratio = medians["ctxlab --help"] / baseline
    verdict = "meets" if ratio <= TARGET else "misses"
    print(f"\n`ctxlab --help` is {ratio:.2f}x the baseline: {verdict} the {TARGET}x target")


if __name__ == "__main__":
    main()
