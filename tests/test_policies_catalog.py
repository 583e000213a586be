"""The catalogue as a whole: every preset replays a long trace deterministically, keeps tool
pairs, records request fingerprints; `raw` is the uncompacted context; pipelines compose
open-loop; `get`, `describe`, `ctxlab replay --policy` and sweeps accept every preset."""

from __future__ import annotations

import json
import pickle

import pytest

from ctxlab import replay
from ctxlab._cli.main import main
from ctxlab._store.sweep import policy_named
from ctxlab._trace import from_messages
from ctxlab.policies import (
    PRESETS,
    ClearToolUses,
    DeepAgents,
    LangChainSummarization,
    Pipeline,
    Raw,
    describe,
    get,
)
from ctxlab.summarizers import Fixed
from tests._policy_traces import agent
from tests.synthetic import make_trace


@pytest.fixture(scope="module")
def long_trace():
    return make_trace(turns=250, model="claude-sonnet-4-5", provider="anthropic")


@pytest.mark.parametrize("name", list(PRESETS))
def test_every_preset_on_a_long_trace(long_trace, name):
    policy = get(name)
    first = replay(long_trace, policy)
    again = replay(long_trace, get(name))
    assert first.turns.equals(again.turns) and first.events.equals(again.events)
    assert first.turns.height == len(long_trace.turns)
    raw = replay(long_trace, Raw())
    if name != "raw":
        # every preset but the one whose class default never triggers compacts this trace
        if name != "langchain-summarization":
            assert first.event_list, name
            assert first.turns["context_tokens"].sum() < raw.turns["context_tokens"].sum()
    if name != "deepagents":
        assert all(c.request is not None for c in first.calls)
        assert all(c.orphans == 0 for c in first.calls), name
    json.dumps(policy.params(), default=str)
    pickle.loads(pickle.dumps(policy))


def test_raw_is_the_uncompacted_context():
    trace = from_messages(agent(5))
    result = replay(trace, Raw())
    assert result.event_list == []
    assert result.turns["context_tokens"].to_list() == result.turns["baseline_tokens"].to_list()
    assert [c.messages for c in result.calls] == [t.position for t in trace.turns]


def test_pipeline_summarises_the_cleared_request():
    """Open loop: the second stage counts the request the first produced."""
    trace = from_messages(agent(12, size=800))
    clear = ClearToolUses(trigger=600, keep=1)
    summarise = LangChainSummarization(trigger=("tokens", 1500), keep=("messages", 4))
    alone = replay(trace, summarise, summarizer=Fixed("S"))
    both = replay(trace, Pipeline((clear, summarise)), summarizer=Fixed("S"))
    n_alone = sum(e.kind == "summarize" for e in alone.event_list)
    n_both = sum(e.kind == "summarize" for e in both.event_list)
    assert n_alone > 0 and n_both < n_alone  # clearing keeps the request under the trigger longer
    assert {e.kind for e in both.event_list} >= {"clear_tool_uses"}
    assert all(c.orphans == 0 for c in both.calls)
    assert both.params["policies"][0]["name"] == "clear-tool-uses"


def test_pipeline_rejects_deepagents_and_plus_names_build_one():
    with pytest.raises(TypeError):
        Pipeline((DeepAgents(),))
    p = get("clear-tool-uses+inspect-summary")
    assert isinstance(p, Pipeline) and [m.name for m in p.policies] == [
        "clear-tool-uses",
        "inspect-summary",
    ]


def test_get_and_describe():
    assert get("observation-masking", n=7).n == 7
    with pytest.raises(ValueError, match="unknown policy"):
        get("nope")
    rows = describe()
    assert [r["name"] for r in rows] == list(PRESETS)
    assert all(r["source"] for r in rows)


@pytest.mark.parametrize("name", ["raw", "observation-masking", "openhands-recent", "codex"])
def test_replay_command_accepts_presets(tmp_path, capsys, name):
    from langchain_core.messages import messages_to_dict

    path = tmp_path / "t.json"
    path.write_text(json.dumps(messages_to_dict(agent(6))))
    assert (
        main(["replay", str(path), "--policy", name, "--window", "2000", "--format", "jsonl"]) == 0
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert len(lines) == 7


def test_sweep_accepts_presets():
    policy = policy_named("clear-tool-uses", trigger=500)
    assert policy.trigger == 500
