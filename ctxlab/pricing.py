"""A dated price list of common models, with each provider's prompt-cache rules.

Prices are USD per million tokens, standard (non-batch) tier, short-context rates, as listed on
the vendors' pricing pages on `AS_OF`; re-check them before publishing a cost figure. Cache rules:

* **Anthropic** (docs.anthropic.com/en/docs/build-with-claude/prompt-caching): a cache read
  costs 0.1x the input price, a 5-minute cache write 1.25x (1-hour 2x); the cacheable prefix
  must be at least 1,024 tokens (2,048 on Haiku models).
* **OpenAI** (platform.openai.com/docs/guides/prompt-caching; cookbook "Prompt Caching 201"):
  automatic for prompts of at least 1,024 tokens, hits counted in 128-token steps, no write
  surcharge; the cached-input price is per model (0.5x for gpt-4o, 0.25x for gpt-4.1, 0.1x
  for gpt-5).
* **Google** (ai.google.dev/gemini-api/docs/caching, implicit caching): no write surcharge,
  minimum 1,024 tokens (2.5 Flash) or 4,096 (2.5 Pro); cached input at the listed rate.
"""

from __future__ import annotations

from dataclasses import dataclass

AS_OF = "2025-10-01"
"""Date the table was read from the vendors' pages."""

SOURCES = {
    "anthropic": "https://www.anthropic.com/pricing#api ; "
    "https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching",
    "openai": "https://openai.com/api/pricing/ ; "
    "https://platform.openai.com/docs/guides/prompt-caching",
    "google": "https://ai.google.dev/gemini-api/docs/pricing ; "
    "https://ai.google.dev/gemini-api/docs/caching",
}


@dataclass(frozen=True, slots=True)
class Price:
    """One model's prices (USD per million tokens) and its provider's cache rules."""

    model: str
    provider: str
    input: float
    output: float
    cache_read: float
    """Multiplier on `input` for cached input tokens."""
    cache_write: float
    """Multiplier on `input` for tokens written to the cache (1.0: no surcharge)."""
    min_cacheable: int
    """Shortest prefix the provider caches."""
    cache_step: int = 1
    """Cached lengths are rounded down to a multiple of this beyond the minimum (OpenAI: 128)."""


def _anthropic(model: str, inp: float, out: float, minimum: int = 1024) -> Price:
    return Price(model, "anthropic", inp, out, 0.1, 1.25, minimum)


def _openai(model: str, inp: float, out: float, cached: float) -> Price:
    return Price(model, "openai", inp, out, round(cached / inp, 4), 1.0, 1024, 128)


def _google(model: str, inp: float, out: float, cached: float, minimum: int) -> Price:
    return Price(model, "google", inp, out, round(cached / inp, 4), 1.0, minimum)


PRICES: dict[str, Price] = {
    p.model: p
    for p in (
        _anthropic("claude-opus-4-1", 15.0, 75.0),
        _anthropic("claude-opus-4", 15.0, 75.0),
        _anthropic("claude-opus-4-5", 5.0, 25.0),
        _anthropic("claude-sonnet-4", 3.0, 15.0),
        _anthropic("claude-sonnet-4-5", 3.0, 15.0),
        _anthropic("claude-haiku-4-5", 1.0, 5.0, 2048),
        _openai("gpt-4o", 2.50, 10.00, 1.25),
        _openai("gpt-4o-mini", 0.15, 0.60, 0.075),
        _openai("gpt-4.1", 2.00, 8.00, 0.50),
        _openai("gpt-4.1-mini", 0.40, 1.60, 0.10),
        _openai("gpt-4.1-nano", 0.10, 0.40, 0.025),
        _openai("gpt-5", 1.25, 10.00, 0.125),
        _openai("gpt-5-mini", 0.25, 2.00, 0.025),
        _openai("gpt-5-nano", 0.05, 0.40, 0.005),
        _google("gemini-2.5-pro", 1.25, 10.00, 0.31, 4096),
        _google("gemini-2.5-flash", 0.30, 2.50, 0.075, 1024),
        _google("gemini-2.5-flash-lite", 0.10, 0.40, 0.025, 1024),
    )
}


def price_for(model: str | None) -> Price | None:
    """The price of `model`: exact name, else the longest listed name it starts with (so dated
    snapshots like `claude-sonnet-4-5-20250929` or `gpt-4o-2024-08-06` match), else None."""
    if not model:
        return None
    name = model.split(":", 1)[-1].split("/")[-1].lower()
    if name in PRICES:
        return PRICES[name]
    matches = [k for k in PRICES if name.startswith(k)]
    return PRICES[max(matches, key=len)] if matches else None


def cached_tokens(prefix: int, price: Price) -> int:
    """Tokens of a common prefix the provider would serve from cache."""
    if prefix < price.min_cacheable:
        return 0
    if price.cache_step > 1:
        return (
            price.min_cacheable
            + (prefix - price.min_cacheable) // price.cache_step * price.cache_step
        )
    return prefix


__all__ = ["AS_OF", "PRICES", "SOURCES", "Price", "cached_tokens", "price_for"]
