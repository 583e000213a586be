"""The wording of probe questions: how to ask for a fact without giving it away.

A recall question must name the fact's place in the conversation, not the fact: it quotes the
words the recorded history wrote right before it (its *cue*), or, for a value the agent passed to
a tool, the tool and argument name. Whoever holds the fact in its context (verbatim, or in a
summary that kept the cue) can answer; whoever lost it cannot. The cue is taken from the message
where the fact first appears, so the question is the same on the compacted and the full context.

Every question is a plain string built only from the trace, so the same trace gives the same
questions, byte for byte.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage

from ctxlab._messages import message_text

NOUNS = {
    "goal": "request",
    "instruction": "instruction",
    "todo": "plan item",
    "path": "path",
    "command": "command",
    "error": "error message",
    "number": "value",
    "identifier": "name",
    "url": "URL",
}
"""What a fact of each Tier 1 category is called in a question."""

CUE_WORDS = 6
"""Words of the text before a fact quoted as its cue (fewer if the line has fewer)."""

MIN_CUE_CHARS = 3
"""A cue shorter than this names nothing: the previous line, or the text after, is used."""

ANSWER_ONLY = "Answer with the {noun} only, exactly as written; do not call tools."

AFTER = (
    'Earlier in this conversation, what exact {noun} came right after this text: "{cue}"? '
    + ANSWER_ONLY
)
BEFORE = (
    'Earlier in this conversation, what exact {noun} came right before this text: "{cue}"? '
    + ANSWER_ONLY
)
TOOL_ARGUMENT = (
    "Earlier in this conversation, what exact {noun} did the agent pass as `{key}` to the "
    "`{tool}` tool? If it did so more than once, list every one. " + ANSWER_ONLY
)
TOOL_CALL = (
    "Earlier in this conversation, what exact call did the agent make to the `{tool}` tool, "
    "with which arguments? If it made several, list every one, each as {tool}(JSON arguments); "
    "do not call tools."
)
TOOL_RESULT = (
    "Earlier in this conversation, what exact {noun} did the `{tool}` tool return? If it "
    "returned several results, quote every one. " + ANSWER_ONLY
)
GOAL = "What was the user's first request in this task? Quote it exactly; do not call tools."
ARTIFACT = (
    "Which files did the agent change (write, edit, create, delete or move) earlier in this "
    "conversation? List every path exactly as written, one a line; do not call tools."
)
CONTINUATION = (
    "Where does the task stand, and what exactly should the agent do next? Answer in at most "
    "three sentences; do not call tools."
)
DECISION = (
    'Earlier in this conversation the agent said: "{claim}". Why? Answer in at most two '
    "sentences; do not call tools."
)
REASON = re.compile(r"\s(?:because|since|so that|in order to|instead of)\s", re.I)
"""Where a statement of the agent gives its reason: the claim is what comes before."""
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
MIN_CLAIM_WORDS = 3


def reasoned(text: str) -> tuple[str, str] | None:
    """The last sentence of `text` that gives a reason, as (claim, whole sentence), or None."""
    for sentence in reversed([s.strip() for s in SENTENCE.split(text) if s.strip()]):
        found = REASON.search(sentence)
        if found and len(sentence[: found.start()].split()) >= MIN_CLAIM_WORDS:
            return sentence[: found.start()].strip(), sentence
    return None


NEXT_ACTION = "(none: the replayed request is sent as is and the model's next tool call compared)"
"""What the `question` column says of a next-action probe, which asks nothing."""


@dataclass(frozen=True, slots=True)
class Cue:
    """Where a fact sits in its first message: quoted text after which (`side="after"`) or
    before which (`"before"`) it stands, the tool call argument that carried it (`"tool"`),
    the tool call it is (`"call"`: a command fact written `name({arguments})`), or the tool
    whose short result it is (`"result"`)."""

    side: str
    text: str = ""
    tool: str = ""
    key: str = ""


def recall_question(fact: str, category: str, message: BaseMessage) -> str:
    """The question asking for `fact` (of Tier 1 `category`) first seen in `message`."""
    if category == "goal":
        return GOAL
    noun = NOUNS.get(category, "text")
    cue = find_cue(fact, message)
    if cue is None:
        return _unplaced(noun)
    if cue.side == "result":
        return TOOL_RESULT.format(noun=noun, tool=cue.tool)
    if cue.side == "call":
        return TOOL_CALL.format(tool=cue.tool)
    if cue.side == "tool":
        return TOOL_ARGUMENT.format(noun=noun, key=cue.key, tool=cue.tool)
    template = AFTER if cue.side == "after" else BEFORE
    return template.format(noun=noun, cue=cue.text)


def _unplaced(noun: str) -> str:
    """A fact found neither verbatim in its message's text nor in a tool argument (the
    extractor normalised it): asked for by kind alone."""
    return (
        f"Earlier in this conversation, which {noun}s were mentioned? List every one exactly "
        "as written, one a line; do not call tools."
    )


def find_cue(fact: str, message: BaseMessage) -> Cue | None:
    """The cue of `fact` in `message`: the words before it on its line (else the end of the
    line above), else the words after it (else the start of the line below), else, for a tool
    result with nothing around the fact, the tool; for a fact only in a tool call, that call's
    tool (and the argument that holds it); None if the message holds it in none of these."""
    text = message_text(message)
    at = text.find(fact)
    if at >= 0:
        line_start = text.rfind("\n", 0, at) + 1
        before = _tail(text[line_start:at])
        if len(before) < MIN_CUE_CHARS and line_start > 0:
            above = text[: line_start - 1].rstrip().rsplit("\n", 1)[-1]
            before = _tail(above)
        if len(before) >= MIN_CUE_CHARS:
            return Cue("after", before)
        end = text.find("\n", at + len(fact))
        after = _head(text[at + len(fact) : end if end >= 0 else len(text)])
        if len(after) < MIN_CUE_CHARS and end >= 0:
            after = _head(text[end:].lstrip().split("\n", 1)[0])
        if len(after) >= MIN_CUE_CHARS:
            return Cue("before", after)
        if isinstance(message, ToolMessage) and message.name:
            return Cue("result", tool=message.name)
    if isinstance(message, AIMessage):
        for call in message.tool_calls:
            if fact.startswith(f"{call['name']}("):
                return Cue("call", tool=call["name"])
            for key, value in call.get("args", {}).items():
                shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
                if fact in shown:
                    return Cue("tool", tool=call["name"], key=key)
    return None


def _tail(text: str) -> str:
    """The last `CUE_WORDS` words of `text`, on one line, as written."""
    words = text.split()
    return " ".join(words[-CUE_WORDS:])


def _head(text: str) -> str:
    """The first `CUE_WORDS` words of `text`, on one line, as written."""
    words = text.split()
    return " ".join(words[:CUE_WORDS])
