"""Model profiles (context window, output limit) looked up offline, the way LangChain does.

Deep Agents derives its defaults from `model.profile["max_input_tokens"]`, which the partner
packages fill from bundled data by **exact model name** (`claude-sonnet-4-5` has a profile,
`claude-sonnet-4-5-latest` has none). ctxlab ships the fields it needs from that data in
`ctxlab/data/model_profiles.json` (written by `scripts/make_model_profiles.py` from the chat
models' own `.profile`), so a replay picks the defaults the real agent would have picked with
no partner package installed: no network, no key, no model instance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib.resources import files
from typing import Any

ANTHROPIC_DEFAULT_MAX_TOKENS = 4096
"""ChatAnthropic's `max_tokens` when the model has no profile `max_output_tokens`."""


@dataclass(frozen=True, slots=True)
class Profile:
    """What compaction needs to know about a model.

    `reserved_output_tokens` is what deepagents' input budget subtracts by default: ChatAnthropic
    sets `max_tokens` to the profile's output limit (4096 without one); other chat models leave
    it unset, so nothing is reserved.
    """

    model: str | None
    provider: str | None
    max_input_tokens: int | None
    max_output_tokens: int | None
    reserved_output_tokens: int | None

    @property
    def is_anthropic(self) -> bool:
        """ChatAnthropic is the one chat model LangChain counts at 3.3 characters per token."""
        return self.provider == "anthropic"


_PROVIDER_ALIASES = {"google": "google_genai", "gemini": "google_genai"}
"""Other spellings of a provider in `provider:model` names, mapped to the data's key."""


@cache
def _profiles() -> dict[str, dict[str, dict[str, Any]]]:
    """Provider -> model -> profile fields, from the shipped data (read once per process)."""
    text = files("ctxlab").joinpath("data", "model_profiles.json").read_text(encoding="utf-8")
    return {name: entry["models"] for name, entry in json.loads(text)["providers"].items()}


def _lookup(provider: str, model: str) -> dict[str, Any]:
    models = _profiles().get(_PROVIDER_ALIASES.get(provider, provider), {})
    return dict(models.get(model) or {})


def guess_provider(model: str | None) -> str | None:
    """The provider a bare model name implies, as `init_chat_model` infers it."""
    if not model:
        return None
    name = model.split(":", 1)[-1].lower()
    if name.startswith("claude"):
        return "anthropic"
    if name.startswith(("gpt-", "o1", "o3", "o4", "chatgpt", "codex")):
        return "openai"
    if name.startswith("gemini"):
        return "google_genai"
    return None


@cache
def profile(model: str | None, provider: str | None = None) -> Profile:
    """Profile of `model` (a bare name or `provider:name`), empty when the data lacks it."""
    if model and ":" in model and provider is None:
        provider, model = model.split(":", 1)
    provider = provider or guess_provider(model)
    data = _lookup(provider, model) if (provider and model) else {}
    max_in = data.get("max_input_tokens")
    max_out = data.get("max_output_tokens")
    max_in = max_in if isinstance(max_in, int) and not isinstance(max_in, bool) else None
    max_out = max_out if isinstance(max_out, int) and not isinstance(max_out, bool) else None
    reserved = (max_out or ANTHROPIC_DEFAULT_MAX_TOKENS) if provider == "anthropic" else None
    return Profile(model, provider, max_in, max_out, reserved)
