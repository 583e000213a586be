"""`ctxlab evaluate` through the real CLI entry point, on the bundled samples."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any, ClassVar

import polars as pl
import pytest
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult

import ctxlab
from ctxlab._cli.commands.evaluate import _evaluate
from ctxlab._cli.main import build_parser, main
from ctxlab._evaluate import probes
from ctxlab._evaluate.evaluation import evaluate
from ctxlab._evaluate.facts import CATEGORIES
from ctxlab._replay.replay import replay
from ctxlab._store.store import Store
from ctxlab.policies import get
from tests.cli_text import messages
from tests.context_model import ContextModel
from tests.samples import long_trace

ARGS = build_parser().parse_args(["evaluate", "trace.json"])
"""`ctxlab evaluate`'s flags at their defaults."""

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "traces"
LONG = SAMPLES / "deepagents_long_session.jsonl.xz"
FLAGS = ["--window", "30000", "--trigger", "fraction:0.5", "--keep", "messages:4"]
PARAMS = {"window": 30000, "trigger": ("fraction", 0.5), "keep": ("messages", 4)}
SURVIVAL = {"total", "context", "summary", "file", "lost", "needed", "needed_lost"}


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    return long_trace()


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


JsonRun = tuple[int, str, str, Path]
"""A command's exit code, stdout, stderr, and the store it wrote."""


@pytest.fixture(scope="module")
def json_runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, JsonRun]:
    """`ctxlab evaluate LONG --policy P ... --format json`, each policy into a fresh store.

    Run once per module: the JSON tests check each document and its store, and the
    deepagents-versus-summarisation test compares the two documents (the same commands; each
    would otherwise load the long sample and evaluate it again)."""
    runs = {}
    for policy in ("deepagents", "langchain-summarization"):
        store = tmp_path_factory.mktemp("evaluate") / "s.duckdb"
        argv = ["evaluate", str(LONG), "--policy", policy, *FLAGS, "--store", str(store)]
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main([*argv, "--format", "json"])
        runs[policy] = (code, out.getvalue(), err.getvalue(), store)
    return runs


@pytest.mark.parametrize("policy", ["deepagents", "langchain-summarization"])
def test_json_is_the_python_evaluation(
    json_runs: dict[str, JsonRun], trace: ctxlab.Trace, policy: str
) -> None:
    code, out, err, store = json_runs[policy]
    assert code == 0
    doc = json.loads(out)
    assert list(doc) == ["evaluations"]
    traces = list(trace.walk())  # the trace, then its subagents' conversations
    assert [e["trace_id"] for e in doc["evaluations"]] == [t.trace_id for t in traces]
    expected = [evaluate(replay(t, get(policy, **PARAMS))) for t in traces]
    for got, want in zip(doc["evaluations"], expected, strict=True):
        assert list(got) == ["trace_id", "policy", "facts", "survival", "probes", "failed"]
        assert got == json.loads(json.dumps(want.to_json(), default=str))
        assert got["probes"] == []
        assert list(got["survival"]) == [c for c in CATEGORIES if c in got["survival"]]
        for counts in got["survival"].values():
            assert set(counts) == SURVIVAL
    assert doc["evaluations"][0]["facts"]
    said = " ".join(err.split())  # stdout stays JSON
    assert said.endswith(probes.SKIPPED)
    rest = said[: -len(probes.SKIPPED)].strip()  # at most the placeholder warning before it
    assert rest == "" or (
        rest.startswith("ctxlab: warning: trace ")
        and "fell back to LangChain's placeholder" in rest
    )
    stored = Store(store, read_only=True)
    assert stored.facts().height == sum(e.facts.height for e in expected)
    assert sorted(stored.replays()["needed_lost"]) == sorted(e.needed_lost for e in expected)


def test_deepagents_keeps_in_files_what_summarization_loses(
    json_runs: dict[str, JsonRun],
) -> None:
    """The same facts, the same compactions: deepagents' history file keeps what its summary
    drops (`file`), LangChain's summarisation has no file (`lost`)."""
    docs = {}
    for policy in ("deepagents", "langchain-summarization"):
        code, out, _, _ = json_runs[policy]
        assert code == 0
        docs[policy] = {f["fact"]: f for f in json.loads(out)["evaluations"][0]["facts"]}
    assert docs["deepagents"].keys() == docs["langchain-summarization"].keys()
    in_file = [f for f, row in docs["deepagents"].items() if row["status"] == "file"]
    assert in_file
    assert {docs["langchain-summarization"][f]["status"] for f in in_file} == {"lost"}


WIDTH = 100
"""The terminal width the table tests give (`COLUMNS`)."""


def _only_fallback_warnings(err: str) -> bool:
    """Nothing on stderr but the warning that LangChain's default `trim_tokens_to_summarize`
    turned summaries into its placeholder (issue 36: said, never silent), at most once per
    replayed trace."""
    said = [m for m in messages(err) if m] if err.strip() else []
    return all(
        m.startswith("ctxlab: warning: trace ") and "fell back to LangChain's placeholder" in m
        for m in said
    )


def test_table_fits_the_terminal_and_names_what_was_lost(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trace: ctxlab.Trace
) -> None:
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    argv = ["evaluate", str(LONG), "--policy", "langchain-summarization", *FLAGS]
    code, out, err = _run(capsys, [*argv, "--store", str(tmp_path / "s.duckdb")])
    assert code == 0 and _only_fallback_warnings(err)
    lines = out.splitlines()
    assert max(len(line) for line in lines) <= WIDTH
    assert any(line.split()[:2] == ["category", "total"] for line in lines)
    assert any("needed-but-lost" in line for line in lines)
    assert messages(out)[-1] == probes.SKIPPED
    doc = evaluate(replay(trace, get("langchain-summarization", **PARAMS)))
    assert doc.needed_lost > 0
    assert f"needed but lost ({doc.needed_lost}):" in out
    assert f"needed again after eviction: needed-but-lost {doc.needed_lost}," in out


def test_a_folder_gives_one_evaluation_per_trace(capsys, tmp_path: Path) -> None:
    argv = ["evaluate", str(SAMPLES), "--format", "json", "--db", str(tmp_path / "s.duckdb")]
    code, out, _ = _run(capsys, argv)
    assert code == 0
    ids = [e["trace_id"] for e in json.loads(out)["evaluations"]]
    expected = [t.trace_id for top in ctxlab.load(SAMPLES) for t in top.walk()]
    assert ids == expected and len(ids) >= 2
    assert Store(tmp_path / "s.duckdb").replays().height == len(ids)


def test_dry_run_prices_the_calls_and_calls_nothing(
    capsys, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key and no network: building the model needs none, and a dry run sends nothing (a
    call would fail without the key). Nothing is written: the store is not even created."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("COLUMNS", str(WIDTH))
    store = tmp_path / "s.duckdb"
    argv = ["evaluate", str(LONG), "--policy", "langchain-summarization", *FLAGS, "--dry-run"]
    argv += ["--model", "anthropic:claude-sonnet-4-5", "--store", str(store)]
    code, out, err = _run(capsys, argv)
    assert code == 0, err
    assert "calls" in out and "input tokens" in out and "estimated $" in out
    assert max(len(line) for line in out.splitlines()) <= WIDTH
    assert not store.exists()
    code, out, err = _run(capsys, [*argv, "--format", "json"])
    calls = json.loads(out)["dry_run"][0]["calls"]
    assert calls and {c["call"] for c in calls} >= {"answer", "ceiling"}
    assert all(c["model"] == "claude-sonnet-4-5" and c["input_tokens"] > 0 for c in calls)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--dry-run"], "--dry-run"),
        (["--judge", "anthropic:claude-sonnet-4-5"], "--judge"),
        (["--model", "no-such-provider:x"], "--model"),
        (["--policy", "no-such-policy"], "--policy"),
        (["--set", "nonsense=1"], "--set"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(capsys, tmp_path: Path, argv, message) -> None:
    code, out, err = _run(
        capsys, ["evaluate", str(LONG), "--store", str(tmp_path / "s.duckdb"), *argv]
    )
    assert code == 2 and out == ""
    assert err.startswith("ctxlab: error: ") and len(messages(err)) == 1
    assert message in messages(err)[0]
    assert not (tmp_path / "s.duckdb").exists()


def test_probes_run_through_the_stores_cache(tmp_path: Path, trace: ctxlab.Trace) -> None:
    """What `--model` runs: probes answered once, saved with the evaluation; a second run reads
    every answer from the store's cache."""
    result = replay(trace, get("langchain-summarization", **PARAMS))
    store = Store(tmp_path / "s.duckdb")
    model = ContextModel()
    first = _evaluate([result], model, None, store, ARGS)[0]
    assert first.probes.height and first.probes["score"].null_count() < first.probes.height
    key = store.replays()["replay_key"].item()
    assert store.probes(key).height == first.probes.height
    cached = store.query("SELECT count(*) n FROM probe_cache")["n"].item()
    fresh = ContextModel()
    again = _evaluate([result], fresh, None, Store(tmp_path / "s.duckdb"), ARGS)[0]
    assert again.probes.equals(first.probes) and fresh.log == []
    assert store.query("SELECT count(*) n FROM probe_cache")["n"].item() == cached


class NoToolCalls(ContextModel):
    """A context model whose next-action calls fail during an outage (`outage["on"]`)."""

    outage: ClassVar[dict[str, bool]] = {"on": True}

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        if self.outage["on"] and "do not call tools" not in messages[-1].text:
            raise ConnectionError("provider unavailable")
        return super()._generate(messages, stop, run_manager, **kwargs)


def test_failed_probe_calls_keep_the_answers_that_came(
    tmp_path: Path, trace: ctxlab.Trace, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = replay(trace, get("langchain-summarization", **PARAMS))
    store = Store(tmp_path / "s.duckdb")
    args = build_parser().parse_args(["evaluate", "x", "--retries", "0"])
    assert ARGS.retries == 2 and args.retries == 0
    (broken,) = _evaluate([result], NoToolCalls(), None, store, args)
    answered = store.query("SELECT count(*) n FROM probe_cache")["n"].item()
    assert answered > 0 and store.facts().height  # cached, and Tier 1 evaluated all the same
    assert broken.failed and "provider unavailable" in broken.failed_line()
    monkeypatch.setitem(NoToolCalls.outage, "on", False)  # the provider is back
    model = NoToolCalls()
    (healed,) = _evaluate([result], model, None, store, args)
    asked = [m for m in model.log if "do not call tools" not in m[-1].text]
    assert len(model.log) == len(asked) > 0  # only the calls that failed are asked again
    answered = healed.probes.filter(~pl.col("kind").is_in(probes.JUDGED))  # no judge given
    assert healed.failed == 0 and answered["score"].null_count() == 0
