"""PromptDiff's fact survival (Tier 1) and, with a model, its probes: real facts, real replays,
the deterministic context model of the probe tests."""

from __future__ import annotations

import polars as pl
import pytest

from ctxlab._evaluate.facts import extract, mentions, message_text
from ctxlab._view.plots.retention import probe_means
from ctxlab.summarizers import Fixed
from ctxlab.widgets import PromptDiff
from tests.context_model import ContextModel
from tests.test_event_cards import EVIL, KEPT, LANGCHAIN, planted


@pytest.fixture(scope="module")
def trace():
    return planted()


def test_each_summary_keeps_its_share_of_the_slice_facts(trace) -> None:
    pd = PromptDiff(
        trace, summarizer=(Fixed(f"Reading {KEPT}."), Fixed("Nothing.")), policy=LANGCHAIN
    )
    text = "\n".join(message_text(m) for m in pd.slice())
    every = extract(trace)
    assert pd.slice_facts == [f for f in every if mentions(text, f)]
    assert {f.category for f in pd.slice_facts} >= {"goal", "path"}
    a, b = pd.sides
    assert a.facts == {"path": [KEPT]} and b.facts == {}
    assert "ctx-fact-table" in pd.fact_table.value
    assert f"<code>{KEPT}</code>" in pd.fact_table.value
    # the chart shows anchors until the view is switched to facts
    assert list(pd.figure.data[0].x) == ["paths", "identifiers", "numbers"]
    pd.view.value = "facts"
    categories = list(
        dict.fromkeys(
            f.category
            for f in sorted(
                pd.slice_facts,
                key=lambda f: (
                    "goal",
                    "instruction",
                    "todo",
                    "path",
                    "command",
                    "error",
                    "number",
                    "identifier",
                    "url",
                ).index(f.category),
            )
        )
    )
    assert list(pd.figure.data[0].x) == categories
    totals = dict(zip(pd.figure.data[2].x, pd.figure.data[2].y, strict=True))
    assert totals["path"] == sum(1 for f in pd.slice_facts if f.category == "path")
    kept_a = dict(zip(pd.figure.data[0].x, pd.figure.data[0].y, strict=True))
    assert kept_a["path"] == 1 and sum(pd.figure.data[1].y) == 0
    assert pd.figure.layout.title.text.startswith("Facts kept")
    assert "pass <code>model=</code>" in pd.probe_table.value and pd.probes is None


def test_with_a_model_each_summary_is_probed_against_the_ceiling(trace) -> None:
    pd = PromptDiff(
        trace,
        summarizer=(Fixed(f"Reading {KEPT}."), Fixed("Nothing.")),
        policy=LANGCHAIN,
        model=ContextModel(),
    )
    assert pd.probes is not None
    a, b = pd.probes
    turn = pd.points[pd.point.value].turn
    for frame in (a, b):
        assert frame.height and set(frame["turn"]) == {turn}
        recalled = frame.filter(pl.col("kind") == "recall")["ceiling_score"]
        assert recalled.len() and recalled.min() == 1.0  # the full context answers every recall
    recall = [f.filter((pl.col("kind") == "recall") & (pl.col("fact") == KEPT)) for f in (a, b)]
    assert recall[0]["score"].to_list() == [1.0] and recall[1]["score"].to_list() == [0.0]
    assert a["score"].mean() > b["score"].mean()
    for frame in (a, b):
        score, ceiling, count = probe_means(frame)
        assert f"<td>{count}</td><td>{score:.2f} vs ceiling {ceiling:.2f}</td>" in (
            pd.probe_table.value
        )


def test_fact_survival_is_escaped() -> None:
    pd = PromptDiff(planted(evil=True), summarizer=Fixed("Nothing."), policy=LANGCHAIN)
    assert any(EVIL in f.text for f in pd.slice_facts)
    assert "<script" not in pd.fact_table.value and "&lt;script&gt;" in pd.fact_table.value
