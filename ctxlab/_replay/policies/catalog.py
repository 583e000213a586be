"""The policy catalogue: the one registry of policy names, and pipelines that compose them.

`PRESETS[name]` is a built-in factory (the policy class; its field defaults are the upstream
defaults, its `source` says where they come from). `register(cls_or_factory, name)` adds a
policy of your own, and installed packages add theirs through the `ctxlab.policies` entry-point
group (read on first use, e.g. `my-policy = my_package.policies:MyPolicy`). Every place that
takes a policy name (`get`, `ctxlab replay/compare/sweep --policy`, `ctxlab.sweep`, the
explorer, `ctxlab policies`) reads this registry, so they all accept the same names, `a+b`
pipelines included. `get(name, **params)` builds one with parameters overridden by name;
`describe()` lists them for `ctxlab policies`.

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
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import TYPE_CHECKING, Any, ClassVar

from ctxlab._replay.policies.claude_code import ClaudeCode
from ctxlab._replay.policies.codex import Codex
from ctxlab._replay.policies.deepagents import DeepAgents
from ctxlab._replay.policies.engine import Stage, StagePolicy
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

if TYPE_CHECKING:
    from ctxlab._replay.policies.base import Policy
    from ctxlab._trace import Trace

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
    """A policy class as a factory: `Preset(cls)(**params)` is `cls(**params)`.

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


ENTRY_POINT_GROUP = "ctxlab.policies"
"""Installed packages declare policies here: `name = module:ClassOrFactory`."""

_REGISTERED: dict[str, Callable[..., Any]] = {}
"""Policies added by `register` and entry points, by name, in the order they came."""
_entry_points_read = False


def register(cls_or_factory: Callable[..., Any], name: str) -> None:
    """Make `name` a policy everywhere a policy name is taken.

    `cls_or_factory` is a policy class (a `StagePolicy` subclass, or any class implementing
    `ctxlab._replay.policies.base.Policy`) or a function returning a policy; called with keyword
    parameters it must build one, and called with none the default one (which `ctxlab
    policies` lists). Registering a name again replaces it (re-running a notebook cell);
    built-in presets cannot be replaced.
    """
    if not isinstance(name, str) or not name or "+" in name or any(c.isspace() for c in name):
        raise ValueError(f"policy name must be non-empty text without '+' or spaces, got {name!r}")
    if name in PRESETS:
        raise ValueError(f"{name!r} is a built-in preset; register under another name")
    if not callable(cls_or_factory):
        raise TypeError(f"register needs a policy class or factory, got {cls_or_factory!r}")
    factory = Preset(cls_or_factory) if isinstance(cls_or_factory, type) else cls_or_factory
    _REGISTERED[name] = factory


def _read_entry_points() -> None:
    """Register every installed `ctxlab.policies` entry point, once; a broken one is skipped
    with a warning naming it and its package."""
    global _entry_points_read
    if _entry_points_read:
        return
    _entry_points_read = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {ep.name!r} ({ep.value}"
        where += f", package {ep.dist.name})" if ep.dist is not None else ")"
        if ep.name in PRESETS or ep.name in _REGISTERED:
            warnings.warn(
                f"ctxlab: policy {where} ignored: the name is taken", RuntimeWarning, stacklevel=3
            )
            continue
        try:
            register(ep.load(), ep.name)
        except Exception as exc:  # a third-party import may raise anything
            warnings.warn(
                f"ctxlab: policy {where} failed to load and is skipped: "
                f"{type(exc).__name__}: {exc}",
                RuntimeWarning,
                stacklevel=3,
            )


def factories() -> dict[str, Callable[..., Any]]:
    """Every policy name and its factory: the built-in presets, then registered policies."""
    _read_entry_points()
    return {**PRESETS, **_REGISTERED}


def names() -> list[str]:
    """Every policy name `get` accepts on its own (and joins with `+`)."""
    return list(factories())


def get(name: str, **params: Any) -> Policy:
    """The policy `name` with `params` overriding its defaults (by parameter name).

    `a+b+c` builds a `Pipeline` of those policies; each parameter goes to every member with a
    parameter of that name (`window=50000` to all that have a window), and one that no member
    has is an error. An unknown name raises `ValueError` listing the known ones.
    """
    return _made(name, params)


def get_spelled(name: str, texts: Mapping[str, str]) -> Policy:
    """`get` with parameters spelled as on the command line (`keep=3`, `trigger=fraction:0.5`),
    each read against the default it replaces (`ctxlab._replay.specs.parse_value`): in a pipeline,
    separately for every member that has it (`keep=3` is a count for ClearToolUses and the
    size `("tokens", 3)` for LangChainSummarization)."""
    from ctxlab._replay.specs import parse_value

    return _made(
        name,
        dict(texts),
        lambda default, key, text: parse_value(key, text, getattr(default, key, None)),
    )


def _made(
    name: str, params: dict[str, Any], read: Callable[[Any, str, Any], Any] | None = None
) -> Any:
    """The policy `name` with `params`, each value passed through `read(default policy, name,
    value)` (when given) for the policy or pipeline member it goes to."""
    known = factories()
    if "+" not in name:
        if read is not None and params:
            default = _build(known, name)
            params = {k: read(default, k, v) for k, v in params.items()}
        return _build(known, name, **params)
    parts = [part.strip() for part in name.split("+")]
    defaults = [_build(known, part) for part in parts]
    fields = [
        {f.name for f in dataclasses.fields(m)} if dataclasses.is_dataclass(m) else set()
        for m in defaults
    ]
    unused = set(params).difference(*fields)
    if unused:
        raise ValueError(f"no member of {name!r} has parameter(s) {', '.join(sorted(unused))}")
    members = []
    for part, default, own in zip(parts, defaults, fields, strict=True):
        mine = {k: v for k, v in params.items() if k in own}
        if read is not None:
            mine = {k: read(default, k, v) for k, v in mine.items()}
        members.append(_build(known, part, **mine) if mine else default)
    return Pipeline(tuple(members))


def _build(known: dict[str, Callable[..., Any]], name: str, **params: Any) -> Any:
    try:
        factory = known[name]
    except KeyError:
        raise ValueError(
            f"unknown policy {name!r}; known: {', '.join(known)} (join names with '+' "
            "for a pipeline)"
        ) from None
    return factory(**params)


def source_of(policy: Any) -> str:
    """Where a policy's defaults come from."""
    if isinstance(policy, DeepAgents) or policy is DeepAgents:
        return DEEPAGENTS_SOURCE
    return str(getattr(policy, "source", ""))


def defaults(left_out: str = "left out") -> dict[str, Any]:
    """Every registered policy at its defaults, by name. A registered factory that cannot
    build its defaults is skipped with a warning saying it is `left_out` (where the caller
    would have shown it), so one broken third-party policy never hides the others."""
    found: dict[str, Any] = {}
    for name, factory in factories().items():
        try:
            found[name] = factory()
        except Exception as exc:  # a third-party factory may raise anything
            warnings.warn(
                f"ctxlab: policy {name!r} cannot build its defaults and is {left_out}: "
                f"{type(exc).__name__}: {exc}",
                RuntimeWarning,
                stacklevel=3,
            )
    return found


def describe() -> list[dict[str, Any]]:
    """`[{"name", "params", "source"}]` for every policy name, params at their defaults
    (a factory that cannot build them is left out with a warning, `defaults`)."""
    out = []
    for name, policy in defaults("not listed").items():
        params = policy.params()
        if dataclasses.is_dataclass(policy):
            for f in dataclasses.fields(policy):
                if f.name == "summary_prompt":
                    params.pop(f.name, None)
        out.append({"name": name, "params": params, "source": source_of(policy)})
    return out


__all__ = [
    "ENTRY_POINT_GROUP",
    "PRESETS",
    "Pipeline",
    "Preset",
    "describe",
    "factories",
    "get",
    "get_spelled",
    "names",
    "register",
    "source_of",
]
