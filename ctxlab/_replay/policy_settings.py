"""What a policy's window, trigger and keep resolve to on one trace, and where each came from.

`ctxlab replay` prints this above each trace's table, so a reader knows which numbers the
replay used: a value given on the command line, the model profile (`ctxlab._cost.profiles`, the data
in `ctxlab/data/model_profiles.json`), the policy's own default, or a built-in fallback when
the model has no profile. A window that resolves to nothing is a warning: fractions of it
cannot be computed, and Deep Agents falls back to fixed token and message counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxlab._cost.profiles import profile
from ctxlab._messages import AUTO
from ctxlab._replay.specs import format_size

if TYPE_CHECKING:
    from ctxlab._trace import Trace


@dataclass(frozen=True)
class Setting:
    """One resolved parameter: its value as text and where it came from."""

    name: str
    value: str
    source: str

    def __str__(self) -> str:
        return f"{self.name} {self.value} ({self.source})"


def _model(policy: Any, trace: Trace) -> tuple[str | None, int | None]:
    """The model the policy sizes itself by, and that model's profile window (or None)."""
    model = getattr(policy, "model", None) or trace.model
    provider = getattr(policy, "provider", None) or trace.provider
    return model, profile(model, provider).max_input_tokens


def _window(policy: Any, trace: Trace, given: Mapping[str, str]) -> Setting:
    model, known = _model(policy, trace)
    raw = getattr(policy, "window", AUTO)
    resolve = getattr(policy, "resolve", None)
    try:
        if resolve is not None:
            window = resolve(trace).window
        elif hasattr(policy, "window_for"):
            window = policy.window_for(trace)
        else:
            window = None
    except (TypeError, ValueError):  # the replay itself reports why the policy cannot run
        window = None if raw == AUTO else raw
    if window is None and "window" in given:
        return Setting("window", "none", f"from {given['window']}: no profile")
    if window is None:
        return Setting("window", "unknown", f"no model profile for {model!r}")
    text = f"{int(window):,}"
    if "window" in given:
        return Setting("window", text, f"from {given['window']}")
    if raw == AUTO and known is not None and int(window) == known:
        return Setting("window", text, f"model profile of {model}")
    if raw == AUTO:
        return Setting("window", text, f"built-in fallback: no model profile for {model!r}")
    return Setting("window", text, "the policy's default")


def _sizes(policy: Any, trace: Trace, given: Mapping[str, str], window: Setting) -> list[Setting]:
    """`trigger` and `keep`, where the policy has them."""
    out = []
    resolved: dict[str, Any] = {}
    resolve = getattr(policy, "resolve", None)
    if resolve is not None:
        try:
            settings = resolve(trace)
            resolved = {"trigger": settings.clauses, "keep": settings.keep}
        except (TypeError, ValueError):
            resolved = {}
    for name in ("trigger", "keep"):
        if not hasattr(policy, name):
            continue
        raw = getattr(policy, name)
        value = resolved.get(name, raw)
        if isinstance(value, list) and len(value) == 1:
            value = value[0]
        text = format_size(value)
        if name in given:
            source = f"from {given[name]}"
        elif raw == AUTO and getattr(policy, "stress", None) is not None:
            source = f"from stress {policy.stress}"
        elif raw == AUTO:
            source = (
                "default with a known window"
                if window.value not in ("none", "unknown")
                else "built-in fallback without a window"
            )
        else:
            source = "the policy's default"
        fraction = "fraction" in text
        if name == "trigger" and fraction and (levels := _levels(policy, trace)).get("trigger"):
            text += f" = {levels['trigger']:,} tokens"
        out.append(Setting(name, text, source))
    return out


def _levels(policy: Any, trace: Trace) -> dict[str, int]:
    method = getattr(policy, "thresholds", None)
    return dict(method(trace)) if method is not None else {}


def resolved(policy: Any, trace: Trace, given: Mapping[str, str]) -> list[Setting]:
    """Window, trigger and keep of `policy` on `trace` (those it has); `given` maps each
    parameter set on the command line to the flag that set it (`{"window": "--window"}`)."""
    window = _window(policy, trace, given)
    return [window, *_sizes(policy, trace, given, window)]


def window_warning(policy: Any, trace: Trace, settings: list[Setting]) -> str | None:
    """A warning when the window is unknown (not when it was given as none on purpose)."""
    window = settings[0]
    if window.value != "unknown":
        return None
    fallback = (
        "Deep Agents falls back to trigger tokens:170000 and keep messages:6"
        if getattr(policy, "name", "") == "deepagents"
        else "policies that size themselves by the window use their fallback or refuse"
    )
    return f"{trace.trace_id}: the window is unknown ({window.source}); {fallback}; give --window N"


__all__ = ["Setting", "resolved", "window_warning"]
