"""The tool schemas a default `create_deep_agent` puts in every model request.

Built from the installed package, not retyped: a deep agent is created with a placeholder chat
model (no call is made), its tools are read from the agent's tool node, and deepagents' own
`FilesystemMiddleware` request filter is applied (with the default `StateBackend` it hides
`execute` and rewrites the `grep` description), exactly as a real request sees them.
"""

from __future__ import annotations

from functools import cache
from typing import Any


@cache
def default_tools() -> tuple[Any, ...]:
    """The 8 default tools (`ls, read_file, write_file, edit_file, delete, glob, grep, task`)."""
    from deepagents import create_deep_agent
    from deepagents.backends import StateBackend
    from deepagents.middleware.filesystem import FilesystemMiddleware
    from langchain.agents.middleware.types import ModelRequest
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel

    model = GenericFakeChatModel(messages=iter(()))
    agent = create_deep_agent(model=model)
    tools = list(agent.nodes["tools"].bound.tools_by_name.values())
    request = ModelRequest(model=model, messages=[], tools=tools, state={"messages": []})
    filtered = FilesystemMiddleware(
        backend=StateBackend()
    )._filter_unsupported_tools_and_apply_prompt(request)
    return tuple(filtered.tools)
