"""`ctxlab inspect PATH... [--json]`: what each trace file holds, before any replay."""

from __future__ import annotations

import argparse
import json
from collections import Counter

from ctxlab import flags
from ctxlab.output import report_errors, table

COLUMNS = (
    "trace_id",
    "format",
    "model",
    "messages",
    "turns",
    "subagents",
    "recorded_compactions",
    "recorded_input_tokens",
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "inspect",
        help="list the traces in files or directories",
        description="Per trace: id, detected format, model, messages, turns, subagents, "
        "recorded compaction points and recorded input tokens; the number of traces per format; "
        "then what each trace's format does not record (its notes).",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace file, .gz file or directory"
    )
    parser.add_argument("--json", action="store_true", help='print {"traces": [...]} as JSON')
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ctxlab.load import load_all

    result = load_all(args.paths)
    flags.require_traces(result, args.paths)
    summaries = [t.summary() for t in result]
    formats = dict(sorted(Counter(s["format"] for s in summaries).items()))
    if args.json:
        print(json.dumps({"traces": summaries, "formats": formats}, indent=2))
    elif summaries:
        print(table(COLUMNS, [[s[c] for c in COLUMNS] for s in summaries]))
        counts = ", ".join(f"{n} {name}" for name, n in formats.items())
        print(f"{len(summaries)} trace{'s' if len(summaries) != 1 else ''} by format: {counts}")
        for s in summaries:
            for note in s["notes"]:
                print(f"note: {s['trace_id']}: {note}")
    report_errors(result.errors)
    return 2 if result.errors else 0
