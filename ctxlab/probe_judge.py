"""The judge's rubric: how a free-text probe answer is graded 0-5 against a reference.

Continuation and decision probes have no single right string, so a judge model grades them, as
Factory's probe evaluation does (0-5). The reference is the answer the same model gave with the
full, uncompacted history; for a continuation probe the judge also sees what the recorded agent
actually did next. The judge grades the compacted-context answer (`score`) and, with the same
prompt, the full-context answer itself (`ceiling_score`: how far even the full history falls short
of the recorded next step, or, for decision probes, a check that the judge gives an answer its own
reference's grade). Scores are the grade divided by 5, so every probe kind scores in 0-1.
"""

from __future__ import annotations

import re

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
WHAT THE AGENT ACTUALLY DID NEXT (from the recorded run):
{recorded}
"""
"""The block continuation probes add: the recorded agent's next output."""

GRADE = re.compile(r"GRADE:\s*([0-5])\b")

MAX_GRADE = 5


def judge_prompt(question: str, reference: str, answer: str, recorded: str | None = None) -> str:
    """The judge's request for grading `answer` to `question` against `reference`."""
    block = RECORDED.format(recorded=recorded) if recorded else ""
    return RUBRIC.format(question=question, reference=reference, recorded=block, answer=answer)


def parse_grade(reply: str) -> float | None:
    """The score in a judge's reply: its last `GRADE: n`, divided by 5; None if it gave none."""
    found = GRADE.findall(reply)
    return int(found[-1]) / MAX_GRADE if found else None
