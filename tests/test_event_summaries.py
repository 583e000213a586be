"""Every `summarize` event keeps the text it put in the request: on the `Event`, in
`Replay.events["summary"]` (null for every other kind), and in the store's `events` table."""

from __future__ import annotations

import duckdb
import pytest

from ctxlab import replay
from ctxlab._store.store import SCHEMA_VERSION, Store
from ctxlab.policies import DeepAgents, LangChainSummarization, get
from ctxlab.summarizers import Extractive
from ctxlab.widgets import Scrubber
from tests.synthetic import make_trace

SUMMARISING = [
    "deepagents",
    "openhands-llm-summarizing",
    "jetbrains-llm-summary",
    "jetbrains-hybrid",
    "claude-code",
    "codex",
    "inspect-summary",
]
"""Catalogue presets whose defaults summarise the trace below (`langchain-summarization` needs
a trigger: its class default never fires)."""


FALLBACKS = ("Previous conversation was too long to summarize.",)
"""LangChain's summary when even the trimmed history is too long: no summariser call."""


class Recorder:
    """The real offline summariser, keeping each answer it gave (to compare with the events)."""

    def __init__(self) -> None:
        self.inner = Extractive()
        self.name = self.inner.name
        self.answers: list[str] = []

    def summarize(self, messages, **kwargs) -> str:
        text = self.inner.summarize(messages, **kwargs)
        self.answers.append(text)
        return text


@pytest.fixture(scope="module")
def trace():
    return make_trace(turns=250, model="claude-sonnet-4-5", provider="anthropic")


def _policy(name: str):
    if name == "langchain-summarization":
        return LangChainSummarization(trigger=("tokens", 20_000), keep=("messages", 6))
    return get(name)


def _requests(trace, policy, summarizer) -> dict[int, list[str]]:
    """The summary messages of each request, by turn, watched as the run builds them."""
    run = policy.start(trace, summarizer)
    seen: dict[int, list[str]] = {}
    if isinstance(policy, DeepAgents):
        for turn in trace.turns:
            run.call(turn)
            if run.event is not None:
                seen[turn.index] = [run.event.message.text]
        return seen
    stage = run.stages[-1]
    apply = stage.apply

    def watch(items, ctx):
        out = apply(items, ctx)
        seen[ctx.turn.index] = [it.msg.text for it in out if it.kind == "summary"]
        return out

    stage.apply = watch
    for turn in trace.turns:
        run.call(turn)
    return seen


@pytest.mark.parametrize("name", [*SUMMARISING, "langchain-summarization"])
def test_summary_column_holds_the_text_in_the_request(trace, name, tmp_path):
    recorder = Recorder()
    result = replay(trace, _policy(name), recorder)
    events = result.events
    is_summary = (events["kind"] == "summarize").to_list()
    assert any(is_summary), name
    assert events["summary"].is_not_null().to_list() == is_summary
    summaries = [e.summary for e in result.event_list if e.kind == "summarize"]
    assert events.filter(events["kind"] == "summarize")["summary"].to_list() == summaries
    requests = _requests(trace, _policy(name), Extractive())
    for event in (e for e in result.event_list if e.kind == "summarize"):
        assert event.summary, name
        assert event.summary in FALLBACKS or any(event.summary in a for a in recorder.answers)
        assert any(event.summary in text for text in requests[event.turn]), (name, event.turn)
        assert event.as_dict()["summary"] == event.summary

    store = Store(tmp_path / "s.duckdb")
    key = store.save(result, trace)
    stored = store.events(key)
    assert stored["summary"].to_list() == events["summary"].to_list()
    assert stored["kind"].to_list() == events["kind"].to_list()


def test_other_kinds_have_no_summary(trace):
    result = replay(trace, get("tool-result-offload"))
    assert result.event_list
    assert result.events["summary"].null_count() == result.events.height


def test_a_schema_1_store_is_migrated_on_open(trace, tmp_path):
    path = tmp_path / "old.duckdb"
    store = Store(path)
    key = store.save(replay(trace, get("codex")), trace)
    with duckdb.connect(str(path)) as con:  # what a store of schema 1 holds
        con.execute("ALTER TABLE events DROP COLUMN summary")
        con.execute("ALTER TABLE traces DROP COLUMN notes")  # added by schema 3
        con.execute("ALTER TABLE traces DROP COLUMN compactions")
        con.execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'")
    with pytest.raises(Exception, match="migrate"):
        Store(path, read_only=True)
    events = Store(path).events(key)
    assert events.height and events["summary"].null_count() == events.height
    version = Store(path).query("SELECT value FROM meta WHERE key = 'schema_version'")
    assert version.item() == str(SCHEMA_VERSION) == "6"


def test_scrubber_shows_the_replays_own_summaries(trace):
    """The strip shows what the replay used, even from a summariser nothing could re-run."""
    recorder = Recorder()
    result = replay(trace, get("codex"), recorder)
    event = next(e for e in result.event_list if e.kind == "summarize")
    answers = len(recorder.answers)
    scrubber = Scrubber(result, trace)
    assert len(recorder.answers) == answers  # nothing is summarised again
    summary_blocks = [b for b in scrubber.timeline.blocks(event.turn) if b.status == "summary"]
    assert [b.after for b in summary_blocks] == [event.summary]
