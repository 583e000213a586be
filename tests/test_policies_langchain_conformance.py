"""LangChainSummarization against the installed `SummarizationMiddleware`, turn by turn.

The real middleware's `before_model` is driven over the same conversation (its summariser is
LangChain's own `FakeListChatModel` returning a fixed text, the ctxlab run uses `Fixed` with the
same text); the state it writes back is applied the way LangGraph's reducer applies it
(`RemoveMessage(REMOVE_ALL_MESSAGES)` then the new list). Every call's message count and token
count must match.
"""

from __future__ import annotations

import pytest
from langchain.agents.middleware.summarization import SummarizationMiddleware
from langchain_core.language_models.fake_chat_models import FakeListChatModel
from langchain_core.messages import AIMessage, RemoveMessage
from langchain_core.messages.utils import count_tokens_approximately

from ctxlab import replay
from ctxlab._trace import from_messages
from ctxlab.policies import LangChainSummarization
from ctxlab.summarizers import Fixed
from tests._policy_traces import agent


def _real(messages: list, **kwargs) -> list[tuple[int, int]]:
    model = FakeListChatModel(responses=["SUMMARY TEXT"])
    mw = SummarizationMiddleware(model=model, **kwargs)
    state: list = []
    out = []
    for m in messages:
        if isinstance(m, AIMessage):
            update = mw.before_model({"messages": list(state)}, None)
            if update:
                state = [x for x in update["messages"] if not isinstance(x, RemoveMessage)]
            out.append((len(state), count_tokens_approximately(state)))
        state.append(m)
    return out


@pytest.mark.parametrize(
    "kwargs",
    [
        {"trigger": ("messages", 12), "keep": ("messages", 5)},
        {"trigger": ("tokens", 800), "keep": ("tokens", 300)},
        {"trigger": [{"tokens": 600, "messages": 8}], "keep": ("messages", 4)},
        {"trigger": ("tokens", 500), "keep": ("messages", 3), "trim_tokens_to_summarize": None},
    ],
)
def test_matches_the_real_middleware(kwargs):
    messages = agent(14, system=False)
    trace = from_messages(messages)
    result = replay(trace, LangChainSummarization(**kwargs), summarizer=Fixed("SUMMARY TEXT"))
    ours = [(c.messages, c.context_tokens) for c in result.calls]
    assert ours == _real(messages, **kwargs)
    assert any(c.events for c in result.calls)
