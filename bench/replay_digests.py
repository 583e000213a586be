"""Digests of loads and replays, to check that a change alters no result, byte for byte.

    .venv/bin/python -m bench.replay_digests > /tmp/after.json            # in this checkout
    (cd OTHER && PYTHONPATH=$PWD python -m bench.replay_digests > /tmp/before.json)
    .venv/bin/python -m bench.replay_digests --compare /tmp/before.json /tmp/after.json
    .venv/bin/python -m bench.replay_digests --requests > ...  # also requests and cache frames

For synthetic traces in both message formats and every trace (and subagent) ctxlab loads from
../shared/data: a digest of each turn's inputs as loaded (types, texts, and which are the
history's own objects), then, under every preset `ctxlab policies` lists at its defaults, a
digest of the replay's turns and events frames (rows and schema) and of every file it wrote.
A preset that refuses a trace (no window known) records its error, which must match too.

`--settings` adds Deep Agents under the settings its explorer sliders reach (`SETTINGS`: a low
trigger and keep, tool-result limits, argument lengths, usage scaling), each replayed twice
with the others in between, so state a run shares with later runs of the same trace (its
feed) is checked too.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import ctxlab
from ctxlab._evaluate import metrics
from ctxlab._replay.policies.catalog import names
from ctxlab.policies import DeepAgents
from tests.synthetic import make_trace

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


SETTINGS: dict[str, dict[str, Any]] = {
    "trigger=0.15": {"trigger": ("fraction", 0.15)},
    "trigger=0.3,keep=0.02": {"trigger": ("fraction", 0.3), "keep": ("fraction", 0.02)},
    "keep=0.3": {"keep": ("fraction", 0.3)},
    "tool_limit=500": {"tool_token_limit_before_evict": 500},
    "tool_limit=5000": {"tool_token_limit_before_evict": 5_000},
    "tool_limit=none": {"tool_token_limit_before_evict": None},
    "max_length=200": {
        "truncate_args_settings": {
            "trigger": ("fraction", 0.3),
            "keep": ("fraction", 0.1),
            "max_length": 200,
        }
    },
    "all": {
        "trigger": ("fraction", 0.2),
        "tool_token_limit_before_evict": 1_000,
        "human_message_token_limit_before_evict": 200,
        "truncate_args_settings": {
            "trigger": ("messages", 10),
            "keep": ("messages", 4),
            "max_length": 50,
        },
    },
    "usage_metadata": {"trigger": ("fraction", 0.3), "use_usage_metadata": True},
}
"""Deep Agents settings `--settings` replays every trace under (DeepAgents keyword arguments)."""


def _h(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def _frame(df: Any) -> bytes:
    return repr(df.rows()).encode() + repr(df.schema).encode()


def load_digest(trace: ctxlab.Trace) -> str:
    """Each turn's and harness call's inputs: length, types and texts, and for turns which
    full-history message each input is (-1: not one of them)."""
    parts = []
    for turn in [*trace.turns, *trace.harness_calls]:
        seen = [(m.type, m.text) for m in turn.inputs]
        parts.append(repr((turn.index, turn.position, turn.compacted, turn.input_tokens, seen)))
    where = {id(m): i for i, m in enumerate(trace.messages)}
    parts.extend(repr([where.get(id(m), -1) for m in t.inputs]) for t in trace.turns)
    return _h("\n".join(parts).encode())


def replay_digest(trace: ctxlab.Trace, preset: Any, requests: bool = False) -> list[str]:
    """The replay's turns, events and files; with `requests`, also every call's request as
    the engine kept it (`Call.request`: kept parts, new fingerprints in order of first
    appearance, and tokens; orphans) and the prompt-cache frame built on those requests
    (`metrics.cache_frame`)."""
    try:
        r = ctxlab.replay(trace, preset)
    except Exception as exc:  # noqa: BLE001 - a refusal is a result to compare
        return [f"error {type(exc).__name__}: {exc}"[:200]] * (1 + requests)
    data = [_frame(r.turns), _frame(r.events)]
    data.extend(p.encode() + b"\0" + r.file_bytes(p) for p in sorted(r.files))
    out = [_h(b"\1".join(data))]
    if requests:
        # fingerprints mean only equal or not: numbered in order of first appearance, so a
        # run that numbers its parts differently but sends the same requests digests the same
        order: dict[int, int] = {}
        calls = [
            (c.request.kept, [order.setdefault(f, len(order)) for f in c.request.fingerprints],
             list(c.request.tokens), getattr(c, "orphans", 0))
            for c in r.calls
        ]  # fmt: skip
        cache = metrics.cache_frame(r, trace, model="claude-sonnet-4-5")
        out.append(_h(repr(calls).encode() + _frame(cache)))
    return out


def traces(turns: int, data: Path) -> list[tuple[str, ctxlab.Trace]]:
    out = [
        (f"synthetic-{fmt}", make_trace(turns, fmt=fmt, seed=3, model="claude-sonnet-4-5"))
        for fmt in ("anthropic", "openai")
    ]
    for path in sorted(data.glob("*/*/*")):
        if path.is_dir() or path.name == "SOURCE.txt":
            continue
        try:
            loaded = ctxlab.load(path)
        except Exception as exc:  # noqa: BLE001 - recorded, compared like any result
            print(f"{path}: {type(exc).__name__}", file=sys.stderr)
            continue
        for k, trace in enumerate(loaded if isinstance(loaded, list) else [loaded]):
            out.extend(
                (f"{path.relative_to(data)}#{k}.{j}", sub) for j, sub in enumerate(trace.walk())
            )
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=400, help="synthetic trace length")
    parser.add_argument("--data", type=Path, default=DATA, help=f"traces (default {DATA})")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    parser.add_argument(
        "--requests",
        action="store_true",
        help="also digest every call's request and the cache frame (keys ending ':requests')",
    )
    parser.add_argument(
        "--settings",
        action="store_true",
        help="also Deep Agents under SETTINGS, each twice (keys 'deepagents[name]', ':again')",
    )
    args = parser.parse_args()
    if args.compare:
        before, after = (json.loads(p.read_text()) for p in args.compare)
        differ = sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
        for key in differ:
            print(f"{key}: {before.get(key)} -> {after.get(key)}")
        print(f"{len(before)} / {len(after)} digests, {len(differ)} differ")
        raise SystemExit(1 if differ else 0)
    out: dict[str, str] = {}
    for label, trace in traces(args.turns, args.data):
        out[f"{label}:load"] = load_digest(trace)
        if trace.turns:
            for preset in names():
                found = replay_digest(trace, preset, args.requests)
                out[f"{label}:{preset}"] = found[0]
                if args.requests:
                    out[f"{label}:{preset}:requests"] = found[1]
            if args.settings:
                for again in ("", ":again"):
                    for name, kwargs in SETTINGS.items():
                        found = replay_digest(trace, DeepAgents(**kwargs), args.requests)
                        out[f"{label}:deepagents[{name}]{again}"] = found[0]
                        if args.requests:
                            out[f"{label}:deepagents[{name}]{again}:requests"] = found[1]
    json.dump(out, sys.stdout, indent=0, sort_keys=True)


if __name__ == "__main__":
    main()
