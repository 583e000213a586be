"""Inspect AI presets against Inspect's source.

Sources: UKGovernmentBEIS/inspect_ai docs/compaction.qmd (threshold 0.9, 128k default window,
CompactionEdit keep_tool_uses=3, CompactionTrim preserve=0.8, system and input messages always
kept); src/inspect_ai/model/_compaction/edit.py @146d9eadd76b (the "(Tool result removed)"
placeholder; with keep_tool_inputs=False the tool message is deleted and the call replaced by
"[Tool call: NAME (parameters and results removed from history)]"); summary.py @05104f6c4d46
(summariser input = system + input + conversation from the last summary + the prompt with
`instructions` as addendums; the "[CONTEXT COMPACTION SUMMARY]" message; `_summary_text`).
"""

from __future__ import annotations

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage

from ctxlab import replay
from ctxlab._replay.policies.inspect import (
    INSPECT_SUMMARY_PROMPT,
    INSPECT_UPSTREAM_PROMPT,
    SUMMARY_MESSAGE,
    summary_text,
)
from ctxlab._trace import from_messages
from ctxlab.policies import (
    InspectEdit,
    InspectSummary,
    InspectTrim,
)
from ctxlab.summarizers import Fixed
from tests._policy_traces import agent


class Recording:
    """A summariser that answers `S1`, `S2`, ... and keeps its inputs and prompts."""

    name = "recording"

    def __init__(self, answer: str | None = None) -> None:
        self.inputs: list[list[BaseMessage]] = []
        self.prompts: list[str] = []
        self.answer = answer

    def summarize(self, messages, *, prompt):
        self.inputs.append(list(messages))
        self.prompts.append(prompt)
        return self.answer or f"S{len(self.inputs)}"


def requests(trace, policy, summarizer=None) -> list[list[BaseMessage]]:
    """The messages each call sends, watched at the policy's last stage."""
    run = policy.start(trace, summarizer or Fixed("S"))
    stage = run.stages[-1]
    apply, seen = stage.apply, []

    def watch(items, ctx):
        out = apply(items, ctx)
        seen.append([it.msg for it in out])
        return out

    stage.apply = watch
    for turn in trace.turns:
        run.call(turn)
    return seen


def test_inspect_defaults_and_fallback_window():
    assert InspectEdit().threshold == 0.9 and InspectTrim().preserve == 0.8
    edit = InspectEdit()
    assert (edit.keep_thinking_turns, edit.keep_tool_uses, edit.keep_tool_inputs) == (1, 3, True)
    trace = from_messages(agent(2))
    assert InspectSummary().window_for(trace) == 128_000


def test_inspect_trim_preserves_share_and_input():
    trace = from_messages(agent(12))
    result = replay(trace, InspectTrim(threshold=1500, window=2000))
    first = next(c for c in result.calls if c.events)
    assert first.events[0].kind == "trim"
    assert 0 not in first.events[0].messages and 1 not in first.events[0].messages
    assert all(c.orphans == 0 for c in result.calls)


def test_inspect_edit_keeps_three_tool_uses():
    trace = from_messages(agent(12))
    result = replay(trace, InspectEdit(threshold=1500, window=2000))
    first = next(c for c in result.calls if c.events)
    tool_positions = [p for p in range(3, first.position, 2)]
    assert set(first.events[0].messages) == set(tool_positions[:-3])


def test_inspect_edit_placeholder_keeps_the_calls():
    trace = from_messages(agent(12))
    sent = requests(trace, InspectEdit(threshold=1500, window=2000))
    last = sent[-1]
    results = [m for m in last if m.type == "tool"]
    assert len(results) == 12  # every pair is still there
    assert [m.content for m in results[:-3]] == ["(Tool result removed)"] * 9
    assert all(m.content.startswith("line") for m in results[-3:])
    assert all(m.tool_calls[0]["args"] for m in last if m.type == "ai" and m.tool_calls)


def test_inspect_edit_without_tool_inputs_removes_calls_and_results():
    trace = from_messages(agent(12))
    sent = requests(trace, InspectEdit(threshold=1500, window=2000, keep_tool_inputs=False))
    last = sent[-1]
    results = [m for m in last if m.type == "tool"]
    assert len(results) == 3 and all(m.content.startswith("line") for m in results)
    cleared = [m for m in last if m.type == "ai" and not m.tool_calls and m.text != "done"]
    assert len(cleared) == 9
    for msg in cleared:
        assert msg.content == [
            {
                "type": "text",
                "text": "[Tool call: run (parameters and results removed from history)]",
            }
        ]
    assert all(
        c.orphans == 0
        for c in replay(
            trace, InspectEdit(threshold=1500, window=2000, keep_tool_inputs=False)
        ).calls
    )


def test_inspect_edit_strips_thinking_but_in_the_last_turn():
    msgs: list[BaseMessage] = [SystemMessage("sys"), HumanMessage("task")]
    for i in range(6):
        msgs.append(
            AIMessage(
                [
                    {"type": "thinking", "thinking": "hmm " * 200, "signature": "x"},
                    {"type": "text", "text": f"step {i}"},
                ]
            )
        )
        msgs.append(HumanMessage(f"go on {i}"))
    sent = requests(from_messages(msgs), InspectEdit(threshold=300, window=100_000))
    ais = [m for m in sent[-1] if m.type == "ai"]
    with_thinking = [any(b.get("type") == "thinking" for b in m.content) for m in ais]
    assert with_thinking == [False] * (len(ais) - 1) + [True]


def test_inspect_summary_request_and_summariser_input():
    trace = from_messages(agent(24))
    rec = Recording()
    sent = requests(trace, InspectSummary(threshold=1500, window=2000), rec)
    assert len(rec.inputs) >= 2
    # first summary: system + input + the whole conversation
    first = rec.inputs[0]
    assert [m.type for m in first[:2]] == ["system", "human"] and first[1].text.startswith("fix")
    assert first[2].type == "ai"
    # the request after it: system, input, the wrapped summary
    after = next(r for r in sent if any("S1" in m.text for m in r))
    assert [m.type for m in after[:3]] == ["system", "human", "human"]
    assert after[2].content == SUMMARY_MESSAGE.format(summary="S1")
    assert after[2].content.startswith("[CONTEXT COMPACTION SUMMARY]\n\n")
    # the next summary reads system + input + the previous summary and what followed it
    second = rec.inputs[1]
    assert second[2].content == SUMMARY_MESSAGE.format(summary="S1")
    assert sum("S1" in m.text for m in second) == 1


def test_inspect_summary_keeps_input():
    trace = from_messages(agent(12))
    result = replay(trace, InspectSummary(threshold=1500, window=2000), summarizer=Fixed("S"))
    first = next(c for c in result.calls if c.events)
    assert first.messages == 3  # system, task, summary


def test_inspect_summary_instructions_fill_the_addendums_slot():
    rec = Recording()
    trace = from_messages(agent(12))
    policy = InspectSummary(threshold=1500, window=2000, instructions="Keep {file} paths.")
    replay(trace, policy, summarizer=rec)
    expected = "{messages}\n\n" + INSPECT_UPSTREAM_PROMPT.format(addendums="Keep {{file}} paths.")
    assert rec.prompts[0] == expected
    assert expected.format(messages="M").endswith("Keep {file} paths.\n")
    # without instructions: the slot is empty, as `prompt.format(addendums="")`
    rec = Recording()
    replay(trace, InspectSummary(threshold=1500, window=2000), summarizer=rec)
    assert rec.prompts[0] == INSPECT_SUMMARY_PROMPT


def test_inspect_custom_prompt_gets_instructions_only_where_it_asks():
    trace = from_messages(agent(12))
    for prompt, expected in [
        ("Summarise {messages}. {addendums}", "Summarise {messages}. Be brief."),
        ("Summarise {messages}.", "Summarise {messages}."),
    ]:
        rec = Recording()
        policy = InspectSummary(
            threshold=1500, window=2000, prompt=prompt, instructions="Be brief."
        )
        replay(trace, policy, summarizer=rec)
        assert rec.prompts[0] == expected


def test_summary_tags_are_extracted_when_the_prompt_asks_for_them():
    completion = "<analysis>a <summary>echo</summary></analysis>\n<summary>\nbody\n</summary>"
    assert summary_text(completion) == "body"
    assert summary_text("<summary>cut short") == "cut short"
    assert summary_text("no tags") == "no tags"
    assert summary_text("<summary> </summary>") == "<summary> </summary>"
    assert summary_text("<summary>a <summary>b</summary> c</summary>") == "a <summary>b</summary> c"
    trace = from_messages(agent(12))
    rec = Recording(answer="<analysis>x</analysis><summary>kept</summary>")
    sent = requests(trace, InspectSummary(threshold=1500, window=2000), rec)
    assert any(m.content == SUMMARY_MESSAGE.format(summary="kept") for r in sent for m in r)
    # a custom prompt that never mentions the tag keeps the completion whole
    rec = Recording(answer="<summary>raw</summary>")
    policy = InspectSummary(threshold=1500, window=2000, prompt="{messages}")
    sent = requests(trace, policy, rec)
    assert any(
        m.content == SUMMARY_MESSAGE.format(summary="<summary>raw</summary>")
        for r in sent
        for m in r
    )
