"""Chat models by name (`provider:name`), as the CLI's `--model` and `--judge` flags take them.

LangChain's `init_chat_model` knows every provider's chat model class; it lives in the `langchain`
package, which ctxlab does not require at run time, and each provider's class in its partner
package (`langchain-openai`, `langchain-anthropic`, ...). So a spec that cannot be built says
which spec, what is missing and what to install or set, instead of a bare import error.
"""

from __future__ import annotations

from typing import Any


class ModelSpecError(ValueError):
    """A `provider:name` spec that does not give a chat model; the message names the spec."""


def model_from_spec(spec: str, **kwargs: Any) -> Any:
    """The LangChain chat model `spec` names (`openai:gpt-4o-mini`, `anthropic:claude-haiku-4-5`):
    `init_chat_model(name, model_provider=provider, **kwargs)`."""
    provider, sep, name = spec.partition(":")
    if not sep or not provider.strip() or not name.strip():
        raise ModelSpecError(
            f"model {spec!r}: expected provider:name, e.g. openai:gpt-4o-mini or "
            "anthropic:claude-haiku-4-5"
        )
    try:
        from langchain.chat_models import init_chat_model
    except ImportError as exc:
        raise ModelSpecError(
            f"model {spec!r}: building a model by name needs the `langchain` package "
            f"(pip install langchain langchain-{provider}): {exc}"
        ) from exc
    try:
        model = init_chat_model(name, model_provider=provider, **kwargs)
    except ImportError as exc:
        raise ModelSpecError(
            f"model {spec!r}: the provider's package is not installed "
            f"(pip install langchain-{provider.replace('_', '-')}): {exc}"
        ) from exc
    except Exception as exc:  # a missing key or unknown provider, as the provider words it
        raise ModelSpecError(f"model {spec!r}: {type(exc).__name__}: {exc}") from exc
    empty = [k for k in type(model).model_fields if k.endswith("api_key") and not _secret(model, k)]
    if empty:
        raise ModelSpecError(
            f"model {spec!r}: no API key ({empty[0]} is empty): set "
            f"{provider.upper()}_API_KEY or pass the key"
        )
    return model


def _secret(model: Any, field: str) -> str:
    """The text of a key field (a pydantic `SecretStr`, a plain string or None)."""
    value = getattr(model, field, None)
    if value is None:
        return ""
    reveal = getattr(value, "get_secret_value", None)
    return reveal() if callable(reveal) else str(value)
