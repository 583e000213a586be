"""The Deep Agents compaction stack (deepagents 0.7.32), decision for decision.

Mirrors, in order of application (docs/deepagents.md):

* `FilesystemMiddleware.wrap_tool_call`: a tool result whose text exceeds
  `4 * tool_token_limit_before_evict` chars is written to `/large_tool_results/{id}` and the
  state keeps a head/tail stub (tools in `TOOLS_EXCLUDED_FROM_EVICTION` never are); a later
  same-path file mutation in one AIMessage is answered with deepagents' error instead.
* `FilesystemMiddleware.wrap_model_call`: a trailing HumanMessage over
  `4 * human_message_token_limit_before_evict` chars is saved to `/conversation_history/` and
  every tagged HumanMessage is sent as a stub.
* `SummarizationMiddleware.wrap_model_call`: the effective list (latest summary + messages from
  the event's cutoff), request-only argument truncation, the trigger clauses OR the input budget,
  the token/message keep window with the backward safe cutoff, the history file section, the
  chained summary, and `_call_with_budget`'s overflow tail clip.

Modules, by concern: `settings` (the policy's parameters and what they resolve to), `texts`
(the model-visible texts), `filesystem` (offload rules), `message_edits` (request-only copies),
`state`, `effective` (the effective list), `summarization` (the step), `request` (the request
part by part) and `run` (the call loop). Deep Agents' rules are owned here; the installed
`deepagents` is needed only by the tests, which compare every text and decision with it.
"""

from ctxlab._replay.policies.base import Request
from ctxlab._replay.policies.deepagents.run import DeepAgentsRun
from ctxlab._replay.policies.deepagents.settings import (
    MODELS_VERSION,
    DeepAgents,
    Settings,
    UpstreamVersionWarning,
    tool_schemas,
    visible_tools,
)
from ctxlab._replay.policies.langchain_rules import keep_search, normalize_trigger

__all__ = [
    "MODELS_VERSION",
    "DeepAgents",
    "DeepAgentsRun",
    "Request",
    "Settings",
    "UpstreamVersionWarning",
    "keep_search",
    "normalize_trigger",
    "tool_schemas",
    "visible_tools",
]
