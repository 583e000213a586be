"""A dated price list of common models, with each provider's prompt-cache rules.

Prices are USD per million tokens, standard (non-batch) tier, short-context rates. The table was
compiled on 2025-10-01 and re-verified on `AS_OF` against *stored copies* of the vendors' pages
(not the live pages; `VERIFIED` says, per provider, what was and was not confirmed). Re-check
them before publishing a cost figure. Cache rules:

* **Anthropic** (platform.claude.com/docs/en/build-with-claude/prompt-caching and
  /about-claude/pricing): a cache read costs 0.1x the input price, a 5-minute cache write 1.25x
  (1-hour 2x); the cacheable prefix must be at least 1,024 tokens on Opus 4/4.1 and Sonnet
  4/4.5, 4,096 on Opus 4.5 and Haiku 4.5.
* **OpenAI** (developers.openai.com/api/docs/guides/prompt-caching; cookbook "Prompt Caching
  201"): automatic for prompts of at least 1,024 tokens, hits counted in 128-token steps, no
  write surcharge; the cached-input price is per model (0.5x for gpt-4o, 0.25x for gpt-4.1,
  0.1x for gpt-5).
* **Google** (ai.google.dev/gemini-api/docs/caching, implicit caching): no write surcharge,
  minimum 2,048 tokens on 2.5 Flash and 2.5 Pro (the copy last updated 2026-10-13; copies
  last updated 2026-05-07 said 1,024 and 4,096); cached input at the listed rate.
"""

from __future__ import annotations

from dataclasses import dataclass

AS_OF = "2026-12-02"
"""Date the table was last checked (against stored copies of the vendors' pages; first compiled
2025-10-01). Cost figures should cite it, since prices and cache minimums change."""

SOURCES = {
    "anthropic": "https://platform.claude.com/docs/en/about-claude/pricing ; "
    "https://platform.claude.com/docs/en/build-with-claude/prompt-caching",
    "openai": "https://developers.openai.com/api/docs/pricing ; "
    "https://developers.openai.com/api/docs/guides/prompt-caching",
    "google": "https://ai.google.dev/gemini-api/docs/pricing ; "
    "https://ai.google.dev/gemini-api/docs/caching",
}
"""Where each provider publishes its prices and cache rules."""

VERIFIED = {
    "anthropic": "verified against stored copies of "
    "https://platform.claude.com/docs/en/about-claude/pricing (and of its /docs/zh-CN/ "
    "translation, whose stored copy lists every model here) on 2026-12-02: input, output, "
    "5-minute cache write (1.25x) and cache hit (0.1x) prices of every Claude model listed here. "
    "Minimum cacheable prompt (1,024; 4,096 for Opus 4.5 and Haiku 4.5): the stored copy of "
    "https://platform.claude.com/docs/en/build-with-claude/prompt-caching did not show its "
    "limits section; taken from the docs' text as quoted in anthropics/anthropic-sdk-python#1194 "
    "and agreeing gateway docs (secondary)",
    "openai": "verified against stored copies of "
    "https://developers.openai.com/api/docs/guides/prompt-caching and of the openai-cookbook "
    "notebook Prompt_Caching_201.ipynb on 2026-12-02: 1,024-token minimum, 128-token steps, no "
    "write fee. Per-model prices NOT verified: no stored copy of "
    "https://developers.openai.com/api/docs/pricing was found; secondary copies (github/docs "
    "Copilot models-and-pricing.yml: gpt-4.1 $2.00/$0.50/$8.00, GPT-5 mini $0.25/$0.025/$2.00) "
    "agree with this table",
    "google": "verified against stored copies of https://ai.google.dev/gemini-api/docs/caching "
    "on 2026-12-02: implicit-caching minimum 2,048 tokens for 2.5 Flash and 2.5 Pro (page last "
    "updated 2026-10-13); 2.5 Flash-Lite is not listed there (1,024 kept, unverified). Prices "
    "NOT verified: no stored copy of https://ai.google.dev/gemini-api/docs/pricing was found",
}
"""Per provider: what was checked against which stored copy, and what could not be."""


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
        _anthropic("claude-opus-4-5", 5.0, 25.0, 4096),  # minimum was 1,024 here until 2026-12-02
        _anthropic("claude-sonnet-4", 3.0, 15.0),
        _anthropic("claude-sonnet-4-5", 3.0, 15.0),
        _anthropic("claude-haiku-4-5", 1.0, 5.0, 4096),  # minimum was 2,048 here until 2026-12-02
        _openai("gpt-4o", 2.50, 10.00, 1.25),
        _openai("gpt-4o-mini", 0.15, 0.60, 0.075),
        _openai("gpt-4.1", 2.00, 8.00, 0.50),
        _openai("gpt-4.1-mini", 0.40, 1.60, 0.10),
        _openai("gpt-4.1-nano", 0.10, 0.40, 0.025),
        _openai("gpt-5", 1.25, 10.00, 0.125),
        _openai("gpt-5-mini", 0.25, 2.00, 0.025),
        _openai("gpt-5-nano", 0.05, 0.40, 0.005),
        _google("gemini-2.5-pro", 1.25, 10.00, 0.31, 2048),  # minimum was 4,096 until 2026-12-02
        _google("gemini-2.5-flash", 0.30, 2.50, 0.075, 2048),  # minimum was 1,024 until 2026-12-02
        _google("gemini-2.5-flash-lite", 0.10, 0.40, 0.025, 1024),  # minimum not published
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


__all__ = ["AS_OF", "PRICES", "SOURCES", "VERIFIED", "Price", "cached_tokens", "price_for"]
