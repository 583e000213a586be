"""The two recorded sessions: what the user asks and what the scripted agent does about it.

`sessions()` builds each sample from its own seed, in a fixed order of RNG draws: the project
first, then the script. Changing the order of any call here changes every byte downstream.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from .project import (
    BUGS,
    EXPORT_API,
    PACKAGE_MODULES,
    RETURNS_API,
    RETURNS_BUG,
    build_project,
    function_source,
    new_module,
    prose,
    tests_source,
)
from .script import RESULTS_DIR, Script, Step, offloaded, report_summary, script_replies, summariser
from .tools import git_diff_text, lineno

SUBAGENT = "general-purpose"
SYSTEM_PROMPT = """You are a senior Python engineer working inside the `orderflow` repository, \
an order-processing service. The repository is mounted at `/`.

Working rules:
- Read before you write: inspect the relevant module and its tests before changing anything.
- Prefer `edit_file` for small changes to existing files; use `write_file` only for new files.
- Run `run_tests` on the narrowest target that proves a change, and the full suite before you \
finish. Use `verbose=True` when you need the per-test report.
- Large tool results are saved under `/large_tool_results/`; read them in slices with \
`read_file` (offset/limit) or search them with `grep`.
- Delegate broad read-only surveys to the `general-purpose` subagent with `task` so that your \
own context stays focused.
- Keep the public API backwards compatible and keep money as `Decimal`, never `float`.
- When you are done, reply with a short summary of what changed and how it was verified."""


def long_session(rng: random.Random, files: dict[str, str]) -> tuple[str, Script, str, Script]:
    """The long coding session: fix 5 bugs, add CSV export + returns, migrate, document.

    Reads are kept to about ten lines and the big writes come late, because every model call
    re-sends the whole history in four ops (LLM and `model`-node runs, post and patch): the
    file size grows with the square of the session length. The migration script stays large
    because the full `git diff` must exceed the 80,000-character offload threshold.
    """
    main = Script(rng, dict(files))
    prompt = (
        "The orderflow test suite is red after the 2.7 release. Please:\n"
        "1. get the existing tests passing again (don't weaken any test),\n"
        "2. add the CSV export module that tests/test_reports_export.py expects and expose it "
        "in the API,\n"
        "3. implement the returns workflow specified in docs/returns.md,\n"
        "4. write a one-off script that migrates the legacy refund rows, and\n"
        "5. update the changelog and write a short runbook for support.\n"
        "Run the whole suite at the end and tell me what you changed."
    )
    limits = (8, 10, 12, 14)

    main.phase("Understand the repository layout and the failing tests.")
    main.call(
        "I'll start by getting an overview of the repository.",
        "ls",
        {"path": "/"},
        "Listed the repository root: orderflow/, tests/, docs/, README, CHANGELOG.",
    )
    main.read("/README.md", limit=6)
    main.read("/pyproject.toml")
    main.call(
        "Now the package itself.",
        "ls",
        {"path": "/orderflow"},
        "Listed orderflow/: one module per domain area plus models.",
    )
    main.call(
        "And the test layout.",
        "glob",
        {"pattern": "tests/*.py"},
        "Tests: one file per module plus test_returns.py and test_reports_export.py.",
    )
    main.read("/docs/architecture.md", limit=5)
    main.read("/docs/returns.md", limit=16)
    for module in ("models", *PACKAGE_MODULES):
        main.read(f"/orderflow/{module}.py", 24, rng.choice(limits))
    main.read("/tests/factories.py")
    for module in rng.sample(sorted(PACKAGE_MODULES), 4):
        main.read(f"/tests/test_{module}.py", limit=10)
    main.grep("class Order", "/orderflow", "Where is the Order model defined?")
    main.grep("def make_order", "/tests", "And the test factory.")

    main.phase("Run the full suite and triage the failures.")
    base_id, base = main.tests(
        verbose=True, text="Let me run the full suite verbosely to see where we stand."
    )
    main.grep(
        "FAILED",
        RESULTS_DIR,
        "The report was saved to a file; let me list the failures.",
        glob=base_id,
    )
    main.grep("ERROR collecting", RESULTS_DIR, "And the collection errors.", glob=base_id)
    main.read(
        offloaded(base_id),
        lineno(base, " FAILURES "),
        16,
        "Let me read the first failure tracebacks.",
    )
    main.read(offloaded(base_id), lineno(base, " FAILURES ") + 16, 16, "And the next ones.")

    main.phase("Survey existing refund code (delegated to the subagent).")
    task_description = (
        "Survey how refunds are handled today in /orderflow (payments.py, api.py, storage.py, "
        "notifications.py). For every function the new returns module will need to call, give "
        "its file, line number, signature and a one-line description. Read-only: do not modify "
        "any file. Reply with a compact markdown list."
    )
    sub = Script(rng, main.files)
    sub.grep("refund", "/orderflow", "Searching the package for refund-related code.")
    for module, function in (
        ("payments", "refund_payment"),
        ("api", "refund_order_handler"),
        ("notifications", "send_refund_notice"),
    ):
        source = sub.files[f"orderflow/{module}.py"]
        sub.read(f"/orderflow/{module}.py", lineno(source, f"def {function}(") - 3, 40)
    sub.grep("def ", "/orderflow", "Listing the storage functions.", glob="storage.py")
    report = ["Refund-related functions the returns module should use:", ""]
    for module, names in PACKAGE_MODULES.items():
        source = sub.files[f"orderflow/{module}.py"]
        for name in names:
            if "refund" in name or name in ("save_order", "order_by_id", "restock"):
                line = lineno(source, f"def {name}(")
                signature = source.split("\n")[line].removeprefix("def ").rstrip(":")
                report.append(f"- `orderflow/{module}.py:{line + 1}` `{signature}`")
    report += [
        "",
        "Notes: `refund_payment` already audits and emits metrics, so returns should "
        "call it rather than the provider client. There is no persistence for return "
        "requests yet; `save_order` is the closest pattern (no transaction wrapper). "
        "Most grep hits are in `orderflow/legacy_refunds.py`, the deprecated pre-2.3 "
        "implementation; nothing calls it. No file was modified.",
    ]
    sub.final("\n".join(report))
    main.call(
        "This refund survey is read-heavy, so I'll delegate it to a subagent and keep my "
        "own context for the fixes.",
        "task",
        {"description": task_description, "subagent_type": SUBAGENT},
        "Subagent surveyed refund code: use refund_payment, send_refund_notice, restock, "
        "save_order; no persistence for returns yet.",
    )

    main.phase("Fix the five failing functions without weakening tests.")
    for index, (module, function, bad, good, _) in enumerate(BUGS):
        path = f"/orderflow/{module}.py"
        source = main.files[path.lstrip("/")]
        tests_text = main.files[f"tests/test_{module}.py"]
        main.grep(
            f"FAILED tests/test_{module}.py",
            RESULTS_DIR,
            f"Next failure group: `{function}`. Which of its tests failed in the baseline?",
            glob=base_id,
        )
        main.grep(f"def {function}", "/orderflow", "Let me find its definition.")
        main.read(path, lineno(source, f"def {function}(") - 2, 10)
        main.grep(f"{function}(", "/orderflow", "Who calls it?")
        main.read(f"/tests/test_{module}.py", lineno(tests_text, f"def test_{function}_01"), 8)
        main.read(
            f"/tests/test_{module}.py",
            lineno(tests_text, f"def test_{function}_03"),
            6,
            "And one of the failing cases.",
        )
        if index == 0:
            main.grep("def expected", "/tests", "Where do the expected values come from?")
        else:
            main.read(path, 16, 6, "Checking the module constants first.")
        if index == 1:
            main.edit(
                path,
                bad.strip() + "\n        line = reservation.line[index]",
                good.strip() + "\n        line = reservation.line[index]",
                "The loop skips the first reservation line. Fixing the range.",
                "First edit attempt on release_stock failed (old_string typo).",
            )
        main.edit(
            path,
            bad,
            good,
            f"The bug: `{bad.strip()}`. It should be `{good.strip()}`.",
            f"Fixed {function} in {path}: `{bad.strip()}` -> `{good.strip()}`.",
        )
        main.tests(f"tests/test_{module}.py")
        main.read(
            path,
            lineno(main.files[path.lstrip("/")], good) - 2,
            5,
            "Double-checking the edited lines.",
        )
        if index % 2:
            main.tests(text="Quick full run to make sure nothing else moved.")
    mid_id, mid = main.tests(verbose=True, text="All five fixes are in. Full verbose run.")
    main.grep("FAILED", RESULTS_DIR, "Any failures left in the saved report?", glob=mid_id)
    main.read(offloaded(mid_id), len(mid.split("\n")) - 10, 10, "Reading the summary lines.")

    main.phase("Add orderflow/reports_export.py and expose it in the API.")
    export_tests = main.files["tests/test_reports_export.py"]
    main.read("/orderflow/reports.py", 24, 12, "Now the CSV export. Reading reports.py first.")
    main.read("/tests/test_reports_export.py", 0, 12)
    main.read("/tests/test_reports_export.py", lineno(export_tests, "def test_csv_header_01"), 8)
    main.grep("csv", "/orderflow", "Is there any CSV code to reuse?")
    export_api = [n for n in EXPORT_API if n != "export_returns_csv"]
    export_src = new_module(
        rng,
        "reports_export",
        export_api,
        3,
        "CSV export of orders, refunds, returns and inventory.",
        {},
    )
    main.write(
        "/orderflow/reports_export.py",
        export_src,
        "Writing the CSV export module.",
        f"Wrote orderflow/reports_export.py ({len(export_src)} chars).",
    )
    main.tests("tests/test_reports_export.py")
    returns_csv = function_source(rng, "reports_export", "export_returns_csv")
    main.edit(
        "/orderflow/reports_export.py",
        "def csv_header(",
        returns_csv + "\n\ndef csv_header(",
        "I missed `export_returns_csv`; adding it.",
        "Added export_returns_csv.",
    )
    main.tests("tests/test_reports_export.py")
    main.grep(
        "def export_",
        "/orderflow",
        "Checking the public API is complete.",
        glob="reports_export.py",
    )
    main.read("/orderflow/reports_export.py", 0, 12, "Re-reading the module header.")
    api = main.files["orderflow/api.py"]
    main.grep(
        "def health_handler", "/orderflow", "Now exposing the export in the API.", glob="api.py"
    )
    main.read("/orderflow/api.py", lineno(api, "def health_handler(") - 4, 12)
    handler = (
        'def export_handler(request: Request) -> Response:\n    """GET /exports/{kind}.csv'
        ' (orders, refunds, returns, inventory)."""\n    kind = request.path_params["kind"]'
        '\n    return Response(EXPORTERS[kind](request.query), media_type="text/csv")'
        "\n\n\n"
    )
    main.edit(
        "/orderflow/api.py",
        "def health_handler(",
        handler + "def health_handler(",
        "Adding an `export_handler` route.",
        "Added api.export_handler.",
    )
    main.tests("tests/test_api.py")
    main.grep("EXPORTERS", "/orderflow", "Checking that the EXPORTERS registry is defined.")

    main.phase("Implement orderflow/returns.py per docs/returns.md, with edge-case tests.")
    main.read("/docs/returns.md", 4, 12, "Re-reading the returns spec before writing the module.")
    for offset in (0, 40, 80):
        main.read("/tests/test_returns.py", offset, 12)
    main.grep("RESTOCKING_FEE_RATE", "/", "Is the restocking fee constant defined anywhere?")
    main.grep("class ReturnRequest", "/orderflow", "Is there a ReturnRequest model already?")
    main.read("/orderflow/models.py", 24, 12)
    core = {
        "compute_refund_amount": (
            "    subtotal = total",
            RETURNS_BUG[0],
            "    total = subtotal - fee",
        ),
        "restock_returned_items": ("    # TODO: notify the warehouse team about restocked units",),
    }
    returns_src = new_module(
        rng,
        "returns",
        [n for n, _ in RETURNS_API],
        14,
        "Returns workflow: open, approve, refund, restock, close.",
        core,
    )
    returns_src = returns_src.replace(
        "HISTORY_SIZE = 256\n", 'HISTORY_SIZE = 256\nRESTOCKING_FEE_RATE = Decimal("0.10")\n'
    )
    main.write(
        "/orderflow/returns.py",
        returns_src,
        "I have what I need. Writing orderflow/returns.py with the full public API.",
        f"Wrote orderflow/returns.py ({len(returns_src)} chars): returns API + helpers, "
        "RESTOCKING_FEE_RATE = 0.10.",
    )
    main.tests("tests/test_returns.py")
    main.grep("def compute_refund_amount", "/orderflow", "Where did the refund maths end up?")
    fee_line = lineno(main.files["orderflow/returns.py"], RETURNS_BUG[0])
    main.read(
        "/orderflow/returns.py",
        fee_line - 6,
        10,
        "compute_refund_amount fails every second case; let me look at it.",
    )
    main.edit(
        "/orderflow/returns.py",
        RETURNS_BUG[0],
        RETURNS_BUG[1],
        "I left the fee at zero. Applying the 10% restocking fee.",
        "Fixed compute_refund_amount: restocking fee now applied.",
    )
    main.tests("tests/test_returns.py")
    main.read("/orderflow/returns.py", 16, 8, "Re-reading the constants block.")
    anchor = "def migrate_schema("
    main.read("/orderflow/storage.py", lineno(main.files["orderflow/storage.py"], anchor) - 2, 10)
    save_return = (
        'def save_return(request: ReturnRequest) -> None:\n    """Persist a return '
        'request next to its order."""\n    _RETURNS[request.order_id].append(request)'
        "\n\n\n"
    )
    main.edit(
        "/orderflow/storage.py",
        anchor,
        save_return + anchor,
        "Returns need persistence; adding `save_return` to storage.",
        "Added storage.save_return.",
    )
    edge = tests_source(rng, "returns", [n for n, _ in RETURNS_API[:6]], 6, "test_edge")
    main.write(
        "/tests/test_returns_edge_cases.py",
        edge,
        "Adding edge-case tests for the return window and partial refunds.",
        f"Wrote tests/test_returns_edge_cases.py ({len(edge)} chars).",
    )
    main.tests("tests/test_returns_edge_cases.py")
    main.tests(text="Full quiet run after the returns work.")

    main.phase("Write scripts/migrate_refunds.py for the legacy refund rows.")
    main.grep("migrate_schema", "/orderflow", "For the migration script: where is migrate_schema?")
    main.read(
        "/orderflow/legacy_refunds.py",
        0,
        10,
        "The legacy refund module is what the old rows were written by.",
    )
    main.read("/orderflow/storage.py", lineno(main.files["orderflow/storage.py"], anchor), 10)
    migrate_core = {
        "main": (
            '    parser = argparse.ArgumentParser(description="Migrate legacy refund rows")',
            '    parser.add_argument("--database", required=True)',
            "    options = parser.parse_args(argv)",
        )
    }
    migrate_src = new_module(
        rng,
        "migrate_refunds",
        ["main", "migrate_batch", "legacy_rows"],
        18,
        "One-off migration of legacy refund rows (run once, idempotent).",
        migrate_core,
    )
    main.write(
        "/scripts/migrate_refunds.py",
        migrate_src,
        "Writing the one-off migration script.",
        f"Wrote scripts/migrate_refunds.py ({len(migrate_src)} chars).",
    )
    migrate_lines = migrate_src.count("\n")
    for offset in (0, migrate_lines // 3, 2 * migrate_lines // 3):
        main.read("/scripts/migrate_refunds.py", offset, 10, "Reviewing what I wrote.")
    main.edit(
        "/scripts/migrate_refunds.py",
        "MAX_BATCH = 500",
        "MAX_BATCH = 200  # the payment provider rate-limits refund lookups",
        "Lowering the batch size for the provider's rate limit.",
        "migrate_refunds: MAX_BATCH 500 -> 200.",
    )
    main.edit(
        "/scripts/migrate_refunds.py",
        "    options = parser.parse_args(argv)",
        '    parser.add_argument("--dry-run", action="store_true")\n'
        "    options = parser.parse_args(argv)",
        "Adding a --dry-run flag.",
        "migrate_refunds: added --dry-run.",
    )
    main.grep("dry-run", "/scripts", "Verifying the flag is in place.")
    main.grep("import legacy_refunds", "/", "Is the old legacy_refunds module still imported?")
    main.delete(
        "/orderflow/legacy_refunds.py",
        "Nothing imports it and the script replaces it, so I'll remove it.",
        "Deleted orderflow/legacy_refunds.py (superseded by the migration script).",
    )

    main.phase("Update CHANGELOG and README, write docs/returns_runbook.md.")
    main.read("/CHANGELOG.md")
    changelog = (
        "## 2.8.0\n\n- Returns workflow (`orderflow.returns`), 10% restocking fee.\n"
        "- CSV export (`orderflow.reports_export`) and `GET /exports/{kind}.csv`.\n"
        "- Fix: discount rate, stock release, capture limit, postcode zones, "
        "order loading beyond 100 rows.\n- scripts/migrate_refunds.py.\n\n"
    )
    main.edit(
        "/CHANGELOG.md",
        "## 2.7.0",
        changelog + "## 2.7.0",
        "Adding a 2.8.0 entry.",
        "CHANGELOG: 2.8.0 entry.",
    )
    runbook = "# Returns runbook (support)\n\n" + prose(rng, "handling returns", 15)
    main.write(
        "/docs/returns_runbook.md",
        runbook,
        "Writing the support runbook.",
        f"Wrote docs/returns_runbook.md ({len(runbook)} chars).",
    )
    main.edit(
        "/README.md",
        "are not implemented yet.",
        "are described in docs/returns.md and docs/returns_runbook.md.",
        "Updating the README now that both features exist.",
        "README updated.",
    )
    main.read("/README.md", 0, 8, "Checking the README renders as intended.")
    main.read("/CHANGELOG.md", 0, 12, "And the changelog entry.")
    main.read("/docs/returns_runbook.md", 0, 5, "And the runbook's opening.")

    main.phase("Review the diff, clear TODOs, run the full suite and report.")
    main.call(
        "Let me review the overall change set.",
        "git_diff",
        {"stat": True},
        "git diff --stat reviewed.",
    )
    diff_id = main.call("And the full diff.", "git_diff", {}, "Full git diff reviewed.")
    diff = git_diff_text(files, main.files, stat=False)
    for needle in ("b/orderflow/api.py", "b/orderflow/returns.py", "b/scripts/migrate_refunds.py"):
        main.read(offloaded(diff_id), lineno(diff, needle), 12, "Reading the saved diff.")
    for pattern in ("TODO", "float(", "print("):
        main.grep(pattern, "/orderflow", f"Review sweep: any `{pattern}` left in the package?")
    main.edit(
        "/orderflow/returns.py",
        core["restock_returned_items"][0],
        '    notifications.queue_digest(reason="restocked", units=len(seen))',
        "Replacing my TODO with the digest notification.",
        "Resolved the TODO in returns.",
    )
    for module in ("returns", "reports_export", *(bug[0] for bug in BUGS)):
        main.tests(f"tests/test_{module}.py", text=f"Re-running the {module} tests after review.")
    final_id, final = main.tests(verbose=True, text="Final full verbose run.")
    main.grep("FAILED", RESULTS_DIR, "Checking the saved report for failures.", glob=final_id)
    main.read(offloaded(final_id), len(final.split("\n")) - 8, 8, "And the final summary.")
    main.final(
        "All done. Summary of the changes:\n\n"
        "**Bug fixes** (existing tests now pass, none weakened): `apply_discount` (rate was "
        "subtracted instead of applied), `release_stock` (skipped the first line), "
        "`capture_payment` (rejected full captures), `zone_for_postcode` (two-letter prefix), "
        "`load_orders` (only the first 100 rows).\n\n"
        "**New**: `orderflow/reports_export.py` + `GET /exports/{kind}.csv`, "
        "`orderflow/returns.py` (returns workflow with a 10% restocking fee), "
        "`storage.save_return`, `scripts/migrate_refunds.py` (idempotent, `--dry-run`, batches "
        "of 200), edge-case tests, `docs/returns_runbook.md`, CHANGELOG 2.8.0.\n\n"
        f"**Verification**: full suite run verbosely: {report_summary(final)}."
    )
    return prompt, main, task_description, sub


def short_session(rng: random.Random, files: dict[str, str]) -> tuple[str, Script]:
    """A six-turn session: find, read, test, fix, retest, answer."""
    main = Script(rng, dict(files))
    module, function, bad, good, _ = BUGS[0]
    source = main.files[f"orderflow/{module}.py"]
    main.grep(f"def {function}", "/orderflow", f"Let me find `{function}`.")
    main.read(f"/orderflow/{module}.py", max(0, lineno(source, f"def {function}(") - 5), 25)
    main.tests(f"tests/test_{module}.py", text="Running its tests.")
    main.edit(
        f"/orderflow/{module}.py",
        bad,
        good,
        "The rate is subtracted from the subtotal instead of applied. Fixing.",
        "",
    )
    _, report = main.tests(f"tests/test_{module}.py", text="Re-running the tests.")
    main.final(
        f"`{function}` subtracted the rate (0.15) from the subtotal instead of applying "
        f"it. Fixed to `{good.strip()}`; tests/test_{module}.py: "
        f"{report_summary(report)}."
    )
    prompt = (
        f"What does `{function}` in orderflow/{module}.py do, and is it tested? Fix it if "
        "it's wrong."
    )
    return prompt, main


@dataclass
class Session:
    """Everything needed to record one sample."""

    name: str
    files: dict[str, str]
    prompt: str
    replies: dict[str, Step]
    summarise: Callable[[str], str]


def sessions() -> Iterator[Session]:
    """The two samples; each seed fixes the project, the script and every id in it."""
    rng = random.Random(1124)
    files = build_project(rng)
    prompt, main, task_description, sub = long_session(rng, files)
    replies = script_replies(prompt, main) | script_replies(task_description, sub)
    yield Session("deepagents_long_session", files, prompt, replies, summariser(prompt, main))
    rng = random.Random(2611)
    files = build_project(rng)
    prompt, short = short_session(rng, files)
    yield Session(
        "deepagents_short_session",
        files,
        prompt,
        script_replies(prompt, short),
        summariser(prompt, short),
    )
