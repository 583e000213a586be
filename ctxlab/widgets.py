"""Notebook widgets: `Scrubber`, `ThresholdExplorer`, `PromptDiff`, `Compare`, `Retention`, `Tune`.

The public face of `ctxlab._view.widgets`: import from here.
"""

from ctxlab._view.widgets import *  # noqa: F403
from ctxlab._view.widgets import __all__ as __all__
