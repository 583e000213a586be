"""The judge's rubric: how a free-text probe answer is graded 0-5 against a reference.

Continuation and decision probes have no single right string, so a judge model grades them, as
Factory's probe evaluation does (0-5). The reference is the answer the same model gave with the
full, uncompacted history, and the judge also sees what the recorded run established: what the
agent actually did next (continuation), or the statement it made with its reason (decision).
The judge grades the compacted-context answer (`score`) and, with the same prompt, the
full-context answer itself (`ceiling_score`: how far even the full history falls short of the
recorded run). Scores are the grade divided by 5, so every probe kind scores in 0-1.
"""

from __future__ import annotations

import re
from typing import Any

RUBRIC = """You grade an answer to a question about an AI agent's task against a reference answer.

QUESTION:
{question}

REFERENCE ANSWER (given with the agent's full, uncompacted history):
{reference}
{recorded}
ANSWER TO GRADE:
{answer}

Rubric:
5: agrees with the reference on every point that matters; nothing wrong or missing.
4: agrees on the main point; a minor detail is missing or vague.
3: partly agrees; an important detail is missing or wrong.
2: mostly vague or generic; little of the reference's content.
1: contradicts the reference or describes different work.
0: no answer, or says the information is not available.

Reply with one line of justification, then a last line exactly "GRADE: <0-5>"."""
"""The judge prompt (the whole request, one human message)."""

RECORDED = """
{label} (from the recorded run):
{recorded}
"""
"""The block with what the recorded run established (`LABELS`)."""

LABELS = {
    "continuation": "WHAT THE AGENT ACTUALLY DID NEXT",
    "decision": "WHAT THE AGENT SAID AT THE TIME",
}

GRADE = re.compile(r"GRADE:\s*([0-5])\b")

MAX_GRADE = 5


def judge_prompt(
    question: str, reference: str, answer: str, recorded: tuple[str, str] | None = None
) -> str:
    """The judge's request for grading `answer` to `question` against `reference` and, if
    given, `recorded` (label, what the recorded run established)."""
    block = ""
    if recorded is not None and recorded[1]:
        block = RECORDED.format(label=recorded[0], recorded=recorded[1])
    return RUBRIC.format(question=question, reference=reference, recorded=block, answer=answer)


def recorded(probe: Any) -> tuple[str, str] | None:
    """What the judge is shown of the recorded run for a judged probe: its label and the
    probe's `expected` (None for kinds without one)."""
    label = LABELS.get(probe.kind)
    return (label, probe.expected) if label else None


def parse_grade(reply: str) -> float | None:
    """The score in a judge's reply: its last `GRADE: n`, divided by 5; None if it gave none."""
    found = GRADE.findall(reply)
    return int(found[-1]) / MAX_GRADE if found else None
