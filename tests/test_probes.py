"""Tier 2 probes end to end, with deterministic chat models that answer from their own input.

The trace is a small coding task whose first request holds a plan (`N. tool {arguments}`) the
recorded agent follows step by step. It is replayed under LangChain's summarisation and under
Deep Agents with a fixed summary that keeps a few lines verbatim, so Tier 1 sees some facts in
the summary and the rest lost (LangChain) or only in the history file (Deep Agents). The
`ContextModel` finds on the full history every answer (ceiling 1.0) and on the compacted
request exactly the facts Tier 1 says survived in the request or its summary.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import polars as pl
import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.rate_limiters import InMemoryRateLimiter

import ctxlab
from ctxlab._cli.model_spec import ModelSpecError, model_from_spec
from ctxlab._cost.pricing import price_for
from ctxlab._evaluate import probes
from ctxlab._evaluate.facts import Fact, extract
from ctxlab._evaluate.probe_calls import Call, MemoryProbeCache
from ctxlab._evaluate.probe_judge import parse_grade
from ctxlab._evaluate.survival import Survival, follow
from ctxlab._replay.model_calls import CallSettings
from ctxlab._replay.policies.deepagents import DeepAgents
from ctxlab._replay.policies.langchain import LangChainSummarization
from ctxlab._replay.replay import Replay, replay
from ctxlab._trace import Trace, from_messages
from ctxlab.summarizers import Fixed
from tests.context_model import ContextModel, RubricJudge

PLAN = [
    ("read_file", {"file_path": "/srv/app/config.yaml"}),
    ("write_file", {"file_path": "/srv/app/NOTES.md", "content": "Port is 80; proxy needs 8443."}),
    ("execute", {"command": "pytest -x tests/test_config.py"}),
    ("read_file", {"file_path": "/srv/app/loader.py"}),
    (
        "edit_file",
        {"file_path": "/srv/app/loader.py", "old_string": "port = 80", "new_string": "port = 8443"},
    ),
    ("execute", {"command": "pytest -x tests/test_config.py"}),
    ("read_file", {"file_path": "/srv/app/README.md"}),
    ("execute", {"command": "git diff --stat"}),
]
RESULTS = [
    "port: 80\nowner: alice\nThe config file lives in /srv/app/config.yaml",
    "written",
    "FAILED tests/test_config.py::test_port - AssertionError: expected 8443, got 80\n"
    "1 failed in 0.42s",
    "def load():\n    port = 80\n    return port",
    "edited",
    "1 passed in 0.31s",
    "# App\nSee https://example.com/docs for the deployment guide.",
    " loader.py | 2 +-",
]
SAYS = [
    "I read the config first because the failing test names it.",
    "Note the finding.",
    "Running the test shows the failure.",
    "The loader hard-codes the port.",
    "I change the port in load_config because the proxy listens on 8443.",
    "Check the fix.",
    "Read the docs.",
    "Show the diff.",
]
STEPS = [f"{i + 1}. {name} {json.dumps(args)}" for i, (name, args) in enumerate(PLAN)]
SUMMARY = (
    f"Summary of the work so far:\nPlan:\n{STEPS[0]}\nThe config file lives in /srv/app/config.yaml"
)
"""Keeps the plan's first step and where the config lives (with the words before each), and
nothing else of the summarised messages."""


def make_trace() -> Trace:
    messages = [
        SystemMessage("You are a careful coding agent."),
        HumanMessage(
            "Fix the port the config loader reads. Never edit tests/.\nPlan:\n" + "\n".join(STEPS)
        ),
    ]
    for i, ((name, args), result, said) in enumerate(zip(PLAN, RESULTS, SAYS, strict=True)):
        messages.append(AIMessage(said, tool_calls=[{"name": name, "args": args, "id": f"c{i}"}]))
        messages.append(ToolMessage(result, tool_call_id=f"c{i}", name=name))
    messages.append(AIMessage("Done: the loader now reads port 8443."))
    return from_messages(messages)


def langchain_replay() -> Replay:
    policy = LangChainSummarization(trigger=("messages", 12), keep=("messages", 5))
    return replay(make_trace(), policy, Fixed(SUMMARY))


def deepagents_replay() -> Replay:
    policy = DeepAgents(trigger=("messages", 12), keep=("messages", 5))
    return replay(make_trace(), policy, Fixed(SUMMARY))


def tier1(result: Replay) -> tuple[pl.DataFrame, Survival]:
    assert result.trace is not None
    found = extract(result.trace)
    return follow(result, found), Survival(result, found)


def status_at(survival: Survival, fact: str, turn: int) -> str:
    i = next(i for i, f in enumerate(survival.facts) if f.text == fact)
    return survival.status(i, turn)


@pytest.mark.parametrize("make", [langchain_replay, deepagents_replay], ids=["langchain", "deep"])
def test_recall_scores_are_what_tier1_says_survived(make) -> None:
    result = make()
    facts, survival = tier1(result)
    planned = probes.plan(result, facts, ["recall"], max_facts=None)
    frame = probes.run(result, planned, ContextModel())
    assert frame.height == len(planned) > 5
    assert frame["ceiling_score"].to_list() == [1.0] * frame.height
    statuses = []
    for row in frame.iter_rows(named=True):
        status = status_at(survival, row["fact"], row["turn"])
        statuses.append(status)
        assert row["score"] == (1.0 if status in ("context", "summary") else 0.0), row
    assert "summary" in statuses
    assert ("lost" if make is langchain_replay else "file") in statuses
    assert "context" not in statuses  # probed at the turn that evicted them


def test_deepagents_history_file_answers_no_more_than_lost() -> None:
    """The same facts are probed under both; Deep Agents keeps in its history file what
    LangChain loses, and neither request lets the model answer them."""
    lost, deep = langchain_replay(), deepagents_replay()
    frames = []
    statuses = []
    for result in (lost, deep):
        facts, survival = tier1(result)
        planned = probes.plan(result, facts, ["recall"], max_facts=None)
        frames.append(probes.run(result, planned, ContextModel()))
        statuses.append([status_at(survival, p.expected, p.turn) for p in planned])
    assert frames[0].select("fact", "score").equals(frames[1].select("fact", "score"))
    moved = {(a, b) for a, b in zip(*statuses, strict=True) if a != b}
    assert moved == {("lost", "file")}


def test_questions_do_not_give_the_fact_away() -> None:
    result = langchain_replay()
    planned = probes.plan(result, tier1(result)[0], ["recall"], max_facts=None)
    for probe in planned:
        if probe.facts[0].category != "goal":
            assert probe.expected not in probe.question, probe


def test_next_action_compares_tool_then_arguments() -> None:
    result = langchain_replay()
    planned = probes.plan(result, tier1(result)[0], ["next_action"])
    frame = probes.run(result, planned, ContextModel())
    assert frame["turn"].to_list() == probes.probe_turns(result)
    recorded = [result.trace.turns[t].output.tool_calls[0] for t in frame["turn"]]
    # the summary kept step 1 of the plan but none of the calls made: the model redoes step 1
    for row, call in zip(frame.iter_rows(named=True), recorded, strict=True):
        assert row["ceiling_score"] == 1.0
        same_tool = call["name"] == PLAN[0][0]
        same_args = call["args"] == PLAN[0][1]
        assert row["score"] == (1.0 if same_tool and same_args else 0.5 if same_tool else 0.0)
        assert row["answer"] == f"read_file {json.dumps(PLAN[0][1])}"
    assert 0.5 in frame["score"].to_list()


def test_judged_probes_graded_against_the_full_context_answer() -> None:
    result = langchain_replay()
    facts, _ = tier1(result)
    planned = probes.plan(result, facts, ["continuation", "decision"])
    model, judge = ContextModel(), RubricJudge()
    frame = probes.run(result, planned, model, judge)
    assert frame["judged_by"].to_list() == ["rubric-judge"] * frame.height
    decision = frame.filter(pl.col("kind") == "decision").row(0, named=True)
    # the latest reasoned statement the request lost (summarised away, not in the summary)
    assert decision["question"].startswith(
        'Earlier in this conversation the agent said: "I read the config first". Why?'
    )
    assert decision["expected"] == SAYS[0]
    assert decision["ceiling_answer"] == SAYS[0]
    assert (decision["score"], decision["ceiling_score"]) == (0.0, 1.0)
    assert "WHAT THE AGENT SAID AT THE TIME" in judge.log[-1][0].text
    continuation = frame.filter(pl.col("kind") == "continuation").row(0, named=True)
    assert continuation["expected"].startswith(SAYS[6])
    assert continuation["ceiling_score"] > continuation["score"]
    assert len(judge.log) == 2 * frame.height
    assert "WHAT THE AGENT ACTUALLY DID NEXT" in judge.log[0][0].text


def test_without_a_judge_free_text_probes_are_listed_not_asked() -> None:
    result = langchain_replay()
    planned = probes.plan(result, tier1(result)[0])
    model = ContextModel()
    frame = probes.run(result, planned, model)
    judged = frame.filter(pl.col("kind").is_in(probes.JUDGED))
    assert judged.height == 2 * len(probes.probe_turns(result))
    assert judged["answer"].null_count() == judged.height
    assert judged["score"].null_count() == judged.height
    asked = {(p.turn, p.question) for p in planned if p.kind not in probes.JUDGED}
    assert len(model.log) == 2 * len(asked)  # the same question at a turn is asked once
    assert "--judge" in probes.NO_JUDGE and "--model" in probes.SKIPPED


def test_second_run_makes_no_model_call_and_is_byte_identical() -> None:
    result = langchain_replay()
    planned = probes.plan(result, tier1(result)[0])
    model, judge, cache = ContextModel(), RubricJudge(), MemoryProbeCache()
    first = probes.run(result, planned, model, judge, cache)
    calls = (len(model.log), len(judge.log))
    assert calls[0] > 0 and calls[1] > 0
    again = probes.run(result, planned, model, judge, cache)
    assert (len(model.log), len(judge.log)) == calls
    assert again.write_ndjson() == first.write_ndjson()
    fresh = probes.run(langchain_replay(), planned, ContextModel(), RubricJudge())
    assert fresh.write_ndjson() == first.write_ndjson()


def test_plans_are_order_stable() -> None:
    one = probes.plan(langchain_replay(), tier1(langchain_replay())[0], max_facts=3)
    two = probes.plan(langchain_replay(), tier1(langchain_replay())[0], max_facts=3)
    assert one == two
    order = [(p.turn, probes.PROBE_KINDS.index(p.kind)) for p in one]
    assert order == sorted(order)
    assert sum(p.kind == "recall" for p in one) == 3


def test_concurrency_and_rate_limiter_are_langchains() -> None:
    result = langchain_replay()
    planned = probes.plan(result, tier1(result)[0], ["recall", "next_action"])
    limiter = InMemoryRateLimiter(requests_per_second=500, check_every_n_seconds=0.001)
    model = ContextModel()
    limited = probes.run(result, planned, model, max_concurrency=2, rate_limiter=limiter)
    plain = probes.run(result, planned, ContextModel())
    assert limited.write_ndjson() == plain.write_ndjson()
    assert len(model.log) == 2 * len({(p.turn, p.question) for p in planned})


def test_user_picked_turns() -> None:
    result = langchain_replay()
    facts, _ = tier1(result)
    last = len(result.trace.turns) - 1
    planned = probes.plan(result, facts, ["recall", "next_action"], turns=[last], max_facts=None)
    evicted = facts.filter(pl.col("evicted_turn") <= last).height
    assert sum(p.kind == "recall" for p in planned) == evicted
    assert {p.turn for p in planned} == {last}
    with pytest.raises(ValueError, match="out of range"):
        probes.plan(result, facts, turns=[last + 1])
    with pytest.raises(ValueError, match="unknown probe kinds"):
        probes.plan(result, facts, ["recal"])


def test_artifact_probe_asks_for_the_changed_files() -> None:
    result = langchain_replay()
    facts, _ = tier1(result)
    last = len(result.trace.turns) - 1
    planned = probes.plan(result, facts, ["artifact"], turns=[last])
    changed = facts.filter((pl.col("category") == "path") & pl.col("evicted_turn").is_not_null())[
        "fact"
    ].to_list()
    written = {args["file_path"] for name, args in PLAN if name in ("edit_file", "write_file")}
    assert [p.expected for p in planned] == ["/srv/app/NOTES.md"]
    assert [c for c in changed if c in written] == ["/srv/app/NOTES.md"]
    frame = probes.run(result, planned, ContextModel())
    assert frame["ceiling_score"].to_list() == [1.0]
    assert frame["score"].to_list() == [0.0]  # the request keeps only the later edit_file


def test_dry_run_prices_calls_without_calling() -> None:
    result = langchain_replay()
    planned = probes.plan(result, tier1(result)[0])
    model = ContextModel(model_name="gpt-4o-mini")
    calls = probes.dry_run(result, planned, model, RubricJudge())
    assert model.log == []
    judged = sum(p.kind in probes.JUDGED for p in planned)
    assert calls.height == 2 * len(planned) + 2 * judged
    assert calls["input_tokens"].min() > 0
    price = price_for("gpt-4o-mini")
    assert price is not None
    answers = calls.filter(pl.col("model") == "gpt-4o-mini")
    expected = [
        (t * price.at(t).input + probes.ANSWER_TOKENS * price.at(t).output) / 1e6
        for t in answers["input_tokens"]
    ]
    assert answers["cost_usd"].to_list() == pytest.approx(expected)
    judge_rows = calls.filter(pl.col("model") == "rubric-judge")
    assert judge_rows["price"].unique().to_list() == [probes.NO_PRICE]
    assert judge_rows["cost_usd"].null_count() == judge_rows.height
    assert "no price for rubric-judge" in probes.cost_line(calls)

    cache = MemoryProbeCache()
    probes.run(result, planned, model, cache=cache)
    again = probes.dry_run(result, planned, model, cache=cache)
    assert again["cached"].all() and again["cost_usd"].sum() == 0


class FailingModel(ContextModel):
    """A context model that fails on next-action requests (a provider error, say)."""

    fail: bool = True

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        if self.fail and "do not call tools" not in messages[-1].text:
            raise RuntimeError("provider down")
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_failed_calls_leave_the_others_cached() -> None:
    result = langchain_replay()
    planned = probes.plan(result, tier1(result)[0], ["recall", "next_action"])
    cache = MemoryProbeCache()
    failing = FailingModel()
    once = CallSettings(retries=0)
    broken = probes.run(result, planned, failing, cache=cache, settings=once)
    questions = {(p.turn, p.question) for p in planned if p.kind == "recall"}
    assert len(cache.answers) == 2 * len(questions)
    failed = broken.filter(pl.col("kind") == "next_action")
    assert failed.height and failed["score"].null_count() == failed.height
    assert failed["error"].str.contains("RuntimeError: provider down").all()
    assert broken.filter(pl.col("kind") == "recall")["error"].null_count() == len(questions)
    healed = FailingModel(fail=False)
    frame = probes.run(result, planned, healed, cache=cache, settings=once)
    assert len(healed.log) == 2 * sum(p.kind == "next_action" for p in planned)
    assert frame["score"].null_count() == 0 and frame["error"].null_count() == frame.height
    assert frame.equals(probes.run(result, planned, ContextModel(), settings=once))


def test_judge_reply_parsing() -> None:
    assert parse_grade("fine\nGRADE: 4") == 0.8
    assert parse_grade("GRADE: 1 then GRADE: 5") == 1.0
    assert parse_grade("no grade here") is None


def test_model_spec_errors_name_the_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelSpecError, match="'gpt-4o'.*provider:name"):
        model_from_spec("gpt-4o")
    with pytest.raises(ModelSpecError, match="'nosuch:model'"):
        model_from_spec("nosuch:model")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ModelSpecError, match="'anthropic:claude-haiku-4-5'.*ANTHROPIC_API_KEY"):
        model_from_spec("anthropic:claude-haiku-4-5")


KEYS = {"OPENAI_API_KEY": "openai:gpt-4o-mini", "ANTHROPIC_API_KEY": "anthropic:claude-haiku-4-5"}


@pytest.mark.skipif(
    not any(os.environ.get(k) for k in KEYS),
    reason=f"needs a provider key ({' or '.join(KEYS)}) for a real init_chat_model run",
)
def test_real_model_by_spec() -> None:
    spec = next(spec for key, spec in KEYS.items() if os.environ.get(key))
    model = model_from_spec(spec, temperature=0)
    result = langchain_replay()
    planned = probes.plan(result, tier1(result)[0], ["recall", "next_action"], max_facts=3)
    frame = probes.run(result, planned, model, max_concurrency=2)
    assert frame["ceiling_score"].null_count() == 0
    assert frame.filter(pl.col("kind") == "recall")["ceiling_score"].mean() >= 0.5


def test_fact_objects_match_the_frame() -> None:
    result = langchain_replay()
    facts, _ = tier1(result)
    planned = probes.plan(result, facts, ["recall"], max_facts=None)
    for probe in planned:
        (fact,) = probe.facts
        assert isinstance(fact, Fact)
        assert facts.filter(pl.col("fact") == fact.text)["message"].to_list() == [fact.message]


def test_evaluate_runs_the_probes_when_given_a_model() -> None:
    result = langchain_replay()
    model, judge = ContextModel(), RubricJudge()
    evaluation = ctxlab.evaluate(result, model=model, judge=judge)
    planned = probes.plan(result, evaluation.facts)
    direct = probes.run(result, planned, ContextModel(), RubricJudge())
    assert evaluation.probes.write_ndjson() == direct.write_ndjson()
    assert list(evaluation.probes.columns[:7]) == list(probes.PROBE_COLUMNS)
    assert evaluation.to_json()["probes"] == direct.to_dicts()
    skipped = ctxlab.evaluate(result)
    assert skipped.probes.height == 0
    assert list(skipped.probes.columns[:7]) == list(probes.PROBE_COLUMNS)


def test_nothing_to_probe_gives_an_empty_frame_with_the_columns() -> None:
    result = replay(make_trace(), "raw")
    assert probes.probe_turns(result) == []
    model = ContextModel()
    frame = ctxlab.evaluate(result, model=model).probes
    assert frame.height == 0 and model.log == []
    assert frame.schema == pl.Schema({**probes.PROBE_COLUMNS, **probes.EXTRA_COLUMNS})


def test_cache_keys_name_model_prompt_and_input() -> None:
    messages = (HumanMessage("where is the config?"),)
    tools = probes.tool_schemas(make_trace())
    base = Call(ContextModel(), "q", messages)
    assert base.key == Call(ContextModel(), "q", messages).key
    others = [
        Call(ContextModel(model_name="other"), "q", messages),
        Call(ContextModel(), "q2", messages),
        Call(ContextModel(), "q", (HumanMessage("where is the log?"),)),
        Call(ContextModel(), "q", messages, tools),
        Call(RubricJudge(), "q", messages),
    ]
    assert len({base.key, *(c.key for c in others)}) == 1 + len(others)


def test_tool_schemas_from_the_recorded_calls_when_the_trace_has_none() -> None:
    trace = make_trace()
    assert trace.tools == []
    names = [t["function"]["name"] for t in probes.tool_schemas(trace)]
    assert names == ["read_file", "write_file", "execute", "edit_file"]
    edit = probes.tool_schemas(trace)[3]["function"]["parameters"]["properties"]
    assert list(edit) == ["file_path", "old_string", "new_string"]


SAMPLE = Path(__file__).resolve().parents[1] / "traces" / "deepagents_long_session.jsonl.xz"


def test_every_recall_question_on_the_sample_is_answerable_from_the_full_history() -> None:
    """On the bundled long sample (real deepagents offloads), the cue of every evicted fact
    leads the context model to it in the full history, and to nothing in the request, where
    the offloaded results are only in files."""
    trace = ctxlab.load(SAMPLE)[0]
    result = replay(trace, "deepagents")
    facts, survival = tier1(result)
    planned = probes.plan(result, facts, ["recall"], max_facts=None)
    frame = probes.run(result, planned, ContextModel())
    assert frame.height == len(planned) > 50  # every evicted fact of the 4 offloads, asked
    assert frame["ceiling_score"].to_list() == [1.0] * frame.height
    statuses = {status_at(survival, p.expected, p.turn) for p in planned}
    assert statuses == {"file"} and frame["score"].sum() == 0
