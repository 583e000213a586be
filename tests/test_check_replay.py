"""Recorded vs replayed compactions (`ctxlab._evaluate.check_replay`, `ctxlab check-replay`) and
their
overlay on the widgets' charts.

The deepagents sample was recorded through the real `create_deep_agent` with a model whose
profile says `max_input_tokens=32000` (traces/README.md, and the model's `serialized` repr in
the file), and the scripted model is not ChatAnthropic (its recorded `_type` is
`scripted-anthropic-chat`), so LangChain counted at 4 characters per token and scaled by the
recorded usage. `check-replay` reads those three settings from the recording; given them the
replay must find the recorded compactions at the recorded calls.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

import ctxlab
from ctxlab._cli.main import main
from ctxlab._evaluate.check_replay import check, family, preset_for, recorded_settings
from ctxlab._ingest.recorded import EDIT, recorded_compactions
from ctxlab._trace import RecordedCompaction, Trace
from ctxlab._view.plots.recorded import RECORDED_LINE, RECORDED_POINTS
from ctxlab.plots import comparison, context_tokens
from ctxlab.policies import get
from ctxlab.widgets import Compare, Scrubber
from tests import samples
from tests.cli_text import messages
from tests.synthetic import make_trace

REPO = Path(__file__).resolve().parents[1]
LONG = REPO / "traces" / "deepagents_long_session.jsonl.xz"
SHORT = REPO / "traces" / "deepagents_short_session.jsonl.xz"
RECORDED_SETTINGS = {"window": 32000, "chars_per_token": 4.0, "use_usage_metadata": True}
FLAGS = ["--window", "32000", "--set", "chars_per_token=4", "--set", "use_usage_metadata=true"]
SUMMARY_OPENING = "You are in the middle of a conversation that has been summarized."


@pytest.fixture(scope="module")
def long_trace() -> Trace:
    return samples.long_trace()


@pytest.fixture(scope="module")
def long_replay(long_trace):
    return ctxlab.replay(long_trace, get("deepagents", **RECORDED_SETTINGS))


def test_compactions_derived_from_a_langsmith_deep_agent(long_trace) -> None:
    found = recorded_compactions(long_trace)
    assert [c.turn for c in found] == long_trace.recorded_compactions == [104, 124, 125]
    # two summaries (README: "2 real summarisations") and the argument truncation between them
    assert [c.kind for c in found] == ["summarize", EDIT, "summarize"]
    assert all(c.trigger == "auto" for c in found)
    turns = long_trace.turns
    assert [c.pre_tokens for c in found] == [turns[t - 1].input_tokens for t in (104, 124, 125)]
    assert [c.post_tokens for c in found] == [turns[t].input_tokens for t in (104, 124, 125)]
    first, _, second = found
    assert first.summary.startswith(SUMMARY_OPENING) and second.summary.startswith(SUMMARY_OPENING)
    assert first.summary != second.summary  # the second summarises the first one's successor
    assert first.summary in {m.text for m in turns[104].inputs}
    assert first.summary not in {m.text for m in turns[103].inputs}
    assert preset_for(long_trace) == ("deepagents", None)


def test_deepagents_sample_replays_its_recorded_compactions(long_trace, long_replay) -> None:
    result = check(long_trace, long_replay)
    pairs = [(p.recorded.turn, p.replayed.turn, p.replayed.kind) for p in result.events]
    assert pairs == [(104, 105, "summarize"), (124, 124, "truncate_args"), (125, 125, "summarize")]
    assert result.turn_agreement == 1.0
    assert result.unpaired == []
    # the replay counts the call before each compaction within 3% of the provider, except right
    # after the truncation, where the recording's usage already reflects the cut arguments
    errors = [p.token_error for p in result.events]
    assert errors[0] < 0.03 and errors[1] < 0.01 and 0.15 < errors[2] < 0.2
    assert result.token_error_median == pytest.approx(errors[0])
    assert [p.replayed_tokens for p in result.events] == [
        long_replay.calls[t - 1].context_tokens for t in (104, 124, 125)
    ]
    summaries = [p.replayed.summary for p in result.events]
    assert summaries[0] and summaries[2] and summaries[1] is None
    assert all(p.note is None for p in result.events)
    assert result.notes == []  # within the 5% goal: nothing to explain


def test_the_recording_fixes_window_counter_and_usage(long_trace) -> None:
    """The settings check-replay applies are read from the file, not assumed."""
    found = recorded_settings(long_trace, "deepagents")
    values = {k: v for k, (v, _) in found.items()}
    assert values == {"window": "32000", "chars_per_token": "4.0", "use_usage_metadata": "true"}
    assert long_trace.metadata["llm_type"] == "scripted-anthropic-chat"
    assert long_trace.metadata["model_profile"]["max_input_tokens"] == 32000
    assert recorded_settings(long_trace, "claude-code") == {}


def test_cli_defaults_take_the_recorded_settings(capsys) -> None:
    """Without flags, check-replay replays under the recording's own settings and says so;
    a flag the user gives wins over the recorded value."""
    assert main(["check-replay", str(LONG), "--json"]) == 0
    (top, _sub) = json.loads(capsys.readouterr().out)["traces"]
    assert top["turn_agreement"] == 1.0
    assert [e["replayed_turn"] for e in top["events"]] == [105, 124, 125]
    assert top["recorded_settings"]["window"]["value"] == "32000"
    assert main(["check-replay", str(LONG), "--json", "--window", "200000"]) == 0
    top = json.loads(capsys.readouterr().out)["traces"][0]
    assert "window" not in top["recorded_settings"] and top["turn_agreement"] == 0.0


def test_an_unknown_window_misses_and_says_why(long_trace) -> None:
    """At the model's public profile (200k) the replay never summarises this trace."""
    result = check(long_trace, ctxlab.replay(long_trace, get("deepagents")))
    assert result.turn_agreement == 0.0
    assert all(p.replayed is None for p in result.events)
    assert "threshold 126,000" in result.events[0].note
    assert "not in the file" in result.events[0].note


def test_a_manual_compaction_is_reported_but_not_counted(long_trace, long_replay) -> None:
    """A manual compaction at the very call the replay summarised does not take that event
    from the automatic one a call earlier, and is left out of the agreement."""
    manual = RecordedCompaction(turn=105, trigger="manual", pre_tokens=8594, summary="asked")
    far = RecordedCompaction(turn=30, trigger="manual", pre_tokens=7000)
    trace = dataclasses.replace(long_trace, compactions=[manual, far])
    result = check(trace, long_replay)
    assert [(p.recorded.turn, p.counted) for p in result.events] == [
        (30, False), (104, True), (105, False), (124, True), (125, True)
    ]  # fmt: skip
    by_turn = {p.recorded.turn: p for p in result.events}
    assert by_turn[104].replayed.turn == 105 and by_turn[105].replayed is None
    assert result.turn_agreement == 1.0
    assert "asked for by the user" in by_turn[105].note
    assert by_turn[30].as_dict()["manual"] is True
    # token errors count manual events too: counting does not depend on who asked
    assert by_turn[105].token_error is not None


def test_agreement_on_a_synthetic_claude_code_trace() -> None:
    """Recorded compactions placed by hand around a claude-code replay's own events: within
    one call agrees, six calls apart does not, a manual one does not count."""
    base = make_trace(150, fmt="anthropic", model="claude-sonnet-4-5", provider="anthropic")
    replay = ctxlab.replay(base, get("claude-code", window=60000))
    turns = [e.turn for e in replay.event_list if e.kind == "summarize"]
    assert turns[:5] == [12, 24, 39, 56, 76]
    recorded = [
        RecordedCompaction(turn=12, trigger="auto", pre_tokens=31000),
        RecordedCompaction(turn=40, trigger="auto", pre_tokens=None),
        RecordedCompaction(turn=70, trigger="auto", pre_tokens=30000),
        RecordedCompaction(turn=100, trigger="manual"),
    ]
    trace = dataclasses.replace(base, format="claude-code", compactions=recorded)
    assert preset_for(trace) == ("claude-code", None)
    result = check(trace, replay)
    apart = [p.calls_apart for p in result.events]
    assert apart[:3] == [0, -1, 6]
    assert result.turn_agreement == pytest.approx(2 / 3)
    assert "the file does not carry the tokens" in result.events[1].note
    assert "6 calls later" in result.events[2].note
    errors = [
        abs(replay.calls[11].context_tokens - 31000) / 31000,
        abs(replay.calls[69].context_tokens - 30000) / 30000,
    ]
    assert result.events[0].token_error == pytest.approx(errors[0])
    assert result.token_error_median == pytest.approx(sum(errors) / 2)


def test_a_count_gap_says_what_the_file_lacks() -> None:
    base = make_trace(60, fmt="anthropic", model="claude-sonnet-4-5", provider="anthropic")
    replay = ctxlab.replay(base, get("claude-code", window=60000))
    doubled = 2 * replay.calls[11].context_tokens
    lacking = "The system prompt is not in the file and is counted as zero tokens."
    trace = dataclasses.replace(
        base,
        format="claude-code",
        compactions=[RecordedCompaction(turn=12, trigger="auto", pre_tokens=doubled)],
        notes=[lacking],
    )
    result = check(trace, replay)
    assert result.token_error_median == pytest.approx(0.5)
    (note,) = result.notes
    assert note.startswith("pre-compaction tokens differ by a median 50% (goal 5%)")
    assert note.endswith(lacking)


def test_presets_by_harness() -> None:
    trace = make_trace(4)
    for fmt, preset in (
        ("codex", "codex"),
        ("openhands", "openhands-llm-summarizing"),
        ("swe-agent", "swe-agent-masking"),
    ):
        assert preset_for(dataclasses.replace(trace, format=fmt)) == (preset, None)
    name, warning = preset_for(dataclasses.replace(trace, format="langsmith-runs"))
    assert name == "deepagents" and "choose one with --policy" in warning
    assert preset_for(trace)[1] is not None
    assert family("summarize") == "summarize" and family("clear_tool_uses") == "edit"


# ----------------------------------------------------------------------------- CLI


def test_cli_json_fields(capsys) -> None:
    assert main(["check-replay", str(LONG), "--json", *FLAGS]) == 0
    out = json.loads(capsys.readouterr().out)
    assert list(out) == ["traces"]
    main_trace, subagent = out["traces"]
    assert list(main_trace)[:5] == [
        "trace_id", "policy", "events", "turn_agreement", "token_error_median"
    ]  # fmt: skip
    assert main_trace["policy"] == "deepagents" and main_trace["turn_agreement"] == 1.0
    assert main_trace["token_error_median"] < 0.05
    first = main_trace["events"][0]
    assert list(first)[:4] == ["recorded_turn", "replayed_turn", "recorded_tokens",
                               "replayed_tokens"]  # fmt: skip
    assert [(e["recorded_turn"], e["replayed_turn"]) for e in main_trace["events"]] == [
        (104, 105), (124, 124), (125, 125)
    ]  # fmt: skip
    assert first["recorded_summary"].startswith(SUMMARY_OPENING) and first["replayed_summary"]
    assert first["manual"] is False and first["trigger"] == "auto"
    assert subagent["events"] == [] and subagent["turn_agreement"] is None


def test_cli_table_and_errors(capsys, tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # the head line whole, not wrapped to the terminal
    assert main(["check-replay", str(LONG), *FLAGS]) == 0
    out = capsys.readouterr().out
    assert "turn agreement 100.0% (3/3 within one call)" in out
    assert "summary at turn 104:" in out and "  recorded: You are in the middle" in out
    assert main(["check-replay", str(SHORT), "--policy", "no-such-policy"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ctxlab: error: argument --policy: invalid value 'no-such-policy'")
    assert len(messages(err)) == 1
    assert main(["check-replay", str(tmp_path / "missing.jsonl")]) == 2
    assert len(messages(capsys.readouterr().err)) == 1
    plain = tmp_path / "messages.json"
    plain.write_text(json.dumps([{"role": "user", "content": "hi"},
                                 {"role": "assistant", "content": "hello"}]))  # fmt: skip
    assert main(["check-replay", str(plain), "--json"]) == 0
    captured = capsys.readouterr()
    assert "ctxlab: warning: no preset models the harness" in captured.err
    assert json.loads(captured.out)["traces"][0]["notes"]


# ----------------------------------------------------------------------------- widgets


def test_scrubber_and_compare_overlay_the_recording(long_trace, long_replay) -> None:
    s = Scrubber(long_replay)
    names = [t.name for t in s.figure.data]
    assert RECORDED_LINE in names and RECORDED_POINTS in names
    assert names[-1] == "current turn"  # the cursor stays last
    line = next(t for t in s.figure.data if t.name == RECORDED_LINE)
    assert list(line.y) == [t.input_tokens for t in long_trace.turns]
    points = [t for t in s.figure.data if t.name == RECORDED_POINTS and t.mode == "markers"]
    assert list(points[0].x) == [104, 124, 125]
    assert list(points[0].y) == [c.pre_tokens for c in recorded_compactions(long_trace)]
    s.show(110)
    assert list(s.figure.data[-1].x) == [110]

    other = ctxlab.replay(long_trace, get("deepagents", window=32000))
    c = Compare(long_replay, other, labels=["recorded settings", "3.3 chars/token"])
    assert [t.name for t in c.figure.data][:3] == [
        "recorded settings", "3.3 chars/token", "uncompacted baseline"
    ]  # fmt: skip
    assert RECORDED_LINE in [t.name for t in c.figure.data]
    c.metric.value = "cumulative"
    line = next(t for t in c.figure.data if t.name == RECORDED_LINE)
    assert line.y[-1] == long_trace.recorded_input_tokens


def test_overlay_escapes_trace_text_and_is_absent_without_a_recording() -> None:
    base = make_trace(30, fmt="anthropic", model="claude-sonnet-4-5", provider="anthropic")
    bad = RecordedCompaction(turn=5, trigger="<b>auto</b>", summary="<script>alert(1)</script>")
    trace = dataclasses.replace(base, compactions=[bad])
    replay = ctxlab.replay(trace, get("raw"))
    fig = context_tokens(replay, recorded=trace)
    marker = next(t for t in fig.data if t.name == RECORDED_POINTS and t.mode == "markers")
    assert "&lt;script&gt;" in marker.hovertext[0] and "<script>" not in marker.hovertext[0]
    assert "&lt;b&gt;auto" in marker.hovertext[0]
    # a plain message list records no usage and no compaction: nothing to draw
    assert not [t for t in context_tokens(replay, recorded=base).data if "recorded" in t.name]
    plain = comparison([replay], labels=["raw"], recorded=base)
    assert [t.name for t in plain.data] == ["raw", "uncompacted baseline"]
