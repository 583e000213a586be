"""Compaction policies: every built-in policy, the catalogue (`get`, `names`, `describe`,
`register`), pipelines, and the stage API a policy of your own is written against
(`StagePolicy`, `Stage`, `Context`, `Item`, ...; docs/writing-a-policy.md).

The public face of `ctxlab._replay.policies` and its stage engine: import from here.
"""

from ctxlab._replay.policies import *  # noqa: F403
from ctxlab._replay.policies import __all__ as _POLICIES
from ctxlab._replay.policies.engine import (
    AUTO,
    JUMPS,
    KEEPS_MARKS,
    Context,
    Item,
    RebuildStage,
    Stage,
    StageCall,
    StageRun,
    acts_over,
    appended,
    declares,
    message_text,
    replaced,
    safe_cutoff_backward,
    safe_start,
    summary_item,
)

__all__ = [
    *_POLICIES,
    "AUTO",
    "JUMPS",
    "KEEPS_MARKS",
    "Context",
    "Item",
    "RebuildStage",
    "Stage",
    "StageCall",
    "StageRun",
    "acts_over",
    "appended",
    "declares",
    "message_text",
    "replaced",
    "safe_cutoff_backward",
    "safe_start",
    "summary_item",
]
