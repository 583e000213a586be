"""One-token mutants of the count-only forms against tests/test_fast_paths.py.

    .venv/bin/python -m bench.mutants_fast_paths                  # every form file
    .venv/bin/python -m bench.mutants_fast_paths clear_counts     # files whose path has this
    .venv/bin/python -m bench.mutants_fast_paths --only clear_counts.py:110:'>'

Each mutant changes one token of a form (a comparison flipped or loosened, `+`/`-`, `and`/`or`,
`min`/`max`, `True`/`False`, `is`/`is not`, a 0, 1 or 2 raised by one), is compiled, and the
mutated functions' code objects are swapped into the loaded ones, so every module that imported
them runs the mutant; the generated fast-path test then runs for the policies that use the
file (without shrinking: a caught mutant stops at its first failing example) and the original
code is put back. One JSON line per mutant: caught (with the failing policy and message), not
caught, or not a change of any function (`nochange`: a docstring or an unused branch). Run
in one process, about 5-100 s per mutant on the 2-core box (a mutant that survives runs every
example of every policy of its file).
"""

from __future__ import annotations

import argparse
import importlib
import io
import json
import signal
import time
import tokenize
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hypothesis import Phase, settings

ROOT = Path(__file__).resolve().parents[1]
P = "ctxlab/_replay/policies/"
FILES = {
    P + "clear_counts.py": ["clear-tool-uses", "subclassed-clear"],
    P + "edit_counts.py": ["inspect-edit"],
    P + "_engine_rules.py": [
        "observation-masking",
        "swe-agent-masking",
        "openhands-observation-masking",
        "openhands-recent",
        "user-rule",  # the test's own rule stage (`OldResultsStub`)
        "rule-then-recent",  # a rule stage then another: no form of the first alone
    ],
    P + "offload_counts.py": ["tool-result-offload"],
    P + "masking_counts.py": [
        "jetbrains-hybrid",
        "compact-then-mask",  # `masked_after` behind the generic form
    ],
    P + "jetbrains_counts.py": ["jetbrains-hybrid", "jetbrains-llm-summary"],
    P + "counts_only.py": [
        "subclassed-clear",
        "clear-tool-uses",
        "tool-result-offload",
        "inspect-edit",
        "openhands-recent",
    ],
    P + "deepagents/counts.py": ["deepagents"],
    P + "threshold_counts.py": [
        "claude-code",
        "openhands-llm-summarizing",
        "jetbrains-hybrid",
        "jetbrains-llm-summary",
        "compact-then-mask",  # the test's own: a stage, then masking (the form's second half)
    ],
}
"""Each form file and the policies whose form runs it (one of each way it is reached)."""

SWAP = {
    "<": ["<="],
    "<=": ["<"],
    ">": [">="],
    ">=": [">"],
    "==": ["!="],
    "!=": ["=="],
    "+": ["-"],
    "-": ["+"],
    "+=": ["-="],
    "-=": ["+="],
    "and": ["or"],
    "or": ["and"],
    "True": ["False"],
    "False": ["True"],
    "min": ["max"],
    "max": ["min"],
}


def mutants(path: str) -> Iterator[tuple[int, str, str, str]]:
    """(line number, token, replacement, mutated line) of every one-token mutant of `path`."""
    src = (ROOT / path).read_text()
    lines = src.splitlines(keepends=True)
    toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    for i, t in enumerate(toks):
        if t.start[0] != t.end[0] or t.start[0] > len(lines):
            continue
        line = lines[t.start[0] - 1]
        if line.strip().startswith(("def ", "class ", "from ", "import ", "@", "#")):
            continue
        if t.string == "-" and "->" in line:
            continue
        if t.type == tokenize.NUMBER and t.string in ("0", "1", "2"):
            reps = [str(int(t.string) + 1)]
        elif t.string == "is" and not (i + 1 < len(toks) and toks[i + 1].string == "not"):
            reps = ["is not"]
        elif t.type in (tokenize.OP, tokenize.NAME):
            reps = SWAP.get(t.string, [])
        else:
            reps = []
        for rep in reps:
            yield t.start[0], t.string, rep, line[: t.start[1]] + rep + line[t.end[1] :]


def functions(namespace: dict[str, Any]) -> dict[str, types.FunctionType]:
    """The functions of a module namespace, methods and properties included, by name."""
    out = {}
    for k, v in namespace.items():
        if isinstance(v, types.FunctionType):
            out[k] = v
        elif isinstance(v, type):
            for kk, vv in vars(v).items():
                f = vv.fget if isinstance(vv, property) else getattr(vv, "__func__", vv)
                if isinstance(f, types.FunctionType):
                    out[f"{k}.{kk}"] = f
    return out


CPU_LIMIT = 300
"""CPU seconds a mutant's tests may take (a surviving one takes about 5-30): a mutant that
loops for ever (`k += 1` made `k -= 1`) is caught as the suite's timeout would catch it."""


class Hung(BaseException):
    """The mutant's tests ran past `CPU_LIMIT` (not an `Exception`: hypothesis lets it through
    at once instead of running the example again)."""


def _hung(signum: int, frame: Any) -> None:
    raise Hung(f"over {CPU_LIMIT} CPU seconds")


def check(test: Any, policies: list[str]) -> str | None:
    """The first policy whose generated test fails, with why; None when all pass. The test's
    short trace is made afresh for each mutant: what a form keeps per trace (its tables) must
    come from the code under test, not from the previous mutant's run."""
    test._short_trace.cache_clear()
    signal.signal(signal.SIGVTALRM, _hung)
    signal.setitimer(signal.ITIMER_VIRTUAL, CPU_LIMIT, 1)  # CPU time: fair on a loaded box
    try:
        for name in policies:
            try:
                test.test_every_fast_path_equals_the_plain_replay(name)
            except (Exception, Hung) as exc:  # noqa: BLE001 (any failure catches the mutant)
                return f"{name}: {type(exc).__name__}: {str(exc)[:120]}"
        return None
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)


def run(path: str, test: Any, only: set[str]) -> Iterator[dict[str, Any]]:
    """Every mutant of `path` (or those named in `only`, as `file.py:line:token`)."""
    module_name = path[:-3].replace("/", ".")
    loaded = functions(vars(importlib.import_module(module_name)))
    saved = {k: f.__code__ for k, f in loaded.items()}
    lines = (ROOT / path).read_text().splitlines(keepends=True)
    for lineno, old, new, mutated in mutants(path):
        if only and f"{Path(path).name}:{lineno}:{old}" not in only:
            continue
        row: dict[str, Any] = {"file": path, "line": lineno, "old": old, "new": new}
        row["code"] = lines[lineno - 1].strip()
        source = [*lines[: lineno - 1], mutated, *lines[lineno:]]
        namespace: dict[str, Any] = {"__name__": module_name, "__file__": str(ROOT / path)}
        exec(compile("".join(source), str(ROOT / path), "exec"), namespace)  # noqa: S102
        made = functions(namespace)
        changed = [
            k
            for k in loaded
            if k in made
            and (made[k].__code__.co_code, made[k].__code__.co_consts)
            != (saved[k].co_code, saved[k].co_consts)
        ]
        if not changed:
            yield {**row, "caught": "nochange"}
            continue
        start = time.time()
        try:
            for k in changed:
                loaded[k].__code__ = made[k].__code__
            why = check(test, FILES[path])
        finally:
            for k in changed:
                loaded[k].__code__ = saved[k]
        yield {**row, "caught": why is not None, "why": why, "secs": round(time.time() - start)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="run the form files whose path has one of these")
    parser.add_argument("--only", action="append", default=[], help="file.py:line:token")
    args = parser.parse_args()
    settings.register_profile("mutants", phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile("mutants")
    import tests.test_fast_paths as test
    from ctxlab._replay.policies import catalog

    catalog._REGISTERED.update(test._PLUGGED)  # the test's own plugged-in policies
    wanted = [p for p in FILES if not args.files or any(f in p for f in args.files)]
    for path in wanted:
        for row in run(path, test, set(args.only)):
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
