"""A real chat model that fails on a schedule, for sweeps and evaluations that must survive it.

`ScheduledModel` is a LangChain `BaseChatModel`: it answers every request with a digest of what
it was sent, writes the digest of each request it is asked to `<folder>/asked` (one line per
call, from whichever process asks: sweep workers included), and, while `<folder>/failing` exists,
raises `ConnectionError("provider unavailable")` for every request containing that file's text
(a provider outage hitting some requests, the same ones every run), and writes their digests
to `<folder>/failed`. `delay` seconds pass before
each answer (a slow model, for killing an evaluation mid-way). `window` (characters) makes longer
requests fail as llama.cpp does. `factory` builds one from `CTXLAB_TEST_MODEL_DIR`, for
`--model tests.scheduled_model:factory`.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

FOLDER_VARIABLE = "CTXLAB_TEST_MODEL_DIR"


def digest(messages: list[BaseMessage]) -> str:
    """What identifies a request: the sha256 of its messages' types and texts."""
    text = "\x00".join(f"{m.type}:{m.text}" for m in messages)
    return hashlib.sha256(text.encode()).hexdigest()


class ScheduledModel(BaseChatModel):
    """Answers `answer <digest>`; fails what `<folder>/failing` names (see the module)."""

    folder: str
    delay: float = 0.0
    window: int | None = None

    @property
    def _llm_type(self) -> str:
        return "scheduled-test-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": "scheduled", "window": self.window}

    def asked(self, log: str = "asked") -> list[str]:
        """The digests of every request asked so far (`log="failed"`: of those that failed)."""
        path = Path(self.folder, log)
        return path.read_text().split() if path.exists() else []

    def forget(self) -> None:
        """Empty the logs (before a rerun)."""
        for log in ("asked", "failed"):
            Path(self.folder, log).unlink(missing_ok=True)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        key = digest(messages)
        with open(Path(self.folder, "asked"), "a") as log:  # one short append per call
            log.write(key + "\n")
        text = "\n".join(m.text for m in messages)
        failing = Path(self.folder, "failing")
        if failing.exists() and failing.read_text() in text:
            with open(Path(self.folder, "failed"), "a") as log:
                log.write(key + "\n")
            raise ConnectionError("provider unavailable")
        if self.window is not None and len(text) > self.window:
            raise ValueError(
                f"Requested tokens ({len(text)}) exceed context window of {self.window}"
            )
        if self.delay:
            time.sleep(self.delay)
        reply = AIMessage(content=f"answer {key[:16]}: {len(text)} characters read")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def factory() -> BaseChatModel:
    """A `module:Factory` for `--model tests.scheduled_model:factory` (folder from
    `CTXLAB_TEST_MODEL_DIR`, delay from `CTXLAB_TEST_MODEL_DELAY`)."""
    return ScheduledModel(
        folder=os.environ[FOLDER_VARIABLE],
        delay=float(os.environ.get("CTXLAB_TEST_MODEL_DELAY", "0")),
    )


__all__ = ["FOLDER_VARIABLE", "ScheduledModel", "digest", "factory"]
