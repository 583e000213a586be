"""`ctxlab evaluate TRACE --policy NAME [...]`: what the policy's compactions lost.

Mirrors `ctxlab.evaluate(ctxlab.replay(trace, policy), model=..., judge=...)`. Tier 1 (always,
offline): every fact of the trace followed through the replay, survival by category and the
facts the recorded agent used again after they were evicted that were lost by then
(needed-but-lost). Tier 2 (with `--model provider:name`, any chat model LangChain's
`init_chat_model` knows): probe questions at each compaction, each also asked on the
uncompacted context; `--judge` grades the free-text ones. `--dry-run` prints the calls Tier 2
would make, their tokens and estimated cost, and calls nothing. Each evaluation is saved in the
store (`--store`, default `data/ctxlab.duckdb`), whose probe cache makes reruns free. The
policy flags are `ctxlab replay`'s. `--probes`, `--turns` and `--max-calls` choose what is
asked; the ceiling call is capped at the model's window (`--model-window`, `--ceiling`). Exit code 1
when some probe calls failed: the tables are printed all the same (failed probes have null
scores and an `error`), and the answers that came are cached, so a rerun asks only the others.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from ctxlab._cli import flags
from ctxlab._cli.commands.replay import add_policy_flags, build_policy
from ctxlab._cli.output import load_status, report_errors
from ctxlab._cli.params_label import params_label
from ctxlab._cli.tables import add_wide_flag, clip, fit, table, terminal_width
from ctxlab._errors import FlagError
from ctxlab._store.defaults import DEFAULT_PATH

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel

    from ctxlab._evaluate.evaluation import Evaluation
    from ctxlab._replay.replay import Replay

LISTED = 20
"""Needed-but-lost facts listed per trace in the table (all of them in JSON)."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "evaluate",
        help="what a policy's compactions lost: fact survival, probes with a model",
        description="Replay each trace under a policy and follow every fact of the trace "
        "(paths, commands, errors, numbers, identifiers, URLs, instructions, todos, the goal) "
        "through it: survival by category and the facts the recorded agent needed again after "
        "they were lost. With --model, also ask probe questions at each compaction.",
    )
    parser.add_argument("path", metavar="TRACE", help="trace file, .gz file or directory")
    parser.add_argument(
        "--policy",
        default="deepagents",
        metavar="NAME",
        help="a policy `ctxlab policies` lists, or `a+b` for a pipeline (default: %(default)s)",
    )
    add_policy_flags(parser)
    parser.add_argument(
        "--model",
        metavar="PROVIDER:NAME",
        help="chat model that answers the probes, e.g. anthropic:claude-sonnet-4-5 (default: "
        "no probes)",
    )
    parser.add_argument(
        "--judge",
        metavar="PROVIDER:NAME",
        help="chat model that grades free-text probes 0-5 (default: those probes not asked)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="print the probe calls, their tokens and estimated cost, and per probe kind how "
        "many exceed the model's window; call no model",
    )
    parser.add_argument(
        "--probes",
        type=_kinds_arg,
        default="auto",
        metavar="KINDS",
        help="probe kinds to ask, comma-separated, from recall, artifact, next_action, "
        "continuation, decision (default: all)",
    )
    parser.add_argument(
        "--turns",
        type=_turns_arg,
        metavar="N,N,...",
        help="replay turns to probe at, comma-separated (default: each compaction)",
    )
    parser.add_argument(
        "--max-calls",
        type=int,
        metavar="N",
        help="ask only the first probes whose model calls add up to at most N (default: all)",
    )
    parser.add_argument(
        "--model-window",
        type=int,
        metavar="TOKENS",
        help="the probe model's input window (default: its LangChain profile's "
        "max_input_tokens, or what a local backend was built with)",
    )
    parser.add_argument(
        "--ceiling",
        choices=("cap", "skip", "full"),
        default="cap",
        help="the full-context (ceiling) call: cap it at the model's window keeping the most "
        "recent messages, skip it, or send it whole (default: %(default)s)",
    )
    parser.add_argument(
        "--price",
        action="append",
        type=_price_arg,
        default=[],
        metavar="MODEL=IN,OUT",
        help="price MODEL in USD per million tokens for the dry run's estimate, e.g. "
        "--price my-model=0.1,0.4; IN,OUT without MODEL= prices every model (default: "
        "genai-prices' list; models it does not know show 'no price')",
    )
    add_call_flags(parser)
    parser.add_argument(
        "--store",
        "--db",
        dest="store",
        default=str(DEFAULT_PATH),
        metavar="PATH",
        help="store file the evaluations and probe answers are saved in (default: %(default)s)",
    )
    add_wide_flag(parser)
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table: survival by category and the needed-but-lost facts, fitted to the terminal; "
        'json: {"evaluations": [...]} with every fact and probe (default: %(default)s)',
    )
    parser.set_defaults(run=run)


def _kinds_arg(text: str) -> str | tuple[str, ...]:
    from ctxlab._evaluate.probes import PROBE_KINDS

    kinds = tuple(k.strip() for k in text.split(",") if k.strip())
    unknown = [k for k in kinds if k not in PROBE_KINDS and k != "auto"]
    if unknown or not kinds:
        raise argparse.ArgumentTypeError(
            f"unknown probe kinds {unknown or [text]}: choose from {', '.join(PROBE_KINDS)}"
        )
    return "auto" if "auto" in kinds else kinds


def _turns_arg(text: str) -> tuple[int, ...]:
    try:
        turns = tuple(int(t) for t in text.split(",") if t.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected turn numbers separated by commas, e.g. 12,40, got {text!r}"
        ) from None
    if not turns or min(turns) < 0:
        raise argparse.ArgumentTypeError(f"turns must be numbers >= 0, got {text!r}")
    return turns


def _price_arg(text: str) -> tuple[str | None, Any]:
    from ctxlab._cost.pricing import parse_price

    try:
        return parse_price(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_call_flags(parser: argparse.ArgumentParser) -> None:
    """`--retries` and `--timeout` of each model call (`ctxlab._replay.model_calls`)."""
    parser.add_argument(
        "--retries",
        type=flags.count("a whole number of retries, 0 or more"),
        default=2,
        metavar="N",
        help="retries of a failed model call, with doubling backoff (default: %(default)s)",
    )
    parser.add_argument(
        "--timeout",
        type=flags.seconds,
        metavar="SECONDS",
        help="give up a model call after this long; 0 or none: no limit (default: no limit)",
    )


def chat_model(flag: str, spec: str, *, offline: bool = False) -> BaseChatModel:
    """The chat model `spec` (`provider:name`) names (`ctxlab._cli.model_spec.model_from_spec`).

    `offline`: for a dry run, which only counts and prices calls: a provider that refuses to
    start without an API key gets a placeholder key, since nothing will be sent."""
    from ctxlab._cli.model_spec import ModelSpecError, model_from_spec

    try:
        return model_from_spec(spec)
    except ModelSpecError as exc:
        if offline:
            try:
                return model_from_spec(spec, api_key="not-sent-in-a-dry-run")
            except ModelSpecError:  # the first error is the one to show
                pass
        raise FlagError(flag, spec, str(exc)) from None


def run(args: argparse.Namespace) -> int:
    from ctxlab._cost.pricing import set_price
    from ctxlab._evaluate import probes
    from ctxlab._ingest.load import load_all
    from ctxlab._replay.replay import replay
    from ctxlab._store.store import Store
    from ctxlab.summarizers import Extractive, Fixed

    if args.dry_run and not args.model:
        raise FlagError(
            "--dry-run", "--dry-run", "prices a model's probe calls: add --model PROVIDER:NAME"
        )
    if args.judge and not args.model:
        raise FlagError(
            "--judge", args.judge, "grades the probes a model answers: add --model PROVIDER:NAME"
        )
    for flag, value in (("--model-window", args.model_window), ("--max-calls", args.max_calls)):
        if value is not None and value <= 0:
            raise FlagError(flag, str(value), "must be a positive number")
    policy = build_policy(args)
    model = chat_model("--model", args.model, offline=args.dry_run) if args.model else None
    judge = chat_model("--judge", args.judge, offline=args.dry_run) if args.judge else None
    for named, price in args.price:
        for used in [named] if named else [m for m in (model, judge) if m is not None]:
            set_price(used if isinstance(used, str) else probes.model_name(used), price)
    summarizer = Fixed.from_file(args.summary_text_file) if args.summary_text_file else Extractive()
    loaded = load_all([args.path])
    flags.require_traces(loaded, [args.path])
    replays = []
    for trace in (t for top in loaded for t in top.walk()):
        try:
            replays.append(replay(trace, policy, summarizer=summarizer))
        except ValueError as exc:
            print(fit(f"ctxlab: error: {trace.trace_id}: {exc}"), file=sys.stderr)
            return 2
    if args.dry_run:
        assert model is not None, "--dry-run without --model was refused above"
        _dry_run(replays, model, judge, args)
        report_errors(loaded.errors, loaded.skipped)
        return load_status(loaded)
    try:
        evaluations = _evaluate(replays, model, judge, Store(args.store), args)
    except ValueError as exc:  # turns out of range, as the replay words it
        print(fit(f"ctxlab: error: {exc}"), file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps({"evaluations": [e.to_json() for e in evaluations]}, default=str))
    else:
        for evaluation in evaluations:
            print(render(evaluation, wide=args.wide))
    if model is None:
        print(fit(probes.SKIPPED), file=sys.stderr if args.format == "json" else sys.stdout)
    elif judge is None:
        print(fit(probes.NO_JUDGE), file=sys.stderr if args.format == "json" else sys.stdout)
    failed = [e for e in evaluations if e.failed]
    for evaluation in failed:
        print(fit(f"ctxlab: error: {evaluation.failed_line()}"), file=sys.stderr)
    report_errors(loaded.errors, loaded.skipped)
    return load_status(loaded) or (1 if failed else 0)


def _evaluate(
    replays: list[Replay],
    model: BaseChatModel | None,
    judge: BaseChatModel | None,
    store: Any,
    args: Any,
) -> list[Evaluation]:
    """Evaluate and save each replay; probe answers go through the store's cache, written even
    when some calls fail (a rerun asks only those)."""
    import warnings

    from ctxlab._evaluate.evaluation import evaluate

    cache = store.probe_cache()
    out = []
    for result in replays:
        with warnings.catch_warnings():  # the CLI prints failures itself, after the tables
            warnings.filterwarnings("ignore", message=".*had a failed model call")
            evaluation = evaluate(
                result,
                model,
                judge,
                args.probes,
                turns=args.turns,
                cache=cache,
                retries=args.retries,
                timeout=args.timeout,
                window=args.model_window,
                ceiling=args.ceiling,
                max_calls=args.max_calls,
            )
        store.save_evaluation(evaluation)
        out.append(evaluation)
    return out


def _dry_run(
    replays: list[Replay], model: BaseChatModel, judge: BaseChatModel | None, args: Any
) -> None:
    """Print the probe calls of each replay, their tokens and cost, and per probe kind how many
    exceed the model's window uncapped and as sent, without calling a model (answers the store
    already caches count as free; the store is read, never written)."""
    from pathlib import Path

    import polars as pl

    from ctxlab._evaluate import probes
    from ctxlab._evaluate.evaluation import evaluate
    from ctxlab._store.store import Store

    cache = Store(args.store, read_only=True).probe_cache() if Path(args.store).exists() else None
    runs = []
    for result in replays:
        facts = evaluate(result).facts
        planned = probes.plan(result, facts, args.probes, args.turns)
        if args.max_calls is not None:
            planned = probes.limit_calls(planned, args.max_calls, judge is not None, args.ceiling)
        calls = probes.dry_run(
            result,
            planned,
            model,
            judge,
            cache=cache,
            window=args.model_window,
            ceiling=args.ceiling,
        )
        runs.append((result, calls))
    if args.format == "json":
        out = [
            {
                "trace_id": r.trace_id,
                "policy": r.policy,
                "calls": calls.to_dicts(),
                "window": probes.window_table(calls).to_dicts(),
            }
            for r, calls in runs
        ]
        print(json.dumps({"dry_run": out}, default=str))
        return
    width = terminal_width()
    for result, calls in runs:
        print(clip(f"{result.trace_id}: {result.policy}", width))
        print(clip(probes.cost_line(calls), width))
        if calls.height:
            by_turn = (
                calls.group_by("turn", "kind", "model", maintain_order=True)
                .agg(
                    pl.len().alias("calls"),
                    pl.col("cached").fill_null(False).sum().alias("cached"),
                    pl.col("input_tokens").sum(),
                    pl.when(pl.col("cost_usd").is_null().all())
                    .then(None)
                    .otherwise(pl.col("cost_usd").sum())
                    .alias("cost_usd"),
                )
                .with_columns(  # an unknown price is "no price", never $0
                    pl.col("cost_usd").round(4).cast(pl.Utf8).fill_null(probes.NO_PRICE)
                )
            )
            print(table(by_turn.columns, by_turn.rows(), wide=args.wide))
        for line in _window_lines(calls, args.ceiling, args.wide):
            print(line if "\n" in line else clip(line, width))
        print()


def _window_lines(calls: Any, ceiling: str, wide: bool) -> list[str]:
    """What the dry run says about the model's window: per kind and call, how many exceed it
    uncapped and as sent, and what the ceiling cap (or skip) changed; or that it is unknown."""
    from ctxlab._evaluate import probes

    if not calls.height:
        return []
    windows = probes.window_table(calls)
    if windows.height == 0:
        return [
            "window: unknown for this model (pass --model-window TOKENS to see which calls "
            "would not fit)"
        ]
    full = int(windows["over_window_full"].sum())
    sent = int(windows["over_window"].sum())
    lines = [table(windows.columns, windows.rows(), wide=wide)]
    answers = windows.filter(windows["call"] == "answer")
    over_answer = int(answers["over_window"].sum()) if answers.height else 0
    if ceiling == "cap":
        lines.append(
            f"{full} of {calls.height} calls would not fit the window uncapped; with the "
            f"ceiling capped at the window, {sent} still would not"
            + (
                f" ({over_answer} answer calls: their compacted context is itself too long)"
                if over_answer
                else ""
            )
        )
    else:
        lines.append(
            f"{sent} of {calls.height} calls would not fit the window"
            + (" (--ceiling cap would cut the ceiling calls to fit)" if ceiling == "full" else "")
        )
    return lines


def render(evaluation: Evaluation, *, wide: bool = False, width: int | None = None) -> str:
    """An evaluation as text that fits `width` columns (default: the terminal's; `wide`: every
    cell in full): a headline, survival by category, the needed-but-lost facts and the probe
    scores against their ceilings."""
    import polars as pl

    width = terminal_width() if width is None else width

    facts = evaluation.facts
    needed = facts.filter(pl.col("needed_turn").is_not_null())
    lost = needed.filter(pl.col("status_when_needed") == "lost").sort("needed_turn", "message")
    by_file = needed.filter(pl.col("status_when_needed") == "file").height
    params = params_label(evaluation.policy, json.dumps(evaluation.params, default=str), False)
    lines = [
        fit(f"{evaluation.trace_id}: {evaluation.policy} ({params})", width),
        f"{facts.height} facts, {needed.height} needed again after eviction: needed-but-lost "
        f"{lost.height}, recoverable only from a file {by_file}",
    ]
    if evaluation.survival.height:
        # `needed` is a count here and a turn in the lost facts' table: named apart.
        survival = evaluation.survival.rename(
            {"needed": "needed_again", "needed_lost": "needed_but_lost"}
        )
        lines.append(table(survival.columns, survival.rows(), wide=wide, width=width))
    if lost.height:
        lines.append(f"needed but lost ({lost.height}):")
        rows = [
            [r["needed_turn"], r["evicted_turn"], r["category"], r["fact"]]
            for r in lost.head(LISTED).iter_rows(named=True)
        ]
        columns = ("needed_turn", "evicted_turn", "category", "fact")
        lines.append(table(columns, rows, wide=wide, width=width, whole=columns[:3]))
        if lost.height > LISTED:
            lines.append(f"... and {lost.height - LISTED} more (--format json lists all)")
    probes = evaluation.probes
    if probes.height:
        scores = (
            probes.group_by("kind", maintain_order=True)
            .agg(
                pl.len().alias("probes"),
                pl.col("score").mean().round(3),
                pl.col("ceiling_score").mean().round(3),
            )
            .rows()
        )
        lines.append(table(("probe", "asked", "score", "ceiling"), scores, wide=wide, width=width))
    return "\n".join(lines) + "\n"
