"""Deterministic chat models for the probe tests: they answer only from their own input.

`ContextModel` is a real LangChain `BaseChatModel` (callbacks, `batch`, `bind_tools`, rate
limiters all work as for any chat model) that reads the probe question, looks for what it names
in the messages before it, and answers with what it finds there, so on the full history it finds
everything and on a compacted request exactly what survived:

* a recall question quoting a cue ('came right after this text: "..."'): the rest of the line
  after each place the cue appears, or the next line if nothing follows ("right before": the
  start of the line before it, or the line above);
* 'pass as `key` to the `tool` tool' / 'what exact call did the agent make to the `tool` tool':
  that argument (the whole call) of every such call in the context, and every text line of a
  non-assistant message naming the tool (a summary's "- /path (edit_file)");
* 'what exact ... did the `tool` tool return?': every result of that tool in the context, and
  every text line naming the tool;
* the user's first request: the first human message (a summary, once the request is compacted);
* "Which files did the agent change": the paths writing tools were called with, and text lines
  naming a writing tool;
* "what exactly should the agent do next": its next action, as text; 'the agent said: "X". Why?':
  every line holding X;
* no question (a next-action request): it follows the plan found in its context (lines
  `N. tool {json arguments}`), calling the first step whose call is not in the context.

`RubricJudge` grades like a judge following `ctxlab._evaluate.probe_judge.RUBRIC`: the share of the
reference's words (4+ letters) the graded answer holds, times 5, ending "GRADE: n".
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import Field

UNKNOWN = "I do not know."
PLAN_STEP = re.compile(r"^\s*\d+\.\s+(\w+)\s+(\{.*\})\s*$", re.M)
WRITING = re.compile(r"write|edit|create|delete|remove|move|rename|patch|apply|insert|replace")
AFTER = re.compile(r'came right after this text: "(.*)"\? ')
BEFORE = re.compile(r'came right before this text: "(.*)"\? ')
TOOL_ARGUMENT = re.compile(r"pass as `(.+?)` to the `(.+?)` tool")
TOOL_CALL = re.compile(r"what exact call did the agent make to the `(.+?)` tool")
SAID = re.compile(r'the agent said: "(.*)"\. Why\?')
TOOL_RESULT = re.compile(r"did the `(.+?)` tool return\?")


def rendered(message: BaseMessage) -> str:
    """A message as the model reads it: its text, then each tool call as `name {arguments}`."""
    lines = [message.text] if message.text else []
    if isinstance(message, AIMessage):
        lines += [
            f"{c['name']} {json.dumps(c['args'], sort_keys=True)}" for c in message.tool_calls
        ]
    return "\n".join(lines)


def _squash(text: str) -> str:
    return " ".join(text.split())


def _distinct(found: Sequence[str]) -> str:
    kept = list(dict.fromkeys(f for f in found if f))
    return "\n".join(kept) if kept else UNKNOWN


class ContextModel(BaseChatModel):
    """Answers probe questions from its input messages only (see the module docstring).

    `log` records every call's input (shared by copies, e.g. one with a rate limiter), so a
    test can count the calls a run really made."""

    log: list[list[BaseMessage]] = Field(default_factory=list)
    model_name: str = "context-model"
    """The name it reports (its identity in cache keys; a priced name makes `dry_run` price
    it)."""

    @property
    def _llm_type(self) -> str:
        return "context-model"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": self.model_name}

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Any:
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.log.append(list(messages))
        tools = {t["function"]["name"] for t in kwargs.get("tools", [])}
        last = messages[-1] if messages else None
        if isinstance(last, HumanMessage) and "do not call tools" in last.text:
            reply = AIMessage(content=self.answer(last.text, messages[:-1]))
        else:
            reply = self.next_action(messages, tools)
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def answer(self, question: str, context: Sequence[BaseMessage]) -> str:
        """The answer to one probe question, from `context`."""
        texts = [rendered(m) for m in context]
        if found := AFTER.search(question):
            return _distinct(_around(texts, found.group(1), after=True))
        if found := BEFORE.search(question):
            return _distinct(_around(texts, found.group(1), after=False))
        if found := TOOL_ARGUMENT.search(question):
            key, tool = found.groups()
            values = [
                str(c["args"].get(key, ""))
                for m in context
                if isinstance(m, AIMessage)
                for c in m.tool_calls
                if c["name"] == tool
            ]
            return _distinct(values + _lines_naming(context, texts, re.compile(re.escape(tool))))
        if found := TOOL_CALL.search(question):
            tool = found.group(1)
            calls = [
                f"{c['name']}({json.dumps(c['args'], ensure_ascii=False)})"
                for m in context
                if isinstance(m, AIMessage)
                for c in m.tool_calls
                if c["name"] == tool
            ]
            return _distinct(calls + _lines_naming(context, texts, re.compile(re.escape(tool))))
        if found := TOOL_RESULT.search(question):
            results = [
                m.text for m in context if isinstance(m, ToolMessage) and m.name == found.group(1)
            ]
            return _distinct(
                results + _lines_naming(context, texts, re.compile(re.escape(found.group(1))))
            )
        if "first request" in question:
            first = next((m for m in context if isinstance(m, HumanMessage)), None)
            return first.text if first is not None else UNKNOWN
        if "Which files did the agent change" in question:
            paths = [
                str(c["args"].get("file_path") or c["args"].get("path") or "")
                for m in context
                if isinstance(m, AIMessage)
                for c in m.tool_calls
                if WRITING.search(c["name"])
            ]
            return _distinct(paths + _lines_naming(context, texts, WRITING))
        if "should the agent do next" in question:
            step = _next_step(context)
            return UNKNOWN if step is None else f"Next: {step[0]} {json.dumps(step[1])}"
        if found := SAID.search(question):
            claim = found.group(1)
            return _distinct([ln.strip() for t in texts for ln in t.splitlines() if claim in ln])
        return UNKNOWN

    def next_action(self, context: Sequence[BaseMessage], tools: set[str]) -> AIMessage:
        """The next plan step as a tool call (as text if that tool is not bound)."""
        step = _next_step(context)
        if step is None:
            return AIMessage(content="The plan is done.")
        name, args = step
        if name not in tools:
            return AIMessage(content=f"I would call {name} {json.dumps(args)}")
        call_id = f"call_{len(self.log)}"
        return AIMessage(content="", tool_calls=[{"name": name, "args": args, "id": call_id}])


def _lines_naming(
    context: Sequence[BaseMessage], texts: Sequence[str], pattern: re.Pattern[str]
) -> list[str]:
    """Lines of the non-assistant messages (tool results, requests, summaries) matching
    `pattern`: how a summary tells which tool did what."""
    return [
        ln
        for m, t in zip(context, texts, strict=True)
        if not isinstance(m, AIMessage)
        for ln in t.splitlines()
        if pattern.search(ln)
    ]


def _around(texts: Sequence[str], cue: str, *, after: bool) -> list[str]:
    """Per line holding `cue` (whitespace squashed): what follows it to the end of the line
    (or the next line, if nothing does); or what precedes it from the start of the line (or
    the line above, if nothing does)."""
    found = []
    for text in texts:
        lines = [_squash(ln) for ln in text.splitlines()]
        for i, line in enumerate(lines):
            at = line.find(cue)
            if at < 0:
                continue
            if not after:
                head = line[:at].strip()
                if not head:
                    head = next((ln for ln in reversed(lines[:i]) if ln), "")
                found.append(head)
                continue
            rest = line[at + len(cue) :].strip()
            if not rest:
                rest = next((ln for ln in lines[i + 1 :] if ln), "")
            found.append(rest)
    return found


def _next_step(context: Sequence[BaseMessage]) -> tuple[str, dict[str, Any]] | None:
    """The first step of the plan in `context` whose tool call the context does not show."""
    plan: list[tuple[str, dict[str, Any]]] = []
    for m in context:
        if isinstance(m, AIMessage):
            continue
        for name, args in PLAN_STEP.findall(m.text):
            step = (name, json.loads(args))
            if step not in plan:
                plan.append(step)
    done = [
        (c["name"], c["args"]) for m in context if isinstance(m, AIMessage) for c in m.tool_calls
    ]
    return next((s for s in plan if s not in done), None)


REFERENCE = re.compile(
    r"REFERENCE ANSWER \(.*?\):\n(.*?)\n\n(?:WHAT THE AGENT|ANSWER TO GRADE)", re.S
)
GRADED = re.compile(r"ANSWER TO GRADE:\n(.*?)\n\nRubric:", re.S)
WORD = re.compile(r"[A-Za-z][\w./-]{3,}")


class RubricJudge(BaseChatModel):
    """Grades by word overlap with the reference, in the rubric's reply format."""

    log: list[list[BaseMessage]] = Field(default_factory=list)

    @property
    def _llm_type(self) -> str:
        return "rubric-judge"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.log.append(list(messages))
        prompt = messages[-1].text
        reference = set(WORD.findall(REFERENCE.search(prompt).group(1)))
        graded = set(WORD.findall(GRADED.search(prompt).group(1)))
        shared = len(reference & graded)
        grade = round(5 * shared / len(reference)) if reference else (0 if graded else 5)
        text = f"{shared} of {len(reference)} reference words found.\nGRADE: {grade}"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(content=text))])
