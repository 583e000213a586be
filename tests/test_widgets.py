"""Widget state in Python: real ipywidgets and plotly FigureWidgets, driven as a user would
(slider values, dropdowns, button clicks), checked against replays computed independently.

The browser side (the same widgets rendered by JupyterLab) is `test_browser.py`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import re

import ipywidgets as W
import plotly.graph_objects as go
import pytest
from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult

import ctxlab
from ctxlab._messages import readable_text
from ctxlab._replay.timeline import Timeline
from ctxlab._view.widgets._common import Debouncer
from ctxlab.policies import DeepAgents
from ctxlab.summarizers import LLM, CachedExtractive, Extractive
from ctxlab.widgets import Compare, PromptDiff, Scrubber, ThresholdExplorer
from tests.synthetic import make_trace


@pytest.fixture(scope="module")
def trace() -> ctxlab.Trace:
    return make_trace(150, fmt="anthropic", model="claude-sonnet-4-5", provider="anthropic")


@pytest.fixture(scope="module")
def stressed(trace):
    policy = DeepAgents(stress=0.1)
    return policy, ctxlab.replay(trace, policy)


@pytest.fixture(autouse=True)
def figures(tmp_path, monkeypatch):
    monkeypatch.setenv("CTXLAB_FIGURES", str(tmp_path / "figures"))
    return tmp_path / "figures"


# ----------------------------------------------------------------------------- scrubber


def test_scrubber_slider_moves_chart_strip_and_events(trace, stressed) -> None:
    policy, replay = stressed
    s = Scrubber(replay, trace, policy=policy)
    assert isinstance(s.figure, go.FigureWidget) and isinstance(s, W.VBox)
    first_event = min(e.turn for e in replay.event_list if e.kind == "summarize")
    s.slider.value = first_event - 1
    cursor = s.figure.data[-1]
    assert list(cursor.x) == [first_event - 1]
    assert list(cursor.y) == [replay.turns["context_tokens"][first_event - 1]]
    strip_before, events_before = s.strip.value, s.events.value
    assert "ctx-summarised" not in strip_before
    s.slider.value = first_event
    assert list(s.figure.data[-1].x) == [first_event]
    assert f"turn {first_event}:" in s.figure.layout.title.text
    assert s.strip.value != strip_before and "ctx-summarised" in s.strip.value
    assert 'data-status="summary"' in s.strip.value
    shown = int(re.search(r"data-count='(\d+)'", s.events.value).group(1))
    assert shown == sum(
        1 for e in replay.event_list if e.turn is not None and e.turn <= first_event
    )
    assert s.events.value != events_before
    # the shapes move with the cursor, and the chart's other traces are the replay's
    assert s.figure.layout.shapes[0].x0 == first_event
    assert list(s.figure.data[0].y) == replay.turns["system_tokens"].to_list()


def test_scrubber_blocks_follow_events(trace, stressed) -> None:
    _, replay = stressed
    timeline = Timeline(replay, trace)
    offload = next(e for e in replay.event_list if e.kind == "offload_tool_result")
    (p,) = offload.messages
    at = {b.first: b for b in timeline.blocks(offload.turn) if b.first == b.last}
    assert at[p].status == "offloaded" and at[p].tokens == offload.tokens_after
    assert offload.file_path in at[p].after
    assert at[p].before.startswith(trace.messages[p].text[:50])
    trunc = next(e for e in replay.event_list if e.kind == "truncate_args")
    blocks = {b.first: b for b in timeline.blocks(trunc.turn) if b.first == b.last}
    assert any(q in blocks for q in trunc.messages)
    for q in trunc.messages:
        if q in blocks:
            assert blocks[q].status == "truncated"
    # blocks cover the history exactly once (runs of summarised messages included)
    turn = replay.turns.height - 1
    covered = [q for b in timeline.blocks(turn) if b.first >= 0 for q in range(b.first, b.last + 1)]
    assert covered == list(range(replay.turns["position"][turn]))


def test_scrubber_block_detail_and_chart_click(trace, stressed) -> None:
    _, replay = stressed
    s = Scrubber(replay, trace, turn=30)
    s.block.value = 1
    assert "before" in s.detail.value and "after" in s.detail.value
    assert s.block.options[1][0].startswith("1: ")
    from plotly.callbacks import Points

    s._clicked(s.figure.data[0], Points(point_inds=[25], xs=[25], ys=[0]), None)
    assert s.slider.value == 25
    assert list(s.figure.data[-1].x) == [25]


def test_scrubber_without_trace_shows_kinds(stressed) -> None:
    _, replay = stressed
    s = Scrubber(dataclasses.replace(replay, trace=None))  # e.g. a replay rebuilt elsewhere
    s.slider.value = 10
    assert "ctx-block" in s.strip.value and "pass the trace" in s.strip.value


def test_scrubber_of_a_replay_alone_shows_messages_and_summaries(trace, stressed) -> None:
    """`Scrubber(replay)` is enough: the replay keeps its trace, policy and summariser."""
    policy, replay = stressed
    alone, given = Scrubber(replay), Scrubber(replay, trace, policy=policy)
    event = next(e for e in replay.event_list if e.kind == "summarize")
    for s in (alone, given):
        s.slider.value = event.turn
    assert alone.strip.value == given.strip.value
    assert "pass the trace" not in alone.strip.value
    block = next(b for b in alone._blocks if b.status == "summary")
    assert block.after.startswith("## SESSION INTENT")


# ----------------------------------------------------------------------------- explorer


def test_explorer_rereplays_on_slider_change(trace) -> None:
    ex = ThresholdExplorer(trace, debounce=0)
    assert [c.name for c in ex.controls] == [
        "window",
        "trigger",
        "keep",
        "tool_limit",
        "max_arg_length",
    ]
    before = list(ex.figure.data[3].y)  # assistant tokens
    replays = ex.replays
    ex.control("trigger").value = 0.1
    assert ex.replays == replays + 1
    assert ex.policy.trigger == ("fraction", 0.1)
    expected = ctxlab.replay(trace, ex.policy)
    assert list(ex.figure.data[3].y) == expected.turns["ai_tokens"].to_list()
    assert list(ex.figure.data[3].y) != before
    assert f"{expected.turns['context_tokens'].max():,}" in ex.readout.value
    names = [t.name for t in ex.figure.data]
    assert "trigger 20,000" in names
    ex.control("window").value = 100_000
    assert "trigger 10,000" in [t.name for t in ex.figure.data]
    ex.control("max_arg_length").value = 500
    assert ex.policy.truncate_args_settings["max_length"] == 500
    assert ex.policy.truncate_args_settings["trigger"] == ("fraction", 0.1)
    assert ex.last_latency_ms is not None and ex.last_latency_ms > 0


def test_explorer_keeps_an_event_kind_trace_when_a_move_has_none(trace, monkeypatch) -> None:
    """An event kind that a move turns off keeps its (empty, out of the legend) marker trace,
    so the chart is updated in place, not rebuilt (and revalidated), at every such move."""
    import plotly.graph_objects as go

    ex = ThresholdExplorer(trace, policy="tool-result-offload", debounce=0)
    slider = ex.control("tool_token_limit_before_evict")

    def kinds() -> dict:  # marker traces by kind ("event: kind (count)")
        return {t.name.split(" (")[0]: t for t in ex.figure.data if t.name.startswith("event: ")}

    slider.value = slider.min  # every big result offloaded
    offloads = kinds()["event: offload_tool_result"]
    assert offloads.showlegend and len(offloads.x) > 0
    rebuilt: list[int] = []
    real_add = go.FigureWidget.add_traces
    monkeypatch.setattr(
        go.FigureWidget,
        "add_traces",
        lambda self, *a, **k: rebuilt.append(1) or real_add(self, *a, **k),
    )
    count = len(ex.figure.data)
    slider.value = slider.max  # no result that big: no offload
    assert ex.replay.event_list == []
    gone = kinds()["event: offload_tool_result"]
    assert len(gone.x) == 0 and gone.showlegend is False
    assert len(ex.figure.data) == count and rebuilt == []
    slider.value = slider.min
    assert kinds()["event: offload_tool_result"].showlegend
    assert len(ex.figure.data) == count and rebuilt == []


def test_a_move_reaches_the_chart_as_one_update(trace) -> None:
    """Areas, event markers and threshold lines change in one move: one `Plotly.update`
    message (one redraw in the browser), each trace given only what changed for it, and the
    figure then holds exactly what the builder made."""
    from plotly.basedatatypes import Undefined

    ex = ThresholdExplorer(trace, debounce=0)
    sent: list[dict] = []
    ex.figure.observe(lambda change: sent.append(change["new"]), names="_py2js_update")
    ex.control("window").value = 100_000  # new trigger line, new curve, new summaries
    updates = [m for m in sent if m]
    assert len(updates) == 1
    style, indexes = updates[0]["style_data"], updates[0]["style_traces"]
    assert {"y", "name"} <= set(style) and len(indexes) > 1
    # a trace that keeps a property is not sent it
    assert any(v is Undefined for values in style.values() for v in values)
    assert updates[0]["layout_data"]["title.text"].startswith("deepagents on ")
    for shown, built in zip(ex.figure.data, ex._traces, strict=True):
        assert shown.name == built.get("name", shown.name)
        for prop in ("x", "y"):
            if prop in built:
                assert list(getattr(shown, prop)) == list(built[prop])


def test_explorer_policy_dropdown_offers_every_registered_name(trace) -> None:
    from ctxlab._replay.policies import catalog

    ex = ThresholdExplorer(trace, debounce=0)
    options = list(ex.choice.options)
    assert options[0] == "deepagents"
    assert sorted(options) == sorted(catalog.names())
    ex.choice.value = "observation-masking"
    assert ex.policy.name == ex.policies["observation-masking"].name == "observation-masking"
    assert ex.replay.policy == ex.policy.name
    assert ex.control("n").value == 10


def test_explorer_takes_a_pipeline_and_refuses_unknown_names(trace) -> None:
    ex = ThresholdExplorer(trace, policy="clear-tool-uses+observation-masking", debounce=0)
    assert ex.choice.value == "clear-tool-uses+observation-masking"
    assert ex.replay.policy == "pipeline"
    assert "observation-masking.n" in [c.name for c in ex.controls]
    ex.control("observation-masking.n").value = 2
    assert [m.name for m in ex.policy.policies] == ["clear-tool-uses", "observation-masking"]
    assert (
        ex.policy.policies[1].n == 2
        and ex.policy.policies[0] == ex.policies["clear-tool-uses+observation-masking"].policies[0]
    )
    with pytest.raises(ValueError, match="unknown policy 'nope'; known: raw, deepagents"):
        ThresholdExplorer(trace, policy="nope", debounce=0)


def test_debouncer_coalesces_inside_an_event_loop() -> None:
    calls: list[int] = []
    deb = Debouncer(lambda: calls.append(1), wait=0.02)

    async def burst() -> None:
        fired = asyncio.get_running_loop().create_future()
        deb.fn = lambda: (calls.append(1), fired.set_result(None))
        for _ in range(5):
            deb()
        assert calls == []  # a loop runs: nothing at once
        await asyncio.wait_for(fired, 30)  # the one call the burst comes to
        assert deb._handle is None  # and nothing more is pending

    asyncio.run(burst())
    assert calls == [1]
    deb.fn = lambda: calls.append(1)
    deb()  # no running loop: synchronous
    assert calls == [1, 1]


def test_cached_extractive_matches_extractive(trace) -> None:
    fast, slow = CachedExtractive(), Extractive()
    assert fast.name == slow.name
    msgs = trace.messages
    prior = HumanMessage(
        "## SESSION INTENT\nFix it\n\n## SUMMARY\n- x",
        additional_kwargs={"lc_source": "summarization"},
    )
    for stop in range(2, len(msgs), 17):
        part = msgs[1:stop]
        assert fast.summarize(part) == slow.summarize(part)
        assert fast.summarize([prior, *part]) == slow.summarize([prior, *part])
    cached = ctxlab.replay(trace, DeepAgents(stress=0.1), CachedExtractive())
    plain = ctxlab.replay(trace, DeepAgents(stress=0.1), Extractive())
    assert cached.turns.equals(plain.turns) and cached.events.equals(plain.events)
    assert sum(1 for e in plain.event_list if e.kind == "summarize") >= 2


class Said:
    """Wraps a summariser and keeps every (prompt, summary) it produced."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.seen = inner, inner.name, []

    def summarize(self, messages, *, prompt):
        text = self.inner.summarize(messages, prompt=prompt)
        self.seen.append((prompt, text))
        return text


@pytest.mark.parametrize(
    "preset",
    ["claude-code", "codex", "inspect-summary", "openhands-llm-summarizing", "jetbrains-hybrid"],
)
def test_cached_extractive_matches_extractive_on_catalogue_prompts(trace, preset: str) -> None:
    """Every section kind the catalogue's prompts ask for (errors, identifiers, questions, user
    messages, changes, tools) gives the same text from cached per-message facts, twice over
    (the second replay reads the cache filled by the first)."""
    from ctxlab._replay.policies import catalog

    policy = catalog.get(preset, window=30_000)
    plain = Said(Extractive())
    fast = Said(CachedExtractive())
    expected = ctxlab.replay(trace, policy, plain)
    for _ in range(2):
        fast.seen.clear()
        got = ctxlab.replay(trace, policy, fast)
        assert fast.seen == plain.seen
        assert got.turns.equals(expected.turns) and got.events.equals(expected.events)
    assert len(plain.seen) >= 2


# ----------------------------------------------------------------------------- prompt diff


class EchoChat(BaseChatModel):
    """A LangChain chat model with no network: answers with the prompt's first line and the
    number of messages in it, so a different prompt gives a different summary."""

    @property
    def _llm_type(self) -> str:
        return "echo"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):  # type: ignore[no-untyped-def]
        text = messages[-1].text
        first = text.strip().splitlines()[0]
        answer = f"{first} | {text.count('<message')} messages | /src/module_1_0.py"
        return ChatResult(generations=[ChatGeneration(message=AIMessage(answer))])


def test_prompt_diff_offline_and_with_a_chat_model(trace) -> None:
    pd = PromptDiff(trace, summarizer=(Extractive(), Extractive(max_items=2, line_chars=60)))
    assert pd.points and pd.points[0].turn is not None
    a, b = pd.sides
    assert a.summary != b.summary
    assert "ctx-del" in pd.summary_a.value or "ctx-ins" in pd.summary_b.value
    assert f"{a.tokens:,} tokens" in pd.summary_a.value
    assert a.kept["paths"] and all(p in a.summary for p in a.kept["paths"])
    slice_text = "\n".join(readable_text(m) for m in pd.slice())
    assert all(p in slice_text for p in a.kept["paths"])
    assert len(a.kept["paths"]) >= len(b.kept["paths"])  # B keeps at most 2 artifacts
    bars = pd.figure.data
    assert bars[0].y[0] == len(a.kept["paths"]) and bars[1].y[0] == len(b.kept["paths"])

    pd2 = PromptDiff(
        trace,
        "Prompt A says hello.\n{messages}",
        "Prompt B differs.\n{messages}",
        summarizer=LLM(EchoChat()),
    )
    a2, b2 = pd2.sides
    assert a2.summary.startswith("Prompt A says hello.")
    assert b2.summary.startswith("Prompt B differs.")
    pd2.prompt_b.value = "Edited prompt.\n{messages}"
    pd2.run_button.click()
    assert pd2.sides[1].summary.startswith("Edited prompt.")
    # the echo names a path the slice mentions, so it counts as kept
    assert "/src/module_1_0.py" in "\n".join(readable_text(m) for m in pd2.slice())
    assert "/src/module_1_0.py" in pd2.sides[1].kept["paths"]

    pd3 = PromptDiff(trace, policy=DeepAgents(stress=0.1), summarizer=LLM(EchoChat()))
    assert len(pd3.point.options) >= 2  # stress mode summarises this trace several times
    first = pd3.sides
    pd3.point.value = 1
    assert pd3.sides != first  # another slice: another message count in the echo


# ----------------------------------------------------------------------------- compare


def test_compare_curves_and_table(trace, stressed) -> None:
    _, stressed_replay = stressed
    default = ctxlab.replay(trace, DeepAgents())
    c = Compare(stressed_replay, default, labels=["stress", "default"], trace=trace)
    assert [t.name for t in c.figure.data][:2] == ["stress", "default"]
    assert c.table.value.count("<tr>") == 3
    assert f"{stressed_replay.turns['context_tokens'].sum():,}" in c.table.value
    c.metric.value = "cumulative"
    assert c.figure.data[0].y[-1] == stressed_replay.turns["context_tokens"].sum()
    c.metric.value = "context"
    assert c.figure.data[0].y[-1] == stressed_replay.turns["context_tokens"][-1]


# ----------------------------------------------------------------------------- export


def test_every_widget_exports_from_its_button(trace, stressed, figures) -> None:
    policy, replay = stressed
    widgets = [
        Scrubber(replay, trace),
        ThresholdExplorer(trace, debounce=0),
        PromptDiff(trace),
        Compare(replay, replay),
    ]
    for i, w in enumerate(widgets):
        w.exporter.name.value = f"w{i}"
        w.exporter.format.value = "html"
        w.exporter.button.click()
        out = figures / f"w{i}.html"
        assert out.exists() and "Plotly.newPlot" in out.read_text()
        assert "wrote" in w.exporter.status.value


# ----------------------------------------------------------------------------- escaping

EVIL = "<script>alert('x')</script><img src=x onerror=alert(1)>"


def _evil_trace() -> ctxlab.Trace:
    msgs = [SystemMessage("sys " + EVIL), HumanMessage("Task: " + EVIL)]
    for i in range(40):
        call = {
            "name": "write_file" if i % 2 else "execute",
            "args": {"file_path": f"/src/{EVIL}_{i}.py", "content": EVIL * 200}
            if i % 2
            else {"command": EVIL},
            "id": f"call_{i}",
        }
        msgs.append(AIMessage(f"step {i} {EVIL}", tool_calls=[call]))
        body = (EVIL + " /tmp/evil_path.py 12345 some_ident\n") * (3000 if i % 7 == 3 else 20)
        msgs.append(ToolMessage(body, tool_call_id=f"call_{i}", name=call["name"]))
    msgs.append(AIMessage("done " + EVIL))
    return ctxlab.from_messages(
        msgs, trace_id="id-" + EVIL, model="claude-sonnet-4-5", provider="anthropic"
    )


def _rendered(widget: W.Widget) -> list[str]:
    """Every string a browser would interpret as HTML: HTML widgets and plotly text."""
    out: list[str] = []
    stack = [widget]
    while stack:
        w = stack.pop()
        if isinstance(w, W.HTML):
            out.append(w.value)
        if isinstance(w, go.FigureWidget):  # plotly renders these strings as (pseudo) HTML
            out.append(str(w.layout.title.text))
            for t in w.data:
                for prop in ("name", "hovertext", "text", "hovertemplate"):
                    value = getattr(t, prop, None)
                    if value is not None:
                        out.extend(map(str, value) if isinstance(value, tuple) else [str(value)])
                for prop in ("x", "y"):  # category axes (heatmaps, timelines)
                    value = getattr(t, prop, None)
                    if value is not None and any(isinstance(v, str) for v in value):
                        out.extend(str(v) for v in value)
        stack.extend(getattr(w, "children", ()))
    return out


def test_untrusted_text_is_escaped_in_every_widget() -> None:
    trace = _evil_trace()
    policy = DeepAgents(window=30_000, trigger=("fraction", 0.3), keep=("fraction", 0.1))
    replay = ctxlab.replay(trace, policy)
    assert {"summarize", "offload_tool_result"} <= {e.kind for e in replay.event_list}
    scrubber = Scrubber(replay, trace, policy=policy)
    explorer = ThresholdExplorer(trace, debounce=0)
    explorer.control("trigger").value = 0.2
    diff = PromptDiff(trace, EVIL + "{messages}", "B " + EVIL + "{messages}")
    compare = Compare(replay, ctxlab.replay(trace, DeepAgents()), labels=[EVIL, "b"], trace=trace)
    for widget in (scrubber, explorer, diff, compare):
        texts = []
        for turn in (0, replay.turns.height // 2, replay.turns.height - 1):
            if widget is scrubber:
                scrubber.slider.value = turn
                for i in range(len(scrubber.block.options)):
                    scrubber.block.value = i
                    texts += _rendered(widget)
        texts += _rendered(widget)
        joined = "\n".join(texts)
        assert "<script" not in joined and "<img" not in joined, type(widget).__name__
        assert "&lt;script&gt;" in joined or "&amp;lt;script" in joined, type(widget).__name__


def test_scrubber_shows_the_summary_the_model_read(trace, stressed) -> None:
    from ctxlab._cost import tokens as tk

    policy, replay = stressed
    s = Scrubber(replay, trace, policy=policy)
    event = next(e for e in replay.event_list if e.kind == "summarize")
    s.slider.value = event.turn
    block = next(b for b in s._blocks if b.status == "summary")
    assert block.after.startswith("## SESSION INTENT")
    # the request's summary message, rebuilt from the shown text, has the replay's size
    message = HumanMessage(
        "You are in the middle of a conversation that has been summarized.\n\n"
        f"The full conversation history has been saved to {event.file_path} should you need to "
        "refer back to it for details.\n\nA condensed summary follows:\n\n"
        f"<summary>\n{block.after}\n</summary>"
    )
    expected = replay.turns["summary_tokens"][event.turn]
    assert tk.message_tokens(message, tk.ANTHROPIC_CHARS_PER_TOKEN) == expected
    # the text is the replay's own: no policy or summariser is needed to show it
    plain = Scrubber(dataclasses.replace(replay, source_policy=None, summarizer=None), trace)
    plain.slider.value = event.turn
    assert next(b for b in plain._blocks if b.status == "summary").after == event.summary


def test_prompt_diff_offline_compares_the_prompts_themselves(trace) -> None:
    """With the default (offline) summariser, different prompts give different summaries."""
    coding = (
        "Summarise the history in these sections:\n\n## GOAL\nThe task.\n\n## FILES CHANGED\n"
        "Files touched.\n\n## ERRORS\nFailures.\n\n## OPEN QUESTIONS\nUnresolved.\n\n{messages}"
    )
    pd = PromptDiff(trace, prompt_b=coding)
    a, b = pd.sides
    assert a.summary.startswith("## SESSION INTENT") and "## NEXT STEPS" in a.summary
    headings = [ln for ln in b.summary.splitlines() if ln.startswith("## ")]
    assert headings == ["## GOAL", "## FILES CHANGED", "## ERRORS", "## OPEN QUESTIONS"]
    assert "ctx-del" in pd.summary_a.value and "ctx-ins" in pd.summary_b.value
    assert "<ins class='ctx-ins' style='background:#BFE6D8'>GOAL</ins>" in pd.summary_b.value
    pd.prompt_b.value = pd.prompt_a.value  # same prompt: nothing to highlight
    pd.run_button.click()
    assert pd.sides[0] == pd.sides[1]
    assert "ctx-del" not in pd.summary_a.value and "ctx-ins" not in pd.summary_b.value


def test_cached_extractive_matches_extractive_on_errors_and_questions() -> None:
    """Slices of a conversation with failures, error lines and questions, through every
    catalogue prompt and a prompt asking for each section kind, each slice twice."""
    from ctxlab._replay.policies import claude_code, codex, inspect, jetbrains, openhands

    msgs: list = [HumanMessage("Fix /src/app.py? Keep parse_config stable.")]
    for i in range(6):
        call = {"name": "run_tests", "args": {"path": f"/src/t{i}.py"}, "id": f"c{i}"}
        msgs.append(AIMessage(f"Why does test_{i} fail?\nRunning it.", tool_calls=[call]))
        body = f"E   KeyError: 'k{i}'\nFAILED tests/t{i}.py::test_{i}\n{1000 + i} passed"
        status = "error" if i % 3 == 0 else "success"
        msgs.append(ToolMessage(body, tool_call_id=f"c{i}", name="run_tests", status=status))
        msgs.append(HumanMessage(f"Does retryCount {i} matter?"))
    prompts = [
        claude_code.CLAUDE_CODE_SUMMARY_PROMPT,
        codex.CODEX_COMPACT_PROMPT,
        inspect.INSPECT_SUMMARY_PROMPT,
        jetbrains.JETBRAINS_SUMMARY_PROMPT,
        openhands.OPENHANDS_SUMMARY_PROMPT,
        "## Errors\n## Open questions\n## Identifiers\n## Tools\n## Changed files\n"
        "## User messages\n{messages}",
    ]
    fast, slow = CachedExtractive(), Extractive()
    for prompt in prompts:
        for stop in range(1, len(msgs) + 1):
            for _ in range(2):
                assert fast.summarize(msgs[:stop], prompt=prompt) == slow.summarize(
                    msgs[:stop], prompt=prompt
                )
    text = slow.summarize(msgs, prompt=prompts[-1])
    assert "KeyError" in text and "retryCount" in text and "?" in text


def test_explorer_never_freezes_the_collector(trace) -> None:
    import gc

    gc.unfreeze()
    ThresholdExplorer(trace, debounce=0)
    assert gc.get_freeze_count() == 0
