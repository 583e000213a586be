"""The public surface: `ctxlab` and its public modules, and each CLI command's Python twin.

The API is `ctxlab.__all__` and the `__all__` of the public modules; every other module is
private (its name, or a folder's, starts with `_`), so a user can tell from an import whether
it may change. A twin gives what its command prints: `ctxlab compare --json` is
`ctxlab.compare(...)` row for row, `ctxlab calibrate --json` is `ctxlab.calibrate(...)`.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
from pathlib import Path

import polars as pl
import pytest

import ctxlab
from ctxlab._cli.main import main
from tests.samples import long_trace

REPO = Path(__file__).resolve().parents[1]
SHORT = REPO / "traces" / "deepagents_short_session.jsonl.xz"
PUBLIC = {"cost", "facts", "metrics", "plots", "policies", "probes", "summarizers", "widgets"}


def test_every_public_name_resolves() -> None:
    for name in ctxlab.__all__:
        assert getattr(ctxlab, name) is not None, name
    for module in PUBLIC:
        face = importlib.import_module(f"ctxlab.{module}")
        assert face.__all__, module
        for name in face.__all__:
            assert getattr(face, name) is not None, f"ctxlab.{module}.{name}"


def test_every_other_module_is_private() -> None:
    """Only the public modules (and the package's data) have names without a leading `_`."""
    names = {m.name for m in pkgutil.iter_modules(ctxlab.__path__)}
    assert {n for n in names if not n.startswith("_")} == PUBLIC


def test_verbs_are_functions_not_modules() -> None:
    verbs = ("load", "inspect", "replay", "evaluate", "compare", "check_replay", "calibrate")
    for verb in (*verbs, "sweep"):
        assert callable(getattr(ctxlab, verb)) and not isinstance(
            getattr(ctxlab, verb), type(ctxlab)
        ), verb


def _cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_compare_is_the_commands_twin(capsys: pytest.CaptureFixture[str]) -> None:
    policies = ["deepagents", "observation-masking"]
    printed = _cli_json(
        ["compare", str(SHORT), "--json", *(a for p in policies for a in ("--policy", p))],
        capsys,
    )["replays"]
    frame = ctxlab.compare(SHORT, policies)
    assert isinstance(frame, pl.DataFrame)
    assert frame.height == len(printed) == len(ctxlab.load(SHORT)[0].walk()) * len(policies)
    assert frame["policy"].to_list() == [r["policy"] for r in printed]
    for column in ("peak_context_tokens", "cumulative_input_tokens", "events", "needed_lost"):
        assert frame[column].to_list() == [r[column] for r in printed], column


def test_compare_takes_traces_and_policy_objects() -> None:
    trace = ctxlab.load(SHORT)[0]
    by_name = ctxlab.compare(trace, ["deepagents"])
    by_object = ctxlab.compare([trace], [ctxlab.policies.DeepAgents()])
    assert by_object["peak_context_tokens"].to_list() == by_name["peak_context_tokens"].to_list()
    assert set(by_object["policy"]) == {"deepagents"}


def test_compare_names_the_trace_and_policy_a_policy_cannot_run_on() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    trace = ctxlab.from_messages([HumanMessage("hi"), AIMessage("yo")], model="acme-1")
    with pytest.raises(ValueError, match=rf"^{trace.trace_id}: codex: .*window"):
        ctxlab.compare(trace, ["codex"])


def test_calibrate_is_the_commands_twin(capsys: pytest.CaptureFixture[str]) -> None:
    printed = _cli_json(["calibrate", str(SHORT), "--json"], capsys)["traces"]
    rows = ctxlab.calibrate(SHORT)
    assert [r.as_dict() for r in rows] == printed
    assert rows[0].method == "calibrated" and rows[0].calls_with_usage == 6


def test_calibrate_saves_fits_a_bare_trace_borrows(tmp_path: Path) -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    store = ctxlab.Store(tmp_path / "c.duckdb")
    fitted = ctxlab.calibrate(SHORT, store)
    bare = ctxlab.from_messages(
        [HumanMessage("Summarise the report " * 40), AIMessage("Done.")],
        model=fitted[0].model,
    )
    (borrowed,) = ctxlab.calibrate(bare, store)
    assert borrowed.calls_with_usage == 0 and borrowed.method == "calibrated"
    assert borrowed.fit.scale == fitted[0].fit.scale


LONG = REPO / "traces" / "deepagents_long_session.jsonl.xz"


def _as_json(value: object) -> object:
    """`value` as the command's JSON reads back (tuples become lists)."""
    return json.loads(json.dumps(value))


def _check_replay_twin(path: Path, capsys: pytest.CaptureFixture, *flags: str) -> list:
    """`ctxlab.check_replay` of `path`, checked equal to `ctxlab check-replay --json`."""
    printed = _cli_json(["check-replay", str(path), "--json", *flags], capsys)["traces"]
    given = dict(zip(flags[::2], flags[1::2], strict=True))
    policy = given.pop("--policy", None)
    settings = dict(v.split("=", 1) for k, v in given.items() if k == "--set")
    settings |= {k[2:]: v for k, v in given.items() if k != "--set"}
    checks = ctxlab.check_replay(path, policy, settings=settings)
    assert _as_json([c.as_dict() for c in checks]) == printed, path
    return checks


def test_check_replay_is_the_commands_twin(capsys: pytest.CaptureFixture) -> None:
    checks = _check_replay_twin(LONG, capsys)
    assert [len(c.events) for c in checks][0] == 3 and checks[0].turn_agreement == 1.0
    flags = ("--policy", "deepagents", "--set", "trigger=fraction:0.1", "--window", "90000")
    (top, *_) = _check_replay_twin(LONG, capsys, *flags)
    assert top.params["window"] == 90_000 and "window" not in top.recorded_settings


def test_check_replay_is_the_commands_twin_on_shared_files(
    shared: Path, capsys: pytest.CaptureFixture
) -> None:
    real = shared / "data" / "real-traces"
    claude = _check_replay_twin(real / "claude-code-session-compacted", capsys)[0]
    assert claude.policy == "claude-code" and set(claude.recorded_settings) == {"window"}
    assert claude.events  # its recorded compaction was checked
    codex = _check_replay_twin(real / "codex-rollout", capsys)[0]
    assert codex.policy == "codex" and codex.recorded_settings


def test_check_replay_takes_traces_and_policy_objects() -> None:
    from langchain_core.messages import AIMessage, HumanMessage

    trace = long_trace()
    by_name = ctxlab.check_replay(trace, "deepagents")
    by_object = ctxlab.check_replay(trace, ctxlab.policies.DeepAgents())
    assert len(by_name) == len(trace.walk()) > 1  # subagents included
    # by name, the preset runs as the recording fixed it (window, counter, usage scaling); an
    # object runs as given
    assert set(by_name[0].recorded_settings) == {"window", "chars_per_token", "use_usage_metadata"}
    assert by_name[0].turn_agreement == 1.0 and by_name[0].params["window"] == 32_000
    assert by_object[0].recorded_settings == {} and by_object[0].params != by_name[0].params
    with pytest.raises(ValueError, match="by name"):
        ctxlab.check_replay(trace, ctxlab.policies.DeepAgents(), settings={"window": "9000"})
    bare = ctxlab.from_messages([HumanMessage("hi"), AIMessage("yo")], model="acme-1")
    (guessed,) = ctxlab.check_replay(bare)
    assert guessed.policy == "deepagents" and guessed.preset_guess in guessed.notes
    with pytest.raises(ValueError, match=rf"^{bare.trace_id}: codex: .*window"):
        ctxlab.check_replay(bare, "codex")


def test_inspect_is_the_commands_twin(shared: Path, capsys: pytest.CaptureFixture) -> None:
    real = shared / "data" / "real-traces"
    printed = _cli_json(["inspect", str(real), "--json"], capsys)["traces"]
    frame = ctxlab.inspect(real)
    assert isinstance(frame, pl.DataFrame)
    assert frame.to_dicts() == printed and frame.height >= 10
    assert frame["recorded_compactions"].sum() > 0 and frame["recorded_input_tokens"].null_count()
    (short,) = ctxlab.load(SHORT)
    row = ctxlab.inspect(short).row(0, named=True)
    assert row["trace_id"] == short.trace_id and row["subagents"] == len(short.walk()) - 1
    assert ctxlab.inspect([]).schema == frame.schema
