"""Compaction policies. Each is a frozen dataclass of parameters; `ctxlab.replay` applies it.

`catalog.PRESETS` names every preset (upstream defaults, cited in each class's `source`);
`catalog.get(name, **params)` builds one; `Pipeline` composes them.
"""

from ctxlab.policies.base import EVENT_KINDS, KINDS, Call, Event, Files, Policy, Run
from ctxlab.policies.catalog import PRESETS, Pipeline, describe, get
from ctxlab.policies.claude_code import ClaudeCode
from ctxlab.policies.codex import Codex
from ctxlab.policies.deepagents import DeepAgents
from ctxlab.policies.inspect import InspectEdit, InspectSummary, InspectTrim
from ctxlab.policies.jetbrains import JetBrainsHybrid, JetBrainsLLMSummary
from ctxlab.policies.langchain import ClearToolUses, LangChainSummarization, SlidingWindow
from ctxlab.policies.masking import ObservationMasking, OpenHandsObservationMasking, SWEAgentMasking
from ctxlab.policies.offload import ToolResultOffload
from ctxlab.policies.openhands import (
    OpenHandsAmortized,
    OpenHandsConversationWindow,
    OpenHandsLLMSummarizing,
    OpenHandsRecent,
)
from ctxlab.policies.raw import Raw

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
    "Raw",
    "Run",
    "SWEAgentMasking",
    "SlidingWindow",
    "ToolResultOffload",
    "describe",
    "get",
]
