"""Where the suite's CPU time goes, per test file: `python -m bench.cpu_report RUN.xml [N]`.

`RUN.xml` is a `pytest --junitxml=RUN.xml` report; tests/conftest.py records each test's CPU
seconds per phase (this worker and the processes it waited for) as the test's properties. On a
machine shared with other jobs, wall time mostly measures the others; CPU time is what the
suite itself costs, and what an idle 2-core machine turns into wall time (about half of it,
with two workers kept busy). Prints the N (default 25) most expensive files, with their wall
seconds beside, and the total.
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def per_file(report: Path) -> dict[str, tuple[float, float, int]]:
    """Test file -> (CPU seconds, wall seconds, tests), from a junit XML report."""
    cpu: dict[str, float] = defaultdict(float)
    wall: dict[str, float] = defaultdict(float)
    count: dict[str, int] = defaultdict(int)
    for case in ET.parse(report).getroot().iter("testcase"):
        parts = case.get("classname", "?").split(".")  # tests.test_x[.Class]
        name = f"{parts[1]}.py" if len(parts) > 1 else parts[0]
        wall[name] += float(case.get("time", 0))
        count[name] += 1
        for prop in case.iter("property"):
            if prop.get("name", "").startswith("cpu_"):
                cpu[name] += float(prop.get("value", 0))
    return {name: (cpu[name], wall[name], count[name]) for name in count}


def main(argv: list[str]) -> None:
    report, top = Path(argv[0]), int(argv[1]) if len(argv) > 1 else 25
    files = per_file(report)
    total = sum(c for c, _, _ in files.values())
    print(f"{'file':<44} {'cpu s':>8} {'share':>6} {'wall s':>8} {'tests':>6}")
    for name, (cpu, wall, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:top]:
        print(f"{name:<44} {cpu:8.1f} {cpu / total:6.1%} {wall:8.1f} {n:6d}")
    print(f"{'total':<44} {total:8.1f}")


if __name__ == "__main__":
    main(sys.argv[1:])
