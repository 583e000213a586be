"""Type and range checks for policy parameters, run when a policy is built.

A window of 0 or below, a negative output reserve, `chars_per_token=0` (a division by zero in
every count) or `-1` (negative token counts), a negative `keep`, a fraction above 1, a string
where a list of names is expected: none is an error any later step notices; the replay runs
and shows nonsense. So every policy refuses such a value on construction
(`ctxlab.policies.get("deepagents", window=0)`, a `--set` or `--grid` value, a widget slider
all meet the same `ValueError`, naming the field and what it takes).

Two layers: each field's value must be of its annotated type (`int`, `float`, `bool`, `str`,
`None`, `Literal[...]`, `tuple[str, ...]`, unions of them; `Any` is the policy's own to check),
and fields whose name says what they count are held to their range (`RANGES`).
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from collections.abc import Callable
from functools import cache
from numbers import Real
from typing import Any, Literal, Union

from ctxlab._messages import AUTO


def _whole(value: Any) -> bool:
    return (
        isinstance(value, Real)
        and not isinstance(value, bool)
        and math.isfinite(value)
        and float(value).is_integer()
    )


def check_window(value: Any) -> None:
    """`window`: `"auto"` (the model profile), None (no profile) or a positive token count."""
    if value == AUTO or value is None or (_whole(value) and value >= 1):
        return
    raise ValueError(
        f"window must be a positive whole number of tokens, 'auto' (the model profile) or "
        f"None (no profile); got {value!r}"
    )


def check_max_output_tokens(value: Any) -> None:
    """`max_output_tokens`: `"auto"`, None or a token count of 0 or more."""
    if value == AUTO or value is None or (_whole(value) and value >= 0):
        return
    raise ValueError(
        f"max_output_tokens must be a whole number of tokens (0 or more), 'auto' or None; "
        f"got {value!r}"
    )


def _number(value: Any) -> bool:
    return isinstance(value, Real) and not isinstance(value, bool) and math.isfinite(value)


def _at_least(low: int, what: str) -> Callable[[Any], str | None]:
    """A whole-number check (`None`, `"auto"` and `"all"` pass: their fields' own forms)."""

    def check(value: Any) -> str | None:
        if value is None or value in (AUTO, "all") or not _number(value):
            return None
        if _whole(value) and value >= low:
            return None
        return f"a whole number of {what}, {low} or more"

    return check


def _fraction(value: Any) -> str | None:
    if not _number(value) or 0 < value <= 1:
        return None
    return "a fraction above 0 and at most 1"


def _positive(value: Any) -> str | None:
    if not _number(value) or value > 0:
        return None
    return "a number above 0"


RANGES: dict[str, Callable[[Any], str | None]] = {
    "chars_per_token": _positive,
    "threshold": _positive,
    "keep": _at_least(0, "items"),
    "keep_first": _at_least(0, "messages"),
    "keep_last_m_turns": _at_least(0, "turns"),
    "keep_tool_uses": _at_least(0, "tool uses"),
    "keep_thinking_turns": _at_least(0, "turns"),
    "clear_at_least": _at_least(0, "tokens"),
    "autocompact_buffer": _at_least(0, "tokens"),
    "trim_tokens_to_summarize": _at_least(0, "tokens"),
    "tool_token_limit_before_evict": _at_least(0, "tokens"),
    "human_message_token_limit_before_evict": _at_least(0, "tokens"),
    "user_message_max_tokens": _at_least(0, "tokens"),
    "auto_compact_token_limit": _at_least(1, "tokens"),
    "max_tokens": _at_least(1, "tokens"),
    "trigger": _at_least(1, "tokens"),
    "n": _at_least(1, "turns"),
    "observations_n": _at_least(1, "turns"),
    "attention_window": _at_least(0, "events"),
    "max_events": _at_least(1, "events"),
    "max_size": _at_least(1, "events"),
    "polling": _at_least(1, "turns"),
    "auto_compact_fraction": _fraction,
    "preserve": _fraction,
    "stress": _fraction,
}
"""Ranges by field name, for the numeric forms of the fields (size tuples such as
`("fraction", 0.5)` and `"auto"` are checked by the policies that read them)."""

SHARED = {"window": check_window, "max_output_tokens": check_max_output_tokens}
"""The checks by field name, applied to every policy dataclass that has the field."""


def check_shared(policy: Any) -> None:
    """Check every field of `policy`: its value against its annotated type, then `SHARED`'s
    and `RANGES`' checks by name; a `ValueError` naming the field and what it takes."""
    hints = _hints(policy.__class__)
    for field in dataclasses.fields(policy):
        value = getattr(policy, field.name)
        check = SHARED.get(field.name)
        if check is not None:
            check(value)
            continue
        expected = _type_problem(value, hints.get(field.name, Any))
        if expected is None:
            rule = RANGES.get(field.name)
            expected = rule(value) if rule is not None else None
        if expected is not None:
            raise ValueError(f"{field.name} must be {expected}; got {value!r}")


@cache
def _hints(cls: type) -> dict[str, Any]:
    """A policy class's field annotations, resolved (`from __future__ import annotations`
    leaves them as text)."""
    try:
        return typing.get_type_hints(cls)
    except (NameError, TypeError):  # an annotation naming what its module imports lazily
        return {}


def _type_problem(value: Any, hint: Any) -> str | None:
    """None if `value` is of type `hint`, else what the hint takes, in words."""
    origin = typing.get_origin(hint)
    if hint is Any or isinstance(hint, typing.TypeVar):
        return None
    if origin in (Union, types.UnionType):
        problems = [_type_problem(value, arm) for arm in typing.get_args(hint)]
        if any(p is None for p in problems):
            return None
        return " or ".join(dict.fromkeys(p for p in problems if p))
    if origin is Literal:
        options = typing.get_args(hint)
        return None if value in options else " or ".join(repr(o) for o in options)
    if hint is type(None):
        return None if value is None else "None"
    if hint is bool:
        return None if isinstance(value, bool) else "true or false"
    if hint is int:
        return None if _whole(value) else "a whole number"
    if hint is float:
        return None if _number(value) else "a number"
    if hint is str:
        return None if isinstance(value, str) else "text"
    if origin is tuple:
        args = typing.get_args(hint)
        if len(args) == 2 and args[1] is Ellipsis and args[0] is str:
            ok = isinstance(value, list | tuple) and all(isinstance(v, str) for v in value)
            return None if ok else 'a list of names (e.g. ["bash", "grep"])'
    return None
