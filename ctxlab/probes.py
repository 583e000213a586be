"""Probe questions and next-action checks with any LangChain chat model (docs/probes.md):
what a compaction lost, asked of the model with the replayed context and with the full one
(the ceiling), graded by a judge. `ctxlab.evaluate(replay, model=...)` runs them; these are the
parts, for planning (`plan`, `dry_run`) and for running them yourself (`run`).

The public face of ctxlab's private modules: import from here.
"""

from ctxlab._cli.model_spec import model_from_spec
from ctxlab._evaluate.probe_judge import RUBRIC
from ctxlab._evaluate.probes import (
    JUDGED,
    NO_JUDGE,
    PROBE_KINDS,
    SKIPPED,
    MemoryProbeCache,
    Probe,
    ProbeCache,
    ProbeCallError,
    cost_line,
    dry_run,
    plan,
    probe_turns,
    run,
)

__all__ = [
    "JUDGED",
    "MemoryProbeCache",
    "NO_JUDGE",
    "PROBE_KINDS",
    "Probe",
    "ProbeCache",
    "ProbeCallError",
    "RUBRIC",
    "SKIPPED",
    "cost_line",
    "dry_run",
    "model_from_spec",
    "plan",
    "probe_turns",
    "run",
]
