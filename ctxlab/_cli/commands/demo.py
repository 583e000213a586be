"""`ctxlab demo`: the README's main command; shows what ctxlab sees in the bundled samples."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ctxlab._cli.output import load_status, report_errors
from ctxlab._cli.tables import add_wide_flag, fit, plural, table
from ctxlab._store.defaults import DEFAULT_PATH

if TYPE_CHECKING:
    from ctxlab._trace import Trace

SAMPLES = Path(__file__).resolve().parents[3] / "traces"

FACTS_LEGEND = (
    "messages: messages in the trace; turns: model calls; largest_tool_result_chars: the "
    "longest tool result; offloaded_when_recorded: tool results the recorded agent had already "
    "moved to files; harness_calls: calls the harness made besides the agent's own "
    "(e.g. a summariser's)."
)
REPLAY_LEGEND = (
    "Tokens of one request: peak_uncompacted without compaction, peak_context as the policy "
    "sends it; cumulative_input: summed over every call; events: compaction actions by kind "
    "and count."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "demo",
        help="walk through the bundled sample traces (no API key needed)",
        description="Load the sample traces bundled in traces/ and show what they contain.",
    )
    parser.add_argument(
        "--traces",
        default=str(SAMPLES),
        metavar="DIR",
        help="folder of traces to use (default: the bundled samples in traces/)",
    )
    parser.add_argument(
        "--db", default=str(DEFAULT_PATH), metavar="FILE", help="store file (default: %(default)s)"
    )
    add_wide_flag(parser)
    parser.set_defaults(run=run)


def _facts(trace: Trace) -> list[object]:
    from langchain_core.messages import AIMessage, ToolMessage

    tool_results = [m for m in trace.messages if isinstance(m, ToolMessage)]
    largest = max((len(m.text) for m in tool_results), default=0)
    calls = [c for m in trace.messages if isinstance(m, AIMessage) for c in m.tool_calls]
    return [
        trace.trace_id[:8],
        trace.model,
        len(trace.messages),
        len(trace.turns),
        len(calls),
        largest,
        trace.metadata.get("restored_tool_results", 0),
        len(trace.walk()) - 1,
        len(trace.harness_calls),
        len(trace.recorded_compactions),
    ]


def run(args: argparse.Namespace) -> int:
    from ctxlab._ingest.load import load_all
    from ctxlab._replay.replay import replay
    from ctxlab._store.schema import int_max
    from ctxlab._store.store import Store
    from ctxlab.policies import DeepAgents

    # Deep Agents as shipped, and a stress setting as the Deep Agents team uses (trigger at 10%).
    settings = {"deepagents defaults": DeepAgents(), "stress 0.10": DeepAgents(stress=0.10)}
    result = load_all([args.traces])
    loaded = f"ctxlab demo: {plural(len(result), 'trace')} loaded from {args.traces}"
    print(fit(loaded, paths=True) + "\n")
    columns: tuple[str, ...] = (
        "trace",
        "model",
        "messages",
        "turns",
        "tool_calls",
        "largest_tool_result_chars",
        "offloaded_when_recorded",
        "subagents",
        "harness_calls",
        "recorded_compactions",
    )
    print(table(columns, [_facts(t) for t in result], wide=args.wide, legend=FACTS_LEGEND))
    store = Store(args.db)
    store.add(result)
    rows = []
    for trace in result:
        for label, policy in settings.items():
            replayed = replay(trace, policy)
            store.save(replayed, trace)
            frame = replayed.turns
            kinds = replayed.events["kind"].value_counts(sort=True).rows()
            rows.append(
                [
                    trace.trace_id[:8],
                    label,
                    int_max(frame["baseline_tokens"]),
                    int_max(frame["context_tokens"]),
                    int(frame["context_tokens"].sum()),
                    ", ".join(f"{k} {n}" for k, n in kinds) or "-",
                ]
            )
    print()
    stored = f"Replayed under Deep Agents (offline extractive summaries), stored in {args.db}:"
    print(fit(stored, paths=True))
    print()
    columns = ("trace", "policy", "peak_uncompacted", "peak_context", "cumulative_input", "events")
    print(table(columns, rows, wide=args.wide, legend=REPLAY_LEGEND))
    print(f'\nNext: .venv/bin/ctxlab query --db {args.db} "SELECT * FROM replay_summary"')
    report_errors(result.errors, result.skipped)
    return load_status(result)
