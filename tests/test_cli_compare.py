"""`ctxlab compare` and `ctxlab policies` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxlab._cli.main import main
from ctxlab.policies import PRESETS

REPO = Path(__file__).resolve().parents[1]
SAMPLES = REPO / "traces"


def _json(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_policies_json_lists_every_preset(capsys):
    out = _json(capsys, ["policies", "--json"])
    names = [p["name"] for p in out["policies"]]
    assert names == list(PRESETS)
    for p in out["policies"]:
        assert set(p) == {"name", "params", "source"} and p["source"]
    clear = next(p for p in out["policies"] if p["name"] == "clear-tool-uses")
    assert clear["params"]["trigger"] == 100_000 and clear["params"]["placeholder"] == "[cleared]"


def test_policies_table(capsys):
    assert main(["policies"]) == 0
    assert "observation-masking" in capsys.readouterr().out


def _sample_files() -> list[Path]:
    return sorted(p for p in SAMPLES.glob("*.jsonl*") if p.is_file())


def test_compare_over_the_samples(capsys):
    """Every preset runs over the repository's sample traces and reports the documented keys."""
    if not _sample_files():
        pytest.skip("sample traces not generated (run python -m traces.samples)")
    argv = ["compare", str(SAMPLES), "--json"]
    for name in PRESETS:
        argv += ["--policy", name]
    out = _json(capsys, argv)
    rows = out["replays"]
    assert {r["policy"] for r in rows} == set(PRESETS)
    for r in rows:
        for key in (
            "policy",
            "peak_context_tokens",
            "cumulative_input_tokens",
            "events",
            "cost_usd",
            "cost_usd_with_cache",
            "cache_breaks",
        ):
            assert key in r
        assert r["cost_usd_with_cache"] <= r["cost_usd"]
    by = {(r["trace_id"], r["policy"]): r for r in rows}
    for (trace_id, policy), r in by.items():
        raw = by[(trace_id, "raw")]
        assert r["peak_context_tokens"] <= raw["peak_context_tokens"] * 1.3, policy


def test_compare_on_a_written_trace_with_window_and_model(tmp_path, capsys):
    """A plain messages file, a small window, a model override (prices), a pipeline."""
    from langchain_core.messages import messages_to_dict

    from tests._policy_traces import agent

    path = tmp_path / "t.json"
    path.write_text(json.dumps(messages_to_dict(agent(20))))
    text = tmp_path / "summary.txt"
    text.write_text("SUMMARY")
    out = _json(
        capsys,
        [
            "compare",
            str(path),
            "--policy",
            "raw",
            "--policy",
            "codex",
            "--policy",
            "clear-tool-uses+inspect-summary",
            "--window",
            "1500",
            "--model",
            "gpt-4.1",
            "--summary-text-file",
            str(text),
            "--json",
        ],
    )
    rows = {r["policy"]: r for r in out["replays"]}
    assert rows["raw"]["events"] == 0 and rows["codex"]["events"] >= 1
    assert rows["codex"]["peak_context_tokens"] < rows["raw"]["peak_context_tokens"]
    assert rows["raw"]["model"] == "gpt-4.1" and rows["raw"]["cost_usd"] > 0
    assert rows["raw"]["price_source"].startswith("genai-prices ")
    assert rows["raw"]["price_source"].endswith(": openai/gpt-4.1")
    assert rows["raw"]["raw_overflow_turns"] > 0


def test_compare_table_and_bad_policy(tmp_path, capsys):
    from langchain_core.messages import messages_to_dict

    from tests._policy_traces import agent

    path = tmp_path / "t.json"
    path.write_text(json.dumps(messages_to_dict(agent(3))))
    assert main(["compare", str(path), "--policy", "raw", "--policy", "observation-masking"]) == 0
    assert "observation-masking" in capsys.readouterr().out
    assert main(["compare", str(path), "--policy", "nope"]) == 2
