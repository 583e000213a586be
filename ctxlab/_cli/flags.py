"""Argparse types for `ctxlab` flags: a bad value is refused while the command line is read,
in one line naming the flag, the value and the forms it takes (`argument --window: invalid
value '0': ...`), exit 2, before any trace is loaded.

Kept free of heavy imports (the parser is built on every `ctxlab` call). Values that can only
be judged against a policy (`--set`, `--grid`) are checked when the policy is built and
reported through `ctxlab._errors.FlagError` in the same form.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ctxlab._errors import FlagError
from ctxlab._replay.specs import TRIGGER_FORMS, parse_size, parse_trigger

if TYPE_CHECKING:
    from ctxlab._ingest.load import TraceList

WINDOW_FORMS = "a positive whole number of tokens"

MAX_COUNT = 10**15
"""The largest count a flag takes (tokens, processes, calls): past it a value is a typo, and
past 2**63 the libraries the value reaches (polars, DuckDB) overflow."""


def _whole(text: str) -> int | None:
    """`text` as an int if it spells one (`170000`, `1e5`), else None."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        return None
    return int(value) if math.isfinite(value) and value.is_integer() else None


def positive_int(forms: str) -> Callable[[str], int]:
    """A type for a count that must be at least 1 (`--workers`, `--window`); `forms` says
    what the flag takes."""
    return _whole_in(1, forms, "positive int")


def count(forms: str) -> Callable[[str], int]:
    """A type for a count that may be 0 (`--retries`); `forms` says what the flag takes."""
    return _whole_in(0, forms, "count")


def _whole_in(low: int, forms: str, name: str) -> Callable[[str], int]:
    """A type for a whole number from `low` to `MAX_COUNT`, named `name` in argparse's own
    messages; a value out of range names `forms` and the ceiling."""

    def parse(text: str) -> int:
        value = _whole(text)
        if value is None or not low <= value <= MAX_COUNT:
            raise argparse.ArgumentTypeError(
                f"invalid value {text!r}: use {forms}, at most {MAX_COUNT:.0e}"
            )
        return value

    parse.__name__ = name
    return parse


def window_text(text: str) -> str:
    """`replay --window`: a positive token count, `none` (no model profile) or `auto`."""
    if text.strip().lower() in {"none", "auto"}:
        return text.strip().lower()
    value = _whole(text)
    if value is None or not 1 <= value <= MAX_COUNT:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: use {WINDOW_FORMS} (at most {MAX_COUNT:.0e}), 'none' "
            "(no model profile) or 'auto'"
        )
    return str(value)


def trigger_text(text: str) -> str:
    """`--trigger`: a trigger SPEC (checked here, read against the policy later)."""
    if text.strip().lower() != "auto":
        try:
            parse_trigger(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(
                f"invalid value {text!r}: {exc}; a trigger is one or more sizes: "
                f"{TRIGGER_FORMS.split('; ', 1)[1]}"
            ) from None
    return text


def size_text(text: str) -> str:
    """`--keep`: a size SPEC (checked here, read against the policy later)."""
    if text.strip().lower() != "auto":
        try:
            parse_size(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"invalid value {text!r}: {exc}") from None
    return text


def fraction(text: str) -> float:
    """`--stress`: a fraction of the window, above 0 and at most 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: use a fraction above 0 and at most 1, e.g. 0.15"
        )
    return value


def text_file(text: str) -> str:
    """`--summary-text-file`: an existing, readable file of UTF-8 text (checked here, while
    the command line is read; its text is read again when the summariser is built)."""
    path = Path(text)
    if not path.exists():
        problem = "no such file"
    elif path.is_dir():
        problem = "is a directory"
    elif not path.is_file():
        problem = "is not a regular file"
    elif not os.access(path, os.R_OK):
        problem = "cannot be read"
    else:
        try:
            path.read_bytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            problem = f"not UTF-8 text (byte {exc.start} is {exc.object[exc.start]:#04x})"
        except OSError as exc:
            problem = f"cannot be read ({exc.strerror or exc})"
        else:
            return text
    raise argparse.ArgumentTypeError(f"invalid value {text!r}: {problem}; give a UTF-8 text file")


def sql_text(text: str) -> str:
    """`query SQL`: not blank."""
    if not text.strip().strip(";").strip():
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: give a read-only SQL statement, e.g. "
            "'SELECT * FROM replay_summary'"
        )
    return text


def say_store_folder(db: str) -> None:
    """Create the store file's missing folder, saying so in one line on stderr (a `--db` path
    with a typo would otherwise leave a new folder tree behind without a word)."""
    folder = Path(db).expanduser().parent
    if folder.exists():
        return
    folder.mkdir(parents=True, exist_ok=True)
    print(f"ctxlab: created folder {folder} for the store {db}", file=sys.stderr)


QUERY_TIMEOUT = 60.0
"""`ctxlab query`'s default time limit, in seconds (`--timeout`)."""
QUERY_MEMORY = "2GB"
"""`ctxlab query`'s default DuckDB memory limit (`--memory-limit`)."""


def seconds(text: str) -> float | None:
    """`--timeout` (of a query, of a model call): seconds above 0, or 0 / `none` for no
    limit."""
    if text.strip().lower() in {"0", "none"}:
        return None
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: use a number of seconds above 0, e.g. 60, or 0 for no limit"
        )
    return value


_MEMORY = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(B|KB|MB|GB|TB|KIB|MIB|GIB|TIB)\s*", re.I)


def memory_size(text: str) -> str:
    """`query --memory-limit`: a size DuckDB reads (`512MB`, `4GB`, `1.5GiB`), above 0."""
    match = _MEMORY.fullmatch(text)
    if match is None or float(match.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: use a size with its unit, e.g. 512MB or 4GB"
        )
    return f"{match.group(1)}{match.group(2).upper()}"


def require_traces(found: TraceList, paths: list[str]) -> None:
    """Refuse an input that holds no trace and no bad file (an empty directory) instead of
    printing nothing and exiting 0; bad files are reported by the command itself."""
    if not len(found) and not found.errors:
        raise FlagError(
            "PATH",
            " ".join(paths),
            "no traces found (an empty directory?); give trace files, .gz/.xz files or "
            "directories holding them",
        )
