"""Compaction policies. Each is a frozen dataclass of parameters; `ctxlab.replay` applies it."""

from ctxlab.policies.base import EVENT_KINDS, KINDS, Call, Event, Files, Policy, Run
from ctxlab.policies.deepagents import DeepAgents

__all__ = ["EVENT_KINDS", "KINDS", "Call", "DeepAgents", "Event", "Files", "Policy", "Run"]
