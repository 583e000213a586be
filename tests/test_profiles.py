"""Profiles read from the partner packages' data files agree with their chat models' lookup.

`ctxlab.profiles` loads `data/_profiles.py` on its own so sweep workers do not import the chat
models; these tests pin that shortcut to the lookup the real agent uses.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from langchain_anthropic.chat_models import _get_default_model_profile as anthropic_profile
from langchain_anthropic.data._profiles import _PROFILES as ANTHROPIC
from langchain_openai.chat_models.base import _get_default_model_profile as openai_profile
from langchain_openai.data._profiles import _PROFILES as OPENAI

from ctxlab.profiles import ANTHROPIC_DEFAULT_MAX_TOKENS, _lookup, profile


@pytest.mark.parametrize("model", sorted(ANTHROPIC) + ["claude-sonnet-4-5-latest", "nope"])
def test_anthropic_lookup_matches_chat_model(model: str) -> None:
    assert _lookup("anthropic", model) == dict(anthropic_profile(model))


@pytest.mark.parametrize("model", sorted(OPENAI) + ["gpt-unknown"])
def test_openai_lookup_matches_chat_model(model: str) -> None:
    assert _lookup("openai", model) == dict(openai_profile(model))


def test_profile_fields() -> None:
    p = profile("anthropic:claude-sonnet-4-5")
    assert (p.provider, p.max_input_tokens) == ("anthropic", 200_000)
    assert p.reserved_output_tokens == p.max_output_tokens
    unknown = profile("claude-sonnet-4-5-latest")
    assert unknown.reserved_output_tokens == ANTHROPIC_DEFAULT_MAX_TOKENS
    assert profile("gpt-4.1").reserved_output_tokens is None
    assert profile("llama-3", "ollama").max_input_tokens is None


def test_lookup_does_not_import_chat_models() -> None:
    code = (
        "import sys; from ctxlab.profiles import profile; "
        "assert profile('claude-sonnet-4-5').max_input_tokens; "
        "assert profile('gpt-4.1').max_input_tokens; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langchain_anthropic', 'langchain_openai', 'anthropic', 'openai'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
