"""`ctxlab._replay.timeline` headless: no ipywidgets, no plotly, the strip's sizes are the policy's
counts, and every piece of trace text it renders is escaped."""

from __future__ import annotations

import subprocess
import sys

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._replay.timeline import Timeline, block_detail, events_html, strip_html
from ctxlab._trace import from_messages
from ctxlab.policies import DeepAgents, Raw
from tests.synthetic import make_trace


def test_importable_without_ipywidgets_or_plotly() -> None:
    code = (
        "import sys, ctxlab._replay.timeline\n"
        "loaded = [m for m in ('ipywidgets', 'plotly') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_blocks_add_up_to_the_replays_counts_for_a_claude_model_named_only_by_model() -> None:
    """A trace that says `claude-*` but no provider: the policy counts 3.3 characters a token,
    and so must the strip (it used 4.0 unless the provider said anthropic)."""
    trace = make_trace(40, fmt="anthropic", model="claude-sonnet-4-5", provider=None)
    replay = ctxlab.replay(trace, Raw())
    timeline = Timeline(replay, trace)
    for turn in (0, 10, replay.turns.height - 1):
        row = replay.turns.row(turn, named=True)
        blocks = sum(b.tokens for b in timeline.blocks(turn))
        assert blocks == row["context_tokens"] - row["tools_tokens"]


def test_a_policys_own_chars_per_token_sizes_the_strip() -> None:
    trace = make_trace(30, fmt="anthropic", model="claude-sonnet-4-5", provider=None)
    replay = ctxlab.replay(trace, DeepAgents(chars_per_token=2.0))
    assert Timeline(replay, trace).cpt == 2.0
    assert Timeline(ctxlab.replay(trace, DeepAgents()), trace).cpt == 3.3


def test_rendered_trace_text_is_escaped() -> None:
    attack = "<script>alert(1)</script><img src=x onerror=alert(2)>"
    messages = [
        SystemMessage("system"),
        HumanMessage(attack),
        AIMessage("", tool_calls=[{"id": "c1", "name": "run_tests", "args": {"p": attack}}]),
        ToolMessage(attack * 4000, tool_call_id="c1", name="run_tests"),
        AIMessage("done"),
    ]
    trace = from_messages(messages, trace_id="xss", model="claude-sonnet-4-5")
    replay = ctxlab.replay(trace, DeepAgents(tool_token_limit_before_evict=100))
    assert any(e.kind == "offload_tool_result" for e in replay.event_list)
    timeline = Timeline(replay, trace)
    last = replay.turns.height - 1
    blocks = timeline.blocks(last)
    rendered = [strip_html(blocks, last), events_html(replay)] + [block_detail(b) for b in blocks]
    for html in rendered:
        assert "<script>" not in html and "<img" not in html
    assert any("&lt;script&gt;" in html for html in rendered)
