"""`ctxlab compare PATH --policy A --policy B ...`: the same traces under several policies.

One row per (trace, policy) with the size, cost, cache and information metrics of
`ctxlab._evaluate.metrics.summary` (`needed_lost`: facts the recorded agent used again after the
policy
had lost them, as `ctxlab evaluate` counts them; `late_trigger_turns` / `would_overflow_turns`:
calls where the policy's own count stayed under its trigger / window while the billed tokens
passed it, `ctxlab._cost.billing`).
`--model` picks the price list and profile when the trace names no model (or overrides it);
`--window` sets every policy's window (and the overflow counts). Policies are the names
`ctxlab policies` lists (built-in, registered or from an installed package); `a+b` composes
them into a pipeline. Prices come from genai-prices
(`ctxlab._cost.pricing`); `--price MODEL=IN,OUT[,CACHE_READ,CACHE_WRITE]` gives or overrides one.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

from ctxlab._cli import flags
from ctxlab._cli.output import load_status, report_errors
from ctxlab._cli.tables import add_wide_flag, fit, table
from ctxlab._errors import FlagError

if TYPE_CHECKING:
    from ctxlab._cost.pricing import Price

COLUMNS = (
    "trace_id",
    "policy",
    "peak_context_tokens",
    "cumulative_input_tokens",
    "events",
    "needed_lost",
    "cost_usd",
    "cost_usd_with_cache",
    "cache_breaks",
    "late_trigger_turns",
    "would_overflow_turns",
    "goal_retention",
)
"""The table's columns, most telling first: a narrow terminal drops the last ones."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "compare",
        help="replay traces under several policies, side by side",
        description="Replay each trace under each policy and print peak and cumulative tokens, "
        "events, cost with and without prompt caching, cache breaks and information metrics.",
    )
    parser.add_argument("path", metavar="PATH", help="trace file, .gz file or directory")
    parser.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="NAME",
        help="a policy `ctxlab policies` lists (required; repeat for each; `a+b` is a pipeline)",
    )
    parser.add_argument(
        "--window",
        type=flags.positive_int(flags.WINDOW_FORMS),
        metavar="N",
        help="max input tokens for every policy (default: each policy's own, from the model "
        "profile)",
    )
    parser.add_argument("--model", help="model for prices and profile (default: the trace's)")
    parser.add_argument(
        "--price",
        action="append",
        type=_price_arg,
        default=[],
        metavar="MODEL=IN,OUT",
        help="price MODEL in USD per million tokens: MODEL=IN,OUT[,CACHE_READ,CACHE_WRITE] "
        "(input, output, and optionally cache read and cache write, else the provider's cache "
        "rule), e.g. --price gpt-5-pro=15,120; IN,OUT without MODEL= prices every model; "
        "repeat for several models. Overrides genai-prices and prices models it does not know "
        "(default: genai-prices' price list)",
    )
    parser.add_argument(
        "--summary-text-file",
        type=flags.text_file,
        metavar="F",
        help="use this file's text as every summary (default: offline extractive summaries)",
    )
    parser.add_argument("--json", action="store_true", help='print {"replays": [...]} as JSON')
    add_wide_flag(parser)
    parser.set_defaults(run=run)


def _price_arg(text: str) -> tuple[str | None, Price]:
    from ctxlab._cost.pricing import parse_price

    try:
        return parse_price(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


LEGEND = (
    "Tokens as each policy counts them: peak_context_tokens of the largest request, "
    "cumulative_input_tokens summed over every call; events: compaction actions; needed_lost: "
    "facts the recorded agent used again after the policy had lost them (ctxlab evaluate "
    "lists them); cost_usd: "
    "the calls at list prices, cost_usd_with_cache: with prompt caching; cache_breaks: calls "
    "whose cached prefix shrank; late_trigger_turns / would_overflow_turns: calls where the "
    "policy's count stayed under its trigger / window but billed tokens passed it (- when the "
    "policy has none; costs use billed tokens when billing_method is exact or calibrated, "
    "see docs/billing.md); goal_retention: share of the calls after the first "
    "compaction that still send the first user request (- when nothing was compacted). "
    "--json has every metric."
)


def run(args: argparse.Namespace) -> int:
    from ctxlab._evaluate.compare import compare_rows, policy_named
    from ctxlab._ingest.load import load_all
    from ctxlab.summarizers import Extractive, Fixed

    for name in args.policy:  # refused before any trace is read
        try:
            policy_named(name, args.window, args.model)
        except (TypeError, ValueError) as exc:
            raise FlagError("--policy", name, str(exc)) from None
    summarizer = Fixed.from_file(args.summary_text_file) if args.summary_text_file else Extractive()
    loaded = load_all([args.path])
    flags.require_traces(loaded, [args.path])
    try:
        rows = compare_rows(
            loaded,
            args.policy,
            window=args.window,
            model=args.model,
            prices=dict(args.price),
            summarizer=summarizer,
        )
    except ValueError as exc:  # a policy that cannot run on a trace: `trace: policy: why`
        print(fit(f"ctxlab: error: {exc}"), file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps({"replays": rows}, indent=2, default=str))
    elif rows:
        cells = [[r[c] for c in COLUMNS] for r in rows]
        print(table(COLUMNS, cells, wide=args.wide, whole=("policy",), legend=LEGEND))
    report_errors(loaded.errors, loaded.skipped)
    return load_status(loaded)
