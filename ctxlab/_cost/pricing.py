"""Token prices and each provider's prompt-cache rules: the one place a cost figure is priced.

Prices come from the maintained `genai-prices` package (github.com/pydantic/genai-prices): its
data ships inside the wheel, so a lookup reads no network and the prices are those of the
installed version, which dates them (`Price.source` names it and the model matched). Where
genai-prices dates a price change, the price in effect today (UTC) is used and `Price.date` says
since when. ctxlab never enables its `UpdatePrices` fetcher; if the host process did, `source`
says the data was fetched.

A model is priced only when genai-prices knows it under that name, a dated snapshot of it
(`claude-sonnet-4-5-20250929`, `gpt-4o-2024-08-06`, `...@20250929`), its `-latest` alias, or the
same with a provider prefix (`anthropic/claude-sonnet-4-5`, `openai:gpt-4o`). A name that
genai-prices matches only by a prefix of another model's name (`claude-sonnet-4-5-foo`) is
refused: a wrong price is worse than none. A model with no price gets one warning line per
process naming the model and how to give a price (`--price` on the CLI, a `Price` in Python),
and its cost fields are null.

Cache rules are ctxlab's own (genai-prices has prices, not rules), checked on `CACHE_RULES_AS_OF`
against stored copies of the providers' pages (`VERIFIED` says what was and was not confirmed):

* **Anthropic** (platform.claude.com/docs/en/build-with-claude/prompt-caching): a cache read
  costs 0.1x the input price, a 5-minute cache write 1.25x (used only when genai-prices has no
  cache price); the cacheable prefix must be at least 1,024 tokens, 4,096 on Opus 4.5 and
  Haiku 4.5. A cached prefix lives 5 minutes after its last use (`ANTHROPIC_LONG_TTL`: the
  1-hour option).
* **OpenAI** (developers.openai.com/api/docs/guides/prompt-caching): automatic for prompts of
  at least 1,024 tokens, hits counted in 128-token steps, no write surcharge. A model with no
  cached-input price in genai-prices gets no discount. Cached prefixes are evicted after 5 to
  10 minutes of inactivity (at most one hour): ctxlab takes 5 minutes.
* **Google** (ai.google.dev/gemini-api/docs/caching, implicit caching): no write surcharge,
  minimum 2,048 tokens (2.5 Flash and 2.5 Pro; 1,024 kept for 2.5 Flash-Lite, unpublished).
* Any other provider: a 1,024-token minimum, no steps, no write surcharge, and no discount
  unless genai-prices (or the given `Price`) has a cache-read price. Google and other
  providers have no cache lifetime here (`ttl_seconds` None): idle gaps are not simulated.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Iterator

log = logging.getLogger(__name__)

CACHE_RULES_AS_OF = "2026-12-02"
"""Date the cache rules below were last checked against stored copies of the providers' pages."""

SOURCES = {
    "anthropic": "https://platform.claude.com/docs/en/build-with-claude/prompt-caching",
    "openai": "https://developers.openai.com/api/docs/guides/prompt-caching",
    "google": "https://ai.google.dev/gemini-api/docs/caching",
}
"""Where each provider publishes its prompt-cache rules."""

VERIFIED = {
    "anthropic": "read 0.1x and 5-minute write 1.25x verified against a stored copy of "
    "https://platform.claude.com/docs/en/about-claude/pricing on 2026-12-02. Minimum cacheable "
    "prompt (1,024; 4,096 for Opus 4.5 and Haiku 4.5): the stored copy of the prompt-caching page "
    "did not show its limits section; taken from the docs' text as quoted in "
    "anthropics/anthropic-sdk-python#1194 and agreeing gateway docs (secondary). Newer models "
    "take the 1,024 default, unverified. Cache lifetimes: 5 minutes and 1 hour are the pricing "
    "page's two cache-write tiers (1-hour writes at 2x); that a read refreshes the lifetime "
    "is from secondary copies of the prompt-caching page's text (gateway docs quoting it)",
    "openai": "verified against stored copies of "
    "https://developers.openai.com/api/docs/guides/prompt-caching and of the openai-cookbook "
    "notebook Prompt_Caching_201.ipynb on 2026-12-02: 1,024-token minimum, 128-token steps, no "
    "write fee. Cache lifetime is a range in the docs ('5 to 10 minutes of inactivity, up to "
    "one hour'; Azure OpenAI's page words it the same): ctxlab uses 5 minutes, unverified as "
    "a fixed value",
    "google": "verified against stored copies of https://ai.google.dev/gemini-api/docs/caching "
    "on 2026-12-02: implicit-caching minimum 2,048 tokens for 2.5 Flash and 2.5 Pro (page last "
    "updated 2026-10-13); 2.5 Flash-Lite is not listed there (1,024 kept, unverified); other "
    "Gemini models take the 2,048 default, unverified",
}
"""Per provider: what was checked against which stored copy, and what could not be."""


@dataclass(frozen=True, slots=True)
class Price:
    """A model's prices in USD per million tokens.

    Give one where genai-prices has none (or to override it): `Price(input=3, output=15)`, or
    with cache prices `Price(3, 15, cache_read=0.3, cache_write=3.75)`. A cache price left None
    takes the provider's rule (`CacheRule`): a multiplier on `input`, or `input` itself.
    """

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    source: str = "given"
    """Where the price comes from (for genai-prices: its version and the model it matched)."""
    date: str | None = None
    """Day the price took effect (ISO), when known: for genai-prices, the start of a dated price
    change (most of its prices carry none: its version dates them)."""
    tiers: tuple[tuple[int, Price], ...] = ()
    """Long-context rates, ascending: a request of more than N input tokens pays that `Price`
    on all its tokens (genai-prices' tiered prices, e.g. above 200,000 on Claude Sonnet 4.5)."""

    def at(self, input_tokens: int) -> Price:
        """The rates a request of `input_tokens` pays."""
        chosen = self
        for start, price in self.tiers:
            if input_tokens > start:
                chosen = price
        return chosen


@dataclass(frozen=True, slots=True)
class CacheRule:
    """How a provider caches a prompt prefix and what a cache hit or write costs when the price
    has no cache prices of its own."""

    provider: str
    min_cacheable: int
    """Shortest prefix the provider caches."""
    step: int = 1
    """Cached lengths are rounded down to a multiple of this beyond the minimum (OpenAI: 128)."""
    read: float = 1.0
    """Multiplier on the input price for cached input tokens, if the price has none."""
    write: float = 1.0
    """Multiplier on the input price for tokens written to the cache, if the price has none."""
    ttl_seconds: int | None = None
    """How long a cached prefix outlives its last use (None: the provider publishes none). A
    call made longer than this after the previous one finds the cache cold and writes its
    whole prefix again (`ctxlab._cost.cache_causes`, cause `idle_gap`)."""


ANTHROPIC_TTL = 300
"""Anthropic's default cache lifetime: 5 minutes, refreshed each time the prefix is read."""
ANTHROPIC_LONG_TTL = 3600
"""Anthropic's optional 1-hour cache lifetime (`"ttl": "1h"`, written at 2x the input price per
the pricing page); pass `ttl_seconds=ANTHROPIC_LONG_TTL` to `metrics.cache_frame` to simulate
it (its higher write price is not applied: give a `Price` with that `cache_write`)."""
OPENAI_TTL = 300
"""OpenAI publishes a range, not a lifetime: cached prefixes stay active after 5 to 10 minutes
of inactivity and are always evicted within one hour (longer with opt-in extended retention on
some models). ctxlab takes the short end, 5 minutes, so an idle gap it reports may in fact
still have hit."""

CACHE_RULES = {
    "anthropic": CacheRule("anthropic", 1024, read=0.1, write=1.25, ttl_seconds=ANTHROPIC_TTL),
    "openai": CacheRule("openai", 1024, step=128, ttl_seconds=OPENAI_TTL),
    "google": CacheRule("google", 2048),
}
"""Each provider's rule (keys are genai-prices provider ids)."""

OTHER = CacheRule("other", 1024)
"""The rule for providers not in `CACHE_RULES` and for models of unknown provider."""

MIN_CACHEABLE = {
    "claude-opus-4-5": 4096,
    "claude-haiku-4-5": 4096,
    "gemini-2.5-flash-lite": 1024,
}
"""Per-model minimum cacheable prefix where it differs from its provider's (genai-prices ids)."""


@dataclass(frozen=True, slots=True)
class Rates:
    """What a model's calls are billed with: its price, cache prices filled in from the rule."""

    model: str | None
    price: Price
    cache: CacheRule


_given: dict[str, Price] = {}
_warned: set[str | None] = set()

_DATED = re.compile(r"(?:[-@](?:\d{8}|\d{4}-\d{2}-\d{2})|-latest)$")
_PROVIDER = re.compile(r"^[a-z][a-z0-9_-]*:(?!:)")


def model_key(model: str) -> str:
    """The name a given price is filed under: lower case, without a provider prefix
    (`anthropic/`, `openai:`) or a snapshot date / `-latest` suffix."""
    name = _PROVIDER.sub("", model.strip().lower().rsplit("/", 1)[-1])
    return _DATED.sub("", name)


def set_price(model: str, price: Price | None) -> None:
    """Price `model` (any spelling `model_key` files together) with `price` in this process, in
    every lookup (summaries, `ctxlab compare`, the explorer's readout); None removes it."""
    if price is None:
        _given.pop(model_key(model), None)
    else:
        _given[model_key(model)] = price


def price_for(model: str | None, at: date | None = None) -> Price | None:
    """The price of `model` on day `at` (default today, UTC): one given with `set_price`, else
    genai-prices' for that exact model, else None (never another model's price)."""
    if not model:
        return None
    if (given := _given.get(model_key(model))) is not None:
        return given
    return _genai_price(model, (at or datetime.now(UTC).date()).isoformat())


def rates_for(
    model: str | None, price: Price | None = None, at: date | None = None
) -> Rates | None:
    """`price` (else `price_for(model, at)`) with its provider's cache rule, its cache prices
    filled in; None, after one warning line per model per process, when there is no price."""
    price = price if price is not None else price_for(model, at)
    if price is None:
        _warn_unpriced(model)
        return None
    rule = cache_rule(model)
    return Rates(model, _filled(price, rule), rule)


def cached_tokens(prefix: int, rule: CacheRule) -> int:
    """Tokens of a common prefix the provider would serve from cache."""
    if prefix < rule.min_cacheable:
        return 0
    if rule.step > 1:
        return rule.min_cacheable + (prefix - rule.min_cacheable) // rule.step * rule.step
    return prefix


def parse_price(text: str) -> tuple[str | None, Price]:
    """`MODEL=IN,OUT[,CACHE_READ,CACHE_WRITE]` (USD per million tokens) as (model, Price);
    without `MODEL=` the price is for every model (model None). Raises ValueError."""
    model, _, numbers = text.rpartition("=")
    values = [v.strip() for v in numbers.split(",")]
    if len(values) not in (2, 3, 4) or (model.strip() == "" and "=" in text):
        raise ValueError(f"expected MODEL=IN,OUT[,CACHE_READ,CACHE_WRITE], got {text!r}")
    try:
        floats = [float(v) for v in values]
    except ValueError:
        raise ValueError(f"prices must be numbers (USD per million tokens), got {text!r}") from None
    if any(not f >= 0 for f in floats):
        raise ValueError(f"prices must be non-negative, got {text!r}")
    return (model.strip() or None), Price(*floats)  # type: ignore[arg-type]


def genai_prices_version() -> str:
    """The installed genai-prices version, which dates the bundled price data."""
    from importlib.metadata import version

    return version("genai-prices")


def _warn_unpriced(model: str | None) -> None:
    if model in _warned:
        return
    _warned.add(model)
    if not model:
        log.warning(
            "ctxlab: no model named, so no price: cost fields are null; name one with --model "
            "or give a price with --price IN,OUT[,CACHE_READ,CACHE_WRITE] (USD per million "
            "tokens), or price=ctxlab._cost.pricing.Price(...) in Python"
        )
        return
    version = genai_prices_version()
    if _match(model) is not None:
        why = f"genai-prices {version} has no token prices for it"
    elif near := _fuzzy(model):
        why = f"genai-prices matches it only by the prefix of {near!r}, a different name"
    else:
        why = f"genai-prices {version} does not know it"
    log.warning(
        f"ctxlab: no price for model {model!r} ({why}): cost fields are null; give one with "
        f"--price {model}=IN,OUT[,CACHE_READ,CACHE_WRITE] (USD per million tokens) or "
        f"price=ctxlab._cost.pricing.Price(IN, OUT) in Python (or ctxlab._cost.pricing.set_price)"
    )


def cache_rule(model: str | None) -> CacheRule:
    """The cache rule of `model`'s provider (whether or not the model has a price): its
    minimum, steps, multipliers and lifetime (`ttl_seconds`, for when a cache goes cold)."""
    if not model:
        return OTHER
    match = _match(model)
    provider = match[0] if match else _provider_of(model)
    rule = CACHE_RULES.get(provider or "", OTHER)
    if match and match[1] in MIN_CACHEABLE:
        return replace(rule, min_cacheable=MIN_CACHEABLE[match[1]])
    return rule


def _filled(price: Price, rule: CacheRule) -> Price:
    """`price` with each missing cache price taken from the rule's multipliers."""
    read = price.input * rule.read if price.cache_read is None else price.cache_read
    write = price.input * rule.write if price.cache_write is None else price.cache_write
    tiers = tuple((start, _filled(p, rule)) for start, p in price.tiers)
    return replace(price, cache_read=read, cache_write=write, tiers=tiers)


def _candidates(model: str) -> Iterator[str]:
    """The spellings to look up: as given, then without a provider prefix."""
    name = model.strip().lower()
    yield name
    bare = _PROVIDER.sub("", name.rsplit("/", 1)[-1])
    if bare != name:
        yield bare


def _names(clause: Any) -> set[str]:
    """Every literal model name in a genai-prices match clause."""
    from genai_prices import types as gp

    if isinstance(clause, gp.ClauseEquals):
        return {clause.equals}
    if isinstance(clause, gp.ClauseStartsWith):
        return {clause.starts_with}
    if isinstance(clause, gp.ClauseEndsWith):
        return {clause.ends_with}
    if isinstance(clause, gp.ClauseContains):
        return {clause.contains}
    if isinstance(clause, gp.ClauseOr):
        return set().union(*(_names(c) for c in clause.or_))
    if isinstance(clause, gp.ClauseAnd):
        return set().union(*(_names(c) for c in clause.and_))
    return set()


def _lookup(ref: str) -> Any:
    """genai-prices' (provider, model) for `ref`, or None."""
    from genai_prices.data_snapshot import get_snapshot

    try:
        return get_snapshot().find_provider_model(ref, None, None, None)
    except LookupError:
        return None


@lru_cache(maxsize=256)
def _match(model: str) -> tuple[str, str, Any] | None:
    """(provider id, model id, genai-prices ModelInfo) when genai-prices knows this very model."""
    for name in _candidates(model):
        base = _DATED.sub("", name)
        for ref in dict.fromkeys((name, base)):
            found = _lookup(ref)
            if found is None:
                continue
            provider, info = found
            known = _names(info.match) | {info.id}
            if name in known or base in known:
                return provider.id, info.id, info
    return None


def _fuzzy(model: str) -> str | None:
    """The model genai-prices would match `model` to, when `_match` refused it."""
    for name in _candidates(model):
        if (found := _lookup(name)) is not None:
            return found[1].id
    return None


def _provider_of(model: str) -> str | None:
    """genai-prices' provider for a model name it has no price for (by its naming pattern)."""
    from genai_prices.data_snapshot import get_snapshot

    for name in _candidates(model):
        try:
            return get_snapshot().find_provider(name, None, None).id
        except LookupError:
            continue
    return None


@lru_cache(maxsize=256)
def _genai_price(model: str, day: str) -> Price | None:
    """genai-prices' price of `model` on `day`, as a `Price` (None when `_match` refuses the
    name or the model has no token prices). A model priced by time of day (DeepSeek's off-peak
    hours) takes its peak price: a replay has no time of day, and the peak is an upper bound."""
    from genai_prices.data_snapshot import get_snapshot
    from genai_prices.types import StartDateConstraint, TieredPrices, TimeOfDateConstraint

    match = _match(model)
    if match is None:
        return None
    provider, model_id, info = match
    dated = info.prices if isinstance(info.prices, list) else []
    timed = any(isinstance(c.constraint, TimeOfDateConstraint) for c in dated)
    midnight = datetime.fromisoformat(day).replace(tzinfo=UTC)
    moments = [midnight + timedelta(minutes=30 * i) for i in range(48 if timed else 1)]
    keys = ("input_mtok", "output_mtok", "cache_read_mtok", "cache_write_mtok")

    def rate(value: Any, above: int | None = None) -> float:
        if not isinstance(value, TieredPrices):
            return float(value)
        chosen = value.base
        for tier in value.tiers:
            if above is not None and above >= tier.start:
                chosen = tier.price
        return float(chosen)

    prices = max((info.get_prices(m) for m in moments), key=lambda p: rate(p.input_mtok or 0.0))
    raw = [getattr(prices, k) for k in keys]
    if raw[0] is None or raw[1] is None:
        return None
    since = next(
        (
            c.constraint.start_date.isoformat()
            for c in dated
            if c.prices is prices and isinstance(c.constraint, StartDateConstraint)
        ),
        None,
    )
    fetched = " (data fetched by UpdatePrices)" if get_snapshot().from_auto_update else ""
    peak = " (peak of its time-of-day prices)" if timed else ""
    source = f"genai-prices {genai_prices_version()}{fetched}: {provider}/{model_id}{peak}"
    starts = sorted({t.start for v in raw if isinstance(v, TieredPrices) for t in v.tiers})

    def price(above: int | None = None, tiers: tuple[tuple[int, Price], ...] = ()) -> Price:
        read, write = (None if v is None else rate(v, above) for v in raw[2:])
        return Price(rate(raw[0], above), rate(raw[1], above), read, write, source, since, tiers)

    return price(tiers=tuple((start, price(start)) for start in starts))


__all__ = [
    "CACHE_RULES",
    "ANTHROPIC_LONG_TTL",
    "ANTHROPIC_TTL",
    "CACHE_RULES_AS_OF",
    "MIN_CACHEABLE",
    "OPENAI_TTL",
    "OTHER",
    "SOURCES",
    "VERIFIED",
    "CacheRule",
    "Price",
    "Rates",
    "cache_rule",
    "cached_tokens",
    "genai_prices_version",
    "model_key",
    "parse_price",
    "price_for",
    "rates_for",
    "set_price",
]
