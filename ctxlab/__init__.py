"""ctxlab: replay recorded LLM-agent traces through context-compaction policies.

The public API reads like the user's sentence: `ctxlab.load(path)` gives `Trace`s,
`ctxlab.replay(trace, policies.DeepAgents())` a `Replay`, `ctxlab.Store()` keeps them, and
`ctxlab.sweep(traces, policy, grid)` runs parameter grids into the store; `ctxlab.plots` and
`ctxlab.widgets` draw them (imported on first use).
"""

from ctxlab import policies, summarizers
from ctxlab.errors import TraceFormatError
from ctxlab.load import TraceList, TraceLoadWarning, load, load_all
from ctxlab.replay import Replay, replay
from ctxlab.store import Store
from ctxlab.sweep import sweep
from ctxlab.trace import Trace, Turn, from_messages

__all__ = [
    "Replay",
    "Store",
    "Trace",
    "TraceFormatError",
    "TraceList",
    "TraceLoadWarning",
    "Turn",
    "from_messages",
    "load",
    "load_all",
    "policies",
    "replay",
    "summarizers",
    "sweep",
]
__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`ctxlab.plots` and `ctxlab.widgets` on first use: they import plotly and ipywidgets,
    which the CLI and sweep workers never need."""
    if name in {"plots", "widgets"}:
        import importlib

        return importlib.import_module(f"ctxlab.{name}")
    raise AttributeError(f"module 'ctxlab' has no attribute {name!r}")
