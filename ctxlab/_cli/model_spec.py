"""Chat models by name, as the CLI's `--model` and `--judge` flags take them.

Two forms. `provider:name` is anything LangChain's `init_chat_model` knows (`openai:gpt-4o-mini`,
`anthropic:claude-haiku-4-5`, `ollama:llama3.2`, `huggingface:<model id or folder>`): it lives in
the `langchain` package, which ctxlab does not require at run time, and each provider's class in
its partner package (`langchain-openai`, `langchain-ollama`, ...). `module:Factory` is a user's
own constructor (`mymodels:smollm2`, `pkg.models:make_chat`): a callable, importable from the
current directory or an installed package, that takes no arguments and returns a LangChain chat
model; it is how a model LangChain cannot name (a llama.cpp GGUF, a wrapped local pipeline) is
used from the command line. A spec that cannot be built says which spec, what is missing and what
to install or set, instead of a bare import or attribute error.
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

PACKAGES = {
    "ollama": "langchain-ollama",
    "huggingface": "langchain-huggingface",
    "google_genai": "langchain-google-genai",
    "google_vertexai": "langchain-google-vertexai",
    "bedrock": "langchain-aws",
    "bedrock_converse": "langchain-aws",
    "azure_openai": "langchain-openai",
    "mistralai": "langchain-mistralai",
    "nvidia": "langchain-nvidia-ai-endpoints",
}
"""The partner package of providers whose package name is not `langchain-<provider>`."""

NOT_PROVIDERS = {
    "llamacpp": "llama.cpp is not an init_chat_model provider: serve the GGUF with llama-server "
    "and pass openai:<name> with OPENAI_BASE_URL=http://127.0.0.1:8080/v1, or write a factory "
    "returning langchain_community.chat_models.ChatLlamaCpp(model_path=...) and pass "
    "module:Factory (docs/local-models.md)",
    "transformers": "transformers is not an init_chat_model provider: pass huggingface:<model "
    "id or folder>, or a module:Factory returning a chat model (docs/local-models.md)",
}
"""What to say of provider names people try that `init_chat_model` does not know."""

_PIP = re.compile(r"pip install ([\w\-\[\]]+)")


class ModelSpecError(ValueError):
    """A model spec that does not give a chat model; the message names the spec."""


def model_from_spec(spec: str, **kwargs: Any) -> Any:
    """The LangChain chat model `spec` names: `init_chat_model(name, model_provider=provider,
    **kwargs)` for `provider:name`, else `Factory(**kwargs)` of `module:Factory`."""
    provider, sep, name = spec.partition(":")
    if not sep or not provider.strip() or not name.strip():
        raise ModelSpecError(
            f"model {spec!r}: expected provider:name, e.g. openai:gpt-4o-mini or "
            "anthropic:claude-haiku-4-5, or module:Factory (a function returning a chat model)"
        )
    if provider in NOT_PROVIDERS:
        raise ModelSpecError(f"model {spec!r}: {NOT_PROVIDERS[provider]}")
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        factory = _factory(spec, provider, name)
        if factory is not None:
            return _built(spec, factory, kwargs)
        raise ModelSpecError(
            f"model {spec!r}: building a model by name needs the `langchain` package "
            f"(pip install langchain {_package(provider)}): {exc}"
        ) from exc
    try:
        model = init_chat_model(name, model_provider=provider, **kwargs)
    except (ImportError, AttributeError) as exc:  # a partner package missing or too old
        raise ModelSpecError(
            f"model {spec!r}: the provider's package is not installed or too old "
            f"(pip install -U {_package(provider, exc)}): {type(exc).__name__}: {exc}"
        ) from exc
    except ValueError as exc:
        factory = _factory(spec, provider, name) if "provider" in str(exc) else None
        if factory is not None:
            return _built(spec, factory, kwargs)
        raise ModelSpecError(f"model {spec!r}: {type(exc).__name__}: {exc}") from exc
    except Exception as exc:  # a missing key, as the provider words it
        raise ModelSpecError(f"model {spec!r}: {type(exc).__name__}: {exc}") from exc
    empty = [k for k in type(model).model_fields if k.endswith("api_key") and not _secret(model, k)]
    if empty:
        raise ModelSpecError(
            f"model {spec!r}: no API key ({empty[0]} is empty): set "
            f"{provider.upper()}_API_KEY or pass the key"
        )
    return model


def _package(provider: str, error: BaseException | None = None) -> str:
    """The partner package to install for `provider` (the one its error names, if any)."""
    named = _PIP.search(str(error)) if error is not None else None
    if named:
        return named.group(1)
    return PACKAGES.get(provider, f"langchain-{provider.replace('_', '-')}")


def _factory(spec: str, module: str, attribute: str) -> Any:
    """The callable `module:attribute` names, or None when `module` is no importable module
    (then the spec was meant as provider:name). The current directory is searched first, as
    `python -m` does, so a user's own `mymodels.py` works from where they run ctxlab."""
    if not re.fullmatch(r"[A-Za-z_][\w.]*", module) or not re.fullmatch(
        r"[A-Za-z_][\w.]*", attribute
    ):
        return None
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        found: Any = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module.startswith(exc.name):
            return None
        raise ModelSpecError(f"model {spec!r}: importing {module} failed: {exc}") from exc
    except Exception as exc:
        raise ModelSpecError(f"model {spec!r}: importing {module} failed: {exc}") from exc
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise ModelSpecError(f"model {spec!r}: module {module} has no {attribute}")
        found = getattr(found, part)
    if not callable(found):
        raise ModelSpecError(f"model {spec!r}: {attribute} is not callable")
    return found


def _built(spec: str, factory: Any, kwargs: dict[str, Any]) -> Any:
    """`factory(**kwargs)`, checked to be a LangChain chat model."""
    from langchain_core.language_models import BaseChatModel

    try:
        model = factory(**kwargs)
    except Exception as exc:
        raise ModelSpecError(
            f"model {spec!r}: the factory failed: {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(model, BaseChatModel):
        raise ModelSpecError(
            f"model {spec!r}: the factory returned {type(model).__name__}, not a LangChain "
            "chat model (BaseChatModel)"
        )
    return model


def _secret(model: Any, field: str) -> str:
    """The text of a key field (a pydantic `SecretStr`, a plain string or None)."""
    value = getattr(model, field, None)
    if value is None:
        return ""
    reveal = getattr(value, "get_secret_value", None)
    return reveal() if callable(reveal) else str(value)
