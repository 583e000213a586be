"""`ctxlab.compare`: the same traces under several policies, one row per (trace, policy).

The Python twin of `ctxlab compare`: the command prints this frame (or its rows as JSON). Each
row is `ctxlab.metrics.summary` of one replay (size, cost with and without prompt caching,
cache breaks, facts needed but lost, late triggers, overflows, goal retention) plus `policy`,
the name the policy was asked for by.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import polars as pl

    from ctxlab._cost.pricing import Price
    from ctxlab._replay.policies.base import Policy
    from ctxlab._replay.summarizers import Summarizer
    from ctxlab._trace import Trace


def policy_named(name: str, window: int | None = None, model: str | None = None) -> Policy:
    """The catalogue's policy `name`, with `window` and `model` set where it (or a member of
    the pipeline `a+b`) has such a parameter."""
    from ctxlab._replay.policies.catalog import get

    policy = get(name)
    members = getattr(policy, "policies", None) if "+" in name else None
    fields: set[str] = set()
    for p in members or (policy,):
        fields.update(getattr(p, "__dataclass_fields__", {}))
    params = {
        k: v for k, v in (("window", window), ("model", model)) if v is not None and k in fields
    }
    return get(name, **params) if params else policy


def given_price(prices: Mapping[str | None, Price] | None, model: str | None) -> Price | None:
    """The price given for `model` (matched as the price list matches names), else the one
    given for every model (key None), else None (the price list decides)."""
    from ctxlab._cost.pricing import model_key

    if not prices:
        return None
    key = model_key(model) if model else None
    for given, price in reversed(list(prices.items())):  # the last one given wins
        if given is not None and key is not None and model_key(given) == key:
            return price
    return prices.get(None)


def compare(
    traces: str | Path | Trace | Iterable[Trace],
    policies: Sequence[str | Policy],
    *,
    window: int | None = None,
    model: str | None = None,
    prices: Mapping[str | None, Price] | None = None,
    summarizer: Summarizer | None = None,
) -> pl.DataFrame:
    """Replay every trace (a path, a `Trace`, or traces; subagents included) under every policy
    and return one row of metrics per (trace, policy), in a polars frame.

    `policies` are catalogue names (`ctxlab policies`; `a+b` is a pipeline) or policy objects.
    `window` sets every named policy's window (and the overflow counts); `model` picks the
    price list and profile when a trace names none, or overrides it. `prices` maps a model
    name (None: every model) to a `ctxlab.cost.Price`, over genai-prices. `summarizer`
    defaults to the offline `Extractive`. A policy that cannot run on a trace raises
    `ValueError` naming the trace and the policy.
    """
    import polars as pl

    rows = compare_rows(
        traces, policies, window=window, model=model, prices=prices, summarizer=summarizer
    )
    return pl.DataFrame(rows, infer_schema_length=None)


def compare_rows(
    traces: str | Path | Trace | Iterable[Trace],
    policies: Sequence[str | Policy],
    *,
    window: int | None = None,
    model: str | None = None,
    prices: Mapping[str | None, Price] | None = None,
    summarizer: Summarizer | None = None,
) -> list[dict[str, Any]]:
    """`compare`'s rows as plain dicts, as `ctxlab compare --json` prints them."""
    from ctxlab._evaluate.metrics import summary
    from ctxlab._ingest.load import traces_of
    from ctxlab._replay.replay import replay
    from ctxlab._replay.summarizers import Extractive

    named = [
        (p, policy_named(p, window, model)) if isinstance(p, str) else (_label(p), p)
        for p in policies
    ]
    summarizer = summarizer if summarizer is not None else Extractive()
    rows: list[dict[str, Any]] = []
    for trace in traces_of(traces):
        for name, policy in named:
            try:
                result = replay(trace, policy, summarizer=summarizer)
            except ValueError as exc:
                raise ValueError(f"{trace.trace_id}: {name}: {exc}") from exc
            price = given_price(prices, model or trace.model)
            row = summary(result, trace, model=model, window=window, price=price)
            row["policy"] = name
            rows.append(row)
    return rows


def _label(policy: Policy) -> str:
    """A policy object's name in the frame: its catalogue name."""
    return str(getattr(policy, "name", type(policy).__name__))
