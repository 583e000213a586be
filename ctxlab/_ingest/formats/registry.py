"""Which reader a trace file belongs to, decided from its content, never from its name.

LangSmith records are handled by `ctxlab.load` itself, because one LangSmith trace can be split
over many files and its records are merged before traces are built. Every other format is
read one file at a time by a module listed in `FORMATS`, which exposes:

* `NAME`: the format family, as `Trace.format` and `ctxlab inspect` show it;
* `DESCRIPTION`: how a user recognises it, for the "unknown trace format" error ("a Claude
  Code session (JSONL lines with 'sessionId' and 'uuid')");
* `sniff(values) -> bool`: a cheap test on the file's JSON values (a document is one value, a
  JSONL file one per line, each with its line number); it must not raise;
* `read(values, source) -> list[Trace]`: the traces of the file, raising `TraceFormatError`
  naming `source` and the line, item or id at fault;
* optionally `link(traces) -> list[Trace]`: called once after every file of a load, to join
  traces one format keeps in separate files (Claude Code subagent transcripts).

Binary files that hold JSON documents (Inspect's `.eval` zip, Parquet exports) are opened by a
`CONTAINERS` entry: magic bytes and a function turning the file's bytes into the same values.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ctxlab._ingest.formats import (
    anthropic_sessions,
    atif,
    claude_code,
    codex,
    inspect_ai,
    inspect_eval_zip,
    langsmith_copied,
    langsmith_parquet,
    mini_swe_agent,
    openhands,
    openhands_legacy,
    openhands_v1,
    otel,
    swe_agent,
)

if TYPE_CHECKING:
    from ctxlab._trace import Trace

Values = list[tuple[Any, int | None]]
"""A file's JSON values, each with its 1-based line number (None for a whole-file document)."""

FORMATS: tuple[ModuleType, ...] = (
    claude_code,
    codex,
    openhands,
    openhands_legacy,
    openhands_v1,
    atif,
    inspect_ai,
    swe_agent,
    mini_swe_agent,
    otel,
    anthropic_sessions,
    langsmith_copied,
)
"""Readers tried in order; the first whose `sniff` accepts a file reads it."""

CONTAINERS: tuple[tuple[bytes, Callable[[bytes, str], Values]], ...] = (
    (inspect_eval_zip.MAGIC, inspect_eval_zip.open_eval),
    (langsmith_parquet.MAGIC, langsmith_parquet.open_parquet),
)
"""Magic bytes of a binary container and the function that opens it into JSON values."""


def detect(values: Values) -> ModuleType | None:
    """The format module that claims these values, or None (LangSmith or a message list)."""
    for module in FORMATS:
        if module.sniff(values):
            return module
    return None


def links() -> tuple[Callable[[list[Trace]], list[Trace]], ...]:
    """The `link` functions of `FORMATS`, in order. Looked up once per `FORMATS` (a failed
    `getattr` on each module without one cost 5 us a load, 2% of loading a 5 kB file)."""
    return _links(FORMATS)


@lru_cache(maxsize=4)
def _links(formats: tuple[ModuleType, ...]) -> tuple[Callable[[list[Trace]], list[Trace]], ...]:
    return tuple(module.link for module in formats if hasattr(module, "link"))


def container(data: bytes) -> Callable[[bytes, str], Values] | None:
    """The opener for a binary container file, from its first bytes."""
    for magic, opener in CONTAINERS:
        if data.startswith(magic):
            return opener
    return None
