"""Exact, offline OpenAI token counts: o200k/cl100k BPE plus the chat format's overheads.

A provider bills the tokens of the request it received, not the characters a harness measured.
For OpenAI models the tokenizer is public, so ctxlab counts those tokens exactly instead of
estimating: the BPE is `rs-bpe`'s (its o200k_base and cl100k_base vocabularies ship inside the
wheel, so nothing is downloaded at run time; docs/tokenizers.md says why not tiktoken), and the
chat format's own tokens are added the way OpenAI's cookbook ("How to count tokens with
tiktoken") documents them:

* every message costs 3 tokens of framing (`<|start|>role<|message|>...<|end|>`) plus its role
  and content; a `name` costs its tokens plus 1; the reply is primed with 3 more;
* tool schemas are rendered by the server into a TypeScript-like `namespace functions { ... }`
  block in the system prompt (the rendering the cookbook's function-calling count and the
  `openai-chat-tokens` port reproduce); `tools` counts that rendering plus its framing;
* an assistant tool call costs its function name and JSON arguments plus a few framing tokens.

The framing constants were checked against recorded `input_tokens` on the real traces in
`../shared/data` (tests/test_openai_tokens.py; the table is in docs/tokenizers.md).

Images are not counted: none of the recorded OpenAI traces carries an image part, so the tile
rule (85 + 170 per 512-pixel tile) could not be checked here; an image part adds 0 tokens and
the docs say so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any, Protocol

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab._cost.tokens import openai_role

ENCODINGS = ("o200k_base", "cl100k_base")
"""The OpenAI encodings ctxlab counts exactly (the two `rs-bpe` ships)."""

TOKENS_PER_MESSAGE = 3
"""`<|start|>`, `<|message|>` (or the newline of older models) and `<|end|>` around a message."""
TOKENS_PER_NAME = 1
"""A message's `name` costs its own tokens plus this separator."""
REPLY_PRIMING = 3
"""`<|start|>assistant<|message|>`: every request ends with the reply's opening."""
TOKENS_PER_TOOL_CALL = 7
"""Framing of one tool call inside an assistant message (recipient `functions.`, the call's
separators); fitted on the gpt-4o-mini Inspect log's consecutive calls (docs/tokenizers.md)."""
TOOLS_FRAMING = -6
"""Correction to `render_tools`' count: on the one real trace that records the tool schemas it
sent (the gpt-4o-mini Inspect log, eight tools, 1,070 tokens billed for them) the rendering
below counts 1,076, so the server's rendering is 6 tokens shorter than this reconstruction and
its framing is folded into that. One trace fixes it; docs/tokenizers.md says so."""

_O200K_PREFIXES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "codex")
_CL100K_PREFIXES = ("gpt-4", "gpt-3.5", "gpt-35", "text-embedding-3", "text-embedding-ada")


class _Tokenizer(Protocol):
    def count(self, text: str) -> int: ...


@cache
def _tokenizer(encoding: str) -> _Tokenizer:
    """The BPE of `encoding`, built once per process (0.1 s for o200k, from the wheel's data)."""
    if encoding not in ENCODINGS:
        raise ValueError(f"unknown encoding {encoding!r}; ctxlab counts {', '.join(ENCODINGS)}")
    from rs_bpe.bpe import openai as bpe_openai

    return bpe_openai.o200k_base() if encoding == "o200k_base" else bpe_openai.cl100k_base()


def encoding_for(model: str | None) -> str | None:
    """The encoding OpenAI uses for `model`, or None when the model is not an OpenAI one.

    A provider prefix (`openai:gpt-4o`, `openai/gpt-4o`) and snapshot suffixes are accepted;
    gpt-4o, 4.1, 4.5, 5 and the o-series use o200k_base, gpt-4 and gpt-3.5 cl100k_base.
    """
    if not model:
        return None
    name = model.lower()
    for sep in (":", "/"):
        name = name.rsplit(sep, 1)[-1]
    if name.startswith(_O200K_PREFIXES):
        return "o200k_base"
    if name.startswith(_CL100K_PREFIXES):
        return "cl100k_base"
    return None


def count_text(text: str, encoding: str = "o200k_base") -> int:
    """Tokens of `text` in `encoding`, special-token spellings counted as ordinary text (as
    the API does with message content)."""
    return _tokenizer(encoding).count(text) if text else 0


def _role(message: BaseMessage) -> str:
    """The chat-completions role a LangChain message is sent with (`user` for a message class
    OpenAI has no role for)."""
    try:
        return openai_role(message)
    except ValueError:
        return "user"


def _content_text(content: Any) -> str:
    """The text parts of a message's content, joined the way they reach the tokenizer."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return json.dumps(content, ensure_ascii=False, default=str)
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, Mapping):
            kind = block.get("type")
            if kind in ("text", "input_text", "output_text") and isinstance(block.get("text"), str):
                parts.append(block["text"])
            elif kind in ("image", "image_url", "input_image", "tool_use", "tool_call"):
                continue  # images: see the module doc; tool calls: counted from `tool_calls`
            elif kind in ("reasoning", "thinking"):
                continue  # reasoning is not sent back as input text
            else:
                parts.append(json.dumps(block, ensure_ascii=False, default=str))
    return "".join(parts)


def _arguments(args: Any) -> str:
    """Tool-call arguments as the JSON string the API carries (LangChain's own conversion)."""
    if isinstance(args, str):
        return args
    return json.dumps(args, ensure_ascii=False, default=str)


class OpenAICounter:
    """Exact token counts of chat-completions requests for one encoding.

    `count(messages, tools)` = `fixed(tools)` + the sum of `message(m)`: per-message counts are
    independent of their neighbours, so a replay can keep prefix sums of them.
    """

    def __init__(self, encoding: str = "o200k_base") -> None:
        _tokenizer(encoding)  # fail early on an unknown encoding
        self.encoding = encoding

    def text(self, text: str) -> int:
        """Tokens of a bare string."""
        return count_text(text, self.encoding)

    def message(self, message: BaseMessage) -> int:
        """Tokens one message adds to a request: framing, role, content, name, tool calls."""
        n = (
            TOKENS_PER_MESSAGE
            + self.text(_role(message))
            + self.text(_content_text(message.content))
        )
        name = message.name
        if name and not isinstance(message, ToolMessage):  # tool results are sent without it
            n += self.text(name) + TOKENS_PER_NAME
        if isinstance(message, AIMessage):
            for call in message.tool_calls:
                n += (
                    TOKENS_PER_TOOL_CALL
                    + self.text(call.get("name") or "")
                    + self.text(_arguments(call.get("args", {})))
                )
            for bad in message.invalid_tool_calls:
                n += (
                    TOKENS_PER_TOOL_CALL
                    + self.text(bad.get("name") or "")
                    + self.text(bad.get("args") or "")
                )
        return n

    def tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """Tokens the tool schemas add: their server-side rendering plus framing (0 for none)."""
        if not tools:
            return 0
        return TOOLS_FRAMING + self.text(render_tools(tools))

    def fixed(self, tools: Sequence[Mapping[str, Any]] = ()) -> int:
        """Tokens every request pays whatever its messages: the reply priming and the tools."""
        return REPLY_PRIMING + self.tools(tools)

    def count(
        self, messages: Iterable[BaseMessage], tools: Sequence[Mapping[str, Any]] = ()
    ) -> int:
        """Input tokens of a whole request."""
        return self.fixed(tools) + sum(self.message(m) for m in messages)


def _function(tool: Mapping[str, Any]) -> Mapping[str, Any]:
    """The function definition inside a tool schema in any of the usual spellings (OpenAI
    `{"type": "function", "function": {...}}`, flat `{name, description, parameters}`,
    Anthropic `input_schema`)."""
    inner = tool.get("function")
    if isinstance(inner, Mapping):
        return inner
    if "input_schema" in tool and "parameters" not in tool:
        return {**tool, "parameters": tool["input_schema"]}
    return tool


def render_tools(tools: Sequence[Mapping[str, Any]]) -> str:
    """Tool schemas as OpenAI renders them for the model: a TypeScript `namespace functions`.

    Each function becomes `// description` and `type name = (_: { ... }) => any;`, each
    property a `// description` line and `name?: type,` (no `?` when required), nested objects
    indented, enums as unions of literals, arrays as `type[]`.
    """
    lines = ["namespace functions {", ""]
    for tool in tools:
        function = _function(tool)
        description = function.get("description")
        if description:
            lines.append(f"// {description}")
        parameters = function.get("parameters") or {}
        name = function.get("name", "")
        if isinstance(parameters, Mapping) and parameters.get("properties"):
            lines.append(f"type {name} = (_: {{")
            lines.append(_properties(parameters, 0))
            lines.append("}) => any;")
        else:
            lines.append(f"type {name} = () => any;")
        lines.append("")
    lines.append("} // namespace functions")
    return "\n".join(lines)


def _properties(schema: Mapping[str, Any], indent: int) -> str:
    required = set(schema.get("required") or ())
    lines: list[str] = []
    for name, prop in (schema.get("properties") or {}).items():
        prop = prop if isinstance(prop, Mapping) else {}
        description = prop.get("description")
        if description and indent < 2:
            lines.append(f"// {description}")
        mark = "" if name in required else "?"
        lines.append(f"{name}{mark}: {_type(prop, indent)},")
    return "\n".join(" " * indent + line for line in lines)


def _type(prop: Mapping[str, Any], indent: int) -> str:
    kind = prop.get("type")
    if isinstance(kind, list):  # ["string", "null"]
        return " | ".join(_type({**prop, "type": k}, indent) for k in kind)
    enum = prop.get("enum")
    if kind == "string":
        return " | ".join(json.dumps(v) for v in enum) if enum else "string"
    if kind in ("number", "integer"):
        return " | ".join(str(v) for v in enum) if enum else "number"
    if kind in ("boolean", "null"):
        return str(kind)
    if kind == "object":
        return "\n".join(["{", _properties(prop, indent + 2), "}"])
    if kind == "array":
        items = prop.get("items")
        return f"{_type(items, indent)}[]" if isinstance(items, Mapping) else "any[]"
    for key in ("anyOf", "oneOf"):
        options = prop.get(key)
        if isinstance(options, list):
            return " | ".join(_type(o, indent) for o in options if isinstance(o, Mapping))
    return "any"


__all__ = [
    "ENCODINGS",
    "OpenAICounter",
    "count_text",
    "encoding_for",
    "render_tools",
]
