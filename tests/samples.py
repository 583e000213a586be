"""The bundled long sample, loaded once per worker process.

Loading it costs about 1.7 CPU seconds, and a dozen test files replay or evaluate it; each
loading its own copy cost the suite some 20 CPU seconds. ctxlab treats a trace as immutable while
it lives (`ctxlab._weak_memo`), so one copy serves every test, and what ctxlab derives from it
(its measured sizes, its facts) is worked out once too. Tests that need a changed trace make one
with `dataclasses.replace`, never by mutating this one.
"""

from __future__ import annotations

import functools
from pathlib import Path

import ctxlab

LONG = Path(__file__).resolve().parents[1] / "traces" / "deepagents_long_session.jsonl.xz"


@functools.cache
def long_trace() -> ctxlab.Trace:
    """The long sample's main trace (its subagents under it), the same object on every call."""
    return ctxlab.load(LONG)[0]
