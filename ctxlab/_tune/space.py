"""A tuning space: each tuned policy parameter as an Optuna distribution and back.

Users spell a space the way they spell `--set` and `--grid` (`ctxlab._replay.specs`), so a
range is one more form of the same texts: `window=60000..200000` (whole numbers),
`trigger=fraction:0.5..0.95` (a size kind, then the range), `keep=messages:2..20`,
`chars_per_token=3.0..4.5`, an optional `/step` (`fraction:0.5..0.95/0.05`), and
`summary_prompt=a,b,c` or `keep=messages:6,fraction:0.1` for a choice among texts. The sampler
draws a number (or a choice); `Dimension.text` spells it back as `--set` would, and
`ctxlab._replay.specs.parse_value` reads that text against the policy's parameter, so a drawn
value goes through the same checks as a typed one. Fractions step by 0.01 unless told: the
front reads `fraction:0.62`, not `fraction:0.6183749`, and nothing finer is worth a replay.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from optuna.distributions import (
    BaseDistribution,
    CategoricalDistribution,
    FloatDistribution,
    IntDistribution,
)

from ctxlab._errors import TuneError
from ctxlab._replay.applies import with_settings
from ctxlab._replay.specs import SIZE_KINDS, SIZE_PARAMS, format_size, parse_value
from ctxlab.policies import Policy

FRACTION_STEP = 0.01
"""The step of a fraction range given without one."""

GRID_LIMIT = 10_000
"""The most points a range may give the grid sampler."""

SPACE_FORMS = (
    "NAME=LO..HI (numbers), NAME=KIND:LO..HI (KIND fraction, tokens or messages), either "
    "with an optional /STEP, or NAME=A,B,... (choices, spelled as --set spells them)"
)


@dataclass(frozen=True, slots=True)
class Dimension:
    """One tuned parameter: its name, the distribution the sampler draws from, and the size
    kind a drawn number is read as (`fraction`, `tokens`, `messages`; None for a plain value
    or a choice, which is already a `--set` text)."""

    name: str
    distribution: BaseDistribution
    kind: str | None = None
    spec: str = ""

    def text(self, raw: Any) -> str:
        """A drawn value as `--set` spells it (`fraction:0.62`, `120000`, a choice as given)."""
        if isinstance(raw, str):
            return raw
        number = _tidy(raw, self.distribution)
        return f"{self.kind}:{number}" if self.kind else str(number)

    def value(self, raw: Any, policy: Policy) -> Any:
        """The policy's value for a drawn one (the text read against the policy's parameter)."""
        return parse_value(self.name, self.text(raw), getattr(policy, self.name))

    def ends(self) -> list[Any]:
        """The choices, or the two ends of the range (what is checked before any replay)."""
        dist = self.distribution
        if isinstance(dist, CategoricalDistribution):
            return list(dist.choices)
        if isinstance(dist, IntDistribution | FloatDistribution):
            return [dist.low, dist.high]
        return []

    def grid(self) -> list[Any]:
        """Every value of the dimension, for Optuna's `GridSampler`."""
        dist = self.distribution
        if isinstance(dist, CategoricalDistribution):
            return list(dist.choices)
        step = getattr(dist, "step", None)
        if step is None or not isinstance(dist, IntDistribution | FloatDistribution):
            raise TuneError(
                f"space {self.name}={self.spec}: the grid sampler needs choices or a /STEP"
            )
        low, high = Decimal(str(dist.low)), Decimal(str(dist.high))
        count = int((high - low) / Decimal(str(step))) + 1
        if count > GRID_LIMIT:
            raise TuneError(
                f"space {self.name}={self.spec}: {count:,} grid points (at most {GRID_LIMIT:,})"
            )
        values = [low + i * Decimal(str(step)) for i in range(count)]
        if isinstance(dist, IntDistribution):
            return [int(v) for v in values]
        return [float(v) for v in values]


def _tidy(raw: Any, dist: BaseDistribution) -> int | float:
    """A drawn number without float noise: whole for an int range, rounded to the step's
    decimals for a stepped float range (0.3 + 0.01 * 29 is 0.59, not 0.5900000000000001)."""
    if isinstance(dist, IntDistribution):
        return int(raw)
    step = getattr(dist, "step", None)
    if step is not None:
        places = max(0, -Decimal(str(step)).as_tuple().exponent)  # type: ignore[operator]
        return round(float(raw), places)
    return float(raw)


def parse_dimension(name: str, spec: str, policy: Policy) -> Dimension:
    """One `NAME=SPEC` of a space (module doc), checked against `policy`: the parameter
    exists, and both ends of a range (every choice) build a valid policy."""
    fields: set[str] = set()
    if dataclasses.is_dataclass(policy):
        fields = {f.name for f in dataclasses.fields(policy)}
    if name not in fields:
        raise TuneError(
            f"space {name}: unknown parameter for policy {policy.name!r}; known: "
            + ", ".join(sorted(fields))
        )
    text = spec.strip()
    if ".." in text:
        dim = _range(name, text)
    else:
        choices = [c.strip() for c in text.split(",")]  # as --grid splits its values
        if not all(choices):
            raise TuneError(f"space {name}={spec}: an empty choice; expected {SPACE_FORMS}")
        dim = Dimension(name, CategoricalDistribution(tuple(dict.fromkeys(choices))), None, text)
    for raw in dim.ends():
        try:
            with_settings(policy, **{name: dim.value(raw, policy)})
        except (TypeError, ValueError) as exc:
            raise TuneError(f"space {name}={spec}: {dim.text(raw)}: {exc}") from None
    return dim


def _range(name: str, text: str) -> Dimension:
    kind: str | None = None
    head, sep, rest = text.partition(":")
    if sep and head.strip().lower() in SIZE_KINDS:
        kind, text = head.strip().lower(), rest
    bounds, _, step_text = text.partition("/")
    low_text, _, high_text = bounds.partition("..")
    try:
        low, high = _number(low_text), _number(high_text)
        step = _number(step_text) if step_text.strip() else None
    except ValueError:
        raise TuneError(f"space {name}={text}: not a range; expected {SPACE_FORMS}") from None
    if not low < high:
        raise TuneError(f"space {name}={text}: the low end must be below the high end")
    if step is not None and step <= 0:
        raise TuneError(f"space {name}={text}: the step must be above 0")
    if kind is None and name in SIZE_PARAMS:
        kind = "fraction" if high <= 1 else "tokens"
    whole = kind in ("tokens", "messages") or (
        kind is None and all(isinstance(v, int) for v in (low, high, step) if v is not None)
    )
    if whole:
        if not all(float(v).is_integer() for v in (low, high, step) if v is not None):
            raise TuneError(f"space {name}={text}: {kind or 'this range'} takes whole numbers")
        dist: BaseDistribution = IntDistribution(int(low), int(high), step=int(step or 1))
    else:
        if kind == "fraction" and step is None:
            step = FRACTION_STEP
        dist = FloatDistribution(float(low), float(high), step=step)
    return Dimension(name, dist, kind, text if kind is None else f"{kind}:{text}")


def _number(text: str) -> int | float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(text)
    return (
        int(value) if value.is_integer() and "." not in text and "e" not in text.lower() else value
    )


def parse_space(space: Mapping[str, Any] | Iterable[str], policy: Policy) -> dict[str, Dimension]:
    """A whole space: `{"trigger": "fraction:0.3..0.95", "keep": ["messages:2", ...]}` (texts,
    lists of choices, or Optuna distributions used as they are) or the CLI's `NAME=SPEC` texts;
    every dimension checked against `policy` (`parse_dimension`)."""
    items: list[tuple[str, Any]]
    if isinstance(space, Mapping):
        items = list(space.items())
    else:
        items = []
        for spec in space:
            name, sep, raw = str(spec).partition("=")
            if not sep or not name.strip() or not raw.strip():
                raise TuneError(f"--space expects {SPACE_FORMS}; got {spec!r}")
            items.append((name.strip().replace("-", "_"), raw))
    if not items:
        raise TuneError(f"an empty space: give at least one parameter ({SPACE_FORMS})")
    dims: dict[str, Dimension] = {}
    for name, given in items:
        if name in dims:
            raise TuneError(f"space {name}: given twice")
        if isinstance(given, BaseDistribution):
            dims[name] = Dimension(name, given, None, repr(given))
        elif isinstance(given, str):
            dims[name] = parse_dimension(name, given, policy)
        elif isinstance(given, Sequence) and given:
            texts = [g if isinstance(g, str) else format_size(g) for g in given]
            dims[name] = parse_dimension(name, ",".join(texts), policy)
        else:
            raise TuneError(
                f"space {name}: {given!r} is not a range text, choices or a distribution"
            )
    return dims


def spelled(dims: Mapping[str, Dimension], raw: Mapping[str, Any]) -> dict[str, str]:
    """A trial's drawn values as `--set` texts, in the space's order."""
    return {name: dim.text(raw[name]) for name, dim in dims.items()}


def describe(dims: Mapping[str, Dimension]) -> dict[str, str]:
    """The space as given (stored with the study; a rerun must give the same)."""
    return {name: dim.spec for name, dim in dims.items()}
