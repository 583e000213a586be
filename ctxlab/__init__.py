"""ctxlab: replay recorded LLM-agent traces through context-compaction policies.

The public API reads like the user's sentence: `ctxlab.load(path)` gives `Trace`s,
`ctxlab.replay(trace, policies.DeepAgents())` a `Replay`, `ctxlab.Store()` keeps them, and
`ctxlab.sweep(traces, policy, grid)` runs parameter grids into the store; `ctxlab.plots` and
`ctxlab.widgets` draw them.

Every name is imported on first use: `import ctxlab` itself loads nothing else, so the CLI
starts (and `ctxlab --help` answers) without polars, DuckDB or the policy catalogue, and a
process pays only for the parts it touches.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "Evaluation": "ctxlab.evaluation",
    "RecordedCompaction": "ctxlab.trace",
    "Replay": "ctxlab.replay",
    "Store": "ctxlab.store",
    "Trace": "ctxlab.trace",
    "TraceFormatError": "ctxlab.errors",
    "TraceList": "ctxlab.load",
    "TraceLoadWarning": "ctxlab.load",
    "Turn": "ctxlab.trace",
    "evaluate": "ctxlab.evaluation",
    "from_messages": "ctxlab.trace",
    "load": "ctxlab.load",
    "load_all": "ctxlab.load",
    "replay": "ctxlab.replay",
    "sweep": "ctxlab.sweep",
}
"""Public name -> the module defining it."""

_SUBMODULES = ("policies", "summarizers", "plots", "widgets")
"""Submodules reachable as attributes of `ctxlab` without importing them by name."""

__all__ = [
    "Evaluation",
    "RecordedCompaction",
    "Replay",
    "Store",
    "Trace",
    "TraceFormatError",
    "TraceList",
    "TraceLoadWarning",
    "Turn",
    "evaluate",
    "from_messages",
    "load",
    "load_all",
    "policies",
    "replay",
    "summarizers",
    "sweep",
]

if TYPE_CHECKING:
    from ctxlab import policies, summarizers
    from ctxlab.errors import TraceFormatError
    from ctxlab.evaluation import Evaluation, evaluate
    from ctxlab.load import TraceList, TraceLoadWarning, load, load_all
    from ctxlab.replay import Replay, replay
    from ctxlab.store import Store
    from ctxlab.sweep import sweep
    from ctxlab.trace import RecordedCompaction, Trace, Turn, from_messages


class _Package(ModuleType):
    """`ctxlab`'s module type: keeps `ctxlab.load`, `.replay` and `.sweep` the functions.

    Importing the submodule `ctxlab.replay` makes Python bind the module as the package's
    attribute `replay`, over the function of the same name; this binds the function instead,
    as the eager imports this package used to make did.
    """

    def __setattr__(self, name: str, value: object) -> None:
        if isinstance(value, ModuleType) and _EXPORTS.get(name) == value.__name__:
            value = getattr(value, name)
        super().__setattr__(name, value)


def __getattr__(name: str) -> object:
    """Import a public name (or a submodule in `_SUBMODULES`) on first use and keep it."""
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"ctxlab.{name}")
    else:
        raise AttributeError(f"module 'ctxlab' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS, *_SUBMODULES})


sys.modules[__name__].__class__ = _Package
