"""Model profiles (context window, output limit) looked up offline, the way LangChain does.

Deep Agents derives its defaults from `model.profile["max_input_tokens"]`, which the partner
packages fill from bundled data by **exact model name** (`claude-sonnet-4-5` has a profile,
`claude-sonnet-4-5-latest` has none). ctxlab reads the same bundled data through the same
private lookups, so a replay picks the defaults the real agent would have picked; no network,
no key, no model instance.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from functools import cache
from pathlib import Path
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


_DATA_MODULES = {
    "anthropic": "langchain_anthropic",
    "openai": "langchain_openai",
    "google_genai": "langchain_google_genai",
    "google": "langchain_google_genai",
    "gemini": "langchain_google_genai",
}
"""Partner packages whose `data/_profiles.py` holds the `_PROFILES` table their chat models read
(`_get_default_model_profile(name)` is `_PROFILES.get(name, {}).copy()` in each)."""


@cache
def _profiles(package: str) -> dict[str, dict[str, Any]]:
    """`package`'s bundled `_PROFILES`, read without importing the package.

    Importing `langchain_anthropic` pulls in its chat model, the Anthropic SDK and pydantic
    models: seconds of start-up in every sweep worker, for a dict literal. The file is loaded
    on its own instead (`tests/test_profiles.py` checks it agrees with the chat models' lookup).
    """
    spec = importlib.util.find_spec(package)  # a top-level name: finds, does not import
    if spec is None or not spec.submodule_search_locations:
        return {}
    for folder in spec.submodule_search_locations:
        path = Path(folder) / "data" / "_profiles.py"
        if path.is_file():
            module_spec = importlib.util.spec_from_file_location(
                f"_ctxlab_profiles_{package}", path
            )
            if module_spec is None or module_spec.loader is None:
                return {}
            module = importlib.util.module_from_spec(module_spec)
            module_spec.loader.exec_module(module)
            return dict(getattr(module, "_PROFILES", {}))
    return {}


def _lookup(provider: str, model: str) -> dict[str, Any]:
    package = _DATA_MODULES.get(provider)
    return dict(_profiles(package).get(model) or {}) if package else {}


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
