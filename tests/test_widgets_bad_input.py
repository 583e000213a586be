"""Widgets and plots given what a careless user passes: a replay of another trace, a trace with
no model call, a trace of one message, a policy whose settings are out of range. Each gets a
`ValueError` naming what is wrong, or an empty view; never an error from deep inside, and the
explorer's sliders never offer a value the policy refuses. Real ipywidgets objects throughout.
"""

from __future__ import annotations

import ipywidgets as W
import pytest
from langchain_core.messages import AIMessage, HumanMessage

import ctxlab
from ctxlab import plots
from ctxlab._replay.policies.catalog import names
from ctxlab._trace import Trace, from_messages
from ctxlab._view.widgets.compare import PAD
from ctxlab.policies import DeepAgents
from ctxlab.widgets import Compare, PromptDiff, Scrubber, ThresholdExplorer
from tests.synthetic import make_trace


@pytest.fixture(scope="module")
def trace() -> Trace:
    return make_trace(30, seed=1, model="claude-sonnet-4-5", provider="anthropic")


@pytest.fixture(scope="module")
def other() -> Trace:
    return make_trace(40, seed=2, model="claude-sonnet-4-5", provider="anthropic")


@pytest.fixture(autouse=True)
def figures(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_FIGURES", str(tmp_path / "figures"))


EMPTY = Trace("empty", "messages", "<memory>", [], [])
ONE_HUMAN = from_messages([HumanMessage("hello")], trace_id="one-human")
ONE_AI = from_messages([AIMessage("hello")], trace_id="one-ai")


# ----------------------------------------------------------------------------- another trace


def test_a_replay_with_another_trace_is_named(trace, other) -> None:
    replay = ctxlab.replay(trace, DeepAgents())
    names_both = f"'{trace.trace_id}'.*'{other.trace_id}'"
    with pytest.raises(ValueError, match=f"Scrubber: the replay is of trace {names_both}"):
        Scrubber(replay, other)
    with pytest.raises(ValueError, match=f"Compare: the replay is of trace {names_both}"):
        Compare(replay, trace=other)
    with pytest.raises(
        ValueError, match=f"Compare: the replays are of different traces.*{names_both}"
    ):
        Compare(replay, ctxlab.replay(other, DeepAgents()))
    with pytest.raises(ValueError, match=f"context_tokens: the replay is of trace {names_both}"):
        plots.context_tokens(replay, recorded=other)
    with pytest.raises(ValueError, match=f"comparison: the replay is of trace {names_both}"):
        plots.comparison([replay], recorded=other)
    # the same trace loaded twice (a copy, same id) is still that trace
    copy = make_trace(30, seed=1, model="claude-sonnet-4-5", provider="anthropic")
    assert Scrubber(replay, copy).turn == len(trace.turns) - 1


def test_labels_that_do_not_match_the_replays_are_named(trace) -> None:
    replay = ctxlab.replay(trace, DeepAgents())
    with pytest.raises(ValueError, match="Compare: 1 labels for 2 replays"):
        Compare(replay, replay, labels=["only one"])
    with pytest.raises(ValueError, match="comparison: 3 labels for 1 replays"):
        plots.comparison([replay], labels=["a", "b", "c"])


# ----------------------------------------------------------------------------- tiny traces


@pytest.mark.parametrize("tiny", [EMPTY, ONE_HUMAN], ids=["no-message", "one-human-message"])
def test_a_trace_without_model_calls(tiny: Trace) -> None:
    replay = ctxlab.replay(tiny, DeepAgents())
    assert replay.turns.height == 0
    with pytest.raises(ValueError, match=f"Scrubber: .*{tiny.trace_id}.* no turns"):
        Scrubber(replay, tiny)
    # the others show an empty view: no curve points, zero metrics, nothing to summarise
    compare = Compare(replay, trace=tiny)
    assert all(len(t.x) == 0 for t in compare.figure.data)
    assert f"<td style='{PAD}'>0</td>" in compare.table.value
    for fig in (
        plots.context_tokens(replay, lines=plots.thresholds(DeepAgents(), tiny), recorded=tiny),
        plots.composition(replay),
        plots.events_timeline(replay),
        plots.comparison([replay], recorded=tiny),
    ):
        assert fig.to_dict()  # serialisable for the browser
    explorer = ThresholdExplorer(tiny)
    assert explorer.replay.turns.height == 0 and "peak</b> 0" in explorer.readout.value
    explorer.control("window").value = 8_000
    assert explorer.replays == 1 and "refuses" not in explorer.readout.value
    diff = PromptDiff(tiny, "## Goal", "## Files")
    assert diff.sides is not None and len(diff.slice()) == len(tiny.messages)
    assert f"{len(tiny.messages)} messages" in diff.anchors.value
    assert (diff.sides[0].summary == "") == (not tiny.messages)


def test_a_trace_of_one_model_call(trace) -> None:
    replay = ctxlab.replay(ONE_AI, DeepAgents())
    scrubber = Scrubber(replay, ONE_AI)
    assert scrubber.slider.min == scrubber.slider.max == 0
    assert "ctx-block" in scrubber.strip.value or scrubber.strip.value
    compare = Compare(replay, ctxlab.replay(ONE_AI, "raw"), trace=ONE_AI)
    assert [len(t.x) for t in compare.figure.data[:2]] == [1, 1]
    explorer = ThresholdExplorer(ONE_AI, policy="observation-masking")
    assert explorer.replay.turns.height == 1


# ----------------------------------------------------------------------------- out of range


def _bad_settings(trace: Trace) -> None:
    """Every policy the dropdown offers, every slider at both ends: the policy accepts it."""
    for name in names():
        explorer = ThresholdExplorer(trace, policy=name)
        for control in explorer.controls:
            widget = control.widget
            start = widget.value
            for end in (widget.min, widget.max):
                widget.value = end
                assert "refuses" not in explorer.readout.value, (name, control.name, end)
            widget.value = start


def test_explorer_sliders_offer_only_values_the_policy_accepts(trace) -> None:
    _bad_settings(trace)
    explorer = ThresholdExplorer(trace, policy="observation-masking")
    assert explorer.control("n").min == 1  # n=0 is refused by the policy
    explorer = ThresholdExplorer(trace, policy="claude-code")
    assert explorer.control("max_output_tokens").min >= 0
    deep = ThresholdExplorer(trace)
    assert deep.control("window").min >= 1


def test_a_refused_combination_shows_in_the_widget(trace) -> None:
    explorer = ThresholdExplorer(trace, policy="openhands-llm-summarizing")
    before = explorer.policy
    size = explorer.control("max_size")
    size.value = size.min  # the smallest max_size the default keep_first allows
    explorer.control("keep_first").value = explorer.control("keep_first").max
    assert "refuses these settings" in explorer.readout.value
    assert "keep_first" in explorer.readout.value
    assert explorer.policy.max_size == size.min and explorer.policy is not before
    # the last accepted settings stay in force; a valid move is taken again
    explorer.control("keep_first").value = 1
    assert "refuses" not in explorer.readout.value and explorer.policy.keep_first == 1


def test_a_policy_that_cannot_run_on_the_trace(trace) -> None:
    no_model = make_trace(20, seed=3)
    with pytest.raises(ValueError, match="ThresholdExplorer: policy 'codex' cannot replay trace"):
        ThresholdExplorer(no_model, policy="codex")
    explorer = ThresholdExplorer(no_model)
    explorer.choice.value = "codex"  # picked in the dropdown: a message, not an exception
    assert "codex refuses these settings" in explorer.readout.value
    assert explorer.policy.name == "deepagents"
    explorer.choice.value = "observation-masking"
    assert "refuses" not in explorer.readout.value and explorer.policy.name == "observation-masking"
    for control in explorer.controls:
        assert isinstance(control.widget, W.IntSlider | W.FloatSlider)
        assert control.widget.min <= control.widget.value <= control.widget.max
    with pytest.raises(ValueError, match="window must be a positive"):
        DeepAgents(window=0)  # refused when built, before any widget sees it


def test_prompt_diff_names_a_policy_that_cannot_run(trace) -> None:
    no_model = make_trace(20, seed=3)
    with pytest.raises(ValueError, match="PromptDiff: policy 'codex' cannot replay trace"):
        PromptDiff(no_model, "## Goal", policy="codex")
    by_name = PromptDiff(trace, "## Goal", policy="langchain-summarization")
    assert by_name.points and by_name.sides is not None
