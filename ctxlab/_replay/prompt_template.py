"""Summary and probe prompts as checked templates: `{messages}` is where the conversation goes.

A summary prompt is a Python format string with one placeholder, `{messages}`, because that is
what LangChain's summarisation (and so Deep Agents) does with it: `prompt.format(messages=...)`.
Unchecked, two mistakes pass silently: a prompt without `{messages}` sends the model only the
headings (every summary point then shares one cached answer), and a literal brace (a JSON example
in the prompt) raises a bare `KeyError` on the model path only. `checked_prompt` is the one gate
every summariser path goes through: it refuses a stray placeholder or a lone brace with a message
that says what to write instead, and completes a prompt without `{messages}` by appending the
conversation (with a warning, once per prompt). `literal_prompt` escapes every brace but
`{messages}`, for prompts written as plain text; a LangChain `PromptTemplate` whose only input
is `messages` is taken as it is.
"""

from __future__ import annotations

import string
import warnings
from functools import lru_cache
from typing import Any

PLACEHOLDER = "messages"
"""The one field a summary prompt has: the conversation, rendered as LangChain renders it."""

APPENDED = "\n\n<conversation>\n{messages}\n</conversation>"
"""What `checked_prompt` appends to a prompt that has no `{messages}`."""


class PromptError(ValueError):
    """A summary or probe prompt that cannot be filled; the message says what to change."""


def literal_prompt(text: str) -> str:
    """`text` as a template in which every brace is literal except `{messages}` (written so,
    without spaces): for prompts holding JSON or code examples."""
    escaped = text.replace("{", "{{").replace("}", "}}")
    return escaped.replace("{{" + PLACEHOLDER + "}}", "{" + PLACEHOLDER + "}")


def checked_prompt(prompt: Any, *, complete: bool = True) -> str:
    """`prompt` as a format string whose only field is `{messages}`: a `str`, or a LangChain
    `PromptTemplate` (f-string) whose only input is `messages`.

    Raises `PromptError` for a lone brace or another placeholder; a prompt without `{messages}`
    gets `APPENDED` (warned once per prompt) or, with `complete=False`, is refused."""
    text = _template_text(prompt)
    fields = _fields(text)
    other = sorted(f for f in fields if f != PLACEHOLDER)
    if other:
        raise PromptError(
            f"summary prompt has the placeholder {{{other[0]}}}, but only {{messages}} is "
            f"filled: write {{{{{other[0]}}}}} for literal braces, or pass the text through "
            "ctxlab.summarizers.literal_prompt()"
        )
    if PLACEHOLDER in fields:
        return text
    if not complete:
        raise PromptError(
            "summary prompt has no {messages} placeholder, so the model would never see the "
            "conversation: add {messages} where it goes"
        )
    return _completed(text)


@lru_cache(maxsize=256)
def _completed(text: str) -> str:
    """`text` with the conversation appended, warned about once per prompt."""
    warnings.warn(
        "summary prompt has no {messages} placeholder: the conversation is appended at its "
        f"end ({text[:60]!r}...); add {{messages}} where it should go to silence this",
        UserWarning,
        stacklevel=4,
    )
    return text + APPENDED


def _template_text(prompt: Any) -> str:
    if isinstance(prompt, str):
        return prompt
    template = getattr(prompt, "template", None)
    variables = set(getattr(prompt, "input_variables", ()) or ())
    if not isinstance(template, str):
        raise PromptError(f"summary prompt must be a string or a PromptTemplate, not {prompt!r}")
    if getattr(prompt, "template_format", "f-string") != "f-string":
        raise PromptError("summary PromptTemplate must use template_format='f-string'")
    if variables - {PLACEHOLDER}:
        raise PromptError(
            f"summary PromptTemplate has inputs {sorted(variables)}; only 'messages' is filled"
        )
    return template


@lru_cache(maxsize=256)
def _fields(text: str) -> frozenset[str]:
    """The placeholders of `text` (`string.Formatter`'s reading of a format string)."""
    try:
        parsed = list(string.Formatter().parse(text))
    except ValueError as exc:
        at = _lone_brace(text)
        raise PromptError(
            f"summary prompt has a lone brace{at} ({exc}): write {{{{ and }}}} for literal "
            "braces, or pass the text through ctxlab.summarizers.literal_prompt()"
        ) from None
    return frozenset(name for _, name, _, _ in parsed if name is not None)


def _lone_brace(text: str) -> str:
    """Where the first brace that is neither doubled nor closes a field is, as " at line L,
    column C", or ""."""
    i = 0
    while i < len(text):
        pair = text[i : i + 2]
        if pair in ("{{", "}}"):
            i += 2
            continue
        if text[i] == "}":
            break
        if text[i] == "{":
            close, reopen = text.find("}", i + 1), text.find("{", i + 1)
            if close < 0 or 0 <= reopen < close:
                break
            i = close
        i += 1
    else:
        return ""
    line = text.count("\n", 0, i) + 1
    column = i - (text.rfind("\n", 0, i) + 1) + 1
    return f" at line {line}, column {column}"


__all__ = ["APPENDED", "PLACEHOLDER", "PromptError", "checked_prompt", "literal_prompt"]
