"""The model profiles ctxlab ships agree with what the installed partner chat models report.

`ctxlab/data/model_profiles.json` stands in for `ChatAnthropic(model=...).profile` (and the
OpenAI and Google equivalents) so a replay needs no partner package; these tests pin the data
to the real chat models. After upgrading a partner package, regenerate the data with
`python scripts/make_model_profiles.py`.
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest
from langchain_anthropic import ChatAnthropic
from langchain_anthropic.data._profiles import _PROFILES as ANTHROPIC
from langchain_google_genai import ChatGoogleGenerativeAI
from langchain_google_genai.data._profiles import _PROFILES as GOOGLE
from langchain_openai import ChatOpenAI
from langchain_openai.data._profiles import _PROFILES as OPENAI

from ctxlab._cost.profiles import ANTHROPIC_DEFAULT_MAX_TOKENS, _lookup, _profiles, profile

FIELDS = ("max_input_tokens", "max_output_tokens")
CHAT_MODELS = {
    "anthropic": ChatAnthropic,
    "openai": ChatOpenAI,
    "google_genai": ChatGoogleGenerativeAI,
}
KNOWN = {"anthropic": ANTHROPIC, "openai": OPENAI, "google_genai": GOOGLE}


def reported(provider: str, model: str) -> dict[str, Any]:
    """What the chat model reports through its public `profile`, cut to the fields ctxlab uses."""
    chat = CHAT_MODELS[provider](model=model, api_key="unused")
    return {k: v for k, v in (chat.profile or {}).items() if k in FIELDS}


def cases() -> list[tuple[str, str]]:
    unknown = {"anthropic": "claude-sonnet-4-5-latest", "openai": "gpt-unknown"}
    return [
        (provider, model)
        for provider, table in KNOWN.items()
        for model in sorted(
            set(table) | set(_profiles().get(provider, {})) | {unknown.get(provider, "nope")}
        )
    ]


@pytest.mark.parametrize(("provider", "model"), cases())
def test_shipped_profile_matches_chat_model(provider: str, model: str) -> None:
    assert _lookup(provider, model) == reported(provider, model)


def test_shipped_data_covers_every_model_the_packages_know() -> None:
    assert {p: set(m) for p, m in _profiles().items()} == {p: set(t) for p, t in KNOWN.items()}


def test_profile_fields() -> None:
    p = profile("anthropic:claude-sonnet-4-5")
    assert (p.provider, p.max_input_tokens) == ("anthropic", 200_000)
    assert p.reserved_output_tokens == p.max_output_tokens
    unknown = profile("claude-sonnet-4-5-latest")
    assert unknown.reserved_output_tokens == ANTHROPIC_DEFAULT_MAX_TOKENS
    assert profile("gpt-4.1").reserved_output_tokens is None
    assert profile("llama-3", "ollama").max_input_tokens is None
    gemini = min(
        m for m, f in GOOGLE.items() if m.startswith("gemini") and f.get("max_input_tokens")
    )
    assert profile(f"google:{gemini}").max_input_tokens == GOOGLE[gemini]["max_input_tokens"]
    assert profile(gemini).provider == "google_genai"


def test_lookup_imports_no_partner_package() -> None:
    code = (
        "import sys; from ctxlab._cost.profiles import profile; "
        "assert profile('claude-sonnet-4-5').max_input_tokens; "
        "assert profile('gpt-4.1').max_input_tokens; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'langchain_anthropic', 'langchain_openai', 'langchain_google_genai', "
        "'anthropic', 'openai', 'google'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
