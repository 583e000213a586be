"""A valid Claude Code session JSONL of a chosen size: for measuring what a very large file costs.

    .venv/bin/python -m bench.make_session OUT.jsonl --mb 1024

The session is a user request, then rounds of an assistant `Bash` call, its tool result (a
few kB of distinct log lines, so nothing compresses into shared values) and a short assistant
reply, linked by `uuid`/`parentUuid` as Claude Code writes them, with usage on every assistant
line. Written line by line: the generator never holds the file.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SESSION = "5e551011-0000-4000-8000-000000000000"
MODEL = "claude-sonnet-4-5"


def _uuid(n: int) -> str:
    return f"00000000-0000-4000-8000-{n:012d}"


def _line(n: int, kind: str, message: dict[str, Any]) -> dict[str, Any]:
    return {
        "parentUuid": None if n == 0 else _uuid(n - 1),
        "isSidechain": False,
        "userType": "external",
        "cwd": "/work/project",
        "sessionId": SESSION,
        "version": "1.0.98",
        "type": kind,
        "message": message,
        "uuid": _uuid(n),
        "timestamp": f"2026-01-01T00:{(n // 60) % 60:02d}:{n % 60:02d}.000Z",
    }


def _usage(n: int) -> dict[str, int]:
    return {"input_tokens": 10 + n % 7, "output_tokens": 40, "cache_read_input_tokens": 0}


def lines(result_bytes: int = 4000) -> Iterator[dict[str, Any]]:
    """The session's lines, without end: a request, then call, result and reply rounds."""
    yield _line(0, "user", {"role": "user", "content": "Run the test suite and fix what fails."})
    n, round_ = 1, 0
    while True:
        call = f"toolu_{round_:012d}"
        yield _line(
            n,
            "assistant",
            {
                "id": f"msg_{round_}a",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [
                    {
                        "type": "tool_use",
                        "id": call,
                        "name": "Bash",
                        "input": {"command": f"pytest -q tests/test_{round_}.py"},
                    }
                ],
                "usage": _usage(n),
            },
        )
        log, i = [], 0
        while sum(map(len, log)) < result_bytes:
            log.append(f"round {round_} line {i}: test_case_{i} PASSED in 0.{i % 97:02d}s\n")
            i += 1
        yield _line(
            n + 1,
            "user",
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call, "content": "".join(log)}],
            },
        )
        yield _line(
            n + 2,
            "assistant",
            {
                "id": f"msg_{round_}b",
                "type": "message",
                "role": "assistant",
                "model": MODEL,
                "content": [{"type": "text", "text": f"Round {round_} passed; next file."}],
                "usage": _usage(n + 2),
            },
        )
        n, round_ = n + 3, round_ + 1


def write(path: Path, size: int, result_bytes: int = 4000) -> int:
    """Write whole lines while the file stays within `size` bytes; returns its size."""
    written = 0
    with path.open("wb") as out:
        for line in lines(result_bytes):
            data = json.dumps(line, separators=(",", ":")).encode() + b"\n"
            if written + len(data) > size:
                return written
            out.write(data)
            written += len(data)
    raise AssertionError("unreachable: lines() never ends")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("out", type=Path)
    parser.add_argument(
        "--mb", type=float, default=1024, help="size in MiB, at most (default 1024)"
    )
    args = parser.parse_args()
    size = write(args.out, int(args.mb * 1024 * 1024))
    print(f"{args.out}: {size:,} bytes")


if __name__ == "__main__":
    main()
