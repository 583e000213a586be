"""A real chat model that fails on a schedule, for sweeps and evaluations that must survive it.

`ScheduledModel` is a LangChain `BaseChatModel`: it answers every request with a digest of what
it was sent and writes the digest of each request it is asked to `<folder>/asked` (one line per
call, from whichever process asks: sweep workers included). While `<folder>/failing` exists it
raises `ConnectionError("provider unavailable")` for every request containing that file's text
(a provider outage hitting some requests, the same ones every run) and logs them to
`<folder>/failed`. Each answer's digest goes to `<folder>/answered` just before it is returned.
`delay` seconds pass before each answer; `window` (characters) makes longer requests fail as
llama.cpp does; `answers` makes it answer that many calls and then hang (a stalled server).
`factory` builds one from the environment, for `--model tests.scheduled_model:factory`.
"""

from __future__ import annotations

import hashlib
import os
import threading
import time
from pathlib import Path
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult

FOLDER_VARIABLE = "CTXLAB_TEST_MODEL_DIR"

_ANSWERING = threading.Lock()
"""Held while an answer is counted and logged (calls run in several threads)."""


def digest(messages: list[BaseMessage]) -> str:
    """What identifies a request: the sha256 of its messages' types and texts."""
    text = "\x00".join(f"{m.type}:{m.text}" for m in messages)
    return hashlib.sha256(text.encode()).hexdigest()


class ScheduledModel(BaseChatModel):
    """Answers `answer <digest>`; fails what `<folder>/failing` names (see the module)."""

    folder: str
    delay: float = 0.0
    window: int | None = None
    answers: int | None = None
    """Answer this many calls, then hang on every other one (None: answer all)."""

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
        for log in ("asked", "failed", "answered"):
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
        with _ANSWERING:
            answered = Path(self.folder, "answered")
            if self.answers is not None and len(self.asked("answered")) >= self.answers:
                _ANSWERING.release()
                try:
                    time.sleep(3600)  # hangs, as a stalled server would, until killed
                finally:
                    _ANSWERING.acquire()
            with open(answered, "a") as log:
                log.write(key + "\n")
        reply = AIMessage(content=f"answer {key[:16]}: {len(text)} characters read")
        return ChatResult(generations=[ChatGeneration(message=reply)])


def factory() -> BaseChatModel:
    """A `module:Factory` for `--model tests.scheduled_model:factory` (folder from
    `CTXLAB_TEST_MODEL_DIR`, delay and answers from `CTXLAB_TEST_MODEL_DELAY` and
    `CTXLAB_TEST_MODEL_ANSWERS`)."""
    return ScheduledModel(
        folder=os.environ[FOLDER_VARIABLE],
        delay=float(os.environ.get("CTXLAB_TEST_MODEL_DELAY", "0")),
        answers=int(os.environ["CTXLAB_TEST_MODEL_ANSWERS"])
        if "CTXLAB_TEST_MODEL_ANSWERS" in os.environ
        else None,
    )


__all__ = ["FOLDER_VARIABLE", "ScheduledModel", "digest", "factory"]
