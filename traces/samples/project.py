"""The `orderflow` project the agent works on: generated source, tests, docs and 6 seeded bugs.

Sizes matter more than content: about 1,070 tests so that verbose `run_tests` reports pass the
80,000-character offload threshold, and modules long enough that reads use offsets. Every
function is drawn from the caller's seeded RNG, in a fixed order, so the same seed gives the
same project.
"""

from __future__ import annotations

import random
from collections.abc import Sequence

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
    (
        "cache_key = (@FN@.__name__, repr(@A@))",
        "cached = _CACHE.get(cache_key)",
        "if cached is not None:",
        "    return cached",
    ),
    (
        "for index, entry in enumerate(_entries(@A@)):",
        "    if entry.is_void:",
        "        continue",
        "    total += entry.amount * @N@",
        "    seen.add(index)",
    ),
    ('metrics.increment("@MOD@.@FN@.calls")',),
    (
        "if len(seen) > MAX_BATCH:",
        '    logger.warning("@FN@: %d entries exceed the batch limit", len(seen))',
        "    raise BatchTooLarge(len(seen))",
    ),
    ("total = total.quantize(CENT, rounding=ROUND_HALF_EVEN)",),
    ("if total < 0:", '    raise ValueError("@FN@ produced a negative total")'),
    ("audit.record(", '    "@MOD@.@FN@",', "    subject=repr(@A@),", "    total=str(total),", ")"),
    (
        "elapsed_ms = (time.perf_counter() - started) * 1000",
        'logger.info("@FN@ finished in %.1f ms", elapsed_ms)',
    ),
    (
        "with _LOCK:",
        "    _HISTORY.append((@FN@.__name__, total))",
        "    del _HISTORY[:-HISTORY_SIZE]",
    ),
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
    (
        "pricing",
        "apply_discount",
        "    discounted = subtotal - rate",
        "    discounted = subtotal * (Decimal(1) - rate)",
        3,
    ),
    (
        "inventory",
        "release_stock",
        "    for index in range(1, len(reservation.lines)):",
        "    for index in range(len(reservation.lines)):",
        4,
    ),
    (
        "payments",
        "capture_payment",
        "    if amount >= authorization.amount:",
        "    if amount > authorization.amount:",
        5,
    ),
    (
        "shipping",
        "zone_for_postcode",
        "    prefix = postcode[:2]",
        "    prefix = postcode.strip().upper()[:3]",
        3,
    ),
    (
        "storage",
        "load_orders",
        "    rows = cursor.fetchmany(100)",
        "    rows = cursor.fetchall()",
        4,
    ),
)
RETURNS_BUG = (
    '    fee = Decimal("0")',
    "    fee = (subtotal * RESTOCKING_FEE_RATE).quantize(CENT)",
    2,
)
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


def new_module(
    rng: random.Random,
    module: str,
    api: Sequence[str],
    helpers: int,
    doc: str,
    core: dict[str, Sequence[str]],
) -> str:
    """Source of a generated module: its public API plus private helpers."""
    names = list(api) + [f"_{module}_helper_{i}" for i in range(helpers)]
    bodies = [function_source(rng, module, n, core.get(n, ())) for n in names]
    header = module_source(rng, module, (), doc)
    return header + "\n\n".join(bodies)


def tests_source(
    rng: random.Random, module: str, names: Sequence[str], per_function: int, prefix: str = "test"
) -> str:
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
    subjects = (
        "The service",
        "Each handler",
        "The nightly job",
        "Finance",
        "Support",
        "The warehouse team",
        "The payment provider",
        "Our storage layer",
    )
    verbs = ("expects", "records", "reconciles", "retries", "validates", "publishes", "archives")
    objects = (
        "every refund",
        "the order total",
        "a partial capture",
        "the restocking fee",
        "the audit trail",
        "stock movements",
        "customer notifications",
        "the CSV export",
    )
    tails = (
        "before the cut-off at 02:00 UTC.",
        "within one business day.",
        "using Decimal arithmetic only.",
        "and logs the outcome for reconciliation.",
        "unless the order is already archived.",
        "per warehouse and per currency.",
    )
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
            rng,
            "models",
            ("order_total", "line_total", "is_delivered", "customer_key"),
            "Domain models shared by every module.",
        ),
        "tests/factories.py": '"""Test factories."""\n\nfrom decimal import Decimal\n\n'
        "from orderflow.models import LineItem, Order\n\n\ndef make_order(lines: int, "
        'unit_price: Decimal) -> Order:\n    return Order(lines=[LineItem(sku=f"SKU-{i}", '
        "quantity=1, unit_price=unit_price) for i in range(lines)])\n\n\ndef expected(order: "
        "Order, case: int) -> object:\n    return EXPECTED[order.fingerprint(), case]\n",
    }
    files["orderflow/legacy_refunds.py"] = new_module(
        rng,
        "legacy_refunds",
        (),
        22,
        "Deprecated since 2.3: refunds before the payments rewrite.",
        {},
    )
    for module, names in PACKAGE_MODULES.items():
        files[f"orderflow/{module}.py"] = module_source(
            rng, module, names, f"{module.capitalize()} functions of the order workflow."
        )
        files[f"tests/test_{module}.py"] = tests_source(rng, module, names, TESTS_PER_FUNCTION)
    files["tests/test_returns.py"] = tests_source(
        rng, "returns", [n for n, _ in RETURNS_API], TESTS_PER_NEW_FUNCTION
    )
    files["tests/test_reports_export.py"] = tests_source(
        rng, "reports_export", EXPORT_API, TESTS_PER_NEW_FUNCTION
    )
    return files
