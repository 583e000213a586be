"""Scripts: the turns a scripted agent takes, built while simulating the files it changes.

A `Script` is written ahead of the run. Each turn has one tool call (so runs stay sequential)
and the script keeps its own copy of the files, so read offsets and edit strings stay coherent
with what the real tools will find. `script_replies` keys the turns for the model to look up,
and `summariser` writes the summary the model returns when deepagents summarises.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .seeded import ID_ALPHABET, token_stream
from .tools import pytest_report


@dataclass
class Step:
    """One scripted model turn: some text and at most one tool call (so runs stay sequential)."""

    text: str
    call: dict[str, Any] | None
    note: str = ""


@dataclass
class Script:
    """The turns of one agent, plus a simulated copy of the files so offsets stay coherent."""

    rng: random.Random
    files: dict[str, str]
    steps: list[Step] = field(default_factory=list)
    phases: list[tuple[int, str]] = field(default_factory=list)

    def phase(self, goal: str) -> None:
        """Mark where a part of the plan starts; summaries list the parts still ahead."""
        self.phases.append((len(self.steps), goal))

    def call(self, text: str, name: str, args: dict[str, Any], note: str = "") -> str:
        """Append a turn calling `name`; returns the (seeded) Anthropic-style tool-call id."""
        call_id = "toolu_01" + token_stream(self.rng, ID_ALPHABET, 22)
        self.steps.append(Step(text, {"name": name, "args": args, "id": call_id}, note))
        return call_id

    def final(self, text: str) -> None:
        """The closing answer (no tool call), which ends the agent loop."""
        self.steps.append(Step(text, None))

    def read(
        self, path: str, offset: int = 0, limit: int = 100, text: str = "", note: str = ""
    ) -> str:
        """`read_file`, with a default sentence that names what is being read."""
        args: dict[str, Any] = {"file_path": path}
        if offset:
            args["offset"] = offset
        if limit != 100:
            args["limit"] = limit
        where = f" (lines {offset + 1}-{offset + limit})" if offset or limit != 100 else ""
        return self.call(
            text or f"Let me read `{path}`{where}.",
            "read_file",
            args,
            note or f"Read {path}{where}.",
        )

    def grep(
        self, pattern: str, path: str, text: str = "", note: str = "", glob: str | None = None
    ) -> str:
        """`grep` in content mode over a folder, optionally narrowed to one file by `glob`.

        Never a file as `path`: deepagents' Python grep fallback then searches the file's whole
        folder (`base_full.parent`), which would mix several saved reports together.
        """
        args = {"pattern": pattern, "path": path, "output_mode": "content"}
        if glob:
            args["glob"] = glob
        where = f"{path}/{glob}" if glob else path
        return self.call(
            text or f"Searching for `{pattern}` in `{where}`.",
            "grep",
            args,
            note or f"Searched {where} for '{pattern}'.",
        )

    def write(self, path: str, content: str, text: str, note: str) -> str:
        """`write_file`; the simulated tree is updated like the real backend will be."""
        self.files[path.lstrip("/")] = content
        return self.call(text, "write_file", {"file_path": path, "content": content}, note)

    def edit(self, path: str, old: str, new: str, text: str, note: str) -> str:
        """`edit_file`; only applied to the simulation when it would succeed for real."""
        key = path.lstrip("/")
        if self.files[key].count(old) == 1:
            self.files[key] = self.files[key].replace(old, new)
        args = {"file_path": path, "old_string": old, "new_string": new}
        return self.call(text, "edit_file", args, note)

    def delete(self, path: str, text: str, note: str) -> str:
        """`delete`; the file also leaves the simulated tree."""
        del self.files[path.lstrip("/")]
        return self.call(text, "delete", {"file_path": path}, note)

    def tests(
        self, path: str = "tests", verbose: bool = False, text: str = "", note: str = ""
    ) -> tuple[str, str]:
        """`run_tests`; returns the call id and the report the real tool will produce."""
        report = pytest_report(self.files, path, verbose)
        args: dict[str, Any] = {"path": path}
        if verbose:
            args["verbose"] = True
        call_id = self.call(
            text or f"Running `{path}` to check.",
            "run_tests",
            args,
            note or f"run_tests {path}{' -v' if verbose else ''}: {report_summary(report)}.",
        )
        return call_id, report


def report_summary(report: str) -> str:
    """The last line of a pytest report, e.g. '3 failed, 95 passed in 0.92s'."""
    return report.rstrip("\n").rsplit("\n", 1)[-1].strip("= ")


RESULTS_DIR = "/large_tool_results"


def offloaded(call_id: str) -> str:
    """Where FilesystemMiddleware saves a tool result over 80,000 characters."""
    return f"{RESULTS_DIR}/{call_id}"


def script_replies(opening: str, script: Script) -> dict[str, Step]:
    """Key each turn by what triggers it: the opening message, then the previous call id."""
    keys = [opening] + [s.call["id"] for s in script.steps[:-1] if s.call]
    return dict(zip(keys, script.steps, strict=True))


def summariser(prompt: str, script: Script) -> Callable[[str], str]:
    """Summaries in deepagents' four-section format, covering the turns being summarised."""

    def summarise(history: str) -> str:
        upto = max(i for i, s in enumerate(script.steps) if s.call and s.call["id"] in history)
        done = script.steps[: upto + 1]
        looked = [
            s for s in done if s.call and s.call["name"] in ("read_file", "grep", "ls", "glob")
        ]
        changed = [
            s.note
            for s in done
            if s.call and s.call["name"] in ("write_file", "edit_file", "delete")
        ]
        other = [s.note for s in done if s not in looked and s.note and s.note not in changed]
        current = [goal for start, goal in script.phases if start <= upto][-1:]
        ahead = [goal for start, goal in script.phases if start > upto]
        return "\n".join(
            [
                "## SESSION INTENT",
                "",
                prompt,
                "",
                "## SUMMARY",
                "",
                f"- Inspected the code base with {len(looked)} reads/searches.",
                *[f"- {n}" for n in other],
                "",
                "## ARTIFACTS",
                "",
                *([f"- {n}" for n in changed] or ["None"]),
                "",
                "## NEXT STEPS",
                "",
                *[f"- Finish: {goal}" for goal in current],
                *[f"- Then: {goal}" for goal in ahead],
            ]
        )

    return summarise
