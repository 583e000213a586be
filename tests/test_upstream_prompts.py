"""The catalogue's summary prompts against their upstream texts.

Verbatim prompts are pinned by the sha256 of the upstream text they were copied from, so an
edit that "tidies" them fails here; the Claude Code prompt must stay a paraphrase (its licence
forbids copying). Every preset must still replay the repository's sample trace, and the offline
`Extractive` summariser must fill the sections each upstream prompt asks for.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage

import ctxlab
from ctxlab._replay.policies import catalog, claude_code, codex, jetbrains, openhands
from ctxlab._replay.policies import inspect as inspect_policy
from ctxlab._replay.prompt_sections import outline
from ctxlab.summarizers import Extractive, format_prompt

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "traces" / "deepagents_long_session.jsonl.xz"


class Upstream(NamedTuple):
    """A prompt ctxlab copies verbatim, where it was copied from, and that text's sha256."""

    text: str
    preset: str
    source: str
    commit: str
    sha256: str


# Each hash is of the upstream text itself, read from the file at the commit (a Python or
# Rust template literal as the program sees it: Inspect's after `dedent`, JetBrains' YAML
# block scalar after parsing). Any edit to ctxlab's copy, even whitespace, changes its hash.
VERBATIM: dict[str, Upstream] = {
    "openhands": Upstream(
        openhands.OPENHANDS_UPSTREAM_PROMPT,
        "openhands-llm-summarizing",
        "OpenHands/OpenHands openhands/memory/condenser/impl/llm_summarizing_condenser.py",
        "76483ad8f5f5",
        "d9a9cf17df6182b1c365abb04d9d91975943651d3dddaf035faf42b16d8f01a7",
    ),
    "codex-prompt": Upstream(
        codex.CODEX_UPSTREAM_PROMPT,
        "codex",
        "openai/codex codex-rs/core/templates/compact/prompt.md",
        "11baefb5183c",
        "c6a0d57ccef9809526e68fa345607ac34d166c77afee55f047c5289d217b6868",
    ),
    "codex-prefix": Upstream(
        codex.CODEX_SUMMARY_PREFIX,
        "codex",
        "openai/codex codex-rs/core/templates/compact/summary_prefix.md",
        "50a533337862",
        "3790fb89bb7db60bc4274ffcfc748af9cb0c6d84ad68fce61a4cf98986d25ed8",
    ),
    "inspect": Upstream(
        inspect_policy.INSPECT_UPSTREAM_PROMPT,
        "inspect-summary",
        "UKGovernmentBEIS/inspect_ai src/inspect_ai/model/_compaction/summary.py "
        "CompactionSummary.DEFAULT_SUMMARY_PROMPT",
        "05104f6c4d46",
        "96aad5a01de8cdfa26d463793733dd42395a09aa5b6551e7fb2139be54abe9ae",
    ),
    "jetbrains": Upstream(
        jetbrains.JETBRAINS_UPSTREAM_PROMPT,
        "jetbrains-llm-summary",
        "Recursive-Safeguarding/the-complexity-trap "
        "config/default_no_demo_checkpoint_same_model_openhands_N=21_M=10.yaml "
        "summary_system_template",
        "adfaa1a18b8b",
        "2ffdc373b29c501bb80e84f9c3af70a15c180725afa7af80b6b873a3643ccee1",
    ),
}


@pytest.mark.parametrize("name", sorted(VERBATIM))
def test_verbatim_texts_hash_to_the_upstream_text(name: str) -> None:
    pinned = VERBATIM[name]
    got = hashlib.sha256(pinned.text.encode("utf-8")).hexdigest()
    assert got == pinned.sha256, f"{name} no longer equals {pinned.source} @{pinned.commit}"


@pytest.mark.parametrize("name", sorted(VERBATIM))
def test_presets_cite_the_commit_their_prompt_was_pinned_at(name: str) -> None:
    pinned = VERBATIM[name]
    assert f"@{pinned.commit}" in catalog.source_of(catalog.get(pinned.preset))


def test_inspect_placeholder_is_upstreams() -> None:
    assert inspect_policy.TOOL_RESULT_PLACEHOLDER == "(Tool result removed)"


TEMPLATES = {
    "openhands": (openhands.OPENHANDS_SUMMARY_PROMPT, openhands.OPENHANDS_UPSTREAM_PROMPT),
    "codex": (codex.CODEX_COMPACT_PROMPT, codex.CODEX_UPSTREAM_PROMPT.rstrip()),
    "inspect": (
        inspect_policy.INSPECT_SUMMARY_PROMPT,
        inspect_policy.INSPECT_UPSTREAM_PROMPT.format(addendums="").rstrip(),
    ),
    "jetbrains": (jetbrains.JETBRAINS_SUMMARY_PROMPT, jetbrains.JETBRAINS_UPSTREAM_PROMPT),
}


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_templates_render_the_upstream_text_unchanged(name: str) -> None:
    """What an LLM summariser is sent contains the upstream prompt byte for byte (braces
    escaped for `str.format` come back as single braces) and the conversation."""
    template, upstream = TEMPLATES[name]
    sent = format_prompt([HumanMessage("NEEDLE-42")], template)
    assert upstream in sent
    assert "NEEDLE-42" in sent


def test_openhands_template_ends_like_openhands() -> None:
    sent = format_prompt([HumanMessage("x")], openhands.OPENHANDS_SUMMARY_PROMPT)
    assert sent.startswith(openhands.OPENHANDS_UPSTREAM_PROMPT + "\n\n")
    assert sent.endswith("\nNow summarize the events using the rules above.")


def test_claude_code_prompt_is_a_labelled_paraphrase() -> None:
    """Claude Code is "All rights reserved": ctxlab keeps its own wording, says so, and names
    the version and file the original lives in."""
    prompt = claude_code.CLAUDE_CODE_SUMMARY_PROMPT
    # The opening sentence of the original (also in Inspect's derived prompt) must not be here.
    assert "paying close attention to the user's explicit requests" not in prompt
    assert "paying close attention" in inspect_policy.INSPECT_UPSTREAM_PROMPT
    source = claude_code.ClaudeCode.source
    assert "paraphrase" in source and "2.0.0" in source and "cli.js" in source
    module = Path(claude_code.__file__).read_text(encoding="utf-8")
    assert "A PARAPHRASE" in module and "All rights reserved" in module
    format_prompt([HumanMessage("x")], prompt)  # a valid template


PATH = re.compile(r"[\w.-]+/[\w./=-]+\.(?:py|rs|md|yaml|js|qmd)\b")
COMMIT = re.compile(r"@[0-9a-f]{8,40}\b")


@pytest.mark.parametrize(
    ("name", "verbatim"),
    [
        ("openhands-llm-summarizing", True),
        ("openhands-amortized", False),
        ("openhands-conversation-window", False),
        ("codex", True),
        ("inspect-summary", True),
        ("inspect-edit", True),
        ("inspect-trim", False),
        ("claude-code", False),
        ("jetbrains-llm-summary", True),
        ("jetbrains-hybrid", True),
    ],
)
def test_sources_cite_a_path(name: str, verbatim: bool) -> None:
    source = catalog.source_of(catalog.get(name))
    assert PATH.search(source), source
    if verbatim:
        assert COMMIT.search(source), source


# ----------------------------------------------------------------------------- Extractive


def _headers(prompt: str) -> list[str]:
    return [s.header for s in outline(prompt).sections]


def test_extractive_reads_openhands_fields() -> None:
    """`USER_CONTEXT: (...)` fields, each once; the example answers are not asks."""
    assert _headers(openhands.OPENHANDS_SUMMARY_PROMPT) == [
        "USER_CONTEXT:",
        "TASK_TRACKING:",
        "COMPLETED:",
        "PENDING:",
        "CURRENT_STATE:",
        "CODE_STATE:",
        "TESTS:",
        "CHANGES:",
        "DEPS:",
        "VERSION_CONTROL_STATUS:",
    ]
    kinds = {s.title: s.extractor for s in outline(openhands.OPENHANDS_SUMMARY_PROMPT).sections}
    assert kinds["USER_CONTEXT"] == "intent" and kinds["PENDING"] == "next"
    assert kinds["TESTS"] == "errors"  # from its description: {Failing cases, error messages}
    assert kinds["CODE_STATE"] == "artifacts" and kinds["CHANGES"] == "changes"
    assert "TASK_TRACKING:" not in _headers(jetbrains.JETBRAINS_SUMMARY_PROMPT)
    assert len(_headers(jetbrains.JETBRAINS_SUMMARY_PROMPT)) == 9


def test_extractive_reads_codex_bullets() -> None:
    assert [(s.title, s.extractor) for s in outline(codex.CODEX_COMPACT_PROMPT).sections] == [
        ("Goal / user objective", "intent"),
        ("Current progress and key decisions made", "said"),
        ("Important context, constraints, or user preferences", "users"),
        ("What remains to be done (clear next steps)", "next"),
        ("Any critical data, examples, or references needed to continue", "identifiers"),
    ]


NINE = [
    "1. Primary Request and Intent:",
    "2. Key Technical Concepts:",
    "3. Files and Code Sections:",
    "4. Errors and fixes:",
    "5. Problem Solving:",
    "6. All user messages:",
    "7. Pending Tasks:",
    "8. Current Work:",
    "9. Optional Next Step:",
]


def test_extractive_skips_examples_and_sub_lists() -> None:
    """Inspect's prompt: the nine top-level sections, not its `## Compact Instructions`
    example heading nor the indented "analysis process" bullets."""
    assert _headers(inspect_policy.INSPECT_SUMMARY_PROMPT) == NINE
    assert _headers(claude_code.CLAUDE_CODE_SUMMARY_PROMPT) == NINE
    prompt = (
        "Think about:\n1. Goal: the aim\n   - Errors seen: failures\n   - Files read: paths\n"
        "2. Next steps: what is left\n<example>\n## Files\n</example>\n{messages}"
    )
    assert _headers(prompt) == ["1. Goal:", "2. Next steps:"]


SESSION: Sequence[BaseMessage] = [
    HumanMessage("Fix the failing checkout tests in /shop/cart.py. Keep the API stable."),
    AIMessage(
        "Running the tests first.",
        tool_calls=[{"name": "run_tests", "args": {"command": "pytest -x"}, "id": "t1"}],
    ),
    ToolMessage(
        "FAILED tests/test_cart.py::test_total\nE   KeyError: 'discount_rate'",
        tool_call_id="t1",
        name="run_tests",
    ),
    AIMessage(
        "Editing the total.",
        tool_calls=[{"name": "edit_file", "args": {"file_path": "/shop/cart.py"}, "id": "t2"}],
    ),
    ToolMessage("ok", tool_call_id="t2", name="edit_file"),
]


def test_extractive_fills_the_upstream_sections_sensibly() -> None:
    oh = Extractive().summarize(SESSION, prompt=openhands.OPENHANDS_SUMMARY_PROMPT)
    assert oh.startswith(
        "USER_CONTEXT:\nFix the failing checkout tests in /shop/cart.py. Keep the API stable."
    )
    assert "TESTS:\n- run_tests: E   KeyError: 'discount_rate' (+1 more)" in oh
    assert "CHANGES:\n- /shop/cart.py (edit_file)" in oh
    cx = Extractive().summarize(SESSION, prompt=codex.CODEX_COMPACT_PROMPT)
    assert "- What remains to be done (clear next steps):\n- Last request: Fix the" in cx
    assert "- Important context, constraints, or user preferences:\n- Fix the failing" in cx
    cc = Extractive().summarize(SESSION, prompt=claude_code.CLAUDE_CODE_SUMMARY_PROMPT)
    assert [ln for ln in cc.splitlines() if ln in NINE] == NINE


# ----------------------------------------------------------------------------- end to end


class Recording:
    """`Extractive`, remembering each prompt it was given and what it wrote."""

    name = "recording-extractive"

    def __init__(self) -> None:
        self.inner = Extractive()
        self.seen: list[tuple[str, str]] = []

    def summarize(self, messages: Sequence[BaseMessage], *, prompt: str) -> str:
        text = self.inner.summarize(messages, prompt=prompt)
        self.seen.append((prompt, text))
        return text


@pytest.fixture(scope="module")
def sample() -> ctxlab.Trace:
    [trace] = ctxlab.load(SAMPLE)
    return trace


PRESET_PROMPTS = {
    "openhands-llm-summarizing": openhands.OPENHANDS_SUMMARY_PROMPT,
    "codex": codex.CODEX_COMPACT_PROMPT,
    "inspect-summary": inspect_policy.INSPECT_SUMMARY_PROMPT,
    "claude-code": claude_code.CLAUDE_CODE_SUMMARY_PROMPT,
    "jetbrains-llm-summary": jetbrains.JETBRAINS_SUMMARY_PROMPT,
    "jetbrains-hybrid": jetbrains.JETBRAINS_SUMMARY_PROMPT,
}


@pytest.mark.parametrize("name", sorted(PRESET_PROMPTS))
def test_presets_replay_the_sample_with_their_prompt(name: str, sample: ctxlab.Trace) -> None:
    """A 40k window makes every preset compact on the sample; the summariser is sent the
    preset's template and answers in that template's sections."""
    rec = Recording()
    result = ctxlab.replay(sample, catalog.get(name, window=40_000), summarizer=rec)
    assert "summarize" in {e.kind for e in result.event_list}
    assert rec.seen and {prompt for prompt, _ in rec.seen} == {PRESET_PROMPTS[name]}
    headers = _headers(PRESET_PROMPTS[name])
    for _, text in rec.seen:
        assert [ln for ln in text.splitlines() if ln in headers] == headers
    assert all(c.orphans == 0 for c in result.calls)


@pytest.mark.parametrize(
    "name",
    [
        "openhands-llm-summarizing",
        "openhands-amortized",
        "openhands-recent",
        "openhands-conversation-window",
        "codex",
        "inspect-edit",
        "inspect-trim",
        "inspect-summary",
        "claude-code",
        "jetbrains-llm-summary",
        "jetbrains-hybrid",
    ],
)
def test_presets_replay_the_sample_at_their_defaults(name: str, sample: ctxlab.Trace) -> None:
    result = ctxlab.replay(sample, catalog.get(name))
    assert result.turns.height == len(sample.turns)
    assert all(c.orphans == 0 for c in result.calls)


def test_inspect_edit_clears_tool_results_on_the_sample(sample: ctxlab.Trace) -> None:
    """Cleared results carry `TOOL_RESULT_PLACEHOLDER` (pinned above) as stubs."""
    result = ctxlab.replay(sample, catalog.get("inspect-edit", window=40_000))
    assert "clear_tool_uses" in {e.kind for e in result.event_list}
    assert all(c.orphans == 0 for c in result.calls)
