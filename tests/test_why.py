"""Why a policy acted (one line per event) and warnings for settings that defeat themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxlab._cli.main import main
from ctxlab._replay.policies.base import Event
from ctxlab._replay.policies.catalog import get_spelled
from ctxlab._replay.replay import replay
from ctxlab._replay.why import setting_warnings, why
from tests.synthetic import make_trace

COMPACTED = (
    "real-traces/claude-code-session-compacted/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"
)


def test_replay_says_budget_when_the_budget_rule_fires(
    shared: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The real compacted session summarises at 126,169 tokens under a 170,000 trigger: the
    input budget (0.95 x window less the call's 64k output) fired, and the table says so."""
    monkeypatch.setenv("COLUMNS", "100")
    assert main(["replay", str(shared / "data" / COMPACTED), "--window", "200000"]) == 0
    out = capsys.readouterr().out
    line = next(line for line in out.splitlines() if "summarize(" in line)
    assert "budget: 126,169 tokens over the input budget" in line
    assert all(len(line) <= 100 for line in out.splitlines())


def test_each_rule_is_named_with_its_count() -> None:
    trigger = Event("summarize", 3, (0, 1), 171_230, 20_000, None, "trigger")
    assert why(trigger, {"trigger": 170_000}) == "trigger: 171,230 tokens >= 170,000"
    assert why(trigger) == "trigger: 171,230 tokens reached the trigger"
    offload = Event("offload_tool_result", 3, (4,), 30_000, 50, "/f", "> 80000 chars")
    assert why(offload) == "tool-result limit: a result > 80,000 chars, moved to a file"
    overflow = Event("overflow_error", 3, (), 205_000, None, None, "Context remains above")
    assert why(overflow).startswith("overflow: 205,000 tokens")
    both = Event("summarize", 3, (0,), 191_000, 20_000, None, "trigger+budget")
    assert why(both).startswith("trigger and budget: 191,000 tokens")
    other = Event("forget", 3, (0,), 9_000, 1_000, None, "max_events=40")
    assert why(other) == "trigger: max_events=40 (at 9,000 tokens)"


def test_every_event_of_a_real_replay_gets_a_line() -> None:
    trace = make_trace(120, seed=3, model="claude-sonnet-4-5", provider="anthropic")
    result = replay(trace, get_spelled("deepagents", {"window": "30000"}))
    kinds = {e.kind for e in result.event_list}
    assert {"summarize", "offload_tool_result"} <= kinds
    for event in result.event_list:
        text = why(event)
        assert "\n" not in text and len(text) < 100
        assert text.split(":")[0] in {
            "trigger",
            "budget",
            "trigger and budget",
            "argument truncation",
            "tool-result limit",
            "human-message limit",
            "overflow",
        }, text


def test_degenerate_settings_are_named() -> None:
    trace = make_trace(20, seed=1, model="claude-sonnet-4-5", provider="anthropic")
    sane = get_spelled("deepagents", {"window": "200000"})
    assert setting_warnings(sane, trace, 5_000) == []
    keep = get_spelled(
        "deepagents", {"window": "200000", "trigger": "tokens:20000", "keep": "tokens:30000"}
    )
    assert ["keep (30,000 tokens) is at or above the trigger (20,000 tokens)"] == [
        w.split(":")[0] for w in setting_warnings(keep, trace)
    ]
    equal = get_spelled(
        "deepagents", {"window": "200000", "trigger": "tokens:20000", "keep": "tokens:20000"}
    )
    assert len(setting_warnings(equal, trace)) == 1
    messages = get_spelled("deepagents", {"trigger": "messages:5", "keep": "messages:6"})
    assert any("6 messages" in w for w in setting_warnings(messages, trace))
    above = get_spelled("deepagents", {"window": "20000", "trigger": "tokens:30000"})
    assert any("above the window" in w for w in setting_warnings(above, trace))
    small = get_spelled("deepagents", {"window": "20000"})
    assert any(
        "smaller than the first request" in w for w in setting_warnings(small, trace, 25_000)
    )
