"""Metrics of one replay: `summary(replay, trace)` is one flat record of every metric (the
`ctxlab compare` row: size, cost with and without prompt caching, cache breaks, facts needed
but lost, late triggers, overflows, goal retention; docs/policies.md), `cache_frame` the
prompt-cache simulation call by call (docs/cache.md), and the information metrics on their
own.

The public face of ctxlab's private modules: import from here.
"""

from ctxlab._evaluate.metrics import *  # noqa: F403
from ctxlab._evaluate.metrics import __all__ as __all__
