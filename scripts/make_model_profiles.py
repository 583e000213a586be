"""Write `ctxlab/data/model_profiles.json` from the installed partner chat models.

Deep Agents sizes its defaults from `model.profile`, which each partner package fills from
data bundled with it (derived from models.dev, MIT licence), by exact model name. ctxlab ships
the two numbers it needs from those profiles so a replay needs neither the partner packages
nor their SDKs. Run after upgrading a partner package (they come with the `test` extra):

    python scripts/make_model_profiles.py

`tests/test_profiles.py` fails when the shipped file and the installed packages differ.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import json
import sys
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[1] / "ctxlab" / "data" / "model_profiles.json"

FIELDS = ("max_input_tokens", "max_output_tokens")
"""The profile fields ctxlab reads; the rest (modalities, release dates) it has no use for."""

PROVIDERS = {
    "anthropic": ("langchain-anthropic", "langchain_anthropic", "ChatAnthropic"),
    "openai": ("langchain-openai", "langchain_openai", "ChatOpenAI"),
    "google_genai": ("langchain-google-genai", "langchain_google_genai", "ChatGoogleGenerativeAI"),
}
"""Provider as `init_chat_model` spells it -> (distribution, module, chat model class)."""


def model_names(module: str) -> list[str]:
    """Every model name the package has a profile for.

    The packages expose a profile per model instance but no public list of names, so the
    names come from their generated data table (read here, never by ctxlab at run time).
    """
    table = importlib.import_module(f"{module}.data._profiles")._PROFILES
    return sorted(table)


def chat_model_profile(module: str, cls: str, model: str) -> dict[str, Any]:
    """The profile the chat model itself reports (`ChatX(model=...).profile`), {} for none."""
    chat = getattr(importlib.import_module(module), cls)
    return dict(chat(model=model, api_key="unused").profile or {})


def build() -> dict[str, Any]:
    """The file's content: per provider, the package version read and each model's fields."""
    providers: dict[str, Any] = {}
    for provider, (dist, module, cls) in PROVIDERS.items():
        models = {}
        for name in model_names(module):
            profile = chat_model_profile(module, cls, name)
            models[name] = {k: profile[k] for k in FIELDS if k in profile}
        providers[provider] = {
            "package": dist,
            "version": importlib.metadata.version(dist),
            "models": models,
        }
    return {"source": "models.dev via the LangChain partner packages (MIT)", "providers": providers}


def render(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def main() -> int:
    OUT.write_text(render(build()))
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
