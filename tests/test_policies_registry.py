"""One registry of policy names: `register`, the `ctxlab.policies` entry-point group, and every
command and function that takes a name (`get`, replay, compare, sweep, the explorer) accepting
the same ones, `a+b` pipelines included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest

import ctxlab
from ctxlab._cli.main import main
from ctxlab._replay.policies import PRESETS, catalog, describe, get, names, register
from ctxlab._replay.policies.engine import Context, Item, StagePolicy, safe_start
from ctxlab._replay.specs import format_size
from ctxlab._store.sweep import SweepError, policy_named
from tests.samples import long_trace

REPO = Path(__file__).resolve().parents[1]
LONG = REPO / "traces" / "deepagents_long_session.jsonl.xz"
SHORT = REPO / "traces" / "deepagents_short_session.jsonl.xz"


class KeepLastStage:
    def __init__(self, n: int) -> None:
        self.n = n

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        start = safe_start(items, max(1, len(items) - self.n))
        return items[:1] + items[start:]


@dataclass(frozen=True)
class KeepLast(StagePolicy):
    """The first message and the newest `n`."""

    name: ClassVar[str] = "keep-last"
    source: ClassVar[str] = "tests/test_policies_registry.py"

    n: int = 8

    def stages(self, trace, window):
        return [KeepLastStage(self.n)]


@pytest.fixture
def registry() -> Iterator[None]:
    """Registrations made by a test are undone after it."""
    saved = dict(catalog._REGISTERED)
    yield
    catalog._REGISTERED.clear()
    catalog._REGISTERED.update(saved)


def test_register_makes_a_name_known_everywhere(registry, tmp_path, capsys) -> None:
    register(KeepLast, "keep-last")
    assert "keep-last" in names() and names()[: len(PRESETS)] == list(PRESETS)
    assert get("keep-last", n=4) == KeepLast(n=4)
    assert describe()[-1] == {
        "name": "keep-last",
        "params": {"n": 8},
        "source": "tests/test_policies_registry.py",
    }
    assert isinstance(get("keep-last+clear-tool-uses"), catalog.Pipeline)
    assert policy_named("keep-last", n=2) == KeepLast(n=2)
    assert main(["replay", str(SHORT), "--policy", "keep-last", "--set", "n=2", "--format",
                 "jsonl"]) == 0  # fmt: skip
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    api = ctxlab.replay(ctxlab.load(SHORT)[0], KeepLast(n=2))
    assert [r["messages"] for r in rows] == [c.messages for c in api.calls]
    assert max(r["messages"] for r in rows) == 3  # the first message and the newest two
    assert main(["policies", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["policies"]
    assert listed[-1]["name"] == "keep-last"

    register(lambda **params: KeepLast(**{"n": 3, **params}), "keep-3")  # a factory
    assert get("keep-3") == KeepLast(n=3) and get("keep-3", n=5) == KeepLast(n=5)
    register(KeepLast, "keep-3")  # registering again replaces
    assert get("keep-3") == KeepLast(n=8)

    table = ctxlab.sweep(
        [SHORT], "keep-last", {"n": [2, 4]}, store=tmp_path / "s.duckdb", workers=1,
        progress=False,
    )  # fmt: skip
    assert table["n"].to_list() == ["2", "4"] and table["policy"].to_list() == ["keep-last"] * 2


def test_register_refuses_bad_names(registry) -> None:
    with pytest.raises(ValueError, match="built-in preset"):
        register(KeepLast, "raw")
    with pytest.raises(ValueError, match="without '\\+'"):
        register(KeepLast, "a+b")
    with pytest.raises(TypeError, match="policy class or factory"):
        register(KeepLast(), "keep-last")  # type: ignore[arg-type]


def test_pipeline_parameters_go_to_the_members_that_have_them() -> None:
    p = get("clear-tool-uses+observation-masking", window=50_000, n=4)
    assert [m.window for m in p.policies] == [50_000, 50_000]
    assert p.policies[1].n == 4 and p.policies[0] == get("clear-tool-uses", window=50_000)
    with pytest.raises(ValueError, match="no member of 'raw\\+codex' has parameter.*nope"):
        get("raw+codex", nope=1)
    with pytest.raises(ValueError, match="unknown policy 'nope'; known: raw, deepagents, "):
        get("raw+nope")


def test_replay_cli_takes_a_pipeline(capsys) -> None:
    argv = ["replay", str(LONG), "--policy", "clear-tool-uses+langchain-summarization"]
    assert main([*argv, "--format", "jsonl"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    kinds = {e["kind"] for r in rows for e in r["events"]}
    assert "clear_tool_uses" in kinds
    expected = (
        ctxlab.replay(long_trace(), get("clear-tool-uses+langchain-summarization"))
        .turns["context_tokens"]
        .to_list()
    )
    assert [r["context_tokens"] for r in rows if "/" not in r["trace_id"]] == expected
    assert main([*argv, "--set", "keep=2"]) == 0  # keep goes to both, read as each one takes it
    assert "clear_tool_uses" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["replay", str(SHORT), "--policy", "nope"],
        ["compare", str(SHORT), "--policy", "raw", "--policy", "raw+nope"],
        ["sweep", str(SHORT), "--policy", "nope", "--db", "unused.duckdb"],
    ],
)
def test_unknown_names_are_a_clear_error(argv, capsys) -> None:
    assert main(argv) == 2
    err = " ".join(capsys.readouterr().err.split())  # one message, wrapped to the terminal
    assert "unknown policy 'nope'; known: raw, deepagents, langchain-summarization" in err
    assert "inspect-summary" in err


def test_format_size_takes_every_form() -> None:
    assert format_size(("messages", 6)) == "messages:6"
    assert format_size(["messages", 6]) == "messages:6"
    assert format_size([["messages", 6]]) == "messages:6"
    assert format_size([("tokens", 4000), {"messages": 10, "tokens": 9}]) == (
        "tokens:4000,messages:10&tokens:9"
    )
    assert format_size("messages:6") == "messages:6"
    assert format_size("auto") == "auto"
    assert format_size(0.85) == "0.85" and format_size(None) == "none"


def test_sweep_takes_every_size_form_deepagents_accepts(tmp_path) -> None:
    keeps = [["messages", 6], ("messages", 3), "messages:4", "fraction:0.2", "auto"]
    triggers = [[["tokens", 3000], {"messages": 5}], {"tokens": 2500}, "0.5", ("tokens", 2000)]
    table = ctxlab.sweep(
        [SHORT],
        "deepagents",
        {"keep": keeps, "trigger": triggers},
        store=tmp_path / "s.duckdb",
        workers=1,
        progress=False,
    )
    assert table.height == len(keeps) * len(triggers)
    assert table["keep"].unique(maintain_order=True).to_list() == [
        "messages:6",
        "messages:3",
        "messages:4",
        "fraction:0.2",
        "auto",
    ]
    assert table["trigger"].unique(maintain_order=True).to_list() == [
        "tokens:3000,messages:5",
        "tokens:2500",
        "fraction:0.5",
        "tokens:2000",
    ]
    assert table["peak_context_tokens"].null_count() == 0
    low = table.filter(table["trigger"] == "tokens:2000")
    assert low["events"].to_list()[:3] == [3, 4, 4]  # keeps of 6, 3, 4 messages all summarise


def test_sweep_reads_grid_text_against_the_parameter() -> None:
    """`trigger` is a size for Deep Agents but a plain token count for ClearToolUses."""
    from ctxlab._store.sweep import grid_points

    points = grid_points(get("clear-tool-uses"), {"trigger": ["5000"], "keep": ["2"]})
    assert points == [{"trigger": 5000, "keep": 2}]
    points = grid_points(get("deepagents"), {"trigger": ["5000"], "keep": ["messages:2"]})
    assert points == [{"trigger": ("tokens", 5000), "keep": ("messages", 2)}]
    with pytest.raises(SweepError, match="unknown size kind"):
        grid_points(get("deepagents"), {"keep": ["furlongs:2"]})


PLUGIN = """
from dataclasses import dataclass
from typing import ClassVar

from ctxlab._replay.policies.engine import StagePolicy, safe_start


class KeepLastStage:
    def __init__(self, n):
        self.n = n

    def apply(self, items, ctx):
        return items[:1] + items[safe_start(items, max(1, len(items) - self.n)):]


@dataclass(frozen=True)
class KeepLast(StagePolicy):
    name: ClassVar[str] = "plugin-keep-last"
    source: ClassVar[str] = "the ctxlab-plugin-example package"

    n: int = 8

    def stages(self, trace, window):
        return [KeepLastStage(self.n)]
"""


def _installed_plugin(site: Path) -> None:
    """A real installed distribution on `site`: a module plus its `.dist-info` (METADATA and
    entry_points.txt), as pip lays one out; one entry point works, one cannot be imported."""
    site.mkdir()
    (site / "ctxlab_plugin_example.py").write_text(PLUGIN)
    info = site / "ctxlab_plugin_example-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: ctxlab-plugin-example\nVersion: 0.1\n"
    )
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [ctxlab.policies]
            plugin-keep-last = ctxlab_plugin_example:KeepLast
            plugin-broken = ctxlab_plugin_missing:Policy
            """
        )
    )
    (info / "RECORD").write_text("")


def test_an_entry_point_policy_shows_up_in_the_cli(tmp_path) -> None:
    site = tmp_path / "site"
    _installed_plugin(site)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(site)])}

    def ctxlab_cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ctxlab._cli.main", *args],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
        )

    listed = ctxlab_cli("policies", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = {r["name"]: r for r in json.loads(listed.stdout)["policies"]}
    assert rows["plugin-keep-last"] == {
        "name": "plugin-keep-last",
        "params": {"n": 8},
        "source": "the ctxlab-plugin-example package",
    }
    assert "plugin-broken" not in rows and set(PRESETS) <= set(rows)
    assert "'plugin-broken'" in listed.stderr and "ctxlab-plugin-example" in listed.stderr
    assert "ModuleNotFoundError" in listed.stderr

    replayed = ctxlab_cli(
        "replay", str(SHORT), "--policy", "plugin-keep-last+clear-tool-uses", "--set", "n=2",
        "--format", "jsonl",
    )  # fmt: skip
    assert replayed.returncode == 0, replayed.stderr
    rows = [json.loads(line) for line in replayed.stdout.splitlines()]
    same = catalog.Pipeline((KeepLast(n=2), get("clear-tool-uses")))
    api = ctxlab.replay(ctxlab.load(SHORT)[0], same)
    assert [r["context_tokens"] for r in rows] == [c.context_tokens for c in api.calls]
    assert max(r["messages"] for r in rows) == 3

    swept = ctxlab_cli(
        "sweep", str(SHORT), "--policy", "plugin-keep-last", "--grid", "n=2,4", "--workers", "2",
        "--db", str(tmp_path / "s.duckdb"), "--format", "json",
    )  # fmt: skip
    assert swept.returncode == 0, swept.stderr
    cells = json.loads(swept.stdout)
    assert [(c["policy"], c["n"]) for c in cells] == [("plugin-keep-last", "2")] + [
        ("plugin-keep-last", "4")
    ]
