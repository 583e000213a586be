"""`tool-result-offload`: Deep Agents' FilesystemMiddleware offload as a stage.

Source: deepagents 0.7.32 `FilesystemMiddleware.wrap_tool_call` (docs/deepagents.md §3):
results over 4 x 20,000 chars go to /large_tool_results/{id} with the package's own stub; the
DeepAgents policy (conformance-tested against the real middleware) is the oracle here."""

from __future__ import annotations

from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import replay
from ctxlab._trace import from_messages
from ctxlab.policies import DeepAgents, LangChainSummarization, Pipeline, ToolResultOffload


def _trace():
    msgs = [SystemMessage("s"), HumanMessage("go")]
    for i, (name, size) in enumerate([("execute", 90_000), ("read_file", 90_000), ("execute", 10)]):
        msgs.append(AIMessage("", tool_calls=[{"name": name, "args": {}, "id": f"call_{i}"}]))
        msgs.append(ToolMessage(f"row {i}\n" * (size // 6), tool_call_id=f"call_{i}", name=name))
    msgs.append(AIMessage("done"))
    return from_messages(msgs)


def test_offloads_like_deepagents():
    trace = _trace()
    ours = replay(trace, ToolResultOffload())
    theirs = replay(trace, DeepAgents(window=None, trigger=None, truncate_args_settings=None))
    assert [e.messages for e in ours.event_list] == [(3,)]  # execute yes, read_file never
    assert dict(ours.files) == dict(theirs.files)
    assert ours.calls[-1].by_kind["stubs"] == theirs.calls[-1].by_kind["stubs"]


def test_offload_then_summarise_pipeline():
    trace = _trace()
    policy = Pipeline(
        (
            ToolResultOffload(),
            LangChainSummarization(trigger=("tokens", 20_000), keep=("messages", 2)),
        )
    )
    result = replay(trace, policy)
    kinds = [e.kind for e in result.event_list]
    assert kinds[0] == "offload_tool_result" and "summarize" in kinds
