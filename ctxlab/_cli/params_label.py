"""A policy's parameters as a short label for tables: only what differs from its defaults.

The store keeps a replay's full parameters as JSON (`params`, every field, for queries and
exports); a table cut to the terminal shows `{"chars_per_to…` of it, the same for every row.
What tells rows apart is what was changed from the policy's defaults, so tables show that,
`trigger=fraction:0.5, window=200,000`, in full (it wraps), and `defaults` when nothing was;
CSV and JSON output keep the JSON whole.
"""

from __future__ import annotations

import dataclasses
import json
from functools import lru_cache
from typing import Any

from ctxlab._replay.specs import SIZE_PARAMS, format_size


@lru_cache(maxsize=64)
def _defaults(policy: str) -> dict[str, Any] | None:
    """The JSON form of `policy`'s default parameters, None for a name not in the catalogue."""
    from ctxlab._replay.policies.catalog import get

    try:
        default = get(policy)
    except (TypeError, ValueError):
        return None
    if not dataclasses.is_dataclass(default):
        return None
    fields = {f.name: getattr(default, f.name) for f in dataclasses.fields(default)}
    return json.loads(json.dumps(fields, default=str))


def _value(name: str, value: Any) -> str:
    if name in SIZE_PARAMS or isinstance(value, list | dict):
        return format_size(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def params_label(policy: str | None, params: str, changed_only: bool = True) -> str:
    """`params` (a replay's parameters as JSON text) as `name=value` pairs of the parameters
    that differ from `policy`'s defaults, by name; every pair when the defaults are unknown
    or `changed_only` is false (a headline over one replay); `defaults` when none differ.
    Text that is not a JSON object comes back as it is."""
    try:
        given = json.loads(params)
    except (TypeError, ValueError):
        return params
    if not isinstance(given, dict):
        return params
    defaults = _defaults(policy) if policy and changed_only else None
    changed = {
        k: v for k, v in sorted(given.items()) if defaults is None or defaults.get(k, v) != v
    }
    if defaults is not None:
        changed.update({k: v for k, v in given.items() if k not in defaults})
    return ", ".join(f"{k}={_value(k, v)}" for k, v in sorted(changed.items())) or "defaults"


__all__ = ["params_label"]
