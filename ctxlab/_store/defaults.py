"""Defaults the CLI shows in `--help` and the library uses, kept where argparse set-up can read
them without importing DuckDB, polars or the sweep machinery."""

from __future__ import annotations

from pathlib import Path

DEFAULT_PATH = Path("data") / "ctxlab.duckdb"
"""The store file when none is given."""

BACKENDS = ("local", "ray")
"""Where `ctxlab.sweep` can run its cells."""
