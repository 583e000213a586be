"""Recording: the real deep agent on a temporary project, traced offline by `LangChainTracer`.

No network: the LangSmith client keeps each payload the tracer hands it, encoded at once.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from deepagents import create_deep_agent
from deepagents.backends import FilesystemBackend
from langchain_core.tracers.langchain import LangChainTracer
from langsmith import Client

from .encoding import dumps_json
from .model import ScriptedChatModel
from .scenarios import SYSTEM_PROMPT, Session
from .tools import make_tools

PROJECT_NAME = "ctxlab-synthetic"
# Not Sonnet's real 200k: with 32k, deepagents really summarises twice in the long session, and
# the smaller LLM inputs keep the file smaller (see traces/README.md, "Size").
CONTEXT_WINDOW = 32_000


class RecordingClient(Client):
    """A LangSmith client that keeps every payload the tracer sends instead of sending it.

    `RunTree.post` calls `create_run(**run_dict)` and `RunTree.patch` calls
    `update_run(run_id, name=..., ...)`; taking `**kwargs` keeps their key order, which is the
    shape of the team's sample files. Each payload is serialised at once with the client's own
    JSON encoder (as `Client` does before queueing it), because the tracer keeps mutating the
    same dicts afterwards, and because that encoder decides the wire form: ISO times,
    `model_dump` messages in chain states, `dumpd` (`lc`) messages in LLM runs. That encoder
    is private to langsmith, so `encoding.dumps_json` reproduces it; `encode` lets a test
    encode with both and compare.
    """

    def __init__(self, encode: Callable[[Any], bytes] = dumps_json) -> None:
        super().__init__(api_key="offline", api_url="http://127.0.0.1:9", auto_batch_tracing=False)
        self.encode = encode
        self.ops: list[bytes] = []

    def create_run(self, **kwargs: Any) -> None:  # type: ignore[override]
        self.ops.append(self.encode({"op": "post", **kwargs}))

    def update_run(self, run_id: uuid.UUID, **kwargs: Any) -> None:  # type: ignore[override]
        self.ops.append(self.encode({"op": "patch", "id": run_id, **kwargs}))


@contextmanager
def python_grep() -> Iterator[None]:
    """Hide `rg` from PATH, so deepagents' `grep` runs its Python fallback on every machine.

    deepagents greps with ripgrep when `rg` is on PATH and in Python otherwise; the two differ
    in details, and the Python one is what the samples were recorded with. deepagents looks `rg`
    up once per process and caches the answer, so this must wrap the process's first grep:
    record in a fresh interpreter (the CLI and the test both do).
    """
    saved = os.environ.get("PATH", "")
    os.environ["PATH"] = os.pathsep.join(
        folder
        for folder in saved.split(os.pathsep)
        if not (folder and shutil.which("rg", path=folder))
    )
    try:
        yield
    finally:
        os.environ["PATH"] = saved


def record(session: Session, client: RecordingClient | None = None) -> list[bytes]:
    """Run the real deep agent on a temporary copy of the project; return the encoded ops."""
    client = RecordingClient() if client is None else client
    with python_grep(), tempfile.TemporaryDirectory(prefix="ctxlab-sample-") as tmp:
        root = Path(tmp)
        for path, text in session.files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        model = ScriptedChatModel(
            session.replies,
            session.summarise,
            profile={
                "max_input_tokens": CONTEXT_WINDOW,
                "max_output_tokens": 64_000,
                "tool_calling": True,
            },
        )
        agent = create_deep_agent(
            model=model,
            tools=make_tools(root),
            system_prompt=SYSTEM_PROMPT,
            backend=FilesystemBackend(root_dir=root, virtual_mode=True),
        )
        tracer = LangChainTracer(project_name=PROJECT_NAME, client=client)
        agent.invoke(
            {"messages": [{"role": "user", "content": session.prompt}]},
            config={"callbacks": [tracer], "recursion_limit": 2_000},
        )
    return client.ops
