"""The harness presets decide as the harness did: on what it counts, with the settings its file
records, by its own rule (docs/check-replay.md, "Harness rules").

* Claude Code runs a 200k window unless the model id asks for 1M (`[1m]`), compacts at
  effective window - 13,000, and counts the system prompt and tool schemas its transcript
  lacks: `counted_as` estimates them from the transcript's usage.
* Codex records 95% of its window as `model_context_window`; its limit is 90% of the window.
* A redacted copy of a shared session (made here, never committed) reads, replays and
  check-replays as the original does.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from langchain_core.messages import HumanMessage

import ctxlab
from ctxlab._cli.main import main
from ctxlab._cost.calibration import FILE_ONLY, counted_as
from ctxlab._cost.redacted import hidden_chars
from ctxlab._cost.tokens import message_tokens
from ctxlab._evaluate.check_replay import check, recorded_settings
from ctxlab._ingest.formats.redaction import ARGUMENTS_TEXT
from ctxlab._replay.policies.claude_code import ClaudeCode, claude_code_window
from ctxlab._replay.policies.codex import Codex, window_from_recorded
from ctxlab.policies import get
from tests.conftest import SHARED
from tests.redaction import marker, redact_claude_code_line, redact_codex_line, redact_file

CLAUDE = "real-traces/claude-code-session-compacted/ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl.gz"
CODEX = "real-traces/codex-rollout/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"  # noqa: E501


def _check_json(path: Path, capsys, *extra: str) -> list[dict]:
    capsys.readouterr()
    assert main(["check-replay", str(path), "--json", *extra]) == 0
    return json.loads(capsys.readouterr().out)["traces"]


def _shared_trace(name: str) -> ctxlab.Trace:
    if not (SHARED / "data").is_dir():
        pytest.skip(f"shared data not found at {SHARED} (set CTXLAB_SHARED)")
    return ctxlab.load(SHARED / "data" / name)[0]


@pytest.fixture(scope="module")
def claude() -> ctxlab.Trace:
    return _shared_trace(CLAUDE)


@pytest.fixture(scope="module")
def codex() -> ctxlab.Trace:
    return _shared_trace(CODEX)


def test_claude_code_window_is_200k_unless_the_model_id_asks_for_1m() -> None:
    assert claude_code_window("claude-opus-4-6") == 200_000  # its public profile says 1M
    assert claude_code_window("claude-opus-4-6[1m]") == 1_000_000
    assert claude_code_window(None) == 200_000
    assert ClaudeCode().threshold(200_000) == 167_000
    assert ClaudeCode().threshold(1_000_000) == 967_000
    # the percent override only lowers it (Math.min, anthropics/claude-code#31806)
    assert ClaudeCode(autocompact_pct_override=50).threshold(200_000) == 90_000
    assert ClaudeCode(autocompact_pct_override=95).threshold(200_000) == 167_000


def test_claude_code_counts_what_its_transcript_lacks(claude) -> None:
    assert claude.model == "claude-haiku-4-5-20251001"
    assert ClaudeCode().window_for(claude) == 200_000
    estimate = ClaudeCode().harness_count(claude)
    # the first call recorded 26,010 input tokens for a 50-token user message: about 26k of
    # system prompt and tool schemas the file does not hold
    assert estimate.method == "usage"
    assert 20_000 <= estimate.added_tokens <= 30_000
    first = counted_as(claude, 3.3, "first_call")
    assert first.method == "first_call" and first.added_tokens == 26_010 - 50
    assert counted_as(claude, 3.3, "file") is FILE_ONLY
    # the decision moves with the estimate: 167,000 as the harness counts it
    threshold = ClaudeCode().thresholds(claude)["trigger"]
    assert estimate.harness(threshold) == pytest.approx(167_000, abs=2)
    assert ClaudeCode(counted_as="file").thresholds(claude)["trigger"] == 167_000
    with pytest.raises(ValueError, match="counted_as must be one of"):
        ClaudeCode(counted_as="guess").thresholds(claude)


def test_disabled_auto_compact_never_compacts(claude) -> None:
    replay = ctxlab.replay(claude, ClaudeCode(auto_compact=False))
    assert replay.event_list == []


def test_check_replay_counts_as_the_harness_and_says_so(shared, capsys) -> None:
    row = _check_json(shared / "data" / CLAUDE, capsys)[0]
    assert row["recorded_settings"]["window"]["value"] == "200000"
    assert row["counted_as"]["method"] == "usage"
    (event,) = row["events"]
    assert event["trigger"] == "manual" and event["recorded_tokens"] == 142_431
    # was 45% with the file counted alone (77,899 tokens where Claude Code counted 142,431)
    assert row["token_error_median"] <= 0.05
    assert event["replayed_policy_tokens"] < event["replayed_tokens"]
    off = _check_json(shared / "data" / CLAUDE, capsys, "--set", "counted_as=file")[0]
    assert off["counted_as"]["method"] == "file"
    (plain,) = off["events"]
    assert plain["replayed_tokens"] == plain["replayed_policy_tokens"]
    assert off["token_error_median"] > 0.4


def test_codex_window_is_the_recorded_one() -> None:
    assert window_from_recorded(258_400) == 272_000  # 95% of 272,000
    assert window_from_recorded(200_000) == 200_000  # not 95% of a whole thousand: as is
    assert Codex().limit(272_000) == 244_800
    assert Codex().limit(272_000, recorded=200_000) == 200_000
    assert Codex(auto_compact_token_limit=250_000).limit(272_000) == 244_800


def test_codex_rollout_runs_with_its_recorded_window(codex) -> None:
    assert codex.metadata["model_context_window"] == 258_400
    assert Codex().window_for(codex) == 272_000  # the gpt-5.5 profile would say 1,050,000
    settings = recorded_settings(codex, "codex")
    assert settings["window"][0] == "272000"
    estimate = Codex().harness_count(codex)
    limit = Codex().thresholds(codex)["trigger"]
    assert estimate.harness(limit) == pytest.approx(244_800, abs=2)


def test_redaction_markers_count_as_what_they_hide() -> None:
    text = "x" * 5000
    mark = marker(text)
    assert hidden_chars(mark) == 5000 - len(mark)
    assert hidden_chars("no marker here") == 0
    assert message_tokens(HumanMessage(content=mark), 4.0) == message_tokens(
        HumanMessage(content=text), 4.0
    )


@pytest.mark.parametrize(
    ("name", "redact"),
    [(CLAUDE, redact_claude_code_line), (CODEX, redact_codex_line)],
    ids=["claude-code", "codex"],
)
def test_a_redacted_copy_reads_replays_and_checks_as_the_original(
    shared, tmp_path, capsys, name, redact
) -> None:
    source = shared / "data" / name
    copy = redact_file(source, tmp_path / source.name.removesuffix(".gz"), redact)
    assert "[REDACTED_TEXT len=" in copy.read_text()
    original, redacted = ctxlab.load(source)[0], ctxlab.load(copy)[0]
    assert len(redacted.turns) == len(original.turns)
    assert len(redacted.messages) == len(original.messages)
    assert [t.input_tokens for t in redacted.turns] == [t.input_tokens for t in original.turns]
    assert [c.turn for c in redacted.compactions] == [c.turn for c in original.compactions]
    kept = [
        call["args"][ARGUMENTS_TEXT]
        for m in redacted.messages
        for call in getattr(m, "tool_calls", ())
        if ARGUMENTS_TEXT in call["args"]
    ]
    assert kept and all(text.startswith("[REDACTED_ARGUMENTS len=") for text in kept)
    assert any("redaction markers" in note for note in redacted.notes)
    policy = get("claude-code" if name == CLAUDE else "codex")
    # the policy's own count: within 2% of the original's at every call up to its first
    # compaction (after it, a summary of markers is not a summary of the texts)
    a, b = ctxlab.replay(original, policy), ctxlab.replay(redacted, policy)
    first_event = min((e.turn for e in a.event_list if e.turn is not None), default=None)
    for x, y in zip(a.calls[:first_event], b.calls[:first_event], strict=True):
        assert abs(x.context_tokens - y.context_tokens) <= 0.02 * x.context_tokens + 60
    first, second = check(original, a), check(redacted, b)
    assert [p.replayed.turn if p.replayed else None for p in first.events] == [
        p.replayed.turn if p.replayed else None for p in second.events
    ]
    assert [e.turn for e in first.unpaired] == [e.turn for e in second.unpaired]
    assert first.turn_agreement == second.turn_agreement
    if first.token_error_median is not None:
        assert abs(first.token_error_median - second.token_error_median) <= 0.01
    row = _check_json(copy, capsys)[0]
    assert row["turn_agreement"] == first.turn_agreement


def test_inspect_presets_take_the_logs_compaction_config() -> None:
    """The react solver's `compaction=` parameters are in the log's plan; check-replay runs
    the preset with them (threshold 4000 tokens here, not 90% of an unknown window)."""
    logs = Path(__file__).resolve().parent / "data" / "inspect_ai"
    (trim,) = ctxlab.load(logs / "react-trim.eval")
    assert trim.metadata["compaction_config"]["type"] == "trim"
    settings = recorded_settings(trim, "inspect-trim")
    assert {k: v for k, (v, _) in settings.items()} == {
        "threshold": "4000",
        "preserve": "0.8",
        "counted_as": "previous_call",
    }
    (summary,) = ctxlab.load(logs / "react-summary.eval")
    assert {k: v for k, (v, _) in recorded_settings(summary, "inspect-summary").items()} == {
        "threshold": "4000",
        "counted_as": "previous_call",
    }
