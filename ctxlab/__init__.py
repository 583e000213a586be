"""ctxlab: replay recorded LLM-agent traces through context-compaction policies.

The public API reads like the user's sentence: `ctxlab.load(path)` gives `Trace`s.
"""

from ctxlab.errors import TraceFormatError
from ctxlab.load import TraceList, TraceLoadWarning, load, load_all
from ctxlab.trace import Trace, Turn, from_messages

__all__ = [
    "Trace",
    "TraceFormatError",
    "TraceList",
    "TraceLoadWarning",
    "Turn",
    "from_messages",
    "load",
    "load_all",
]
__version__ = "0.1.0"
