"""Write (or `--check`) ctxlab's copy of the tool schemas a default Deep Agents request carries.

    .venv/bin/python scripts/deepagents_tool_schemas.py          # rewrite the data file
    .venv/bin/python scripts/deepagents_tool_schemas.py --check  # exit 1 if it is stale

Needs the `deepagents` version `DeepAgents.models_version` names (ctxlab itself does not, at
run time). A deep agent is created with a placeholder chat model (no call is made), its tools
are read from the agent's tool node, and deepagents' own `FilesystemMiddleware` request filter
is applied (with the default `StateBackend` it hides `execute` and rewrites the `grep`
description), exactly as a real request sees them. Each tool is stored as the approximate token
counter reads a `BaseTool`: `{name, description, parameters}`, the schema's own title and
description dropped, so counting the stored dicts gives the same number.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

DATA = (
    Path(__file__).resolve().parents[1]
    / "ctxlab"
    / "_replay"
    / "policies"
    / "deepagents"
    / "tools.json"
)


def upstream_tools() -> list[Any]:
    """The `BaseTool`s of a default `create_deep_agent` request, from the installed package."""
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
    return list(filtered.tools)


def schema(tool: Any) -> dict[str, Any]:
    """`tool` as the approximate token counter serialises it."""
    from langchain_core.utils.pydantic import model_json_schema

    raw = tool.tool_call_schema
    parameters = dict(raw) if isinstance(raw, dict) else dict(model_json_schema(raw))
    parameters.pop("title", None)
    parameters.pop("description", None)
    return {"name": tool.name, "description": tool.description, "parameters": parameters}


def render() -> str:
    """The data file's text: the installed version, then the schemas in request order."""
    from importlib.metadata import version

    body = {"deepagents": version("deepagents"), "tools": [schema(t) for t in upstream_tools()]}
    return json.dumps(body, indent=1, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the data file is stale")
    args = parser.parse_args(argv)
    text = render()
    if args.check:
        current = DATA.read_text(encoding="utf-8") if DATA.exists() else ""
        if current != text:
            print(f"{DATA} differs from the installed deepagents; rerun without --check")
            return 1
        return 0
    DATA.write_text(text, encoding="utf-8")
    print(f"wrote {DATA}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
