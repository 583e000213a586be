"""OpenHands outputs from before events had a `source` (2024, CodeAct in text): resolver
`output.jsonl` lines and evaluation lines whose `history` holds bare actions and observations.

The openhands-resolver (All-Hands-AI/openhands-resolver, OpenHands 0.9) wrote one line per
issue: `{issue: {owner, repo, number, title, body}, issue_type, instruction, base_commit,
git_patch, history, metrics: {accumulated_cost, costs}, success, comment_success, ...}` with no
`instance_id`. Its `history` is a flat list of action dicts (`{"action": "run", "command",
"thought", ...}`, `run_ipython`, `message`, `finish`) and observation dicts (`{"observation":
"run", "content", "exit_code", ...}`); older evaluation files nest them as `[action,
observation]` pairs. Without function calling, CodeAct wrote its actions as text: every agent
action is one model call whose answer is its thought plus the action in CodeAct's tags
(`<execute_bash>`, `<execute_ipython>`), and every observation reaches the model as a user
message. Token usage was not recorded (`metrics.costs` has one cost per call).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from ctxlab._errors import TraceFormatError
from ctxlab._ingest.formats.fields import obj_or_empty
from ctxlab._ingest.inputs import Inputs
from ctxlab._trace import Trace, Turn

if TYPE_CHECKING:
    from ctxlab._ingest.formats.registry import Values

NAME = "openhands-legacy"
DESCRIPTION = (
    "an OpenHands resolver or evaluation output from before events had a 'source' (JSONL "
    "lines with 'issue' or 'instance_id' and a 'history' of bare actions and observations)"
)

TAGS = {"run": ("execute_bash", "command"), "run_ipython": ("execute_ipython", "code")}
"""CodeAct's text form of an action: its tag and the argument the tag holds."""

NOTES = (
    "OpenHands before source-tagged events: each agent action is one model call whose answer "
    "is its thought plus the action in CodeAct's tags, and each observation reaches the model "
    "as a user message (OBSERVATION:); the prompt CodeAct wrapped around them is not in the "
    "file.",
    "No token usage is recorded (metrics.costs holds one cost per call).",
)


def _legacy_item(item: Any) -> bool:
    if isinstance(item, list) and len(item) == 2:
        return all(isinstance(part, dict) for part in item)
    return (
        isinstance(item, dict)
        and "source" not in item
        and ("action" in item or "observation" in item)
    )


def _is_line(value: Any) -> bool:
    if not isinstance(value, dict) or not ("issue" in value or "instance_id" in value):
        return False
    history = value.get("history")
    return isinstance(history, list) and bool(history) and _legacy_item(history[0])


def sniff(values: Values) -> bool:
    """Instance lines (`issue` or `instance_id`) whose history items carry no `source`."""
    return bool(values) and values[0][1] is not None and _is_line(values[0][0])


def _flat(history: list[Any], source: str, line: int | None) -> list[dict[str, Any]]:
    """The history as one list of action and observation dicts (pairs unnested)."""
    out: list[dict[str, Any]] = []
    for index, item in enumerate(history):
        parts = item if isinstance(item, list) else [item]
        for part in parts:
            if not isinstance(part, dict):
                raise TraceFormatError(
                    f"history[{index}]: expected an action or observation object, got "
                    f"{type(part).__name__}",
                    source=source,
                    line=line,
                )
            if part.get("action") is not None or part.get("observation") is not None:
                out.append(part)
    return out


def _answer(event: dict[str, Any]) -> str:
    """An agent action as CodeAct wrote it: thought, then the action in its tag."""
    thought = str(event.get("thought") or "")
    kind = event.get("action")
    if kind in TAGS:
        tag, key = TAGS[kind]
        body = str(event.get(key) or (event.get("args") or {}).get(key) or "")
        return f"{thought}\n<{tag}>\n{body}\n</{tag}>".strip()
    content = event.get("content") or (event.get("args") or {}).get("content") or ""
    return "\n".join(part for part in (thought, str(content)) if part)


def _trace(value: dict[str, Any], source: str, line: int | None, stem: str) -> Trace:
    history = value.get("history")
    if not isinstance(history, list):
        raise TraceFormatError("field 'history' must be a list", source=source, line=line)
    events = _flat(history, source, line)
    messages: list[BaseMessage] = []
    turns: list[Turn] = []
    for k, event in enumerate(events):
        if event.get("observation") is not None:
            if event["observation"] in ("null", "agent_state_changed"):
                continue
            messages.append(HumanMessage(content=f"OBSERVATION:\n{event.get('content') or ''}"))
            continue
        kind = event["action"]
        if kind == "message" and (k == 0 or not messages):
            messages.append(HumanMessage(content=str(event.get("content") or "")))
            continue
        if kind in ("null", "change_agent_state"):
            continue
        position = len(messages)
        answer = AIMessage(content=_answer(event))
        turns.append(
            # the history is append-only: every call's input is a prefix of it, shared
            Turn(len(turns), position, Inputs(((messages, 0, position),)), answer, name=str(kind))
        )
        messages.append(answer)
    if not turns:
        raise TraceFormatError(
            "the history holds no agent action (expected actions such as 'run' or 'finish')",
            source=source,
            line=line,
        )
    issue = obj_or_empty(value, "issue")
    if value.get("instance_id") is not None:
        trace_id = str(value["instance_id"])
    elif issue.get("repo") and issue.get("number") is not None:
        trace_id = f"{issue.get('owner')}/{issue['repo']}#{issue['number']}"
    else:
        trace_id = f"{stem}:{line}"
    metrics = obj_or_empty(value, "metrics")
    costs = metrics.get("costs")
    notes = list(NOTES)
    if isinstance(costs, list) and len(costs) != len(turns):
        notes.append(
            f"metrics.costs lists {len(costs)} calls where the history holds {len(turns)}."
        )
    return Trace(
        trace_id=trace_id,
        format=NAME,
        source=source,
        messages=messages,
        turns=turns,
        metadata={
            "issue": {k: issue.get(k) for k in ("owner", "repo", "number", "title")}
            if issue
            else None,
            "issue_type": value.get("issue_type"),
            "success": value.get("success"),
            "accumulated_cost": metrics.get("accumulated_cost"),
        },
        notes=notes,
    )


def read(values: Values, source: str) -> list[Trace]:
    """One trace per line."""
    stem = Path(source).name.split(".")[0]
    traces = []
    for value, line in values:
        if not _is_line(value):
            raise TraceFormatError(
                "expected an instance object with 'issue' or 'instance_id' and a 'history' of "
                "actions and observations",
                source=source,
                line=line,
            )
        traces.append(_trace(value, source, line, stem))
    return traces


__all__ = ["DESCRIPTION", "NAME", "read", "sniff"]
