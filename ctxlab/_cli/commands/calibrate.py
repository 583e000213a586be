"""`ctxlab calibrate PATH... [--json] [--db FILE]`: billed tokens against recorded usage.

Per trace (subagents too) and per model its calls went to: how the biller is known (`exact`,
`calibrated`, `estimated`), how many calls recorded usage, the median per-call error of the
policy's own counter and of the biller against the recorded input tokens, and the fit.
With `--db`, fitted calibrations are kept in the store and traces without usage borrow one of
their model family (`ctxlab._cost.calibration.biller_for`).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from ctxlab._cli import flags
from ctxlab._cli.output import load_status, report_errors
from ctxlab._cli.tables import add_wide_flag, fit, plural, table

COLUMNS = (
    "trace_id",
    "model",
    "method",
    "calls_with_usage",
    "policy_counter_error_median",
    "billed_error_median",
    "held_out_error_median",
    "scale",
    "per_message",
    "offset",
)

LEGEND = (
    "errors: median over calls of |count - recorded input| / recorded input, in percent; "
    "policy_counter: the policy's own approximate count; billed: the biller (exact: OpenAI's "
    "tokenizer; calibrated: offset + scale x (o200k + per_message) per message, fitted to the "
    "trace's usage; estimated: family defaults); held_out: fitted on the first half of the "
    "calls, measured on the second; offset: tokens the recording lacks (system prompt, tools)."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "calibrate",
        help="fit billed-token counters to the traces' recorded usage",
        description="Per trace and model: the billing method, calls with recorded usage, the "
        "median per-call error of the policy's own token count and of the billed-token count "
        "against the recorded input tokens, and the fit. With --db, fits are saved so traces "
        "of the same model family without usage can borrow them.",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace file, .gz file or directory"
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"traces": [{"trace_id", "model", "method", "calls_with_usage", '
        '"policy_counter_error_median", "billed_error_median", "fit"}]} as JSON',
    )
    parser.add_argument(
        "--db",
        metavar="FILE",
        help="store file to save the calibrations in and borrow from (default: none)",
    )
    add_wide_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ctxlab._cost.calibration import calibrate
    from ctxlab._ingest.load import load_all

    result = load_all(args.paths)
    flags.require_traces(result, args.paths)
    store = None
    if args.db:
        from ctxlab._store.store import Store

        flags.say_store_folder(args.db)
        store = Store(args.db)
    rows = calibrate(result, store)
    fitted = [r for r in rows if r.calls_with_usage]
    if args.json:
        print(json.dumps({"traces": [r.as_dict() for r in rows]}))
    else:
        print(table(COLUMNS, [_cells(r.as_dict()) for r in rows], wide=args.wide, legend=LEGEND))
        methods: dict[str, int] = {}
        for r in rows:
            methods[r.method] = methods.get(r.method, 0) + 1
        counts = ", ".join(f"{n} {m}" for m, n in sorted(methods.items()))
        line = f"{plural(len(rows), 'calibration')}: {counts}"
        if store is not None:
            line += f"; {plural(len(fitted), 'fit')} saved in {args.db}"
        print(fit(line, paths=True))
    report_errors(result.errors, result.skipped)
    return load_status(result)


def _cells(row: dict[str, Any]) -> list[Any]:
    fitted = row["fit"]
    return [
        row["trace_id"],
        row["model"],
        row["method"],
        row["calls_with_usage"],
        row["policy_counter_error_median"],
        row["billed_error_median"],
        fitted["held_out_error_median"],
        fitted["scale"],
        fitted["per_message"],
        fitted["offset"],
    ]
