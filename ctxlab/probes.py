"""Probe questions and next-action checks with any LangChain chat model (docs/probes.md):
what a compaction lost, asked of the model with the replayed context and with the full one
(the ceiling), graded by a judge. `ctxlab.evaluate(replay, model=...)` runs them; these are the
parts, for planning (`plan`, `dry_run`) and for running them yourself (`run`), with the
models' limits (`model_window`, `is_overflow`, `CallSettings`: retries, backoff, timeout) and
models named by a spec (`model_from_spec("ollama:qwen3")`, docs/local-models.md).

The public face of ctxlab's private modules: import from here.
"""

from ctxlab._cli.model_spec import ModelSpecError, model_from_spec
from ctxlab._evaluate.probe_judge import RUBRIC
from ctxlab._evaluate.probes import (
    CEILINGS,
    JUDGED,
    NO_JUDGE,
    PROBE_KINDS,
    SKIPPED,
    MemoryProbeCache,
    Probe,
    ProbeCache,
    cost_line,
    dry_run,
    plan,
    probe_turns,
    run,
)
from ctxlab._replay.model_calls import CallSettings, CallTimeout
from ctxlab._replay.overflow import is_overflow, model_window

__all__ = [
    "CEILINGS",
    "CallSettings",
    "CallTimeout",
    "JUDGED",
    "MemoryProbeCache",
    "NO_JUDGE",
    "PROBE_KINDS",
    "Probe",
    "ProbeCache",
    "ModelSpecError",
    "RUBRIC",
    "SKIPPED",
    "cost_line",
    "dry_run",
    "is_overflow",
    "model_from_spec",
    "model_window",
    "plan",
    "probe_turns",
    "run",
]
