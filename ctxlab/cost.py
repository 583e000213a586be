"""Tokens and cost: the approximate counter policies use (`count_tokens`, LangChain's
`count_tokens_approximately` bit for bit), exact OpenAI counts (`OpenAICounter`,
`encoding_for`), what a provider bills for each request of a replay (`biller_for`,
`billed_tokens`, `recount`, `bill`; docs/billing.md, docs/billed_tokens.md), prices and prompt-cache
rules (`rates_for`, `set_price`, `Price`; docs/prices.md), and the prompt-cache simulation
checked against recorded cache tokens (`check_recorded_cache`; docs/cache.md).

The public face of ctxlab's private modules: import from here.
"""

from ctxlab._cost.billing import Billing, bill, billed_tokens, recount
from ctxlab._cost.cache_causes import CAUSES
from ctxlab._cost.cache_recorded import CacheCheck
from ctxlab._cost.cache_recorded import check as check_recorded_cache
from ctxlab._cost.calibration import (
    Biller,
    Fit,
    TraceCalibration,
    biller_for,
    calibrate_models,
    calibrate_trace,
    default_fit,
)
from ctxlab._cost.openai_tokens import ENCODINGS, OpenAICounter, count_text, encoding_for
from ctxlab._cost.pricing import (
    ANTHROPIC_LONG_TTL,
    ANTHROPIC_TTL,
    CACHE_RULES,
    MIN_CACHEABLE,
    OPENAI_TTL,
    CacheRule,
    Price,
    Rates,
    cache_rule,
    parse_price,
    price_for,
    rates_for,
    set_price,
)
from ctxlab._cost.tokens import count_tokens

__all__ = [
    "ANTHROPIC_LONG_TTL",
    "ANTHROPIC_TTL",
    "Biller",
    "Billing",
    "CACHE_RULES",
    "CAUSES",
    "CacheCheck",
    "CacheRule",
    "ENCODINGS",
    "Fit",
    "MIN_CACHEABLE",
    "OPENAI_TTL",
    "OpenAICounter",
    "Price",
    "Rates",
    "TraceCalibration",
    "bill",
    "billed_tokens",
    "biller_for",
    "cache_rule",
    "calibrate_models",
    "calibrate_trace",
    "check_recorded_cache",
    "count_text",
    "count_tokens",
    "default_fit",
    "encoding_for",
    "parse_price",
    "price_for",
    "rates_for",
    "recount",
    "set_price",
]
