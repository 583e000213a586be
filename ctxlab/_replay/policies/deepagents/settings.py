"""`DeepAgents`, the policy's parameters, and `Settings`, what they resolve to on one trace:
the thresholds `create_summarization_middleware` and `FilesystemMiddleware` compute
(docs/deepagents.md §1), which upstream version they model, and a warning when another is
installed.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from langchain_core.messages import SystemMessage

from ctxlab._cost import tokens as tk
from ctxlab._cost.profiles import profile as lookup_profile
from ctxlab._errors import UnsupportedSettingError
from ctxlab._messages import AUTO, chars_per_token
from ctxlab._replay.policies.deepagents.filesystem import NUM_CHARS_PER_TOKEN
from ctxlab._replay.policies.deepagents.run import DeepAgentsRun
from ctxlab._replay.policies.deepagents.texts import DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
from ctxlab._replay.policies.langchain_rules import normalize_trigger, validate_size
from ctxlab._replay.policies.param_ranges import check_shared

if TYPE_CHECKING:
    from ctxlab._replay.policies.counts_only import CallCounts
    from ctxlab._trace import Trace
    from ctxlab.summarizers import Summarizer

MODELS_VERSION = "0.7.32"


class UpstreamVersionWarning(UserWarning):
    """The installed upstream package is not the version a policy models."""


@cache
def warn_if_other_version() -> None:
    """Warn (once per process) when the installed `deepagents` is not `MODELS_VERSION`.

    Reads the installed distribution's metadata only: `deepagents` is never imported, and
    nothing is said when it is not installed (ctxlab does not need it)."""
    try:
        installed = version("deepagents")
    except PackageNotFoundError:
        return
    if installed != MODELS_VERSION:
        warnings.warn(
            f"ctxlab's DeepAgents policy models deepagents {MODELS_VERSION}; deepagents "
            f"{installed} is installed, whose compaction may decide differently",
            UpstreamVersionWarning,
            stacklevel=3,
        )


@dataclass(frozen=True)
class DeepAgents:
    """Deep Agents' compaction with its own parameter names; `"auto"` = what deepagents picks.

    * `window`: the model's `max_input_tokens`. `"auto"` looks the trace's model up in the
      LangChain profile data (exact name); `None` means "no profile" (fixed 170k/6-message
      defaults, no budget check, fractions rejected).
    * `trigger`, `keep`, `truncate_args_settings`: as `SummarizationMiddleware` takes them, e.g.
      `trigger=("fraction", 0.85)`, `[{"tokens": 4000, "messages": 10}, ("fraction", 0.9)]`.
      Each `"auto"` is what `create_summarization_middleware` picks, independently of the
      others; a hand-built `SummarizationMiddleware` has truncation off unless given, so mirror
      one with `truncate_args_settings=None`.
    * `max_output_tokens`: reserved by the input budget `int(0.95 * window) - max_output_tokens`.
      `"auto"`: the call's recorded `max_tokens` where the trace has it, else ChatAnthropic's
      default (the profile's output limit, else 4096) for Anthropic models, nothing for others.
    * `chars_per_token`: `"auto"` = 3.3 for Anthropic chat models, else 4.0.
    * `tools`: schemas in every request: `"trace"` (as recorded), `"deepagents"` (the default
      Deep Agents tool set), `"deepagents+trace"` (that set plus the recorded tools it lacks, as
      a deep agent given the trace's tools would send), a list of schemas, or a token count.
    * `system_prompt`: `"trace"` = the trace's system message, or `""` (deepagents sends an empty
      one when none is configured).
    * `stress`: one-argument stress mode: trigger (and truncation trigger) at this fraction of
      the window, keep a tenth of it; the Deep Agents team runs 10-25% to multiply events.
    * `use_usage_metadata`: let recorded `usage_metadata` scale counts and trigger, as LangChain
      does. Off by default: recorded usage describes the recorded context, not the replayed one
      (docs/deepagents.md §2.3); on, every call re-reads the whole context (O(n) per call).
    """

    name: ClassVar[str] = "deepagents"
    models_version: ClassVar[str] = MODELS_VERSION
    """The `deepagents` release whose compaction this policy reproduces decision for decision."""

    window: int | None | Literal["auto"] = AUTO
    trigger: Any = AUTO
    keep: Any = AUTO
    truncate_args_settings: Any = AUTO
    max_output_tokens: int | None | Literal["auto"] = AUTO
    chars_per_token: float | Literal["auto"] = AUTO
    tools: Any = "trace"
    system_prompt: str | None = "trace"
    tool_token_limit_before_evict: int | None = 20000
    human_message_token_limit_before_evict: int | None = 50000
    trim_tokens_to_summarize: int | None = None
    summary_prompt: str = DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
    stress: float | None = None
    use_usage_metadata: bool = False
    model: str | None = None
    provider: str | None = None

    def __post_init__(self) -> None:
        """Refuse out-of-range values here, not as a wrong replay or a raw error later."""
        check_shared(self)
        _tools_form(self.tools)
        if self.stress is not None and not (
            isinstance(self.stress, int | float) and 0 < self.stress <= 1
        ):
            raise ValueError(
                f"stress must be a fraction above 0 and at most 1; got {self.stress!r}"
            )

    def params(self) -> dict[str, Any]:
        """Parameters as given, for the store (the summary prompt only if changed)."""
        out = {k: v for k, v in asdict(self).items() if k != "summary_prompt"}
        if self.summary_prompt != DEEPAGENTS_DEFAULT_SUMMARY_PROMPT:
            out["summary_prompt"] = self.summary_prompt
        return out

    def resolve(self, trace: Trace) -> Settings:
        """Concrete thresholds for `trace`, computed the way deepagents computes its defaults."""
        warn_if_other_version()
        prof = lookup_profile(self.model or trace.model, self.provider or trace.provider)
        window = prof.max_input_tokens if self.window == AUTO else self.window
        cpt = chars_per_token(
            self.model or trace.model, self.provider or trace.provider, self.chars_per_token
        )
        max_out = (
            prof.reserved_output_tokens
            if self.max_output_tokens == AUTO
            else self.max_output_tokens
        )
        has_profile = window is not None
        trigger, keep, truncate = self.trigger, self.keep, self.truncate_args_settings
        if self.stress is not None:
            if not has_profile:
                raise UnsupportedSettingError(
                    "stress mode needs a window (a model profile or window=N)"
                )
            trigger = ("fraction", self.stress) if trigger == AUTO else trigger
            keep = ("fraction", round(self.stress / 10, 6)) if keep == AUTO else keep
            if truncate == AUTO:
                truncate = {"trigger": ("fraction", self.stress), "keep": keep}
        if trigger == AUTO:
            trigger = ("fraction", 0.85) if has_profile else ("tokens", 170000)
        if keep == AUTO:
            keep = ("fraction", 0.10) if has_profile else ("messages", 6)
        if truncate == AUTO:
            truncate = (
                {"trigger": ("fraction", 0.85), "keep": ("fraction", 0.10)}
                if has_profile
                else {"trigger": ("messages", 20), "keep": ("messages", 20)}
            )
        clauses = normalize_trigger(trigger)
        keep = tuple(keep)
        validate_size(keep[0], keep[1], "keep")
        if (any("fraction" in c for c in clauses) or keep[0] == "fraction") and not has_profile:
            raise UnsupportedSettingError(
                "Model profile information is required to use fractional limits (pass "
                "window=N or a model with a known profile)"
            )
        truncate = dict(truncate) if truncate is not None else None
        budget = None
        if window is not None:
            budget = max(0, int(window * 0.95) - (max_out or 0))
        recorded_max_out = self.max_output_tokens == AUTO
        return Settings(
            window=window,
            clauses=clauses,
            keep=keep,
            truncate_trigger=tuple(truncate["trigger"])
            if truncate and truncate.get("trigger")
            else None,
            truncate_keep=tuple(truncate.get("keep", ("messages", 20)))
            if truncate
            else ("messages", 20),
            max_arg_length=truncate.get("max_length", 2000) if truncate else 2000,
            truncation_text=truncate.get("truncation_text", "...(argument truncated)")
            if truncate
            else "...(argument truncated)",
            budget=budget,
            recorded_max_output=recorded_max_out,
            max_output_tokens=max_out,
            chars_per_token=cpt,
            tools_tokens=_tools_tokens(self.tools, trace, cpt),
            system=_system_message(self.system_prompt, trace),
            tool_evict_chars=NUM_CHARS_PER_TOKEN * self.tool_token_limit_before_evict
            if self.tool_token_limit_before_evict
            else None,
            human_evict_chars=NUM_CHARS_PER_TOKEN * self.human_message_token_limit_before_evict
            if self.human_message_token_limit_before_evict
            else None,
            trim_tokens_to_summarize=self.trim_tokens_to_summarize,
            summary_prompt=self.summary_prompt,
            use_usage_metadata=self.use_usage_metadata,
            provider=prof.provider,
        )

    def thresholds(self, trace: Trace) -> dict[str, int]:
        """The token lines a plot of this policy draws on `trace`: `window`, `trigger` (the
        lowest token threshold of the OR-ed trigger clauses) and `budget` (the input budget),
        each only when there is one; `{}` when the policy cannot resolve on `trace`."""
        try:
            s = self.resolve(trace)
        except (TypeError, ValueError):
            return {}
        out: dict[str, int] = {}
        if s.window:
            out["window"] = int(s.window)
        levels = []
        for clause in s.clauses:
            if "tokens" in clause:
                levels.append(int(clause["tokens"]))
            elif "fraction" in clause and s.window:
                levels.append(max(1, int(s.window * clause["fraction"])))
        if levels:
            out["trigger"] = min(levels)
        if s.budget:
            out["budget"] = int(s.budget)
        return out

    def start(self, trace: Trace, summarizer: Summarizer) -> DeepAgentsRun:
        """A fresh run over `trace`."""
        return DeepAgentsRun(self.resolve(trace), trace, summarizer)

    def counts_only(self, trace: Trace, summarizer: Summarizer) -> CallCounts | None:
        """The per-call counts and events a replay of `trace` gives, without its requests,
        running the real step only at the calls where something may happen
        (`ctxlab._replay.policies.deepagents.counts`): what a slider draws before the full replay.
        None with usage scaling (every call re-reads its request) and for a subclass that
        changes `start` (its run is not this one)."""
        if type(self).start is not DeepAgents.start:
            return None
        settings = self.resolve(trace)
        if settings.use_usage_metadata:
            return None
        from ctxlab._replay.policies.deepagents.counts import deepagents_counts

        return deepagents_counts(settings, trace, summarizer)


def _system_message(system_prompt: str | None, trace: Trace) -> SystemMessage:
    if system_prompt == "trace":
        if trace.messages and isinstance(trace.messages[0], SystemMessage):
            return trace.messages[0]
        return SystemMessage("")
    return SystemMessage(system_prompt or "")


TOOLS_NAMES = ("trace", "deepagents", "deepagents+trace")


def _tools_form(tools: Any) -> None:
    """`tools` is one of `TOOLS_NAMES`, a token count (0 or more) or a list of schemas."""
    if isinstance(tools, str):
        ok = tools in TOOLS_NAMES
    elif isinstance(tools, bool):
        ok = False
    elif isinstance(tools, int):
        ok = tools >= 0
    else:
        ok = isinstance(tools, list | tuple) and not any(isinstance(t, str) for t in tools)
    if not ok:
        raise ValueError(
            f"tools must be {', '.join(repr(n) for n in TOOLS_NAMES)}, a list of tool schemas "
            f"or a token count (0 or more); got {tools!r}"
        )


def tool_schemas(tools: Any, recorded: list[Any]) -> tuple[list[Any], int]:
    """What a valid `tools` setting sends: the schemas (`recorded` are the trace's), and the
    tokens of schemas given only as a count (`tools=N`). Counted here with the policy's
    counter, and by `ctxlab._cost.billing` with the provider's."""
    if isinstance(tools, int):
        return [], tools
    if tools == "trace":
        return visible_tools(recorded), 0
    if tools in {"deepagents", "deepagents+trace"}:
        from ctxlab._replay.policies.deepagents_tools import default_tools

        own = list(default_tools())
        if tools == "deepagents+trace":
            names = {t["name"] for t in own}
            own += [t for t in visible_tools(recorded) if _schema_name(t) not in names]
        return own, 0
    return visible_tools(list(tools)), 0


def _tools_tokens(tools: Any, trace: Trace, cpt: float) -> int:
    schemas, count = tool_schemas(tools, trace.tools)
    return count + tk.tool_schema_tokens(schemas, cpt)


def _schema_name(tool: dict[str, Any]) -> str | None:
    """Name of a recorded schema in OpenAI (`function.name`) or Anthropic/plain shape."""
    return (tool.get("function") or {}).get("name") or tool.get("name")


def visible_tools(tools: list[Any]) -> list[Any]:
    """Recorded schemas as deepagents' default StateBackend would send them.

    `FilesystemMiddleware` drops a top-level tool named `execute` (the backend cannot run
    commands); nested OpenAI-shaped schemas have no top-level name and pass untouched.
    """
    return [t for t in tools if not (isinstance(t, dict) and t.get("name") == "execute")]


@dataclass(frozen=True)
class Settings:
    """A `DeepAgents` policy resolved against one trace: only numbers and texts."""

    window: int | None
    clauses: list[dict[str, float]]
    keep: tuple[str, float]
    truncate_trigger: tuple[str, float] | None
    truncate_keep: tuple[str, float]
    max_arg_length: int
    truncation_text: str
    budget: int | None
    recorded_max_output: bool
    max_output_tokens: int | None
    chars_per_token: float
    tools_tokens: int
    system: SystemMessage
    tool_evict_chars: int | None
    human_evict_chars: int | None
    trim_tokens_to_summarize: int | None
    summary_prompt: str
    use_usage_metadata: bool
    provider: str | None


__all__ = [
    "AUTO",
    "MODELS_VERSION",
    "DeepAgents",
    "Settings",
    "UpstreamVersionWarning",
    "visible_tools",
]
