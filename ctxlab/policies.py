"""Compaction policies: every built-in policy, the catalogue (`get`, `names`, `describe`,
`register`), pipelines, and the stage API a policy of your own is written against
(docs/writing-a-policy.md).

The public face of `ctxlab._replay.policies`: import from here.
"""

from ctxlab._replay.policies import *  # noqa: F403
from ctxlab._replay.policies import __all__ as __all__
