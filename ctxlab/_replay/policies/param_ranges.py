"""Range checks for the parameters many policies share, run when a policy is built.

A window of 0 or below, or a negative output reserve, is not an error any later step notices:
the replay runs and shows context above the uncompacted baseline. So every policy with such a
field refuses the value on construction (`ctxlab.policies.get("deepagents", window=0)`, a
`--set` or `--grid` value, a widget slider all meet the same `ValueError`).
"""

from __future__ import annotations

import dataclasses
import math
from numbers import Real
from typing import Any

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


SHARED = {"window": check_window, "max_output_tokens": check_max_output_tokens}
"""The checks by field name, applied to every policy dataclass that has the field."""


def check_shared(policy: Any) -> None:
    """Run the checks of `SHARED` on the fields `policy` has."""
    for field in dataclasses.fields(policy):
        check = SHARED.get(field.name)
        if check is not None:
            check(getattr(policy, field.name))
