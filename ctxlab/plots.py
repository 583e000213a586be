"""Figures of replays, sweeps and retention, styled for papers, and `export` to PNG, SVG, PDF or
HTML.

The public face of `ctxlab._view.plots`: import from here.
"""

from ctxlab._view.plots import *  # noqa: F403
from ctxlab._view.plots import __all__ as __all__
