"""Summarisers: what writes the summary text when a policy compacts history (`Extractive`,
`LLM`, ...).

The public face of `ctxlab._replay.summarizers`: import from here.
"""

from ctxlab._replay.summarizers import *  # noqa: F403
from ctxlab._replay.summarizers import __all__ as __all__
