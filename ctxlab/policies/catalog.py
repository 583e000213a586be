"""The policy catalogue: every preset by name, and pipelines that compose them.

`PRESETS[name]` is a factory (the policy class; its field defaults are the upstream defaults,
its `source` says where they come from). `get(name, **params)` builds one with parameters
overridden by their upstream names; `describe()` lists them for `ctxlab policies`.

Composition (`Pipeline`): stages run in order on every model call, each on the request the
previous one produced (offload -> truncate -> summarise, e.g. `Pipeline((ClearToolUses(),
LangChainSummarization(trigger=("tokens", 80000))))`). Open loop, each stage keeps its state in
full-history positions, so request-only stages (clearing, masking) are recomputed on every call
and persistent ones (summaries, condensations) apply to whatever later calls send. Every stage
keeps tool calls with their results; put summarising stages last. `deepagents` is a whole stack
of its own and cannot be a pipeline member.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ctxlab.policies._view import Stage, StagePolicy
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

if TYPE_CHECKING:
    from ctxlab.policies.base import Policy
    from ctxlab.trace import Trace

DEEPAGENTS_SOURCE = (
    "deepagents 0.7.32 create_deep_agent stack: FilesystemMiddleware + SummarizationMiddleware "
    "defaults via compute_summarization_defaults (docs/deepagents.md)"
)


@dataclass(frozen=True)
class Pipeline(StagePolicy):
    """Catalogue policies applied in order to every request (see the module docstring)."""

    name: ClassVar[str] = "pipeline"
    source: ClassVar[str] = "composition of the member policies' sources"

    policies: tuple[StagePolicy, ...] = ()

    def __post_init__(self) -> None:
        for p in self.policies:
            if not isinstance(p, StagePolicy):
                raise TypeError(
                    f"{getattr(p, 'name', p)!r} cannot be a pipeline member (only catalogue "
                    "stage policies compose; deepagents is a whole stack)"
                )

    def params(self) -> dict[str, Any]:
        """Members with their parameters."""
        return {"policies": [{"name": p.name, "params": p.params()} for p in self.policies]}

    def window_for(self, trace: Trace) -> int | None:
        """The first member's window that resolves."""
        return next((w for p in self.policies if (w := p.window_for(trace)) is not None), None)

    def counter_chars_per_token(self, trace: Trace) -> float:
        """The first member's counter."""
        if not self.policies:
            return super().counter_chars_per_token(trace)
        return self.policies[0].counter_chars_per_token(trace)

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """Every member's stages, in order, each resolved with its own window."""
        out: list[Stage] = []
        for p in self.policies:
            out.extend(p.stages(trace, p.window_for(trace) or window))
        return out


@dataclass(frozen=True)
class Preset:
    """A named factory: `Preset(cls)(**params)` is `cls(**params)`.

    A plain callable (not the class itself) so that "factory" and "policy instance" cannot be
    confused by duck typing (a class also has a `start` attribute); `cls` is the policy class.
    """

    cls: type

    def __call__(self, **params: Any) -> Any:
        return self.cls(**params)

    @property
    def source(self) -> str:
        """Where the defaults come from."""
        return source_of(self.cls)


PRESETS: dict[str, Callable[..., Any]] = {
    cls.name: Preset(cls)
    for cls in (
        Raw,
        DeepAgents,
        LangChainSummarization,
        ClearToolUses,
        SlidingWindow,
        ToolResultOffload,
        ObservationMasking,
        SWEAgentMasking,
        OpenHandsObservationMasking,
        OpenHandsLLMSummarizing,
        OpenHandsAmortized,
        OpenHandsRecent,
        OpenHandsConversationWindow,
        JetBrainsLLMSummary,
        JetBrainsHybrid,
        ClaudeCode,
        Codex,
        InspectEdit,
        InspectTrim,
        InspectSummary,
    )
}
"""Every preset by name (a `Preset` factory); the class defaults are the upstream defaults."""


def get(name: str, **params: Any) -> Policy:
    """The preset `name` with `params` overriding its defaults (upstream parameter names).

    `a+b+c` builds a `Pipeline` of presets with their defaults.
    """
    if "+" in name:
        if params:
            raise ValueError("parameters of a '+' pipeline go to its members: build a Pipeline")
        return Pipeline(tuple(get(part) for part in name.split("+")))  # type: ignore[arg-type]
    try:
        factory = PRESETS[name]
    except KeyError:
        raise ValueError(f"unknown policy {name!r}; known: {', '.join(sorted(PRESETS))}") from None
    return factory(**params)


def source_of(policy: Any) -> str:
    """Where a policy's defaults come from."""
    if isinstance(policy, DeepAgents) or policy is DeepAgents:
        return DEEPAGENTS_SOURCE
    return str(getattr(policy, "source", ""))


def describe() -> list[dict[str, Any]]:
    """`[{"name", "params", "source"}]` for every preset, params at their defaults."""
    out = []
    for name, factory in PRESETS.items():
        policy = factory()
        params = policy.params()
        if dataclasses.is_dataclass(policy):
            for f in dataclasses.fields(policy):
                if f.name == "summary_prompt":
                    params.pop(f.name, None)
        out.append({"name": name, "params": params, "source": source_of(policy)})
    return out


__all__ = ["PRESETS", "Pipeline", "Preset", "describe", "get", "source_of"]
