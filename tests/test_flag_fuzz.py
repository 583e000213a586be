"""No traceback for any flag value: every option and positional argument of every `ctxlab`
subcommand, read from the argparse parsers themselves, is given nonsense (negative, zero, huge,
NaN, infinite, empty, the wrong type, a path that is not UTF-8, a missing file, a directory where
a file belongs). Each run must end with an exit code and, when it refuses, one `ctxlab`
line per problem on stderr: never an exception out of `main`, never a traceback."""

from __future__ import annotations

import argparse
import json
import logging
import os
import warnings
from pathlib import Path

import pytest

from ctxlab._cli.main import build_parser, main
from tests.cli_text import messages

MESSAGES = [
    {"role": "user", "content": "list the files"},
    {"role": "assistant", "content": "a.py b.py"},
    {"role": "user", "content": "thanks"},
    {"role": "assistant", "content": "done"},
]

NON_UTF8 = os.fsdecode(b"/tmp/not-utf8-\xff\xfe.json")
"""A path whose bytes are not UTF-8 (as a file system may hold), as Python hands it over."""

VALUES = [
    "-1",
    "0",
    "-0.5",
    "1.5",
    "99999999999999999999999",
    "1e999",
    "nan",
    "inf",
    "-inf",
    "",
    " ",
    "abc",
    "x=y",
    NON_UTF8,
    "{missing}",
    "{directory}",
]
"""Nonsense for any flag; `{missing}` and `{directory}` become a path that does not exist and a
directory."""

HEAVY = {
    "quickstart": ["--notebook", "{missing}"],
    "demo": ["--traces", "{missing}"],
}
"""Commands whose real work (running a notebook, the whole demo) a test cannot afford for every
value: a flag that stops them early is added unless it is the flag under test. Their values are
still parsed, checked and used up to that point."""

SKIP = {"-h", "--help", "--version"}


def _actions() -> list[tuple[str, str]]:
    """(subcommand, flag or positional name) for every argument that takes a value."""
    found = []
    for action in build_parser()._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command, sub in sorted(action.choices.items()):
                for arg in sub._actions:
                    if arg.nargs == 0 or SKIP & set(arg.option_strings):
                        continue
                    found.append(
                        (command, arg.option_strings[0] if arg.option_strings else arg.dest)
                    )
    return found


def _base(command: str, trace: Path, tmp: Path) -> tuple[list[str], list[str]]:
    """Valid positionals and required options of `command` (by dest), and its other flags."""
    sub = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices[command]
    positionals: list[str] = []
    required: list[str] = []
    for arg in sub._actions:
        if arg.option_strings:
            if arg.required:
                required += [arg.option_strings[0], "deepagents" if arg.dest == "policy" else "x"]
        elif arg.dest == "sql":
            positionals.append("SELECT 1")
        else:
            positionals.append(str(trace))
    return positionals, required


ACTIONS = _actions()


def test_every_subcommand_and_option_is_covered() -> None:
    commands = {c for c, _ in ACTIONS}
    assert {"replay", "evaluate", "sweep", "query", "compare", "calibrate", "load"} <= commands
    assert len(ACTIONS) > 50


@pytest.mark.parametrize(("command", "flag"), ACTIONS, ids=[f"{c} {f}" for c, f in ACTIONS])
def test_nonsense_values_never_give_a_traceback(
    command: str,
    flag: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    monkeypatch.chdir(tmp_path)  # default store paths land here
    trace = tmp_path / "chat.json"
    trace.write_text(json.dumps(MESSAGES))
    (tmp_path / "folder").mkdir()
    positionals, required = _base(command, trace, tmp_path)
    heavy = [] if flag in HEAVY.get(command, [])[:1] else HEAVY.get(command, [])
    for raw in VALUES:
        value = raw.format(missing=tmp_path / "missing.json", directory=tmp_path / "folder")
        argv = [command, *required]
        if flag.startswith("-"):
            argv += [*positionals, flag, value]
        else:  # a positional: this value in its place
            dests = [a for a in positionals]
            index = _positional_index(command, flag)
            dests[index] = value
            argv += ["--", *dests] if value.startswith("-") else dests
        argv += [h.format(missing=tmp_path / "missing.json") for h in heavy]
        # Log records and kept warnings may hold the non-UTF-8 value, which pytest-xdist cannot
        # send to its controller: records are dropped, warnings are shown (by main) and not kept.
        logging.disable(logging.CRITICAL)
        try:
            with warnings.catch_warnings():
                code = main(argv)
        finally:
            logging.disable(logging.NOTSET)
        out, err = capsys.readouterr()
        assert "Traceback" not in err + out, (argv, err)
        assert code in (0, 1, 2, 3), (argv, code, err)
        if code == 2:
            lines = messages(err)
            assert lines and all(line.startswith("ctxlab") for line in lines), (argv, err)


def _positional_index(command: str, dest: str) -> int:
    sub = next(
        a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)
    ).choices[command]
    names = [a.dest for a in sub._actions if not a.option_strings]
    return names.index(dest)
