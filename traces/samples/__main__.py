"""Regenerate the synthetic deepagents traces in traces/, byte for byte.

Usage, from the repository root: `.venv/bin/python -m traces.samples [OUTPUT_DIR]`
(default: traces/).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .encoding import dumps_json

TRACES = Path(__file__).resolve().parents[1]


def main(argv: Sequence[str] | None = None, encode: Callable[[Any], bytes] = dumps_json) -> None:
    """Record both sessions and write them; rerunning must not change a byte.

    `encode` encodes each tracer payload; a test passes one that also compares with
    langsmith's own encoder.
    """
    parser = argparse.ArgumentParser(
        prog="python -m traces.samples", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "out_dir",
        nargs="?",
        type=Path,
        default=TRACES,
        metavar="OUTPUT_DIR",
        help="where to write the .jsonl.xz files (default: traces/)",
    )
    out_dir = parser.parse_args(argv).out_dir
    # deepagents, LangChain and the chat models load here, not at import: `--help` stays quick
    from .output import normalise_ops, write_jsonl_xz
    from .recording import RecordingClient, record
    from .scenarios import sessions

    out_dir.mkdir(parents=True, exist_ok=True)
    for variable in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        os.environ.pop(variable, None)  # an ambient tracer would add a second, networked one
    for session in sessions():
        lines = normalise_ops(record(session, RecordingClient(encode)), session.name)
        write_jsonl_xz(out_dir / f"{session.name}.jsonl.xz", lines)


if __name__ == "__main__":
    main()
