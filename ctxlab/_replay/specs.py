"""Text spellings of policy parameters, shared by the CLI, `--set` and sweeps.

A size SPEC is `fraction:0.85`, `tokens:170000`, `messages:6`, or a bare number (below 1 a
fraction, else tokens, as Inspect reads it); it becomes LangChain's tuple `("fraction", 0.85)`.
A trigger may combine clauses the way LangChain does: `,` separates OR-ed clauses and `&` joins
AND-ed metrics inside one, e.g. `tokens:4000&messages:10,fraction:0.9` is
`[{"tokens": 4000, "messages": 10}, ("fraction", 0.9)]`. `none` disables a trigger.

`--set name=value` takes any policy parameter by its Python name; values are read as a SPEC for
size-valued names (`trigger`, `keep`, unless the policy's value is a plain count, as in
`ClearToolUses(trigger=100000, keep=3)`), as JSON when they look like JSON, else as numbers,
booleans, `none`, or text. `--grid` values are spelled the same way.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

SIZE_KINDS = ("fraction", "tokens", "messages")
SIZE_PARAMS = frozenset({"trigger", "keep"})


SIZE_FORMS = (
    "fraction:F (0 < F <= 1), tokens:N or messages:N (whole N >= 1), or a bare number "
    "(below 1 a fraction, else tokens)"
)
"""The size SPEC spellings, for error messages."""

TRIGGER_FORMS = f"{SIZE_FORMS}; clauses joined by ',' (any) or '&' (all); or none"
"""The trigger SPEC spellings, for error messages."""


def parse_size(text: str) -> tuple[str, float | int]:
    """One size SPEC as LangChain's `(kind, value)` tuple; a bad one is a `ValueError`
    naming the text and the valid forms (`SIZE_FORMS`)."""
    text = text.strip()
    kind, sep, raw = text.partition(":")
    kind = kind.strip().lower() if sep else ""
    if sep and kind not in SIZE_KINDS:
        raise _bad_size(text, f"unknown size kind {kind!r}")
    try:
        value = float(raw if sep else text)
    except ValueError:
        raise _bad_size(text, "not a number") from None
    if not math.isfinite(value) or value <= 0:
        raise _bad_size(text, "not a positive finite number")
    if not kind:
        kind = "fraction" if value < 1 else "tokens"
    if kind == "fraction":
        if value > 1:
            raise _bad_size(text, "a fraction is at most 1")
        return kind, value
    if not value.is_integer():
        raise _bad_size(text, f"{kind} must be a whole number")
    return kind, int(value)


def _bad_size(text: str, reason: str) -> ValueError:
    return ValueError(
        f"{text!r} is not a size ({reason}); a size is {SIZE_FORMS}, e.g. fraction:0.5, "
        "tokens:100000 or messages:6"
    )


def parse_trigger(text: str) -> Any:
    """A trigger SPEC: a tuple for one metric, else LangChain's list/dict clause forms."""
    text = text.strip()
    if text.lower() in {"none", "off"}:
        return None
    clauses: list[Any] = []
    for part in text.split(","):
        metrics = [parse_size(m) for m in part.split("&")]
        clauses.append(metrics[0] if len(metrics) == 1 else dict(metrics))
    return clauses[0] if len(clauses) == 1 else clauses


def format_size(size: Any) -> str:
    """Inverse of `parse_trigger` for display (`fraction:0.85`, `tokens:4000&messages:10`).

    Takes every form a policy accepts: `(kind, value)` pairs as tuples or lists (JSON turns
    tuples into lists), `{kind: value}` clauses, lists of those, SPEC strings (`"auto"`,
    `"messages:6"`, shown as given) and bare numbers."""
    if size is None:
        return "none"
    if isinstance(size, str):
        return size
    if isinstance(size, Mapping):
        return "&".join(f"{k}:{v}" for k, v in size.items())
    if isinstance(size, Sequence):
        if len(size) == 2 and isinstance(size[0], str) and not isinstance(size[1], str | Sequence):
            return f"{size[0]}:{size[1]}"
        return ",".join(format_size(s) for s in size)
    return str(size)


def parse_value(name: str, text: str, like: Any = None) -> Any:
    """The value of `--set name=text` for policy parameter `name`.

    `like` is the parameter's current value: a size-named parameter (`trigger`, `keep`) whose
    value is a plain number (`ClearToolUses(trigger=100000, keep=3)`) is read as a number, not
    as a SPEC, and a parameter whose value is a number refuses text that is not one (a
    `ValueError` saying what it takes)."""
    is_number = isinstance(like, int | float) and not isinstance(like, bool)
    if name in SIZE_PARAMS and not is_number:
        if text.strip().lower() == "auto":
            return "auto"
        return parse_trigger(text) if name == "trigger" else parse_size(text)
    low = text.strip().lower()
    if low in {"none", "null"}:
        return None
    if low in {"true", "false"}:
        return low == "true"
    if text.strip()[:1] in "[{":
        return json.loads(text)
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    if is_number and low != "auto":
        kind = "a whole number" if isinstance(like, int) else "a number"
        raise ValueError(f"{text!r} is not a number; {name} takes {kind} here (default {like})")
    return text


def split_assignment(text: str) -> tuple[str, str]:
    """`name=value` into `(name, value text)`, `-` in the name read as `_`; `truncate.trigger=...`
    style nesting is not used: pass `truncate_args_settings` as JSON."""
    name, sep, raw = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"expected name=value, got {text!r}")
    return name.strip().replace("-", "_"), raw


def parse_assignment(text: str, policy: Any = None) -> tuple[str, Any]:
    """`name=value` into `(name, parsed value)`, read against `policy`'s current value of
    `name` (see `parse_value`)."""
    name, raw = split_assignment(text)
    return name, parse_value(name, raw, getattr(policy, name, None))
