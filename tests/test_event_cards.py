"""Event cards: one per compaction, built from a real replay and its real evaluation.

A hand-built run plants file paths the agent reads, then needs one of them again much later.
Deep Agents keeps the summarised history in a file, so what its summary drops is `file`;
LangChain's summarisation keeps nothing aside, so the same facts are `lost`. A summariser that
always writes one planted path (`Fixed`) puts exactly that fact in the summary. The cards must
say so, agree with the evaluation's frames, and render hostile trace text escaped.
"""

from __future__ import annotations

import polars as pl
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._view.event_cards import NO_CARD, EventCards, card_at, card_html, cards, cards_html
from ctxlab.policies import DeepAgents, get
from ctxlab.summarizers import Fixed

EVIL = "<script>alert('x')</script>"
KEPT = "/repo/src/module_00.py"
NEEDED = "/repo/src/module_01.py"


def planted(n: int = 30, evil: bool = False) -> ctxlab.Trace:
    """A task, `n` reads of distinct files with long results, then a final edit of `NEEDED`;
    `evil` plants markup in the task, which the last message repeats (so it is needed late)."""
    task = "Fix the failing import in /repo/src/main.py."
    if evil:
        task += f" Never touch /repo/{EVIL}.py"
    msgs = [SystemMessage("You are a coding agent."), HumanMessage(task)]
    for i in range(n):
        path = f"/repo/src/module_{i:02d}.py"
        call = {"name": "read_file", "args": {"file_path": path}, "id": f"c{i}"}
        msgs.append(AIMessage(f"Reading {path}.", tool_calls=[call]))
        body = "\n".join(f"    value_{i}_{k} = compute({k})" for k in range(20))
        msgs.append(ToolMessage(body, tool_call_id=f"c{i}", name="read_file"))
    edit = {
        "name": "edit_file",
        "args": {"file_path": NEEDED, "old_string": "a", "new_string": "b"},
        "id": "edit",
    }
    msgs.append(AIMessage(f"Editing {NEEDED} again.", tool_calls=[edit]))
    msgs.append(ToolMessage("ok", tool_call_id="edit", name="edit_file"))
    msgs.append(AIMessage(f"Done: {task}" if evil else "Done."))
    return ctxlab.from_messages(
        msgs, trace_id="planted", model="claude-sonnet-4-5", provider="anthropic"
    )


DEEP = DeepAgents(trigger=("messages", 24), keep=("messages", 6))
LANGCHAIN = get("langchain-summarization", trigger=("messages", 24), keep=("messages", 6))


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    return planted()


def _evaluated(trace: ctxlab.Trace, policy) -> tuple[ctxlab.Replay, object]:
    result = ctxlab.replay(trace, policy, summarizer=Fixed(f"Working through {KEPT}."))
    return result, ctxlab.evaluate(result)


def _summary_card(result, evaluation):
    found = cards(result, evaluation.facts, evaluation.probes)
    turn = next(e.turn for e in result.event_list if e.kind == "summarize")
    card = next(c for c in found if c.turn == turn)
    assert "summarize" in card.kinds
    return found, card


@pytest.mark.parametrize(("policy", "elsewhere"), [(DEEP, "file"), (LANGCHAIN, "lost")])
def test_summary_card_says_where_each_dropped_fact_went(trace, policy, elsewhere) -> None:
    result, evaluation = _evaluated(trace, policy)
    found, card = _summary_card(result, evaluation)
    assert card.tokens_before is not None and card.tokens_after < card.tokens_before
    # the card lists exactly the facts the evaluation says left the request at its turn
    evicted = evaluation.facts.filter(pl.col("evicted_turn") == card.turn)
    assert sorted(f.fact for f in card.dropped) == sorted(evicted["fact"].to_list())
    went = {f.fact: f.went for f in card.dropped}
    assert went[KEPT] == "summary"
    paths = [f for f in card.dropped if f.category == "path" and f.fact != KEPT]
    assert paths and {f.went for f in paths} == {elsewhere}
    # the path the agent edits at the end was needed again after it was evicted
    needed = next(f for f in card.dropped if f.fact == NEEDED)
    assert needed.needed_turn is not None and needed.needed_turn > card.turn
    assert needed.status_when_needed == elsewhere
    assert (card.needed_lost >= 1) == (elsewhere == "lost")
    html = card_html(card)
    assert f"data-turn='{card.turn}'" in html and f"data-dropped='{len(card.dropped)}'" in html
    assert "★ needed at turn" in html and f"data-went='{elsewhere}'" in html
    assert f"data-needed-lost='{card.needed_lost}'" in html
    assert f"{card.tokens_before:,} → {card.tokens_after:,} tokens" in html


def test_cards_cover_every_eviction_and_are_in_turn_order(trace) -> None:
    result, evaluation = _evaluated(trace, DEEP)
    found = cards(result, evaluation.facts)
    turns = [c.turn for c in found]
    assert turns == sorted(set(turns))
    evicted = set(evaluation.facts["evicted_turn"].drop_nulls().to_list())
    assert evicted <= set(turns)
    assert sum(len(c.dropped) for c in found) == evaluation.facts["evicted_turn"].count()


def test_every_probe_turn_has_a_card_and_truncation_alone_has_none(trace) -> None:
    from ctxlab._evaluate.probes import probe_turns

    result, evaluation = _evaluated(trace, DEEP)
    found = {c.turn: c for c in cards(result, evaluation.facts)}
    assert set(probe_turns(result)) <= set(found)
    for turn, card in found.items():
        assert card.dropped or set(card.kinds) - set(NO_CARD), turn


def test_card_at_shows_the_latest_compaction_so_far(trace) -> None:
    result, evaluation = _evaluated(trace, LANGCHAIN)
    found = cards(result, evaluation.facts)
    first = found[0].turn
    assert card_at(found, first - 1) is None
    assert card_at(found, first) is found[0]
    last = result.turns.height - 1
    assert card_at(found, last) is found[-1]
    assert "no compaction up to turn" in cards_html(found, first - 1)
    assert cards_html(found, first) == card_html(found[0])


def test_probes_asked_at_a_turn_are_on_its_card(trace) -> None:
    from ctxlab._evaluate.probes import PROBE_COLUMNS

    result, evaluation = _evaluated(trace, LANGCHAIN)
    turn = next(e.turn for e in result.event_list if e.kind == "summarize")
    probes = pl.DataFrame(
        [
            (turn, "recall", f"which file {EVIL}?", NEEDED, "I do not know.", 0.0, 1.0),
            (turn + 1, "recall", "elsewhere", "x", "x", 1.0, 1.0),
        ],
        schema=PROBE_COLUMNS,
        orient="row",
    )
    card = next(c for c in cards(result, evaluation.facts, probes) if c.turn == turn)
    assert [p["question"] for p in card.probes] == [f"which file {EVIL}?"]
    html = card_html(card)
    assert "ctx-card-probes" in html and "<td>0.00</td><td>1.00</td>" in html
    assert "<script" not in html and "&lt;script&gt;" in html


def test_event_cards_evaluate_lazily_and_escape_trace_text() -> None:
    trace = planted(evil=True)
    result = ctxlab.replay(trace, LANGCHAIN)
    lazy = EventCards(result)
    assert lazy.evaluation is None  # nothing computed until a card is shown
    html = lazy.html(result.turns.height - 1)
    assert lazy.evaluation is not None and "ctx-event-card" in html
    every = cards_html(lazy.cards)
    assert EVIL not in every and "<script" not in every
    evil_fact = lazy.evaluation.facts.filter(pl.col("fact").str.contains("<script>"))
    if evil_fact.filter(pl.col("evicted_turn").is_not_null()).height:
        assert "&lt;script&gt;" in every


def test_a_replay_without_its_trace_says_it_has_no_cards(trace) -> None:
    result = ctxlab.replay(trace, LANGCHAIN)
    result.trace = None
    assert "does not carry its trace" in EventCards(result).html(0)


def test_scrubber_shows_the_card_of_the_latest_compaction(trace) -> None:
    from ctxlab.widgets import Scrubber

    result, evaluation = _evaluated(trace, DEEP)
    scrubber = Scrubber(result, evaluation=evaluation)
    assert scrubber.cards.evaluation is evaluation
    found = scrubber.cards.cards
    scrubber.slider.value = found[0].turn - 1
    assert "no compaction up to turn" in scrubber.card.value
    scrubber.slider.value = found[0].turn
    assert scrubber.card.value == card_html(found[0])
    scrubber.slider.value = result.turns.height - 1
    assert scrubber.card.value == card_html(found[-1])


def test_scrubber_draws_first_and_fills_the_card_after(trace) -> None:
    # In a kernel (a running event loop) the cards wait until the scrubber is drawn: the
    # constructor returns with a placeholder, and the loop's next turn fills the card in.
    import asyncio

    from ctxlab._view.widgets.scrubber import PENDING_CARD
    from ctxlab.widgets import Scrubber

    result, evaluation = _evaluated(trace, DEEP)

    async def build() -> tuple[Scrubber, str]:
        scrubber = Scrubber(result, evaluation=evaluation)
        return scrubber, scrubber.card.value

    loop = asyncio.new_event_loop()
    try:
        scrubber, first = loop.run_until_complete(build())
        loop.run_until_complete(asyncio.sleep(0))  # the loop's next turn
    finally:
        loop.close()
    assert first == PENDING_CARD
    assert scrubber.card.value == card_html(scrubber.cards.cards[-1])
    scrubber.slider.value = scrubber.cards.cards[0].turn
    assert scrubber.card.value == card_html(scrubber.cards.cards[0])


def test_a_card_is_one_line_until_opened_and_says_why() -> None:
    """Closed, a card is its header line (the event list below stays in view); opened, it
    starts with the rule behind each event, as the CLI's `why` column words it."""
    from ctxlab._replay.policies.catalog import get_spelled
    from tests.synthetic import make_trace

    trace = make_trace(120, seed=3, model="claude-sonnet-4-5", provider="anthropic")
    replay = ctxlab.replay(trace, get_spelled("deepagents", {"window": "30000"}))
    card = next(c for c in EventCards(replay).cards if "summarize" in c.kinds)
    html = card_html(card)
    assert html.startswith("<details class='ctx-event-card'") and " open" not in html[:200]
    summary = html[html.index("<summary") : html.index("</summary>")]
    assert f"turn {card.turn}" in summary and "<div" not in summary
    assert any(line.startswith(("trigger", "budget")) for line in card.why)
    assert "why: " in html[html.index("</summary>") :]
