"""Acceptance test: ctxlab's DeepAgents policy decides exactly as the real deepagents middleware.

Each case replays one long synthetic trace (>= 300 turns, big tool results, big write_file
inputs, parallel calls, same-path parallel writes, oversized human messages) twice: through the
real middleware (`deepagents_oracle.run_oracle`) and through `ctxlab.replay`. Per-turn request
token counts and message counts, the event lists and the virtual filesystems must be identical.
Paths that deepagents draws from uuid4 and the history timestamps are normalised before
comparing files.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from ctxlab._replay.replay import Replay, replay
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import Fixed
from tests.deepagents_oracle import run_graph, run_oracle, upstream_default_tools
from tests.synthetic import make_trace

SUMMARY = "## SESSION INTENT\nSynthetic.\n\n## SUMMARY\n" + "Progress was made. " * 80
BIG = dict(large_human_at=120, huge_human_at=200)


def _trunc(trigger: float, keep: float = 0.10) -> dict[str, Any]:
    return {
        "trigger": ("fraction", trigger),
        "keep": ("fraction", keep),
        "truncate_args_settings": {"trigger": ("fraction", trigger), "keep": ("fraction", keep)},
    }


# id: (format, turns, window, reserved max_tokens, explicit settings or None, tools, trace kwargs)
CASES: dict[str, tuple] = {
    "openai-30k-defaults": ("openai", 320, 30_000, None, None, "trace", BIG),
    "anthropic-30k-defaults-reserved": ("anthropic", 320, 30_000, 4096, None, "trace", BIG),
    "openai-200k-defaults": ("openai", 400, 200_000, None, None, "trace", {"big": 0.12}),
    "anthropic-200k-reserved-64k": (
        "anthropic",
        400,
        200_000,
        64_000,
        None,
        "trace",
        {"big": 0.12},
    ),
    "openai-no-profile": ("openai", 320, None, None, None, "trace", BIG),
    "anthropic-no-profile": ("anthropic", 320, None, None, None, "trace", BIG),
    "openai-30k-trigger-0.25": ("openai", 320, 30_000, None, _trunc(0.25), "trace", BIG),
    "anthropic-200k-trigger-0.25-reserved": (
        "anthropic",
        320,
        200_000,
        8_000,
        _trunc(0.25),
        "trace",
        {"big": 0.1},
    ),
    "openai-200k-trigger-0.25-deepagents-tools": (
        "openai",
        320,
        200_000,
        None,
        _trunc(0.25),
        "deepagents",
        {"big": 0.1},
    ),
    "anthropic-30k-overflow": ("anthropic", 300, 30_000, 4096, None, "trace", {"big": 0.4, **BIG}),
    "openai-and-or-clauses": (
        "openai",
        300,
        100_000,
        None,
        {
            "trigger": [{"tokens": 40_000, "messages": 120}, ("fraction", 0.6)],
            "keep": ("messages", 12),
            "truncate_args_settings": {
                "trigger": ("messages", 40),
                "keep": ("tokens", 6_000),
                "max_length": 500,
            },
        },
        "trace",
        {"same_path": 0.5},
    ),
    "anthropic-keep-tokens": (
        "anthropic",
        300,
        60_000,
        2_000,
        # a hand-built SummarizationMiddleware: argument truncation off unless passed
        {"trigger": ("tokens", 30_000), "keep": ("tokens", 5_000), "truncate_args_settings": None},
        "trace",
        BIG,
    ),
}


def _events(events: list[tuple]) -> list[tuple]:
    """Order-independent within a turn; uuid-drawn paths reduced to their kind."""
    out = []
    for kind, turn, touched, before, after, path in events:
        if kind == "summarize":
            path = "history"
        if kind == "offload_human_message":
            before, path = None, "human"
        out.append((kind, turn, tuple(touched), before, after, path))
    return sorted(out, key=repr)


def _files(files: dict[str, str]) -> dict[str, Any]:
    """Large results by path; history files and human dumps by content, normalised."""
    tool = {p: t for p, t in files.items() if p.startswith("/large_tool_results/")}
    history = sorted(
        re.sub(r"^## Summarized at .*$", "## Summarized at T", t, flags=re.M)
        for p, t in files.items()
        if p.startswith("/conversation_history/session_")
    )
    human = sorted(
        t
        for p, t in files.items()
        if p.startswith("/conversation_history/") and not p.split("/")[-1].startswith("session_")
    )
    return {"tool": tool, "history": history, "human": human, "paths": len(files)}


def _ours(result: Replay) -> tuple[list[tuple], list[tuple]]:
    turns = [(c.turn, c.context_tokens, c.messages) for c in result.calls]
    events = [
        (e.kind, e.turn, e.messages, e.tokens_before, e.tokens_after, e.file_path)
        for e in result.event_list
    ]
    return turns, events


_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"


def _histories_relative(texts: list[str]) -> list[str]:
    """Session ids and human-dump uuids are random in deepagents: compare them as placeholders."""
    return [re.sub(_UUID, "U", re.sub(r"session_[0-9a-f]{32}", "session_X", t)) for t in texts]


@pytest.mark.parametrize("case", list(CASES))
def test_matches_real_middleware(case: str) -> None:
    fmt, turns, window, max_tokens, settings, tools, kwargs = CASES[case]
    trace = make_trace(turns, fmt=fmt, seed=len(case), **kwargs)
    anthropic = fmt == "anthropic"
    request_tools = upstream_default_tools() if tools == "deepagents" else trace.tools
    oracle = run_oracle(
        trace,
        window=window,
        anthropic=anthropic,
        max_tokens=max_tokens,
        tools=request_tools,
        summary_text=SUMMARY,
        settings=settings,
    )
    policy = DeepAgents(
        window=window,
        chars_per_token=3.3 if anthropic else 4.0,
        max_output_tokens=max_tokens,
        tools=tools,
        **(settings or {}),
    )
    result = replay(trace, policy, summarizer=Fixed(SUMMARY))
    turns_ours, events_ours = _ours(result)

    assert len(turns_ours) == turns
    assert turns_ours == oracle.turns
    assert _events(events_ours) == _events(oracle.events)
    ours_files, real_files = _files(result.files), _files(oracle.files)
    assert ours_files["tool"] == real_files["tool"]
    assert _histories_relative(ours_files["history"]) == _histories_relative(real_files["history"])
    assert ours_files["human"] == real_files["human"]
    assert ours_files["paths"] == real_files["paths"]
    kinds = {e[0] for e in events_ours}
    assert "summarize" in kinds and "offload_tool_result" in kinds


def test_usage_metadata_scaling_and_reported_trigger() -> None:
    """`use_usage_metadata=True` scales counts and trusts reported usage, as LangChain does."""
    trace = make_trace(300, fmt="anthropic", seed=21, provider="anthropic", usage=True)
    oracle = run_oracle(
        trace,
        window=200_000,
        anthropic=True,
        max_tokens=64_000,
        tools=trace.tools,
        summary_text=SUMMARY,
        ls_provider="anthropic",
    )
    policy = DeepAgents(window=200_000, max_output_tokens=64_000, use_usage_metadata=True)
    result = replay(trace, policy, Fixed(SUMMARY))
    turns, events = _ours(result)
    assert turns == oracle.turns
    assert _events(events) == _events(oracle.events)
    plain = replay(trace, DeepAgents(window=200_000, max_output_tokens=64_000), Fixed(SUMMARY))
    assert plain.turns["context_tokens"].sum() != result.turns["context_tokens"].sum()


def test_recorded_max_tokens_and_deepagents_plus_trace_tools() -> None:
    """A call's recorded max_tokens sets its input budget; tools = deep agent's + recorded."""
    base = make_trace(300, fmt="openai", seed=22, big=0.15)
    turns = [replace(t, max_output_tokens=(50_000 if t.index % 3 else None)) for t in base.turns]
    trace = replace(base, turns=turns)
    own = upstream_default_tools()
    names = {t.name for t in own}
    tools = own + [t for t in trace.tools if t["function"]["name"] not in names]
    oracle = run_oracle(
        trace, window=100_000, anthropic=False, max_tokens=None, tools=tools, summary_text=SUMMARY
    )
    result = replay(trace, DeepAgents(window=100_000, tools="deepagents+trace"), Fixed(SUMMARY))
    ours, events = _ours(result)
    assert ours == oracle.turns
    assert _events(events) == _events(oracle.events)
    assert any(e.reason and "budget" in e.reason for e in result.event_list)


@pytest.mark.parametrize(
    ("model", "window", "max_tokens"),
    [
        ("claude-sonnet-4-5", 200_000, 64_000),
        ("gpt-5-2025-08-07", None, None),
        ("gpt-4o", 128_000, None),
    ],
)
def test_defaults_from_model_profile(
    model: str, window: int | None, max_tokens: int | None
) -> None:
    """`DeepAgents()` with everything on auto resolves what deepagents resolves for the model."""
    anthropic = model.startswith("claude")
    trace = make_trace(
        300, fmt="anthropic" if anthropic else "openai", seed=7, model=model, big=0.15
    )
    oracle = run_oracle(
        trace,
        window=window,
        anthropic=anthropic,
        max_tokens=max_tokens,
        tools=trace.tools,
        summary_text=SUMMARY,
    )
    turns_ours, events_ours = _ours(replay(trace, DeepAgents(), summarizer=Fixed(SUMMARY)))
    assert turns_ours == oracle.turns
    assert _events(events_ours) == _events(oracle.events)


@pytest.mark.parametrize(
    ("fmt", "window", "max_tokens"), [("openai", 30_000, None), ("anthropic", 200_000, 64_000)]
)
def test_matches_a_real_deep_agent_graph(fmt: str, window: int, max_tokens: int | None) -> None:
    """Graph mode: a real `create_deep_agent` (full stack, LangGraph, checkpointer) replaying the
    trace asks the model for exactly the requests ctxlab computes."""
    trace = make_trace(300, fmt=fmt, seed=31, episodes=True, big=0.15, huge_human_at=150)
    graph = run_graph(
        trace,
        window=window,
        anthropic=fmt == "anthropic",
        max_tokens=max_tokens,
        summary_text=SUMMARY,
    )
    policy = DeepAgents(
        window=window,
        chars_per_token=3.3 if fmt == "anthropic" else 4.0,
        max_output_tokens=max_tokens,
        tools="deepagents",
    )
    result = replay(trace, policy, Fixed(SUMMARY))
    assert [(c.turn, c.context_tokens, c.messages) for c in result.calls] == graph
    assert {"summarize", "offload_tool_result"} <= {e.kind for e in result.event_list}
