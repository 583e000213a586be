"""`ctxlab tune PATH... --policy NAME --space NAME=LO..HI ... --objective cost --objective
needed_lost --trials N [--holdout F] [--seed S] [--db FILE] [--format table|json] [--dry-run]
[--ray [ADDRESS]] [--workers N]`: the twin of `ctxlab.tune`.

Prints the Pareto front as a table that fits the terminal (each point's objectives on the
tuning and the held-out traces, then the reference points), or with `--format json` the
whole study (`ctxlab.TuneStudy.to_json`). The progress bar (trials done, the front's size,
time left) goes to stderr. Running the same command again resumes a stopped study.
"""

from __future__ import annotations

import argparse
import json
import math
from typing import TYPE_CHECKING, Any

from ctxlab._cli import flags
from ctxlab._cli.tables import add_wide_flag
from ctxlab._store.defaults import DEFAULT_PATH

if TYPE_CHECKING:
    from ctxlab._tune.study import TuneStudy

SAMPLER_CHOICES = ("tpe", "nsga2", "random", "grid")
"""`ctxlab._tune.study.SAMPLERS`, spelled here so that `--help` imports no Optuna."""


def _holdout(text: str) -> float:
    """`--holdout`: a fraction of the traces, 0 or more and below 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: use a fraction of the traces, 0 or more and below 1, e.g. 0.3"
        )
    return value


def _seed(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"invalid value {text!r}: use a whole number, e.g. 1"
        ) from None


def _usd(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"invalid value {text!r}: use USD above 0, e.g. 0.5")
    return value


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="search a policy's settings for a Pareto front on your traces",
        description="A multi-objective Optuna study over a policy's parameters: each trial is "
        "replayed on the tuning traces and measured; the front's points and the reference "
        "points (the preset's defaults, the recorded settings) are also measured on held-out "
        "traces. Stored in the store as it runs: the same command resumes it. See "
        "docs/tune.md.",
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help="trace file, .gz file or directory"
    )
    parser.add_argument(
        "--policy",
        required=True,
        metavar="NAME",
        help="a policy `ctxlab policies` lists (required)",
    )
    parser.add_argument(
        "--space",
        action="append",
        required=True,
        metavar="NAME=RANGE",
        help="a parameter to tune: NAME=LO..HI, NAME=KIND:LO..HI (KIND fraction, tokens or "
        "messages), either with /STEP, or NAME=A,B,... choices spelled as --set spells them "
        "(e.g. window=60000..200000/1000, trigger=fraction:0.5..0.95); required, repeat for more",
    )
    parser.add_argument(
        "--objective",
        action="append",
        metavar="NAME",
        help="what to minimise: cost, needed_lost, needed_lost:CATEGORY, peak, cumulative, "
        "late_triggers, overflows; repeat for more (default: cost and needed_lost)",
    )
    parser.add_argument(
        "--trials",
        type=flags.positive_int("a whole number of trials, 1 or more"),
        default=50,
        metavar="N",
        help="settings to try (default: %(default)s)",
    )
    parser.add_argument(
        "--holdout",
        type=_holdout,
        default=0.3,
        metavar="F",
        help="fraction of the traces held out of tuning (default: %(default)s)",
    )
    parser.add_argument(
        "--seed",
        type=_seed,
        default=0,
        metavar="S",
        help="the split's and the sampler's seed (default: %(default)s)",
    )
    parser.add_argument(
        "--db", default=str(DEFAULT_PATH), metavar="FILE", help="store file (default: %(default)s)"
    )
    parser.add_argument(
        "--study", metavar="NAME", help="the study's name in the store (default: derived)"
    )
    parser.add_argument(
        "--sampler",
        choices=SAMPLER_CHOICES,
        default="tpe",
        help="Optuna's sampler (default: %(default)s)",
    )
    parser.add_argument(
        "--budget",
        type=_usd,
        metavar="USD",
        help="the most a setting may cost on any one tuning trace (default: no limit)",
    )
    parser.add_argument(
        "--workers",
        type=flags.positive_int("a whole number of processes, 1 or more"),
        metavar="N",
        help="local worker processes (default: one per core)",
    )
    parser.add_argument(
        "--ray",
        nargs="?",
        const="",
        metavar="ADDRESS",
        help="run the replays on Ray: the cluster at ADDRESS, else a local Ray (default: local "
        "worker processes, not Ray)",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="check the request and print what it would run and cost; replay nothing",
    )
    parser.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="table: the front, fitted to the terminal; json: the whole study "
        "(default: %(default)s)",
    )
    add_wide_flag(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    from ctxlab._errors import FlagError
    from ctxlab._store.sweep import ray_problem
    from ctxlab._tune.study import plan, tune

    ray = args.ray is not None
    address = args.ray or None
    if ray and (problem := ray_problem(address)) is not None:
        raise FlagError("--ray", args.ray or "(local)", problem)
    options: dict[str, Any] = {
        "holdout": args.holdout,
        "seed": args.seed,
        "study": args.study,
        "sampler": args.sampler,
        "budget": args.budget,
        "workers": args.workers,
        "ray": ray,
        "ray_address": address,
    }
    objectives = tuple(args.objective or ("cost", "needed_lost"))
    if args.dry_run:
        laid_out = plan(args.paths, args.policy, args.space, objectives, args.trials, **options)
        doc = laid_out.to_json()
        print(json.dumps(doc, indent=1) if args.format == "json" else _plan_text(doc))
        return 0
    flags.say_store_folder(args.db)
    study = tune(
        args.paths,
        args.policy,
        args.space,
        objectives,
        args.trials,
        db=args.db,
        progress=True,
        **options,
    )
    if args.format == "json":
        print(json.dumps(study.to_json(), indent=1))
    else:
        print(front_table(study, args.wide))
    return 0


def _plan_text(doc: dict[str, Any]) -> str:
    from ctxlab._cli.tables import fit

    replays = doc["replays"]
    lines = [
        f"study {doc['study']}: {doc['policy']}, {doc['trials']} trials ({doc['sampler']}), "
        f"minimising {', '.join(doc['objectives'])}",
        f"tuning traces: {len(doc['traces']['tune'])}, held out: {len(doc['traces']['holdout'])}",
        f"replays: {replays['trials']} for the trials, {replays['reference']} for the reference "
        f"points, at most {replays['holdout_at_most']} for the front on the held-out traces",
        "model calls: none (offline summaries), so nothing is billed",
    ]
    return "\n".join(fit(line) for line in lines)


def front_table(study: TuneStudy, wide: bool = False) -> str:
    """The front and the reference points as one table: each tuned parameter, then each
    objective's mean on the tuning and the held-out traces."""
    from ctxlab._cli.tables import fit, table

    names = list(study.space)
    columns = ["trial", *names]
    for objective in study.objectives:
        columns += [f"{objective} tune", f"{objective} held out"]
    columns.append("feasible")
    rows = []
    for point in [*study.front(), *study.reference]:
        row: list[Any] = [point.label or point.number]
        row += [point.params.get(n, "") for n in names]
        for objective in study.objectives:
            for values in (point.tune, point.holdout):
                row.append(None if values is None else values[objective].mean)
        row.append(point.feasible)
        rows.append(row)
    head = (
        f"study {study.name}: {len(study.trials)} trials, {len(study.pareto)} on the front "
        f"(tuned on {len(study.splits['tune'])} traces, {len(study.splits['holdout'])} held out)"
    )
    beating = study.beats_defaults()
    if beating:
        verdict = "beat the defaults on every objective on the held-out traces: trial " + (
            ", ".join(str(n) for n in beating)
        )
    elif study.splits["holdout"]:
        verdict = "no front setting beats the defaults on every objective on the held-out traces"
    else:
        verdict = "no held-out traces: the front may hold only on the traces it was tuned on"
    return "\n".join(
        [fit(head), table(columns, rows, wide=wide, whole=("trial", *names)), fit(verdict)]
    )
