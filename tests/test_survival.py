"""Fact survival (`ctxlab._evaluate.survival`, `ctxlab.evaluate`) on traces with planted facts.

The acceptance test: a conversation whose early tool results hold facts, summarised away by a
small message trigger with a fixed summary that keeps some of them. Under deepagents the facts
the summary kept are `summary`, the others `file` (its history file keeps them), the recent
ones `context`; under langchain-summarization (no files) the same others are `lost`. A later
assistant message that uses an evicted fact makes it `needed`, and `needed_lost` counts it
under langchain-summarization only. The interval bookkeeping is also checked against the
plain definition, request by request.
"""

from __future__ import annotations

import json

import polars as pl
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

import ctxlab
from ctxlab._evaluate.facts import Fact, extract, mentions_normalised, message_text, normalise
from ctxlab._evaluate.probes import EXTRA_COLUMNS, PROBE_COLUMNS
from ctxlab._evaluate.survival import (
    FACT_SCHEMA,
    STATUSES,
    SURVIVAL_SCHEMA,
    Finder,
    Survival,
    file_view,
    follow,
    normalised,
    survival_table,
)
from ctxlab._replay.policies.catalog import PRESETS
from ctxlab._replay.policies.langchain import LangChainSummarization
from ctxlab._replay.policies.offload import ToolResultOffload
from ctxlab._replay.replay import Replay, replay
from ctxlab._replay.requests import Requests
from ctxlab._trace import Trace, from_messages
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import Fixed
from tests.synthetic import make_trace

KEPT = "/srv/billing/config/queue.yaml"  # the summary keeps it
DROPPED = "/srv/billing/legacy/adapter.py"  # summarised away, used again later
DROPPED_TOO = "/srv/billing/jobs/retry_worker.py"  # summarised away, never used again
RECENT = "/srv/billing/queue/consumer.py"  # in the last tool result
SUMMARY = f"The agent is migrating billing to the new queue; its config is {KEPT}."
ROUNDS = 30
USES_DROPPED = 18  # the round whose assistant message runs a command on DROPPED
USES_KEPT = 19


def _filler(r: int) -> str:
    return "\n".join(f"line {k} of round {r}: nothing to report here" for k in range(12))


def _planted() -> tuple[Trace, dict[str, Fact]]:
    """System, task, then ROUNDS of `execute` call + result; facts planted in results 1-3 and
    the last one, and used again by the assistant in rounds USES_DROPPED and USES_KEPT."""
    plant = {1: KEPT, 2: DROPPED, 3: DROPPED_TOO, ROUNDS - 1: RECENT}
    messages: list[BaseMessage] = [
        SystemMessage("You are a coding agent."),
        HumanMessage("Migrate the billing service to the new queue."),
    ]
    facts: dict[str, Fact] = {}
    for r in range(ROUNDS):
        command = f"cat notes_{r}.txt"
        if r == USES_DROPPED:
            command = f"sed -n 1,40p {DROPPED}"
        if r == USES_KEPT:
            command = f"head {KEPT}"
        call = {"name": "execute", "args": {"command": command}, "id": f"c{r}", "type": "tool_call"}
        messages.append(AIMessage("", tool_calls=[call]))
        text = _filler(r)
        if r in plant:
            facts[plant[r]] = Fact(plant[r], "path", len(messages))
            text += f"\nthe file that matters is {plant[r]} (see above)"
        messages.append(ToolMessage(text, tool_call_id=f"c{r}", name="execute"))
    messages.append(AIMessage("Done."))
    return from_messages(messages, trace_id="planted"), facts


def _deepagents() -> DeepAgents:
    return DeepAgents(
        window=None, trigger=("messages", 20), keep=("messages", 6), truncate_args_settings=None
    )


def _langchain() -> LangChainSummarization:
    return LangChainSummarization(trigger=("messages", 20), keep=("messages", 6))


def _rows(result: Replay, facts: dict[str, Fact]) -> dict[str, dict]:
    frame = follow(result, list(facts.values()))
    return {row["fact"]: row for row in frame.iter_rows(named=True)}


def _summarised_at(result: Replay, fact: Fact) -> int:
    return next(
        e.turn for e in result.event_list if e.kind == "summarize" and fact.message in e.messages
    )


def _turn_of_output(trace: Trace, round_: int) -> int:
    position = 2 + 2 * round_  # the AIMessage of that round
    return next(t.index for t in trace.turns if t.position == position)


@pytest.mark.parametrize(
    ("policy", "dropped"), [(_deepagents(), "file"), (_langchain(), "lost")], ids=lambda x: str(x)
)
def test_planted_statuses(policy: object, dropped: str) -> None:
    trace, facts = _planted()
    result = replay(trace, policy, Fixed(SUMMARY))
    rows = _rows(result, facts)
    assert {f: r["status"] for f, r in rows.items()} == {
        KEPT: "summary",
        DROPPED: dropped,
        DROPPED_TOO: dropped,
        RECENT: "context",
    }
    for fact in (KEPT, DROPPED, DROPPED_TOO):
        row = rows[fact]
        assert row["first_turn"] == next(
            t.index for t in trace.turns if t.position > facts[fact].message
        )
        assert row["evicted_turn"] == _summarised_at(result, facts[fact])
    assert rows[RECENT]["evicted_turn"] is None and rows[RECENT]["needed_turn"] is None
    # used again after eviction: needed, and where it was when needed
    assert rows[DROPPED]["needed_turn"] == _turn_of_output(trace, USES_DROPPED)
    assert rows[DROPPED]["status_when_needed"] == dropped
    assert rows[KEPT]["needed_turn"] == _turn_of_output(trace, USES_KEPT)
    assert rows[KEPT]["status_when_needed"] == "summary"
    assert rows[DROPPED_TOO]["needed_turn"] is None
    table = survival_table(follow(result, list(facts.values())))
    path = table.row(0, named=True)
    assert path == {
        "category": "path",
        "total": 4,
        "context": 1,
        "summary": 1,
        "file": 2 if dropped == "file" else 0,
        "lost": 2 if dropped == "lost" else 0,
        "needed": 2,
        "needed_lost": 1 if dropped == "lost" else 0,
    }


def test_deepagents_history_file_holds_what_the_summary_dropped() -> None:
    trace, facts = _planted()
    result = replay(trace, _deepagents(), Fixed(SUMMARY))
    history = [p for p in result.files if p.startswith("/conversation_history/")]
    assert history and all(DROPPED in result.files[p] for p in history)
    assert SUMMARY not in "".join(result.files[p] for p in history)


def test_evaluate_headline_counts_needed_lost_only_without_files() -> None:
    trace, _ = _planted()
    deep = ctxlab.evaluate(replay(trace, _deepagents(), Fixed(SUMMARY)))
    lang = ctxlab.evaluate(replay(trace, _langchain(), Fixed(SUMMARY)))
    for evaluation in (deep, lang):
        assert isinstance(evaluation, ctxlab.Evaluation)
        by_fact = {r["fact"]: r for r in evaluation.facts.iter_rows(named=True)}
        assert {KEPT, DROPPED, DROPPED_TOO, RECENT} <= set(by_fact)
        assert by_fact[KEPT]["status"] == "summary"
        assert by_fact[RECENT]["status"] == "context"
    deep_rows = {r["fact"]: r for r in deep.facts.iter_rows(named=True)}
    lang_rows = {r["fact"]: r for r in lang.facts.iter_rows(named=True)}
    assert deep_rows[DROPPED]["status_when_needed"] == "file"
    assert lang_rows[DROPPED]["status_when_needed"] == "lost"
    assert deep.needed_lost < lang.needed_lost
    assert deep.survival["needed_lost"].sum() == deep.needed_lost


def test_evaluation_json_shape_and_empty_probes() -> None:
    trace, _ = _planted()
    evaluation = ctxlab.evaluate(replay(trace, _langchain(), Fixed(SUMMARY)))
    out = json.loads(json.dumps(evaluation.to_json()))
    assert list(out) == ["trace_id", "policy", "facts", "survival", "probes", "failed"]
    assert out["trace_id"] == "planted" and out["policy"] == "langchain-summarization"
    assert out["probes"] == []
    assert set(out["facts"][0]) == set(FACT_SCHEMA)
    for counts in out["survival"].values():
        assert list(counts) == ["total", *STATUSES, "needed", "needed_lost"]
        assert counts["total"] == sum(counts[s] for s in STATUSES)
    assert sum(c["needed_lost"] for c in out["survival"].values()) == evaluation.needed_lost
    assert evaluation.probes.columns[:7] == [
        "turn",
        "kind",
        "question",
        "expected",
        "answer",
        "score",
        "ceiling_score",
    ]
    assert evaluation.probes.schema == pl.Schema({**PROBE_COLUMNS, **EXTRA_COLUMNS})
    assert evaluation.probes.height == 0
    assert dict(evaluation.survival.schema) == SURVIVAL_SCHEMA
    assert dict(evaluation.facts.schema) == FACT_SCHEMA


def _offload_trace() -> tuple[Trace, Fact, Fact]:
    head = "/srv/data/head_of_output.csv"
    middle = "/srv/data/middle_of_output.csv"
    lines = [f"row {k}: value {k * 7}" for k in range(400)]
    lines[1] = f"reading {head}"
    lines[200] = f"reading {middle}"
    call = {"name": "execute", "args": {"command": "dump"}, "id": "c0", "type": "tool_call"}
    messages = [
        HumanMessage("Dump the data."),
        AIMessage("", tool_calls=[call]),
        ToolMessage("\n".join(lines), tool_call_id="c0", name="execute"),
        AIMessage("Looked at it."),
        HumanMessage("Thanks."),
        AIMessage("Done."),
    ]
    return (
        from_messages(messages, trace_id="offload"),
        Fact(head, "path", 2),
        Fact(middle, "path", 2),
    )


@pytest.mark.parametrize(
    "policy",
    [DeepAgents(window=None, tool_token_limit_before_evict=500), ToolResultOffload(500)],
    ids=["deepagents", "tool-result-offload"],
)
def test_offloaded_result_keeps_its_preview_in_context_and_the_rest_in_a_file(
    policy: object,
) -> None:
    trace, head, middle = _offload_trace()
    result = replay(trace, policy, Fixed(SUMMARY))
    assert any(e.kind == "offload_tool_result" for e in result.event_list)
    rows = _rows(result, {f.text: f for f in (head, middle)})
    assert rows[head.text]["status"] == "context" and rows[head.text]["evicted_turn"] is None
    assert rows[middle.text]["status"] == "file"
    assert rows[middle.text]["evicted_turn"] == rows[middle.text]["first_turn"] == 1


def test_facts_never_in_a_request_are_not_followed() -> None:
    trace, facts = _planted()
    last = Fact("/srv/only/in/the/answer.txt", "path", len(trace.messages) - 1)
    frame = follow(replay(trace, _langchain(), Fixed(SUMMARY)), [*facts.values(), last])
    assert frame.height == len(facts)
    assert last.text not in frame["fact"].to_list()


def test_normalised_is_facts_normalise() -> None:
    texts = [
        " a\t\tb \n\n c ",
        "\x1c x\x1f\u2003y\u00a0z\u3000",
        "",
        "   ",
        "no-space",
        "tab\tend\t",
    ]
    assert normalised(texts).to_list() == [normalise(t) for t in texts]


def test_finder_is_mentions() -> None:
    facts = [
        Fact("app.py", "path", 0),
        Fact("/src/app.py", "path", 0),
        Fact("v2.3", "number", 0),
        Fact('grep -n "TODO" src', "command", 0),
        Fact("run_tests", "identifier", 0),
    ]
    texts = [
        "see myapp.py and /src/app.py.bak",
        "open /src/app.py now; app.py too",
        "release v2.3.1 then v2.3",
        'execute({"command": "grep -n \\"TODO\\" src"})',
        "call   run_tests\n\nthen run_tests_all",
        "_run_tests",
        "üapp.py, é/src/app.py and ü v2.3",
    ]
    padding = "é ü\n" * 9000  # long and not ASCII: matches are confirmed around offsets
    texts += [padding + t + padding for t in texts] + [padding + t for t in texts]
    finder = Finder(facts)
    found = finder.find(texts)
    for text, held in zip(texts, found, strict=True):
        assert held == {i for i, f in enumerate(facts) if mentions_normalised(normalise(text), f)}


def _direct(result: Replay, facts: list[Fact]) -> list[list[str | None]]:
    """Each fact's status at each turn from the rebuilt requests themselves (no intervals):
    context / summary by `mentions` on the request's messages; file / lost left as None."""
    requests = Requests(result)
    texts: dict[int, tuple[BaseMessage, str]] = {}
    out = []
    for t in range(len(result.calls)):
        context, summary = [], []
        for m in requests.at(t):
            if id(m.message) not in texts:  # the message is kept alive beside its text
                texts[id(m.message)] = (m.message, normalise(message_text(m.message)))
            (summary if m.status == "summary" else context).append(texts[id(m.message)][1])
        here, there = "\n\x00\n".join(context), "\n\x00\n".join(summary)
        row: list[str | None] = []
        for fact in facts:
            if mentions_normalised(here, fact):
                row.append("context")
            elif mentions_normalised(there, fact):
                row.append("summary")
            else:
                row.append(None)
        out.append(row)
    return out


STRESSED = {
    "deepagents": {"window": 20_000},
    "langchain-summarization": {"trigger": ("tokens", 8_000)},
    "claude-code": {"window": 60_000},
    "clear-tool-uses": {"trigger": 8_000},
    "codex": {"window": 20_000},
    "jetbrains-hybrid": {"n": 6, "keep_last_m_turns": 3, "observations_n": 4},
    "openhands-llm-summarizing": {"max_size": 30},
    "swe-agent-masking": {"n": 3},
}


@pytest.mark.parametrize("name", list(STRESSED))
def test_statuses_agree_with_the_requests_turn_by_turn(name: str) -> None:
    trace = make_trace(40, model="claude-sonnet-4-5", seed=3)
    facts = extract(trace)
    assert len(facts) > 50
    result = replay(trace, PRESETS[name](**STRESSED[name]), Fixed(SUMMARY))
    assert result.event_list
    survival = Survival(result, facts)
    direct = _direct(result, facts)
    files = result.files
    views = {p: normalise(file_view(files[p])) for p in files}  # once, not per fact and turn
    for t, row in enumerate(direct):
        for i, expected in enumerate(row):
            got = survival.status(i, t)
            if expected is not None:
                assert got == expected, (facts[i], t)
            else:
                assert got in ("file", "lost"), (facts[i], t)
                if got == "file":
                    assert any(mentions_normalised(views[p], facts[i]) for p in files)


def test_follow_on_a_replay_without_calls_is_empty() -> None:
    trace = from_messages([HumanMessage("hi")], trace_id="empty")
    frame = follow(replay(trace, "raw"), [Fact("hi", "goal", 0)])
    assert frame.height == 0 and dict(frame.schema) == FACT_SCHEMA
    assert survival_table(frame).height == 0
    assert isinstance(survival_table(frame), pl.DataFrame)


@pytest.mark.parametrize(
    ("policy", "expected"), [(_deepagents(), "file"), (_langchain(), "lost")], ids=lambda x: str(x)
)
def test_summarised_tool_calls_are_recovered_from_the_history_file(
    policy: object, expected: str
) -> None:
    trace, _ = _planted()
    call = Fact('execute({"command": "cat notes_2.txt"})', "command", 2 + 2 * 2)
    assert call.text in message_text(trace.messages[call.message])
    rows = _rows(replay(trace, policy, Fixed(SUMMARY)), {call.text: call})
    assert rows[call.text]["status"] == expected


def test_file_view_reads_xml_history_back_as_facts_name_calls() -> None:
    from langchain_core.messages import get_buffer_string

    call = {
        "id": "c1",
        "name": "grep",
        "args": {"pattern": "a<b", "path": "/é"},
        "type": "tool_call",
    }
    messages = [HumanMessage("keep 5 < 10 & 1 > 0"), AIMessage("x", tool_calls=[call])]
    view = file_view(get_buffer_string(messages, format="xml"))
    assert "keep 5 < 10 & 1 > 0" in view
    assert message_text(messages[1]).splitlines()[-1] in view
    assert file_view("plain &lt; text") == "plain &lt; text"
