"""Summarisers: what writes the summary text when a policy compacts history.

A summariser is anything with `summarize(messages, *, prompt) -> str`. Policies decide *when* and
*what* to summarise; the summariser only writes the text, so replays can swap a real LLM for a
fixed or an offline extractive summary without touching decisions (decisions depend on the
summary only through its length).

* `Fixed(text)`: the same text every time (tests, conformance, `--summary-text-file`).
* `LLM(chat_model)`: any LangChain chat model, prompted exactly as deepagents prompts it (and,
  like it, retried once with the middle of the history cut out if the prompt overflows), with a
  cache keyed by (model, prompt, input) so re-running a replay never pays twice.
* `Extractive()`: the offline default. No key, no model: it fills the sections the deepagents
  prompt asks for (session intent, summary, artifacts, next steps) with text taken from the
  conversation itself, deterministically.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from deepagents.middleware.summarization import DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
from langchain_core.exceptions import ContextOverflowError
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages import get_buffer_string as _buffer

DEFAULT_PROMPT = DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
"""The prompt Deep Agents sends its summariser (imported, never retyped)."""


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


class Summarizer(Protocol):
    """Writes a summary of `messages`; `prompt` is the policy's summary prompt template.

    `name` identifies what the summaries depend on (the store keys cached replays by it).
    """

    @property
    def name(self) -> str:
        """Stable identity, e.g. `fixed:<digest of the text>`."""
        ...

    def summarize(self, messages: Sequence[BaseMessage], *, prompt: str = DEFAULT_PROMPT) -> str:
        """The summary text (the caller strips surrounding whitespace, as deepagents does)."""
        ...


def format_prompt(messages: Sequence[BaseMessage], prompt: str = DEFAULT_PROMPT) -> str:
    """The exact string LangChain's summarisation sends: XML-rendered history in the template."""
    return prompt.format(messages=_buffer(list(messages), format="xml")).rstrip()


@dataclass(frozen=True)
class Fixed:
    """Always the same text: decisions become independent of any model."""

    text: str

    @property
    def name(self) -> str:
        """`fixed:` + digest of the text."""
        return f"fixed:{_digest(self.text)}"

    def summarize(self, messages: Sequence[BaseMessage], *, prompt: str = DEFAULT_PROMPT) -> str:
        """`text`, whatever the input."""
        return self.text

    @classmethod
    def from_file(cls, path: str | Path) -> Fixed:
        """The text of a file (UTF-8), as `--summary-text-file` reads it."""
        return cls(Path(path).read_text(encoding="utf-8"))


@dataclass
class LLM:
    """A LangChain chat model as summariser, with a cache so a replay never pays twice.

    The cache maps sha256(model identity, rendered prompt) to the summary. Pass a `path` to keep
    it on disk as JSON between sessions (the Store may later hold it instead).
    """

    chat_model: Any
    prompt: str | None = None
    path: str | Path | None = None
    cache: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.path is not None and Path(self.path).exists():
            self.cache.update(json.loads(Path(self.path).read_text(encoding="utf-8")))

    @property
    def name(self) -> str:
        """`llm:` + digest of the model identity and the prompt override."""
        return f"llm:{_digest(self._model_id(), self.prompt or '')}"

    def _middle_cut(self, messages: Sequence[BaseMessage], template: str) -> str:
        """LangChain's one retry after the summary call overflowed: the middle of the history
        cut out (its own `_overflow_retry_prompt`, run on a helper built for this model)."""
        from langchain.agents.middleware.summarization import SummarizationMiddleware

        helper = SummarizationMiddleware(model=self.chat_model, summary_prompt=template)
        retry = helper._overflow_retry_prompt(list(messages))
        if retry is None:
            raise ContextOverflowError("summary input does not fit even with the middle cut out")
        return retry

    def _model_id(self) -> str:
        params = getattr(self.chat_model, "_identifying_params", None) or {}
        return json.dumps(
            {"type": type(self.chat_model).__name__, **params}, sort_keys=True, default=str
        )

    def key(self, messages: Sequence[BaseMessage], prompt: str) -> str:
        """Cache key of one summary request."""
        text = format_prompt(messages, self.prompt or prompt)
        return hashlib.sha256(f"{self._model_id()}\x00{text}".encode()).hexdigest()

    def summarize(self, messages: Sequence[BaseMessage], *, prompt: str = DEFAULT_PROMPT) -> str:
        """The model's answer to deepagents' prompt, from the cache when seen before."""
        key = self.key(messages, prompt)
        if key not in self.cache:
            template = self.prompt or prompt
            try:
                response = self.chat_model.invoke(format_prompt(messages, template))
            except ContextOverflowError:
                response = self.chat_model.invoke(self._middle_cut(messages, template))
            self.cache[key] = response.text.strip()
            if self.path is not None:
                Path(self.path).write_text(json.dumps(self.cache), encoding="utf-8")
        return self.cache[key]


_PATH = re.compile(r"(?:(?<=[\s'\"(=])|^)(/[\w.\-/]+\.\w+|/[\w.\-]+(?:/[\w.\-]+)+)")


def _first_line(text: str, limit: int) -> str:
    line = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return line if len(line) <= limit else line[: limit - 3] + "..."


@dataclass(frozen=True)
class Extractive:
    """Offline, deterministic summary in the deepagents sections, built from the messages.

    * SESSION INTENT: the first human request (a prior summary's intent when chaining).
    * SUMMARY: the last few assistant statements.
    * ARTIFACTS: file paths written, edited or read (tool-call arguments), then paths seen.
    * NEXT STEPS: the last human request and the last assistant statement.
    """

    max_items: int = 8
    line_chars: int = 200

    @property
    def name(self) -> str:
        """`extractive:<max_items>:<line_chars>`."""
        return f"extractive:{self.max_items}:{self.line_chars}"

    def summarize(self, messages: Sequence[BaseMessage], *, prompt: str = DEFAULT_PROMPT) -> str:
        """The four sections; "None" where the conversation gives nothing."""
        humans = [m for m in messages if isinstance(m, HumanMessage) and m.text.strip()]
        prior = [h for h in humans if h.additional_kwargs.get("lc_source") == "summarization"]
        asks = [h for h in humans if h not in prior]
        intent = "None"
        if prior:
            found = re.search(r"## SESSION INTENT\s*\n(.+)", prior[0].text)
            intent = found.group(1).strip() if found else intent
        if intent == "None" and asks:
            intent = _first_line(asks[0].text, self.line_chars)
        said = [
            _first_line(m.text, self.line_chars)
            for m in messages
            if isinstance(m, AIMessage) and m.text.strip()
        ]
        artifacts: dict[str, str] = {}
        for m in messages:
            if isinstance(m, AIMessage):
                for call in m.tool_calls:
                    path = call.get("args", {}).get("file_path") or call.get("args", {}).get("path")
                    if isinstance(path, str):
                        artifacts.setdefault(path, call["name"])
        for m in messages:
            if isinstance(m, ToolMessage | HumanMessage):
                for path in _PATH.findall(m.text[:4000]):
                    artifacts.setdefault(path, "mentioned")
        items = list(artifacts.items())[: self.max_items]
        steps = [f"- Last request: {_first_line(asks[-1].text, self.line_chars)}"] if asks else []
        if said:
            steps.append(f"- Last assistant step: {said[-1]}")
        return "\n".join(
            [
                "## SESSION INTENT",
                intent,
                "",
                "## SUMMARY",
                "\n".join(f"- {s}" for s in said[-self.max_items :]) or "None",
                "",
                "## ARTIFACTS",
                "\n".join(f"- {p} ({how})" for p, how in items) or "None",
                "",
                "## NEXT STEPS",
                "\n".join(steps) or "None",
            ]
        )


__all__ = ["DEFAULT_PROMPT", "LLM", "Extractive", "Fixed", "Summarizer", "format_prompt"]
