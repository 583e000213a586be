"""`cache_aligned` against the plain summarising presets: what waiting for a cold cache costs.

    .venv/bin/python -m bench.bench_cache_aligned

Per trace and preset: `cost_usd_with_cache` plus `summarizer_cost_usd`
(`ctxlab._evaluate.metrics.summary`,
genai-prices of the trace's model, priced on billed tokens where the bill is exact or
calibrated) with the option off and on, and the summaries each made (offline `Extractive`
summariser). Traces: the bundled long sample and, when ../shared/data is there, the compacted
Claude Code session (Opus and Haiku, two model switches). This is a cost comparison, not a
timing: the numbers do not depend on the machine.
"""

from __future__ import annotations

from typing import Any

import ctxlab
from bench.bench_widgets import DATA
from ctxlab._evaluate.metrics import summary
from ctxlab._trace import Trace
from ctxlab.policies import get

LONG_SAMPLE = "traces/deepagents_long_session.jsonl.xz"
SESSION = DATA / "claude-code-session-compacted"

PRESETS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "long sample": [
        ("claude-code", {}),
        ("claude-code", {"window": 60_000}),
        ("langchain-summarization", {"trigger": ("tokens", 40_000)}),
        ("openhands-llm-summarizing", {}),
        ("jetbrains-llm-summary", {}),
        ("jetbrains-hybrid", {}),
    ],
    "compacted Claude Code session": [
        ("claude-code", {"window": 60_000}),
        ("langchain-summarization", {"trigger": ("tokens", 40_000)}),
        ("openhands-llm-summarizing", {}),
        ("jetbrains-llm-summary", {}),
        ("jetbrains-hybrid", {}),
        ("codex", {"window": 60_000}),
    ],
}
"""Presets compared per trace: at their defaults, or with a smaller window or trigger where
the defaults never compact on that trace."""


def traces() -> dict[str, Trace]:
    """The traces to compare on (the session only where ../shared/data is present)."""
    out = {"long sample": ctxlab.load(LONG_SAMPLE)[0]}
    if SESSION.exists():
        loaded = ctxlab.load(SESSION)
        out["compacted Claude Code session"] = next(
            t for top in loaded for t in top.walk() if t.turns
        )
    return out


def cost(trace: Trace, preset: str, params: dict[str, Any]) -> tuple[float, int, str | None]:
    """(cost with cache plus summariser, summaries made, billing method) of one replay."""
    result = ctxlab.replay(trace, get(preset, **params))
    row = summary(result, trace)
    made = sum(1 for e in result.event_list if e.kind == "summarize")
    return row["cost_usd_with_cache"] + row["summarizer_cost_usd"], made, row["billing_method"]


def main() -> None:
    print("| trace | preset | plain | cache_aligned | difference | bill |")
    print("|---|---|---:|---:|---:|---|")
    for name, trace in traces().items():
        for preset, params in PRESETS[name]:
            plain, made, method = cost(trace, preset, params)
            aligned, made_aligned, _ = cost(trace, preset, {**params, "cache_aligned": True})
            shown = preset + "".join(f", {k} {v}" for k, v in params.items())
            print(
                f"| {name} | {shown} | ${plain:.2f} ({made}) | ${aligned:.2f} ({made_aligned}) "
                f"| {100 * (aligned - plain) / plain:+.1f}% | {method} |"
            )


if __name__ == "__main__":
    main()
