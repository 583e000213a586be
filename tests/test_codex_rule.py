"""Codex compacts on what Codex counts: the last response's total tokens, plus its estimate of
the encrypted reasoning of earlier turns, plus the items added since (docs/check-replay.md,
"Codex").

The rule is checked twice against real rollouts, each time by a short script that reads the
file with the standard library, not through ctxlab: the reasoning estimate ctxlab adds equals
the one Codex's formula gives on the file's own items, and on the redacted Codex Desktop
0.104.0-alpha.1 rollout that compacted automatically (../shared/data/corpus/codex-localpush,
skipped when absent) the first check whose total reaches 90% of the 272,000 window is the call
after which Codex compacted, and `ctxlab check-replay` compacts at that call.
"""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path
from typing import Any

import pytest

import ctxlab
from ctxlab._cli.main import main
from ctxlab._messages import kind_of
from ctxlab._replay.policies.codex import Codex, CodexStage, EarlierReasoning, reasoning_tokens
from ctxlab._replay.policies.engine import JUMPS, Item, declares
from tests.conftest import SHARED

ROLLOUT = "real-traces/codex-rollout/rollout-2026-05-11T11-26-55-019e1625-789d-76c0-80ab-3724b5ddb799.jsonl.gz"  # noqa: E501
COMPACTED = (
    "corpus/codex-localpush/"
    "rollout-2026-02-23T12-54-34-019c8a59-e9dd-71f0-9ae3-4079fe9726a9.jsonl.gz"
)
LIMIT = 272_000 * 9 // 10
"""gpt-5.3-codex's default limit: 90% of its 272,000 window (the rollout records 95% of it,
258,400, as `model_context_window`)."""

_MARKER = re.compile(r"\[REDACTED_[A-Z_]+ len=(\d+) sha=[0-9a-f]+\]")
_OUTPUTS = ("function_call_output", "custom_tool_call_output")
_MODEL_ITEMS = ("reasoning", "function_call", "custom_tool_call", "local_shell_call")


def _lines(path: Path) -> list[dict[str, Any]]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _chars(text: str) -> int:
    """Length of `text` with each redaction marker counted as the `len=N` it hid."""
    return len(text) + sum(int(m.group(1)) - len(m.group(0)) for m in _MARKER.finditer(text))


def _estimate(item: dict[str, Any]) -> int:
    """Codex 0.104's `estimate_item_token_count`: encrypted reasoning from its length, any
    other item as its serialized JSON, 4 bytes a token, rounded up."""
    if item.get("type") == "reasoning" and item.get("encrypted_content"):
        return -(-max(0, _chars(item["encrypted_content"]) * 3 // 4 - 650) // 4)
    return -(-_chars(json.dumps(item, separators=(",", ":"), ensure_ascii=False)) // 4)


def _is_user(item: dict[str, Any]) -> bool:
    return item.get("type") == "message" and item.get("role") == "user"


def _earlier_reasoning(items: list[dict[str, Any]]) -> int:
    """`get_non_last_reasoning_items_tokens`: encrypted reasoning before the last user message."""
    last = max((k for k, item in enumerate(items) if _is_user(item)), default=0)
    return sum(
        _estimate(item)
        for item in items[:last]
        if item.get("type") == "reasoning" and item.get("encrypted_content")
    )


def _checks(path: Path) -> list[tuple[int, int]]:
    """Codex's total at each check after a call (its tool outputs recorded, before anything
    else): (the call's number, last `total_tokens` + earlier reasoning + the items added after
    the last model-generated one). A `compacted` line replaces the history."""
    items: list[dict[str, Any]] = []
    out: list[tuple[int, int]] = []
    calls, last_total, last_usage, pending = 0, 0, None, False
    for line in _lines(path):
        kind, payload = line["type"], line["payload"]
        is_output = kind == "response_item" and payload.get("type") in _OUTPUTS
        is_event = kind == "event_msg" and payload.get("type") not in ("task_started",)
        if pending and not is_output and not is_event:
            model = [
                k
                for k, item in enumerate(items)
                if item.get("type") in _MODEL_ITEMS
                or (item.get("type") == "message" and item.get("role") == "assistant")
            ]
            after = items[model[-1] + 1 :] if model else items
            total = last_total + _earlier_reasoning(items) + sum(map(_estimate, after))
            out.append((calls, total))
            pending = False
        if kind == "response_item":
            items.append(payload)
        elif kind == "compacted":
            items = list(payload.get("replacement_history") or [])
        elif kind == "event_msg" and payload.get("type") == "token_count" and payload["info"]:
            usage = payload["info"]["last_token_usage"]
            if usage != last_usage and usage["input_tokens"] > 0:
                calls, last_total, pending = calls + 1, usage["total_tokens"], True
            last_usage = usage
    return out


def _shared(name: str) -> Path:
    path = SHARED / "data" / name
    if not path.is_file():
        pytest.skip(f"{path} not found (set CTXLAB_SHARED)")
    return path


def test_reasoning_estimate_is_codex_formula() -> None:
    # 2,296 base64 characters: 1,722 bytes, less 650, in 4-byte tokens rounded up
    assert [reasoning_tokens(n) for n in (2296, 866, 0, 1000)] == [268, 0, 0, 25]


def test_earlier_reasoning_matches_codex_estimate_on_a_real_rollout() -> None:
    path = _shared(ROLLOUT)
    (trace,) = ctxlab.load(path)
    items = [x["payload"] for x in _lines(path) if x["type"] == "response_item"]
    expected = _earlier_reasoning(items)
    assert expected > 0
    view = [Item(k, m, kind_of(m)) for k, m in enumerate(trace.messages)]
    assert EarlierReasoning(trace).tokens(view, 0) == expected
    # none before a position past the last user message
    assert EarlierReasoning(trace).tokens(view, len(view)) == 0


def test_the_stage_jumps_only_without_reasoning_to_add() -> None:
    path = _shared(ROLLOUT)
    (trace,) = ctxlab.load(path)
    (with_reasoning,) = Codex().stages(trace, 272_000)
    (without,) = Codex(earlier_reasoning=False).stages(trace, 272_000)
    assert isinstance(with_reasoning, CodexStage) and isinstance(without, CodexStage)
    assert not declares(with_reasoning, JUMPS) and declares(without, JUMPS)


def test_codex_compacted_where_its_count_first_reached_the_limit() -> None:
    """Read from the file alone: the only check at or past 244,800 is the one after the call
    the `compacted` line follows (212,134 total tokens + 33,320 earlier reasoning + 80 of the
    apply_patch output = 245,534); the check before it came to 243,279."""
    path = _shared(COMPACTED)
    checks = _checks(path)
    reached = [(call, total) for call, total in checks if total >= LIMIT]
    (trace,) = ctxlab.load(path)
    (compaction,) = trace.compactions
    assert [call for call, _ in reached] == [compaction.turn]
    before = max(total for call, total in checks if call < compaction.turn)
    assert (before, reached[0][1]) == (243_279, 245_534)


def _replayed(path: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> list[int | None]:
    capsys.readouterr()
    assert main(["check-replay", str(path), "--json", *extra]) == 0
    (trace,) = json.loads(capsys.readouterr().out)["traces"]
    return [e["calls_apart"] for e in trace["events"]]


def test_check_replay_compacts_where_codex_did(capsys: pytest.CaptureFixture[str]) -> None:
    path = _shared(COMPACTED)
    assert _replayed(path, capsys) == [0]
    # deciding on the request alone compacts long after Codex did
    late = _replayed(path, capsys, "--set", "earlier_reasoning=false")
    assert late != [0] and all(c is None or abs(c) > 1 for c in late)
