"""Prices from the real genai-prices data: exact models only, one warning, given prices."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import date
from pathlib import Path

import pytest
from genai_prices.data_snapshot import get_snapshot

from ctxlab import replay
from ctxlab._cost.pricing import (
    Price,
    model_key,
    parse_price,
    price_for,
    rates_for,
    set_price,
)
from ctxlab._evaluate.metrics import cache_frame, summary
from ctxlab._trace import from_messages
from ctxlab.policies import Raw
from tests._policy_traces import agent

REPO = Path(__file__).resolve().parents[1]
SHORT = REPO / "traces" / "deepagents_short_session.jsonl.xz"
DAY = date(2026, 12, 1)


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "ctxlab._cli.main", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=300,
        check=False,
    )


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("claude-sonnet-4-5", (3.0, 15.0, 0.30, 3.75)),
        ("gpt-4o", (2.50, 10.0, 1.25, None)),
        ("gpt-5", (1.25, 10.0, 0.125, None)),
    ],
)
def test_known_models_price_from_genai_prices(model, expected):
    price = price_for(model, DAY)
    assert price is not None
    assert (price.input, price.output, price.cache_read, price.cache_write) == expected
    assert price.source.startswith("genai-prices 0.") and price.source.endswith(f"/{model}")
    assert price.date is None  # genai-prices has no dated change for it: its version dates it


def test_dated_price_changes():
    """genai-prices dates some changes: the price in effect on the day, and since when."""
    opus = price_for("claude-opus-4-6", DAY)
    assert opus is not None and opus.date == "2026-03-13"
    before = price_for("gemini-3.6-flash", date(2026, 12, 31))
    after = price_for("gemini-3.6-flash", date(2027, 1, 1))
    assert before is not None and after is not None
    assert after.date == "2027-01-01" and before.date != after.date and before != after


def test_time_of_day_prices_take_the_peak():
    """DeepSeek's off-peak hours: a replay has no time of day, so the peak price (upper bound)."""
    price = price_for("deepseek-chat", DAY)
    assert price is not None and (price.input, price.output) == (0.27, 1.1)
    assert "peak" in price.source


def test_cache_prices_missing_from_genai_prices_follow_the_provider_rule():
    """OpenAI bills no cache write: the write price is the input price (no surcharge)."""
    rates = rates_for("gpt-4o", at=DAY)
    assert rates is not None and rates.price.cache_write == rates.price.input == 2.50
    assert rates.price.cache_read == 1.25 and rates.cache.step == 128


def test_long_context_tier():
    sonnet = price_for("claude-sonnet-4-5", DAY)
    assert sonnet is not None
    assert sonnet.at(200_000).input == 3.0
    long = sonnet.at(200_001)
    assert (long.input, long.output, long.cache_read, long.cache_write) == (6.0, 22.5, 0.6, 7.5)


def test_no_silent_prefix_match_to_another_model():
    """gpt-5-pro is not gpt-5, claude-opus-4-6 is not Opus 4."""
    pro, gpt5 = price_for("gpt-5-pro", DAY), price_for("gpt-5", DAY)
    assert pro is not None and gpt5 is not None
    assert (pro.input, pro.output) == (15.0, 120.0) != (gpt5.input, gpt5.output)
    assert pro.source.endswith("openai/gpt-5-pro")
    opus46, opus4 = price_for("claude-opus-4-6", DAY), price_for("claude-opus-4", DAY)
    assert opus46 is not None and opus4 is not None
    assert (opus46.input, opus46.output) == (5.0, 25.0)
    assert (opus4.input, opus4.output) == (15.0, 75.0)
    assert opus46.source.endswith("anthropic/claude-opus-4-6")


def test_a_name_genai_prices_matches_only_by_prefix_is_refused():
    name = "claude-sonnet-4-5-turbo"
    _, oracle = get_snapshot().find_provider_model(name, None, None, None)
    assert oracle.id == "claude-sonnet-4-5"  # genai-prices' own matcher would guess
    assert price_for(name) is None
    assert price_for("gpt-5-pro-max") is None and price_for("claude-opus-4-6x") is None


@pytest.mark.parametrize(
    "alias",
    [
        "claude-sonnet-4-5-20250929",
        "claude-sonnet-4-5@20250929",
        "anthropic/claude-sonnet-4-5",
        "anthropic:claude-sonnet-4-5",
        "anthropic/claude-sonnet-4-5-20250929",
        "Claude-Sonnet-4-5",
    ],
)
def test_dated_and_provider_prefixed_ids_are_the_same_model(alias):
    assert price_for(alias, DAY) == price_for("claude-sonnet-4-5", DAY)
    assert model_key(alias) == model_key("claude-sonnet-4-5") == "claude-sonnet-4-5"


@pytest.mark.parametrize(
    ("given", "used"),
    [
        ("claude-sonnet-4-5", "anthropic/claude-sonnet-4-5-20250929"),
        ("anthropic/claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
    ],
)
def test_a_given_price_applies_to_every_spelling_of_its_model(given, used):
    price = Price(1.0, 2.0)
    set_price(given, price)
    try:
        assert price_for(used) is price
    finally:
        set_price(given, None)
    assert price_for(used) != price


def test_unknown_model_costs_are_null_and_a_given_price_fills_them(caplog):
    trace = from_messages(agent(5), model="acme-unpriced-1")
    result = replay(trace, Raw())
    with caplog.at_level("WARNING", logger="ctxlab._cost.pricing"):
        row = summary(result, trace)
        assert cache_frame(result, trace)["cost_usd"].null_count() == 6
    assert row["cost_usd"] is None and row["cost_usd_with_cache"] is None
    assert row["summarizer_cost_usd"] is None and row["price_source"] is None
    lines = [r.getMessage() for r in caplog.records if "acme-unpriced-1" in r.getMessage()]
    assert len(lines) == 1 and "--price acme-unpriced-1=" in lines[0] and "Price" in lines[0]

    given = summary(result, trace, price=Price(1.0, 2.0, source="test quote"))
    frame = cache_frame(result, trace, price=Price(1.0, 2.0))
    expected = (frame["input_tokens"].sum() * 1.0 + frame["output_tokens"].sum() * 2.0) / 1e6
    assert given["cost_usd"] == pytest.approx(expected) and given["price_source"] == "test quote"
    # no cache prices given, unknown provider: cached tokens cost the input price
    assert given["cost_usd_with_cache"] == pytest.approx(expected)


def test_set_price_reaches_the_per_turn_cache_frame():
    """The explorer's readout prices through `cache_frame`, so `set_price` reaches it."""
    trace = from_messages(agent(5), model="acme-unpriced-2")
    result = replay(trace, Raw())
    set_price("acme-unpriced-2", Price(1.0, 2.0, cache_read=0.1))
    try:
        frame = cache_frame(result, trace)
    finally:
        set_price("acme-unpriced-2", None)
    assert frame["cost_usd"].null_count() == 0
    assert frame["cost_usd_with_cache"].sum() <= frame["cost_usd"].sum()


def test_parse_price():
    assert parse_price("gpt-5-pro=15,120") == ("gpt-5-pro", Price(15.0, 120.0))
    assert parse_price("3,15,0.3,3.75") == (None, Price(3.0, 15.0, 0.3, 3.75))
    assert parse_price("openai:gpt-4o=2.5,10,1.25") == ("openai:gpt-4o", Price(2.5, 10.0, 1.25))
    for bad in ("gpt-5", "=1,2", "m=1", "m=1,2,3,4,5", "m=a,b", "m=-1,2", "m=nan,2"):
        with pytest.raises(ValueError):
            parse_price(bad)


def test_cli_warns_once_for_an_unknown_model():
    out = _cli(
        "compare", str(SHORT), "--policy", "raw", "--policy", "deepagents",
        "--model", "acme-unpriced-cli", "--json",
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["replays"]
    assert len(rows) >= 2 and all(r["cost_usd"] is None for r in rows)
    lines = [line for line in out.stderr.splitlines() if "acme-unpriced-cli" in line]
    assert len(lines) == 1, out.stderr
    assert "--price acme-unpriced-cli=IN,OUT" in lines[0] and "Price" in lines[0]


def test_cli_price_overrides_and_fills():
    base = _cli("compare", str(SHORT), "--policy", "raw", "--json")
    given = _cli(
        "compare", str(SHORT), "--policy", "raw", "--json",
        "--price", "anthropic/claude-sonnet-4-5=1,2", "--price", "other-model=9,9",
    )  # fmt: skip
    assert base.returncode == given.returncode == 0, base.stderr + given.stderr
    assert base.stderr.strip() == given.stderr.strip() == ""
    (old,) = json.loads(base.stdout)["replays"]
    (new,) = json.loads(given.stdout)["replays"]
    assert old["price_source"].startswith("genai-prices") and new["price_source"] == "given"
    # same tokens; Sonnet 4.5 costs $3/$15, the given price $1/$2
    assert new["cumulative_input_tokens"] == old["cumulative_input_tokens"]
    assert 0 < new["cost_usd"] < old["cost_usd"] / 3
    assert new["cost_usd_with_cache"] < new["cost_usd"]  # Anthropic cache rule: 0.1x reads

    unknown = _cli(
        "compare", str(SHORT), "--policy", "raw", "--json",
        "--model", "acme-unpriced-cli", "--price", "1,2",
    )  # fmt: skip
    assert unknown.returncode == 0 and "acme-unpriced-cli" not in unknown.stderr
    (row,) = json.loads(unknown.stdout)["replays"]
    assert row["cost_usd"] > 0 and row["price_source"] == "given"

    bad = _cli("compare", str(SHORT), "--policy", "raw", "--price", "gpt-5=cheap")
    assert bad.returncode == 2 and "--price" in bad.stderr


def test_price_lookups_read_no_network():
    """genai-prices' data ships in the wheel: loading it and looking prices up opens no socket
    (the hook is installed after the imports: urllib3, imported by ctxlab, probes IPv6 with a
    local bind when it loads)."""
    code = (
        "import sys\n"
        "import genai_prices\n"
        "from ctxlab._cost.pricing import price_for, rates_for\n"
        "seen = []\n"
        "sys.addaudithook(lambda e, a: seen.append(e) if e.startswith('socket.') else None)\n"
        "assert price_for('claude-sonnet-4-5') is not None\n"
        "assert rates_for('gpt-5') is not None and rates_for('acme-nothing') is None\n"
        "print(seen)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert out.stdout.strip() == "[]"
