"""ctxlab: replay recorded LLM-agent traces through context-compaction policies.

The public API reads like the user's sentence: `ctxlab.load(path)` gives `Trace`s,
`ctxlab.replay(trace, policies.DeepAgents())` a `Replay`, `ctxlab.evaluate(replay)` what it
lost, `ctxlab.Store()` keeps them, `ctxlab.sweep(traces, policy, grid)` runs parameter grids
into the store and `ctxlab.tune(traces, policy, space)` searches a policy's settings for a
Pareto front; `ctxlab.plots` and `ctxlab.widgets` draw them. Each CLI command has its twin
here (`inspect`, `compare`, `check_replay`, `calibrate`, ...). The public modules are
`policies`, `summarizers`, `plots`, `widgets`, `facts`, `metrics`, `probes` and `cost`; every
module whose name starts with `_` is private (docs/architecture.md).

Every name is imported on first use: `import ctxlab` itself loads nothing else, so the CLI
starts (and `ctxlab --help` answers) without polars, DuckDB or the policy catalogue, and a
process pays only for the parts it touches.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

__version__ = "0.1.0"

_EXPORTS = {
    "Evaluation": "ctxlab._evaluate.evaluation",
    "Requests": "ctxlab._replay.requests",
    "RecordedCompaction": "ctxlab._trace",
    "Replay": "ctxlab._replay.replay",
    "Store": "ctxlab._store.store",
    "Trace": "ctxlab._trace",
    "TraceFormatError": "ctxlab._errors",
    "TraceList": "ctxlab._ingest.load",
    "TraceLoadWarning": "ctxlab._ingest.load",
    "calibrate": "ctxlab._cost.calibration",
    "check_replay": "ctxlab._evaluate.check_replay",
    "compare": "ctxlab._evaluate.compare",
    "Turn": "ctxlab._trace",
    "UnsupportedSettingError": "ctxlab._errors",
    "evaluate": "ctxlab._evaluate.evaluation",
    "from_messages": "ctxlab._trace",
    "harness_traces": "ctxlab._ingest.harness_traces",
    "inspect": "ctxlab._ingest.inspection",
    "load": "ctxlab._ingest.load",
    "load_all": "ctxlab._ingest.load",
    "replay": "ctxlab._replay.replay",
    "request_messages": "ctxlab._replay.requests",
    "sweep": "ctxlab._store.sweep",
    "tune": "ctxlab._tune.study",
    "TuneStudy": "ctxlab._tune.study",
}
"""Public name -> the module defining it."""

_SUBMODULES = ("cost", "facts", "metrics", "plots", "policies", "probes", "summarizers", "widgets")
"""Submodules reachable as attributes of `ctxlab` without importing them by name."""

__all__ = [
    "Evaluation",
    "Requests",
    "RecordedCompaction",
    "Replay",
    "Store",
    "Trace",
    "TraceFormatError",
    "TraceList",
    "TraceLoadWarning",
    "TuneStudy",
    "Turn",
    "UnsupportedSettingError",
    "calibrate",
    "check_replay",
    "compare",
    "cost",
    "evaluate",
    "facts",
    "from_messages",
    "harness_traces",
    "inspect",
    "load",
    "load_all",
    "metrics",
    "plots",
    "policies",
    "probes",
    "replay",
    "request_messages",
    "summarizers",
    "sweep",
    "tune",
    "widgets",
]

if TYPE_CHECKING:
    from ctxlab import cost, facts, metrics, plots, policies, probes, summarizers, widgets
    from ctxlab._cost.calibration import calibrate
    from ctxlab._errors import TraceFormatError
    from ctxlab._evaluate.check_replay import check_replay
    from ctxlab._evaluate.compare import compare
    from ctxlab._evaluate.evaluation import Evaluation, evaluate
    from ctxlab._ingest.harness_traces import harness_traces
    from ctxlab._ingest.inspection import inspect
    from ctxlab._ingest.load import TraceList, TraceLoadWarning, load, load_all
    from ctxlab._replay.replay import Replay, replay
    from ctxlab._replay.requests import Requests, request_messages
    from ctxlab._store.store import Store
    from ctxlab._store.sweep import sweep
    from ctxlab._trace import RecordedCompaction, Trace, Turn, from_messages
    from ctxlab._tune.study import TuneStudy, tune


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
