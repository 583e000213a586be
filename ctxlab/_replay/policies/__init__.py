"""Compaction policies. Each is a frozen dataclass of parameters; `ctxlab.replay` applies it.

`get(name, **params)` builds any policy by name (`a+b` is a `Pipeline`), `describe()` lists
them, `register(cls_or_factory, name)` adds your own (see `ctxlab._replay.policies.engine` and
docs/writing-a-policy.md), and installed packages add theirs through the `ctxlab.policies`
entry-point group. `PRESETS` are the built-in presets (upstream defaults, cited in each class's
`source`).
"""

from ctxlab._messages import KINDS
from ctxlab._replay.policies.base import EVENT_KINDS, Call, Event, Files, Policy, PolicyRun
from ctxlab._replay.policies.catalog import PRESETS, Pipeline, describe, get, names, register
from ctxlab._replay.policies.claude_code import ClaudeCode
from ctxlab._replay.policies.codex import Codex
from ctxlab._replay.policies.deepagents import DeepAgents
from ctxlab._replay.policies.engine import StagePolicy
from ctxlab._replay.policies.inspect import InspectEdit, InspectSummary, InspectTrim
from ctxlab._replay.policies.jetbrains import JetBrainsHybrid, JetBrainsLLMSummary
from ctxlab._replay.policies.langchain import ClearToolUses, LangChainSummarization, SlidingWindow
from ctxlab._replay.policies.masking import (
    ObservationMasking,
    OpenHandsObservationMasking,
    SWEAgentMasking,
)
from ctxlab._replay.policies.offload import ToolResultOffload
from ctxlab._replay.policies.openhands import (
    OpenHandsAmortized,
    OpenHandsConversationWindow,
    OpenHandsLLMSummarizing,
    OpenHandsRecent,
)
from ctxlab._replay.policies.raw import Raw

__all__ = [
    "EVENT_KINDS",
    "KINDS",
    "PRESETS",
    "Call",
    "ClaudeCode",
    "ClearToolUses",
    "Codex",
    "DeepAgents",
    "Event",
    "Files",
    "InspectEdit",
    "InspectSummary",
    "InspectTrim",
    "JetBrainsHybrid",
    "JetBrainsLLMSummary",
    "LangChainSummarization",
    "ObservationMasking",
    "OpenHandsAmortized",
    "OpenHandsConversationWindow",
    "OpenHandsLLMSummarizing",
    "OpenHandsObservationMasking",
    "OpenHandsRecent",
    "Pipeline",
    "Policy",
    "PolicyRun",
    "Raw",
    "SWEAgentMasking",
    "SlidingWindow",
    "StagePolicy",
    "ToolResultOffload",
    "describe",
    "get",
    "names",
    "register",
]
