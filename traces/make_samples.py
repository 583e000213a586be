"""Regenerate the synthetic deepagents traces in this folder, byte for byte.

ctxlab needs long, realistic LangSmith traces of a deep agent to test loaders and compaction
replays against, and no real ones can be published. So this script drives the *real*
`deepagents.create_deep_agent` stack (middleware, file tools, tool-result offload,
summarisation, the `task` subagent) with a scripted chat model, records it with the *real*
`LangChainTracer`, and keeps the payloads the tracer hands to the LangSmith client instead of
sending them. Only the model is fake; every tool really runs on a temporary project folder.

Wall-clock times, uuid7/uuid4 ids and host details are rewritten afterwards, so that two runs
give identical files (see `normalise_ops`).

Usage: `.venv/bin/python traces/make_samples.py [OUTPUT_DIR]` (default: this folder).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import lzma
import math
import os
import random
import re
import string
import tempfile
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from deepagents.backends import filesystem as deepagents_filesystem
from langchain_anthropic.chat_models import convert_to_anthropic_tool
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LangSmithParams
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool, StructuredTool
from langchain_core.tracers.langchain import LangChainTracer
from langsmith import Client
from langsmith._internal._serde import dumps_json  # the encoder Client uses for payloads
from pydantic import PrivateAttr

HERE = Path(__file__).resolve().parent
PROJECT_NAME = "ctxlab-synthetic"
MODEL_NAME = "claude-sonnet-4-5"
MODEL_VERSION = "claude-sonnet-4-5-20250929"
# Not Sonnet's real 200k: with 32k, deepagents really summarises twice in the long session, and
# the smaller LLM inputs keep the file smaller (see traces/README.md, "Size").
CONTEXT_WINDOW = 32_000
CHARS_PER_TOKEN = 3.3  # what Anthropic's tokenizer gives on code-heavy English, roughly
BASE_TIME = datetime(2026, 11, 24, 9, 30, 0, tzinfo=UTC)
ID_NAMESPACE = uuid.UUID("6f1c3a52-9d0e-4c1b-8a57-2b1f0c9e7d44")
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


# --------------------------------------------------------------------------------------------
# The temporary project the agent works on
# --------------------------------------------------------------------------------------------

PACKAGE_MODULES: dict[str, tuple[str, ...]] = {
    "api": (
        "create_order_handler",
        "get_order_handler",
        "cancel_order_handler",
        "list_orders_handler",
        "refund_order_handler",
        "health_handler",
    ),
    "customers": (
        "customer_by_email",
        "merge_customers",
        "loyalty_tier",
        "address_book",
        "anonymise_customer",
        "credit_limit",
    ),
    "inventory": (
        "reserve_stock",
        "release_stock",
        "restock",
        "available_quantity",
        "low_stock_skus",
        "transfer_stock",
        "stock_snapshot",
        "reorder_point",
    ),
    "notifications": (
        "render_template",
        "send_order_confirmation",
        "send_shipping_update",
        "send_refund_notice",
        "queue_digest",
        "unsubscribe",
    ),
    "payments": (
        "authorize_payment",
        "capture_payment",
        "void_authorization",
        "refund_payment",
        "payment_status",
        "settlement_batch",
        "fraud_score",
    ),
    "pricing": (
        "compute_subtotal",
        "apply_discount",
        "apply_tax",
        "bulk_discount_rate",
        "round_money",
        "price_line",
        "loyalty_credit",
        "coupon_value",
        "price_breakdown",
    ),
    "reports": (
        "daily_summary",
        "revenue_by_region",
        "top_skus",
        "refund_rate",
        "cohort_retention",
        "margin_report",
    ),
    "shipping": (
        "shipping_quote",
        "zone_for_postcode",
        "estimate_delivery",
        "package_weight",
        "carrier_for_zone",
        "split_shipments",
        "tracking_url",
        "label_payload",
    ),
    "storage": (
        "load_orders",
        "save_order",
        "delete_order",
        "order_by_id",
        "orders_for_customer",
        "archive_orders",
        "migrate_schema",
    ),
}
RETURNS_API: tuple[tuple[str, str], ...] = (
    ("open_return", "Open a return request for some lines of a delivered order."),
    ("validate_return_window", "Reject requests outside the 30-day return window."),
    ("compute_refund_amount", "Refund = returned lines + tax - 10% restocking fee."),
    ("restock_returned_items", "Put returned units back into the original warehouse."),
    ("approve_return", "Approve a return and trigger the refund payment."),
    ("reject_return", "Reject a return with a reason shown to the customer."),
    ("close_return", "Close a return once the refund has settled."),
    ("return_summary", "One-line summary used by the support dashboard."),
    ("returns_for_order", "All returns of an order, newest first."),
    ("return_status", "Status of a return: open, approved, rejected or closed."),
)
EXPORT_API: tuple[str, ...] = (
    "export_orders_csv",
    "export_refunds_csv",
    "export_returns_csv",
    "export_inventory_csv",
    "csv_header",
)
TESTS_PER_FUNCTION = 17
TESTS_PER_NEW_FUNCTION = 10

PARAM_TYPES: dict[str, str] = {
    "order": "Order",
    "line": "LineItem",
    "sku": "str",
    "quantity": "int",
    "customer": "Customer",
    "region": "str",
    "amount": "Decimal",
    "currency": "str",
    "warehouse": "str",
    "reservation": "Reservation",
    "postcode": "str",
    "carrier": "str",
    "payment": "Payment",
    "when": "datetime",
    "limit": "int",
    "context": "Mapping[str, str]",
    "rows": "Sequence[Row]",
    "rate": "Decimal",
    "orders": "Sequence[Order]",
    "request": "ReturnRequest",
    "path": "Path",
}
RETURN_TYPES = ("Decimal", "int", "bool", "str", "list[str]", "dict[str, Decimal]")
STATEMENTS: tuple[tuple[str, ...], ...] = (
    ("started = time.perf_counter()",),
    ("cache_key = (@FN@.__name__, repr(@A@))", "cached = _CACHE.get(cache_key)",
     "if cached is not None:", "    return cached"),
    ("for index, entry in enumerate(_entries(@A@)):", "    if entry.is_void:", "        continue",
     "    total += entry.amount * @N@", "    seen.add(index)"),
    ('metrics.increment("@MOD@.@FN@.calls")',),
    ("if len(seen) > MAX_BATCH:",
     '    logger.warning("@FN@: %d entries exceed the batch limit", len(seen))',
     "    raise BatchTooLarge(len(seen))"),
    ("total = total.quantize(CENT, rounding=ROUND_HALF_EVEN)",),
    ("if total < 0:", '    raise ValueError("@FN@ produced a negative total")'),
    ("audit.record(", '    "@MOD@.@FN@",', "    subject=repr(@A@),", "    total=str(total),", ")"),
    ("elapsed_ms = (time.perf_counter() - started) * 1000",
     'logger.info("@FN@ finished in %.1f ms", elapsed_ms)'),
    ("with _LOCK:", "    _HISTORY.append((@FN@.__name__, total))",
     "    del _HISTORY[:-HISTORY_SIZE]"),
)
WHYS = (
    "Kept separate so that the API handlers and the nightly jobs share one implementation.",
    "Money stays in Decimal end to end; rounding happens once, at the boundary.",
    "The cache is per process; invalidation happens on every write to storage.",
    "Callers rely on this never raising for an empty input; it returns a neutral value.",
    "The audit record is what finance reconciles against, so keep its fields stable.",
)
BUGS: tuple[tuple[str, str, str, str, int], ...] = (
    # (module, function, buggy line, fixed line, every Nth test case fails)
    ("pricing", "apply_discount", "    discounted = subtotal - rate",
     "    discounted = subtotal * (Decimal(1) - rate)", 3),
    ("inventory", "release_stock", "    for index in range(1, len(reservation.lines)):",
     "    for index in range(len(reservation.lines)):", 4),
    ("payments", "capture_payment", "    if amount >= authorization.amount:",
     "    if amount > authorization.amount:", 5),
    ("shipping", "zone_for_postcode", "    prefix = postcode[:2]",
     "    prefix = postcode.strip().upper()[:3]", 3),
    ("storage", "load_orders", "    rows = cursor.fetchmany(100)",
     "    rows = cursor.fetchall()", 4),
)
RETURNS_BUG = ('    fee = Decimal("0")',
               "    fee = (subtotal * RESTOCKING_FEE_RATE).quantize(CENT)", 2)
BUG_BODIES: dict[str, tuple[str, ...]] = {
    "apply_discount": (
        "def apply_discount(subtotal: Decimal, rate: Decimal) -> Decimal:",
        '    """Apply a fractional discount rate (0.15 = 15%) to a subtotal."""',
        "    if rate < 0 or rate > 1:",
        '        raise ValueError(f"discount rate out of range: {rate}")',
        "    discounted = subtotal - rate",
        "    return round_money(discounted)",
    ),
    "release_stock": (
        "def release_stock(reservation: Reservation) -> int:",
        '    """Release every line of a reservation; returns the number of units released."""',
        "    released = 0",
        "    for index in range(1, len(reservation.lines)):",
        "        line = reservation.lines[index]",
        "        _STOCK[line.sku] += line.quantity",
        "        released += line.quantity",
        "    reservation.released = True",
        "    return released",
    ),
    "capture_payment": (
        "def capture_payment(authorization: Payment, amount: Decimal) -> Payment:",
        '    """Capture up to the authorised amount; partial captures are allowed."""',
        "    if amount >= authorization.amount:",
        '        raise PaymentError("capture exceeds authorisation")',
        "    authorization.captured += amount",
        "    return authorization",
    ),
    "zone_for_postcode": (
        "def zone_for_postcode(postcode: str) -> str:",
        '    """Map a postcode to a shipping zone using the outward-code prefix."""',
        "    prefix = postcode[:2]",
        '    return ZONES.get(prefix, "national")',
    ),
    "load_orders": (
        "def load_orders(cursor: Cursor) -> list[Order]:",
        '    """Load every order row the query selected."""',
        "    rows = cursor.fetchmany(100)",
        "    return [Order.from_row(row) for row in rows if not row.deleted]",
    ),
}


def token_stream(rng: random.Random, alphabet: str, length: int) -> str:
    """Random-looking but seeded identifiers, so reruns give the same ids."""
    return "".join(rng.choice(alphabet) for _ in range(length))


def function_source(rng: random.Random, module: str, name: str, core: Sequence[str] = ()) -> str:
    """One plausible Python function; `core` lines are spliced in before the return."""
    params = rng.sample(sorted(PARAM_TYPES), k=rng.randint(1, 3))
    returns = rng.choice(RETURN_TYPES)
    signature = ", ".join(f"{p}: {PARAM_TYPES[p]}" for p in params)
    words = name.replace("_", " ")
    lines = [
        f"def {name}({signature}) -> {returns}:",
        f'    """{words.capitalize()} for the {module} workflow.',
        "",
        f"    {rng.choice(WHYS)}",
        '    """',
        f"    if {params[0]} is None:",
        f'        raise ValueError("{params[0]} is required")',
        f'    logger.debug("{name}: {params[0]}=%s", {params[0]})',
        '    total = Decimal("0")',
        "    seen: set[int] = set()",
    ]
    for statement in rng.sample(STATEMENTS, k=rng.randint(3, 6)):
        for raw in statement:
            text = raw.replace("@A@", params[-1]).replace("@FN@", name).replace("@MOD@", module)
            lines.append("    " + text.replace("@N@", str(rng.randint(2, 9))))
    lines.extend(core)
    final = {
        "Decimal": "    return total",
        "int": "    return len(seen)",
        "bool": "    return total > 0",
        "str": f'    return f"{name}:{{total}}"',
        "list[str]": "    return sorted(str(index) for index in seen)",
        "dict[str, Decimal]": f'    return {{"{name}": total}}',
    }[returns]
    lines.append(final)
    return "\n".join(lines) + "\n"


def module_source(rng: random.Random, module: str, names: Sequence[str], doc: str) -> str:
    """A module of generated functions with a realistic header."""
    header = [
        f'"""{doc}"""',
        "",
        "from __future__ import annotations",
        "",
        "import logging",
        "import threading",
        "import time",
        "from collections.abc import Mapping, Sequence",
        "from datetime import datetime",
        "from decimal import ROUND_HALF_EVEN, Decimal",
        "from pathlib import Path",
        "",
        "from orderflow import audit, metrics",
        "from orderflow.errors import BatchTooLarge, PaymentError",
        "from orderflow.models import Customer, LineItem, Order, Payment, Reservation, Row",
        "",
        "logger = logging.getLogger(__name__)",
        'CENT = Decimal("0.01")',
        "MAX_BATCH = 500",
        "HISTORY_SIZE = 256",
        "_CACHE: dict[tuple[str, str], object] = {}",
        "_HISTORY: list[tuple[str, Decimal]] = []",
        "_LOCK = threading.Lock()",
        "",
    ]
    bodies = []
    for name in names:
        if name in BUG_BODIES:
            bodies.append("\n".join(BUG_BODIES[name]) + "\n")
        else:
            bodies.append(function_source(rng, module, name))
    return "\n".join(header) + "\n\n" + "\n\n".join(bodies)


def new_module(rng: random.Random, module: str, api: Sequence[str], helpers: int,
               doc: str, core: dict[str, Sequence[str]]) -> str:
    """Source of a generated module: its public API plus private helpers."""
    names = list(api) + [f"_{module}_helper_{i}" for i in range(helpers)]
    bodies = [function_source(rng, module, n, core.get(n, ())) for n in names]
    header = module_source(rng, module, (), doc)
    return header + "\n\n".join(bodies)


def tests_source(rng: random.Random, module: str, names: Sequence[str], per_function: int,
                prefix: str = "test") -> str:
    """A pytest module with `per_function` cases per imported function."""
    imports = "".join(f"    {n},\n" for n in names)
    parts = [
        f'"""Tests for orderflow.{module}."""\n\nfrom decimal import Decimal\n\n'
        f"from orderflow.{module} import (\n{imports})\n"
        "from tests.factories import expected, make_order\n"
    ]
    for name in names:
        for case in range(1, per_function + 1):
            lines = rng.randint(1, 6)
            price = f"{rng.randint(1, 99)}.{rng.randint(0, 99):02d}"
            parts.append(
                f"def {prefix}_{name}_{case:02d}():\n"
                f'    order = make_order(lines={lines}, unit_price=Decimal("{price}"))\n'
                f"    result = {name}(order)\n"
                f"    assert result == expected(order, {case})\n"
            )
    return "\n\n".join(parts)


def prose(rng: random.Random, topic: str, paragraphs: int) -> str:
    """Markdown paragraphs that read like engineering docs (content is filler, sizes matter)."""
    subjects = ("The service", "Each handler", "The nightly job", "Finance", "Support",
                "The warehouse team", "The payment provider", "Our storage layer")
    verbs = ("expects", "records", "reconciles", "retries", "validates", "publishes", "archives")
    objects = ("every refund", "the order total", "a partial capture", "the restocking fee",
               "the audit trail", "stock movements", "customer notifications", "the CSV export")
    tails = ("before the cut-off at 02:00 UTC.", "within one business day.",
             "using Decimal arithmetic only.", "and logs the outcome for reconciliation.",
             "unless the order is already archived.", "per warehouse and per currency.")
    out = []
    for index in range(paragraphs):
        sentences = [
            f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)} {rng.choice(tails)}"
            for _ in range(rng.randint(3, 6))
        ]
        if index % 3 == 0:
            out.append(f"## {topic.capitalize()}: part {index // 3 + 1}")
        out.append(" ".join(sentences))
    return "\n\n".join(out) + "\n"


def build_project(rng: random.Random) -> dict[str, str]:
    """The repository the agent starts from: source, tests with 5 seeded bugs, docs."""
    files: dict[str, str] = {
        "README.md": "# orderflow\n\nOrder-processing service: pricing, inventory, payments, "
        "shipping and reporting.\n\nRun the tests with `pytest`. The returns workflow "
        "(docs/returns.md) and the CSV export (orderflow/reports_export.py) are not "
        "implemented yet.\n\n" + prose(rng, "operations", 4),
        "pyproject.toml": '[project]\nname = "orderflow"\nversion = "2.7.0"\n'
        'requires-python = ">=3.11"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n',
        "CHANGELOG.md": "# Changelog\n\n## 2.7.0\n\n- Bulk discounts for B2B customers.\n"
        "- Shipping zones for postcodes with a three-letter outward code.\n\n## 2.6.1\n\n"
        "- Fix rounding of tax on discounted lines.\n",
        "docs/architecture.md": "# Architecture\n\n" + prose(rng, "architecture", 9),
        "docs/returns.md": "# Returns workflow (spec)\n\nImplement `orderflow/returns.py` with "
        "this public API (tests: tests/test_returns.py):\n\n"
        + "".join(f"- `{n}`: {d}\n" for n, d in RETURNS_API)
        + "\nRefund rule: refund = returned lines + tax - 10% restocking fee "
        "(`RESTOCKING_FEE_RATE`), rounded to the cent.\n\n" + prose(rng, "returns", 8),
        "orderflow/__init__.py": '"""orderflow: order-processing service."""\n\n'
        '__version__ = "2.7.0"\n',
        "orderflow/models.py": module_source(
            rng, "models", ("order_total", "line_total", "is_delivered", "customer_key"),
            "Domain models shared by every module."),
        "tests/factories.py": '"""Test factories."""\n\nfrom decimal import Decimal\n\n'
        "from orderflow.models import LineItem, Order\n\n\ndef make_order(lines: int, "
        "unit_price: Decimal) -> Order:\n    return Order(lines=[LineItem(sku=f\"SKU-{i}\", "
        "quantity=1, unit_price=unit_price) for i in range(lines)])\n\n\ndef expected(order: "
        "Order, case: int) -> object:\n    return EXPECTED[order.fingerprint(), case]\n",
    }
    files["orderflow/legacy_refunds.py"] = new_module(
        rng, "legacy_refunds", (), 22, "Deprecated since 2.3: refunds before the payments rewrite.",
        {})
    for module, names in PACKAGE_MODULES.items():
        files[f"orderflow/{module}.py"] = module_source(
            rng, module, names, f"{module.capitalize()} functions of the order workflow.")
        files[f"tests/test_{module}.py"] = tests_source(rng, module, names, TESTS_PER_FUNCTION)
    files["tests/test_returns.py"] = tests_source(
        rng, "returns", [n for n, _ in RETURNS_API], TESTS_PER_NEW_FUNCTION)
    files["tests/test_reports_export.py"] = tests_source(
        rng, "reports_export", EXPORT_API, TESTS_PER_NEW_FUNCTION)
    return files


# --------------------------------------------------------------------------------------------
# Custom tools: a deterministic pytest stand-in and a git diff, both reading the real folder
# --------------------------------------------------------------------------------------------

TEST_RE = re.compile(r"^def (test\w*?_(\d+))\(\):\n((?:    .*\n?)+)", re.M)
IMPORT_RE = re.compile(r"^from orderflow\.(\w+) import \(\n((?:    \w+,\n)+)\)", re.M)
DEF_RE = re.compile(r"^def (\w+)\(", re.M)


def read_tree(root: Path) -> dict[str, str]:
    """Every text file of the project, keyed by its path relative to the root."""
    skip = ("large_tool_results/", "conversation_history/")
    return {
        p.relative_to(root).as_posix(): p.read_text()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.relative_to(root).as_posix().startswith(skip)
    }


def stable_int(*parts: object) -> int:
    """A hash that does not change between processes (unlike `hash`)."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")


@dataclass
class CollectedTest:
    """One collected test and, if it fails, the failure section pytest would print."""

    nodeid: str
    failure: str | None


def collect(files: dict[str, str], target: str) -> tuple[list[CollectedTest], list[str]]:
    """Collect tests under `target`; a test fails when it calls a function with a known bug.

    Returns the tests and the collection errors (the ImportError section of each test file
    whose imports are missing).
    """
    defined: dict[str, tuple[str, str]] = {}
    for path, text in files.items():
        if path.startswith("orderflow/"):
            starts = [(m.start(), m.group(1)) for m in DEF_RE.finditer(text)] + [(len(text), "")]
            for (start, name), (end, _) in zip(starts, starts[1:], strict=False):
                defined[name] = (path, text[start:end])
    bugs = [(b[2], b[4]) for b in BUGS] + [(RETURNS_BUG[0], RETURNS_BUG[2])]
    cases: list[CollectedTest] = []
    errors: list[str] = []
    target = target.strip("/")
    for path in sorted(files):
        name = path.rsplit("/", 1)[-1]
        if not (path.startswith(target) and name.startswith("test_") and name.endswith(".py")):
            continue
        text = files[path]
        imports = IMPORT_RE.search(text)
        if imports:
            module, names = imports.group(1), re.findall(r"\w+", imports.group(2))
            statement = f"from orderflow.{module} import ("
            source = files.get(f"orderflow/{module}.py")
            missing = [n for n in names if source is None or n not in defined]
            if missing:
                err = (f"E   ModuleNotFoundError: No module named 'orderflow.{module}'"
                       if source is None else
                       f"E   ImportError: cannot import name '{missing[0]}' from "
                       f"'orderflow.{module}' (/workspace/orderflow/{module}.py)")
                errors.append("\n".join([
                    f" ERROR collecting {path} ".center(80, "_"),
                    f"ImportError while importing test module '/workspace/{path}'.",
                    "Traceback:", f"{path}:{lineno(text, statement) + 1}: in <module>",
                    f"    {statement}", err]))
                continue
        for match in TEST_RE.finditer(text):
            test_name, case, body = match.group(1), int(match.group(2)), match.group(3)
            called = re.search(r"result = (\w+)\(", body)
            failure = None
            if called and called.group(1) in defined:
                src_path, src = defined[called.group(1)]
                for line, every in bugs:
                    if line + "\n" in src and case % every == 0:
                        failure = failure_section(files, path, test_name, body,
                                                  (src_path, called.group(1), line))
            cases.append(CollectedTest(f"{path}::{test_name}", failure))
    return cases, errors


def failure_section(files: dict[str, str], path: str, test: str, body: str,
                    culprit: tuple[str, str, str]) -> str:
    """The FAILURES block for one test, quoting the real test body and the buggy line.

    `culprit` is (source path, function, buggy line).
    """
    src_path, function, bad_line = culprit
    got, want = stable_int(test, "got") % 9000 / 100, stable_int(test, "want") % 9000 / 100
    src_lineno = files[src_path].split("\n").index(bad_line) + 1
    test_lineno = files[path].split("\n").index(f"def {test}():") + 1
    lines = [f" {test} ".center(80, "_"), "", f"    def {test}():"]
    body_lines = body.rstrip("\n").split("\n")
    lines += [f"    {b}" for b in body_lines[:-1]]
    lines += [f">   {body_lines[-1]}",
              f"E   AssertionError: assert Decimal('{got:.2f}') == Decimal('{want:.2f}')", "",
              f"{src_path}:{src_lineno}: in {function}", f"    {bad_line.strip()}",
              f"{path}:{test_lineno + len(body_lines)}: AssertionError",
              " Captured log call ".center(80, "-")]
    lines += [f"DEBUG    orderflow:{src_path.rsplit('/', 1)[-1]}:{src_lineno} step {i} "
              f"subtotal={stable_int(test, i) % 50000 / 100:.2f}" for i in range(6)]
    return "\n".join(lines)


def pytest_report(files: dict[str, str], target: str, verbose: bool) -> str:
    """What `pytest -v` (verbose) or `pytest -q --tb=no` prints for these files.

    Both with `--continue-on-collection-errors`, so a missing module does not stop the run.
    """
    cases, errors = collect(files, target)
    failed = [c for c in cases if c.failure]
    seconds = sum(stable_int(c.nodeid) % 13 for c in cases) / 1000 + 0.31
    counts = ", ".join(
        f"{n} {label}" for n, label in ((len(failed), "failed"),
                                        (len(cases) - len(failed), "passed"),
                                        (len(errors), "errors" if len(errors) > 1 else "error"))
        if n
    ) + f" in {seconds:.2f}s"
    summary = [f"FAILED {c.nodeid} - AssertionError" for c in failed]
    summary += [f"ERROR {e.split()[3]}" for e in errors]
    if not verbose:
        marks = "".join("F" if c.failure else "." for c in cases)
        out = [f"{marks[i:i + 72]:<72} [{100 * min(i + 72, len(marks)) // len(marks):>3}%]"
               for i in range(0, len(marks), 72)]
        if summary:
            out += [" short test summary info ".center(80, "="), *summary]
        return "\n".join([*out, counts]) + "\n"
    out = [" test session starts ".center(80, "="),
           "platform linux -- Python 3.11.9, pytest-8.3.3, pluggy-1.5.0 -- "
           "/workspace/.venv/bin/python", "rootdir: /workspace", "configfile: pyproject.toml",
           f"collected {len(cases)} items / {len(errors)} errors", ""]
    for index, case in enumerate(cases, 1):
        left = f"{case.nodeid} {'FAILED' if case.failure else 'PASSED'}"
        out.append(f"{left:<73}[{100 * index // len(cases):>3}%]")
    if errors:
        out += ["", " ERRORS ".center(80, "="), *errors]
    if failed:
        out += ["", " FAILURES ".center(80, "="), *[c.failure for c in failed if c.failure]]
    slow = sorted(cases, key=lambda c: stable_int(c.nodeid) % 997, reverse=True)[:10]
    out += ["", " warnings summary ".center(80, "="),
            "orderflow/storage.py:12: DeprecationWarning: datetime.utcnow() is deprecated",
            "  from datetime import datetime", "",
            "-- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html", "",
            " slowest 10 durations ".center(80, "="),
            *[f"{stable_int(c.nodeid) % 997 / 1000 + 0.2:.2f}s call     {c.nodeid}"
              for c in slow],
            "", " short test summary info ".center(80, "="), *summary,
            f" {counts} ".center(80, "=")]
    return "\n".join(out) + "\n"


def git_diff_text(before: dict[str, str], after: dict[str, str], stat: bool) -> str:
    """`git diff` (or `git diff --stat`) of the working tree against the starting commit."""
    chunks: list[str] = []
    stats: list[str] = []
    for path in sorted(set(before) | set(after)):
        old, new = before.get(path), after.get(path)
        if old == new:
            continue
        diff = list(difflib.unified_diff(
            (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True),
            fromfile=f"a/{path}" if old is not None else "/dev/null",
            tofile=f"b/{path}" if new is not None else "/dev/null", n=3))
        added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
        removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
        stats.append(f" {path} | {added + removed} {'+' * min(added, 40)}{'-' * min(removed, 40)}")
        header = f"diff --git a/{path} b/{path}\n"
        if old is None or new is None:
            header += f"{'new' if old is None else 'deleted'} file mode 100644\n"
        chunks.append(header + "".join(diff))
    if stat:
        return "\n".join(stats) + f"\n {len(stats)} files changed\n"
    return "".join(chunks)


def make_tools(root: Path) -> list[BaseTool]:
    """The two custom tools; they read the agent's real working folder on every call."""
    baseline = read_tree(root)

    def run_tests(path: str = "tests", verbose: bool = False) -> str:
        """Run pytest (with --continue-on-collection-errors) on a test file or folder.

        Args:
            path: Test file or folder relative to the repository root, e.g. tests/test_api.py.
            verbose: Print one line per test (-v), the warnings summary and the slowest tests.
        """
        return pytest_report(read_tree(root), path, verbose)

    def git_diff(stat: bool = False) -> str:
        """Show `git diff` of the working tree against HEAD, including new and deleted files.

        Args:
            stat: Only print the per-file summary (`git diff --stat`).
        """
        return git_diff_text(baseline, read_tree(root), stat)

    return [StructuredTool.from_function(run_tests), StructuredTool.from_function(git_diff)]


# --------------------------------------------------------------------------------------------
# Scripts: what the fake model answers, built while simulating the files the agent changes
# --------------------------------------------------------------------------------------------

ID_ALPHABET = string.ascii_letters + string.digits


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

    def read(self, path: str, offset: int = 0, limit: int = 100, text: str = "",
             note: str = "") -> str:
        """`read_file`, with a default sentence that names what is being read."""
        args: dict[str, Any] = {"file_path": path}
        if offset:
            args["offset"] = offset
        if limit != 100:
            args["limit"] = limit
        where = f" (lines {offset + 1}-{offset + limit})" if offset or limit != 100 else ""
        return self.call(text or f"Let me read `{path}`{where}.", "read_file", args,
                         note or f"Read {path}{where}.")

    def grep(self, pattern: str, path: str, text: str = "", note: str = "",
             glob: str | None = None) -> str:
        """`grep` in content mode over a folder, optionally narrowed to one file by `glob`.

        Never a file as `path`: deepagents' Python grep fallback then searches the file's whole
        folder (`base_full.parent`), which would mix several saved reports together.
        """
        args = {"pattern": pattern, "path": path, "output_mode": "content"}
        if glob:
            args["glob"] = glob
        where = f"{path}/{glob}" if glob else path
        return self.call(text or f"Searching for `{pattern}` in `{where}`.", "grep", args,
                         note or f"Searched {where} for '{pattern}'.")

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

    def tests(self, path: str = "tests", verbose: bool = False, text: str = "",
              note: str = "") -> tuple[str, str]:
        """`run_tests`; returns the call id and the report the real tool will produce."""
        report = pytest_report(self.files, path, verbose)
        args: dict[str, Any] = {"path": path}
        if verbose:
            args["verbose"] = True
        call_id = self.call(text or f"Running `{path}` to check.", "run_tests", args,
                            note or f"run_tests {path}{' -v' if verbose else ''}: "
                            f"{report_summary(report)}.")
        return call_id, report


def report_summary(report: str) -> str:
    """The last line of a pytest report, e.g. '3 failed, 95 passed in 0.92s'."""
    return report.rstrip("\n").rsplit("\n", 1)[-1].strip("= ")


def lineno(text: str, needle: str) -> int:
    """0-based index of the first line containing `needle` (read_file offsets are 0-based)."""
    return next(i for i, line in enumerate(text.split("\n")) if needle in line)


RESULTS_DIR = "/large_tool_results"


def offloaded(call_id: str) -> str:
    """Where FilesystemMiddleware saves a tool result over 80,000 characters."""
    return f"{RESULTS_DIR}/{call_id}"


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
    main.call("I'll start by getting an overview of the repository.", "ls", {"path": "/"},
              "Listed the repository root: orderflow/, tests/, docs/, README, CHANGELOG.")
    main.read("/README.md", limit=6)
    main.read("/pyproject.toml")
    main.call("Now the package itself.", "ls", {"path": "/orderflow"},
              "Listed orderflow/: one module per domain area plus models.")
    main.call("And the test layout.", "glob", {"pattern": "tests/*.py"},
              "Tests: one file per module plus test_returns.py and test_reports_export.py.")
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
    base_id, base = main.tests(verbose=True, text="Let me run the full suite verbosely to see "
                               "where we stand.")
    main.grep("FAILED", RESULTS_DIR, "The report was saved to a file; let me list the "
              "failures.", glob=base_id)
    main.grep("ERROR collecting", RESULTS_DIR, "And the collection errors.", glob=base_id)
    main.read(offloaded(base_id), lineno(base, " FAILURES "), 16,
              "Let me read the first failure tracebacks.")
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
    for module, function in (("payments", "refund_payment"), ("api", "refund_order_handler"),
                             ("notifications", "send_refund_notice")):
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
    report += ["", "Notes: `refund_payment` already audits and emits metrics, so returns should "
               "call it rather than the provider client. There is no persistence for return "
               "requests yet; `save_order` is the closest pattern (no transaction wrapper). "
               "Most grep hits are in `orderflow/legacy_refunds.py`, the deprecated pre-2.3 "
               "implementation; nothing calls it. No file was modified."]
    sub.final("\n".join(report))
    main.call("This refund survey is read-heavy, so I'll delegate it to a subagent and keep my "
              "own context for the fixes.", "task",
              {"description": task_description, "subagent_type": SUBAGENT},
              "Subagent surveyed refund code: use refund_payment, send_refund_notice, restock, "
              "save_order; no persistence for returns yet.")

    main.phase("Fix the five failing functions without weakening tests.")
    for index, (module, function, bad, good, _) in enumerate(BUGS):
        path = f"/orderflow/{module}.py"
        source = main.files[path.lstrip("/")]
        tests_text = main.files[f"tests/test_{module}.py"]
        main.grep(f"FAILED tests/test_{module}.py", RESULTS_DIR, f"Next failure group: "
                  f"`{function}`. Which of its tests failed in the baseline?", glob=base_id)
        main.grep(f"def {function}", "/orderflow", "Let me find its definition.")
        main.read(path, lineno(source, f"def {function}(") - 2, 10)
        main.grep(f"{function}(", "/orderflow", "Who calls it?")
        main.read(f"/tests/test_{module}.py", lineno(tests_text, f"def test_{function}_01"), 8)
        main.read(f"/tests/test_{module}.py", lineno(tests_text, f"def test_{function}_03"), 6,
                  "And one of the failing cases.")
        if index == 0:
            main.grep("def expected", "/tests", "Where do the expected values come from?")
        else:
            main.read(path, 16, 6, "Checking the module constants first.")
        if index == 1:
            main.edit(path, bad.strip() + "\n        line = reservation.line[index]",
                      good.strip() + "\n        line = reservation.line[index]",
                      "The loop skips the first reservation line. Fixing the range.",
                      "First edit attempt on release_stock failed (old_string typo).")
        main.edit(path, bad, good, f"The bug: `{bad.strip()}`. It should be `{good.strip()}`.",
                  f"Fixed {function} in {path}: `{bad.strip()}` -> `{good.strip()}`.")
        main.tests(f"tests/test_{module}.py")
        main.read(path, lineno(main.files[path.lstrip("/")], good) - 2, 5,
                  "Double-checking the edited lines.")
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
    export_src = new_module(rng, "reports_export", export_api, 3,
                            "CSV export of orders, refunds, returns and inventory.", {})
    main.write("/orderflow/reports_export.py", export_src, "Writing the CSV export module.",
               f"Wrote orderflow/reports_export.py ({len(export_src)} chars).")
    main.tests("tests/test_reports_export.py")
    returns_csv = function_source(rng, "reports_export", "export_returns_csv")
    main.edit("/orderflow/reports_export.py", "def csv_header(",
              returns_csv + "\n\ndef csv_header(",
              "I missed `export_returns_csv`; adding it.", "Added export_returns_csv.")
    main.tests("tests/test_reports_export.py")
    main.grep("def export_", "/orderflow", "Checking the public API is complete.",
              glob="reports_export.py")
    main.read("/orderflow/reports_export.py", 0, 12, "Re-reading the module header.")
    api = main.files["orderflow/api.py"]
    main.grep("def health_handler", "/orderflow", "Now exposing the export in the API.",
              glob="api.py")
    main.read("/orderflow/api.py", lineno(api, "def health_handler(") - 4, 12)
    handler = ('def export_handler(request: Request) -> Response:\n    """GET /exports/{kind}.csv'
               ' (orders, refunds, returns, inventory)."""\n    kind = request.path_params["kind"]'
               "\n    return Response(EXPORTERS[kind](request.query), media_type=\"text/csv\")"
               "\n\n\n")
    main.edit("/orderflow/api.py", "def health_handler(", handler + "def health_handler(",
              "Adding an `export_handler` route.", "Added api.export_handler.")
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
        "compute_refund_amount": ("    subtotal = total", RETURNS_BUG[0],
                                  "    total = subtotal - fee"),
        "restock_returned_items": ("    # TODO: notify the warehouse team about restocked units",),
    }
    returns_src = new_module(rng, "returns", [n for n, _ in RETURNS_API], 14,
                             "Returns workflow: open, approve, refund, restock, close.", core)
    returns_src = returns_src.replace("HISTORY_SIZE = 256\n",
                                      'HISTORY_SIZE = 256\nRESTOCKING_FEE_RATE = Decimal("0.10")\n')
    main.write("/orderflow/returns.py", returns_src,
               "I have what I need. Writing orderflow/returns.py with the full public API.",
               f"Wrote orderflow/returns.py ({len(returns_src)} chars): returns API + helpers, "
               "RESTOCKING_FEE_RATE = 0.10.")
    main.tests("tests/test_returns.py")
    main.grep("def compute_refund_amount", "/orderflow", "Where did the refund maths end up?")
    fee_line = lineno(main.files["orderflow/returns.py"], RETURNS_BUG[0])
    main.read("/orderflow/returns.py", fee_line - 6, 10,
              "compute_refund_amount fails every second case; let me look at it.")
    main.edit("/orderflow/returns.py", RETURNS_BUG[0], RETURNS_BUG[1],
              "I left the fee at zero. Applying the 10% restocking fee.",
              "Fixed compute_refund_amount: restocking fee now applied.")
    main.tests("tests/test_returns.py")
    main.read("/orderflow/returns.py", 16, 8, "Re-reading the constants block.")
    anchor = "def migrate_schema("
    main.read("/orderflow/storage.py", lineno(main.files["orderflow/storage.py"], anchor) - 2, 10)
    save_return = ('def save_return(request: ReturnRequest) -> None:\n    """Persist a return '
                   'request next to its order."""\n    _RETURNS[request.order_id].append(request)'
                   "\n\n\n")
    main.edit("/orderflow/storage.py", anchor, save_return + anchor,
              "Returns need persistence; adding `save_return` to storage.",
              "Added storage.save_return.")
    edge = tests_source(rng, "returns", [n for n, _ in RETURNS_API[:6]], 6, "test_edge")
    main.write("/tests/test_returns_edge_cases.py", edge,
               "Adding edge-case tests for the return window and partial refunds.",
               f"Wrote tests/test_returns_edge_cases.py ({len(edge)} chars).")
    main.tests("tests/test_returns_edge_cases.py")
    main.tests(text="Full quiet run after the returns work.")

    main.phase("Write scripts/migrate_refunds.py for the legacy refund rows.")
    main.grep("migrate_schema", "/orderflow", "For the migration script: where is migrate_schema?")
    main.read("/orderflow/legacy_refunds.py", 0, 10, "The legacy refund module is what the "
              "old rows were written by.")
    main.read("/orderflow/storage.py", lineno(main.files["orderflow/storage.py"], anchor), 10)
    migrate_core = {"main": (
        '    parser = argparse.ArgumentParser(description="Migrate legacy refund rows")',
        '    parser.add_argument("--database", required=True)',
        "    options = parser.parse_args(argv)",
    )}
    migrate_src = new_module(rng, "migrate_refunds", ["main", "migrate_batch", "legacy_rows"], 18,
                             "One-off migration of legacy refund rows (run once, idempotent).",
                             migrate_core)
    main.write("/scripts/migrate_refunds.py", migrate_src, "Writing the one-off migration script.",
               f"Wrote scripts/migrate_refunds.py ({len(migrate_src)} chars).")
    migrate_lines = migrate_src.count("\n")
    for offset in (0, migrate_lines // 3, 2 * migrate_lines // 3):
        main.read("/scripts/migrate_refunds.py", offset, 10, "Reviewing what I wrote.")
    main.edit("/scripts/migrate_refunds.py", "MAX_BATCH = 500",
              "MAX_BATCH = 200  # the payment provider rate-limits refund lookups",
              "Lowering the batch size for the provider's rate limit.",
              "migrate_refunds: MAX_BATCH 500 -> 200.")
    main.edit("/scripts/migrate_refunds.py", "    options = parser.parse_args(argv)",
              '    parser.add_argument("--dry-run", action="store_true")\n'
              "    options = parser.parse_args(argv)",
              "Adding a --dry-run flag.", "migrate_refunds: added --dry-run.")
    main.grep("dry-run", "/scripts", "Verifying the flag is in place.")
    main.grep("import legacy_refunds", "/", "Is the old legacy_refunds module still imported?")
    main.delete("/orderflow/legacy_refunds.py",
                "Nothing imports it and the script replaces it, so I'll remove it.",
                "Deleted orderflow/legacy_refunds.py (superseded by the migration script).")

    main.phase("Update CHANGELOG and README, write docs/returns_runbook.md.")
    main.read("/CHANGELOG.md")
    changelog = ("## 2.8.0\n\n- Returns workflow (`orderflow.returns`), 10% restocking fee.\n"
                 "- CSV export (`orderflow.reports_export`) and `GET /exports/{kind}.csv`.\n"
                 "- Fix: discount rate, stock release, capture limit, postcode zones, "
                 "order loading beyond 100 rows.\n- scripts/migrate_refunds.py.\n\n")
    main.edit("/CHANGELOG.md", "## 2.7.0", changelog + "## 2.7.0", "Adding a 2.8.0 entry.",
              "CHANGELOG: 2.8.0 entry.")
    runbook = "# Returns runbook (support)\n\n" + prose(rng, "handling returns", 15)
    main.write("/docs/returns_runbook.md", runbook, "Writing the support runbook.",
               f"Wrote docs/returns_runbook.md ({len(runbook)} chars).")
    main.edit("/README.md", "are not implemented yet.",
              "are described in docs/returns.md and docs/returns_runbook.md.",
              "Updating the README now that both features exist.", "README updated.")
    main.read("/README.md", 0, 8, "Checking the README renders as intended.")
    main.read("/CHANGELOG.md", 0, 12, "And the changelog entry.")
    main.read("/docs/returns_runbook.md", 0, 5, "And the runbook's opening.")

    main.phase("Review the diff, clear TODOs, run the full suite and report.")
    main.call("Let me review the overall change set.", "git_diff", {"stat": True},
              "git diff --stat reviewed.")
    diff_id = main.call("And the full diff.", "git_diff", {}, "Full git diff reviewed.")
    diff = git_diff_text(files, main.files, stat=False)
    for needle in ("b/orderflow/api.py", "b/orderflow/returns.py", "b/scripts/migrate_refunds.py"):
        main.read(offloaded(diff_id), lineno(diff, needle), 12, "Reading the saved diff.")
    for pattern in ("TODO", "float(", "print("):
        main.grep(pattern, "/orderflow", f"Review sweep: any `{pattern}` left in the package?")
    main.edit("/orderflow/returns.py", core["restock_returned_items"][0],
              '    notifications.queue_digest(reason="restocked", units=len(seen))',
              "Replacing my TODO with the digest notification.", "Resolved the TODO in returns.")
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
    main.edit(f"/orderflow/{module}.py", bad, good,
              "The rate is subtracted from the subtotal instead of applied. Fixing.", "")
    _, report = main.tests(f"tests/test_{module}.py", text="Re-running the tests.")
    main.final(f"`{function}` subtracted the rate (0.15) from the subtotal instead of applying "
               f"it. Fixed to `{good.strip()}`; tests/test_{module}.py: "
               f"{report_summary(report)}.")
    prompt = f"What does `{function}` in orderflow/{module}.py do, and is it tested? Fix it if " \
             "it's wrong."
    return prompt, main


# --------------------------------------------------------------------------------------------
# The scripted chat model
# --------------------------------------------------------------------------------------------


def message_chars(message: BaseMessage) -> int:
    """Characters a request spends on one message (text plus tool-call arguments)."""
    calls = getattr(message, "tool_calls", None) or []
    return len(message.text) + sum(len(json.dumps(c["args"])) for c in calls)


def tokens(chars: int) -> int:
    """Token estimate used for the fake usage numbers."""
    return math.ceil(chars / CHARS_PER_TOKEN)


class ScriptedChatModel(BaseChatModel):
    """A chat model that answers from scripts, reporting itself as Claude Sonnet 4.5.

    The next reply is looked up from the request's last message: the tool-call id of the last
    tool result, or the text of the opening human message (main task or subagent task). That
    keeps it stateless across deepagents' summarisation, which rewrites earlier history. A
    request that is the summarisation prompt gets a summary built by `summarise`. Usage
    numbers mimic Anthropic's, prompt caching included, so deepagents' usage-based token
    scaling and triggers see plausible values.
    """

    model: str = MODEL_NAME
    # An explicit output cap, as agents set on ChatAnthropic; deepagents reserves it in its
    # input budget (0.95 * max_input_tokens - max_tokens), which is what triggers summaries.
    max_tokens: int = 8_192
    _replies: dict[str, Step] = PrivateAttr()
    _summarise: Callable[[str], str] = PrivateAttr()
    _previous: dict[str, list[str]] = PrivateAttr(default_factory=dict)

    def __init__(self, replies: dict[str, Step], summarise: Callable[[str], str],
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._replies = replies
        self._summarise = summarise

    @property
    def _llm_type(self) -> str:
        return "scripted-anthropic-chat"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        """Model and output cap, which ChatAnthropic also puts in its invocation params."""
        return {"model": self.model, "max_tokens": self.max_tokens}

    def _get_ls_params(self, stop: list[str] | None = None, **kwargs: Any) -> LangSmithParams:
        """Trace metadata as ChatAnthropic reports it (provider, model, max tokens)."""
        return LangSmithParams(ls_provider="anthropic", ls_model_name=self.model,
                               ls_model_type="chat", ls_max_tokens=self.max_tokens)

    def bind_tools(self, tools: Sequence[Any], *, tool_choice: str | None = None,
                   **kwargs: Any) -> Runnable[Any, AIMessage]:
        """Bind tool schemas in Anthropic's format, as ChatAnthropic does.

        Bound kwargs become invocation params, which is how the schemas reach the traced
        `extra.invocation_params["tools"]`.
        """
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=[convert_to_anthropic_tool(t) for t in tools], **kwargs)

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None,
                  **kwargs: Any) -> ChatResult:
        last = messages[-1]
        summarising = len(messages) == 1 and "Context Extraction Assistant" in last.text
        if summarising:
            step = Step(self._summarise(last.text), None)
        elif isinstance(last, ToolMessage):
            step = self._replies[last.tool_call_id]
        else:
            step = self._replies[last.text]
        calls = [{**step.call, "type": "tool_call"}] if step.call else []
        output_tokens = tokens(len(step.text) + len(json.dumps(calls))) + 9
        total, cache_read = self._input_tokens(messages, kwargs.get("tools", []))
        # Agent calls go through AnthropicPromptCachingMiddleware (breakpoint on the last
        # message: whatever is not read from the cache is written to it); the summariser's
        # direct call is not cached.
        cache_write = 0 if summarising else total - cache_read
        system = messages[0].text if messages[0].type == "system" else ""
        msg_rng = random.Random(stable_int(system, len(messages), step.text))
        response_metadata = {
            "id": "msg_01" + token_stream(msg_rng, ID_ALPHABET, 22),
            "model": MODEL_VERSION,
            "stop_reason": "tool_use" if calls else "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": total - cache_read - cache_write,
                      "cache_creation_input_tokens": cache_write,
                      "cache_read_input_tokens": cache_read, "output_tokens": output_tokens},
            "model_name": MODEL_VERSION,
            "model_provider": "anthropic",
        }
        usage = {
            "input_tokens": total,
            "output_tokens": output_tokens,
            "total_tokens": total + output_tokens,
            "input_token_details": {"cache_read": cache_read, "cache_creation": cache_write},
        }
        message = AIMessage(content=step.text, tool_calls=calls, usage_metadata=usage,
                            response_metadata=response_metadata)
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _input_tokens(self, messages: list[BaseMessage],
                      tools: list[dict[str, Any]]) -> tuple[int, int]:
        """(input tokens, tokens of the prefix unchanged since this agent's previous call).

        Agents are told apart by their system prompt (main, subagent, none for the summariser).
        """
        system = messages[0].text if messages[0].type == "system" else ""
        tools_chars = len(json.dumps(tools))
        signature = [f"{m.type}:{m.text}:{message_chars(m)}" for m in messages]
        previous = self._previous.get(system, [])
        self._previous[system] = signature
        common = 0
        while common < min(len(previous), len(signature)) and previous[common] == signature[common]:
            common += 1
        total = tokens(tools_chars + sum(message_chars(m) for m in messages))
        if not common:
            return total, 0
        return total, tokens(tools_chars + sum(message_chars(m) for m in messages[:common]))


def script_replies(opening: str, script: Script) -> dict[str, Step]:
    """Key each turn by what triggers it: the opening message, then the previous call id."""
    keys = [opening] + [s.call["id"] for s in script.steps[:-1] if s.call]
    return dict(zip(keys, script.steps, strict=True))


def summariser(prompt: str, script: Script) -> Callable[[str], str]:
    """Summaries in deepagents' four-section format, covering the turns being summarised."""

    def summarise(history: str) -> str:
        upto = max(i for i, s in enumerate(script.steps) if s.call and s.call["id"] in history)
        done = script.steps[: upto + 1]
        looked = [s for s in done if s.call and s.call["name"] in ("read_file", "grep", "ls",
                                                                     "glob")]
        changed = [s.note for s in done if s.call and s.call["name"] in ("write_file",
                                                                       "edit_file", "delete")]
        other = [s.note for s in done if s not in looked and s.note and s.note not in changed]
        current = [goal for start, goal in script.phases if start <= upto][-1:]
        ahead = [goal for start, goal in script.phases if start > upto]
        return "\n".join([
            "## SESSION INTENT", "", prompt, "", "## SUMMARY", "",
            f"- Inspected the code base with {len(looked)} reads/searches.",
            *[f"- {n}" for n in other], "", "## ARTIFACTS", "",
            *([f"- {n}" for n in changed] or ["None"]), "", "## NEXT STEPS", "",
            *[f"- Finish: {goal}" for goal in current], *[f"- Then: {goal}" for goal in ahead],
        ])

    return summarise


# --------------------------------------------------------------------------------------------
# Recording and normalisation
# --------------------------------------------------------------------------------------------


class RecordingClient(Client):
    """A LangSmith client that keeps every payload the tracer sends instead of sending it.

    `RunTree.post` calls `create_run(**run_dict)` and `RunTree.patch` calls
    `update_run(run_id, name=..., ...)`; taking `**kwargs` keeps their key order, which is the
    shape of the team's sample files. Each payload is serialised at once with the client's own
    JSON encoder (as `Client` does before queueing it), because the tracer keeps mutating the
    same dicts afterwards, and because that encoder decides the wire form: ISO times,
    `model_dump` messages in chain states, `dumpd` (`lc`) messages in LLM runs.
    """

    def __init__(self) -> None:
        super().__init__(api_key="offline", api_url="http://127.0.0.1:9",
                         auto_batch_tracing=False)
        self.ops: list[bytes] = []

    def create_run(self, **kwargs: Any) -> None:  # type: ignore[override]
        self.ops.append(dumps_json({"op": "post", **kwargs}))

    def update_run(self, run_id: uuid.UUID, **kwargs: Any) -> None:  # type: ignore[override]
        self.ops.append(dumps_json({"op": "patch", "id": run_id, **kwargs}))


UUID_RE = re.compile(r"(?<![0-9a-f])[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
                     r"(?![0-9a-f])")
# Random hex ids without dashes: deepagents' history session id, and LangChain's per-process
# `lc_internal_call` token on middleware-internal model calls (the summariser).
HEX_ID_RE = re.compile(r'(?:(?<=session_)|(?<="lc_internal_call": "))[0-9a-f]{32}(?![0-9a-f])')
DOTTED_TS = "%Y%m%dT%H%M%S%fZ"
TOOL_SECONDS = {"run_tests": 6.4, "git_diff": 0.41, "task": 0.0}


def op_seconds(op: dict[str, Any], index: int) -> float:
    """Simulated time since the previous op: model latency, tool time or tracer overhead."""
    jitter = 0.8 + (stable_int(index) % 400) / 1000
    if op["op"] == "patch" and op.get("run_type") == "llm":
        usage = op["extra"]["metadata"]["usage_metadata"]
        return (0.7 + 0.013 * usage["output_tokens"] + 2e-6 * usage["input_tokens"]) * jitter
    if op["op"] == "patch" and op.get("run_type") == "tool":
        return TOOL_SECONDS.get(op["name"], 0.012) * jitter
    return 0.0004 * jitter


def normalise_ops(raw_ops: Sequence[bytes], sample: str) -> list[str]:
    """Make the recording reproducible without changing its shape.

    * Times: each run's start/end is replaced by a simulated clock (fixed base, advanced per
      op by plausible latencies), everywhere it appears: `start_time`, `end_time`, event
      times and every `dotted_order` segment. Order and formats are kept.
    * Ids: every UUID (uuid7 run ids, uuid4 message ids, `lc_run--<uuid>-0`, checkpoint
      namespaces) and the random hex ids of `HEX_ID_RE` become a uuid5 of their order of
      first appearance.
    * Host: `extra.runtime.platform`/`runtime_version` get fixed values; `tags` are sorted
      (the tracer builds them from a set, so their order depends on the hash seed).
    """
    clock = BASE_TIME
    starts: dict[str, datetime] = {}
    ends: dict[str, datetime] = {}
    mapping: dict[str, str] = {}

    def new_id(match: re.Match[str]) -> str:
        original = match.group(0)
        key = str(uuid.UUID(original))
        if key not in mapping:
            mapping[key] = str(uuid.uuid5(ID_NAMESPACE, f"{sample}:{len(mapping)}"))
        mapped = mapping[key]
        return mapped if "-" in original else uuid.UUID(mapped).hex

    lines = []
    for index, raw in enumerate(raw_ops):
        op = json.loads(raw)
        clock += timedelta(seconds=op_seconds(op, index))
        run_id = op["id"]
        (starts if op["op"] == "post" else ends).setdefault(run_id, clock)
        op["start_time"] = starts[run_id].isoformat()
        if op["op"] == "patch":
            op["end_time"] = ends[run_id].isoformat()
        times = {"start": starts.get(run_id), "end": ends.get(run_id)}
        for event in op.get("events") or []:
            event["time"] = times[event["name"]].isoformat()
        op["dotted_order"] = ".".join(
            f"{starts[segment[22:]]:{DOTTED_TS}}{segment[22:]}"
            for segment in op["dotted_order"].split(".")
        )
        runtime = op.get("extra", {}).get("runtime")
        if runtime:
            runtime.update(platform="linux", runtime_version="3.11")
        if op.get("tags"):
            op["tags"] = sorted(op["tags"])
        line = json.dumps(op, ensure_ascii=False)
        line = HEX_ID_RE.sub(new_id, UUID_RE.sub(new_id, line))
        lines.append(line)
    return lines


def write_jsonl_xz(path: Path, lines: Sequence[str]) -> None:
    """JSONL compressed with xz (LZMA), which carries no timestamp or name: reproducible bytes.

    xz, not gzip: every model call of a LangSmith export repeats the whole history, and LZMA's
    megabyte-sized window finds those repeats where gzip's 32 KB window cannot (80 MB of JSONL
    is 0.3 MB as .xz, 12.8 MB as .gz).
    """
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(lzma.compress(data, format=lzma.FORMAT_XZ, preset=6))


# --------------------------------------------------------------------------------------------
# Sessions
# --------------------------------------------------------------------------------------------


@dataclass
class Session:
    """Everything needed to record one sample."""

    name: str
    files: dict[str, str]
    prompt: str
    replies: dict[str, Step]
    summarise: Callable[[str], str]


def record(session: Session) -> list[bytes]:
    """Run the real deep agent on a temporary copy of the project; return the raw ops."""
    # deepagents greps with ripgrep when `rg` is on PATH and in Python otherwise; the two differ
    # in details, and the Python one is what ran here. Pin it so any machine gets these bytes.
    deepagents_filesystem._resolve_ripgrep_path = lambda: None
    with tempfile.TemporaryDirectory(prefix="ctxlab-sample-") as tmp:
        root = Path(tmp)
        for path, text in session.files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        model = ScriptedChatModel(
            session.replies, session.summarise,
            profile={"max_input_tokens": CONTEXT_WINDOW, "max_output_tokens": 64_000,
                     "tool_calling": True},
        )
        agent = create_deep_agent(model=model, tools=make_tools(root),
                                  system_prompt=SYSTEM_PROMPT,
                                  backend=FilesystemBackend(root_dir=root, virtual_mode=True))
        client = RecordingClient()
        tracer = LangChainTracer(project_name=PROJECT_NAME, client=client)
        agent.invoke({"messages": [{"role": "user", "content": session.prompt}]},
                     config={"callbacks": [tracer], "recursion_limit": 2_000})
    return client.ops


def sessions() -> Iterator[Session]:
    """The two samples; each seed fixes the project, the script and every id in it."""
    rng = random.Random(1124)
    files = build_project(rng)
    prompt, main, task_description, sub = long_session(rng, files)
    replies = script_replies(prompt, main) | script_replies(task_description, sub)
    yield Session("deepagents_long_session", files, prompt, replies,
                  summariser(prompt, main))
    rng = random.Random(2611)
    files = build_project(rng)
    prompt, short = short_session(rng, files)
    yield Session("deepagents_short_session", files, prompt, script_replies(prompt, short),
                  summariser(prompt, short))


def main(argv: Sequence[str] | None = None) -> None:
    """Record both sessions and write them; rerunning must not change a byte."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", nargs="?", type=Path, default=HERE,
                        help="where to write the .jsonl.xz files (default: traces/)")
    out_dir = parser.parse_args(argv).out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    for variable in ("LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGCHAIN_TRACING"):
        os.environ.pop(variable, None)  # an ambient tracer would add a second, networked one
    for session in sessions():
        lines = normalise_ops(record(session), session.name)
        write_jsonl_xz(out_dir / f"{session.name}.jsonl.xz", lines)


if __name__ == "__main__":
    main()
