"""Deep Agents' large tool-result offload as a catalogue stage, so pipelines can start with it.

`FilesystemMiddleware.wrap_tool_call` (deepagents 0.7.32): a tool result whose text exceeds
`NUM_CHARS_PER_TOKEN * tool_token_limit_before_evict` characters (80,000 by default) is written
to `/large_tool_results/{tool_call_id}` and replaced, from its first appearance on, by
deepagents' own head/tail preview stub; results of `TOOLS_EXCLUDED_FROM_EVICTION` (ls, glob,
grep, read_file, edit_file, write_file, delete) never are. Rules and stub texts are those of
`ctxlab._replay.policies.deepagents.filesystem`, shared with the `deepagents` policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, ClassVar, Literal

from langchain_core.messages import AIMessage, ToolMessage

from ctxlab._messages import message_text
from ctxlab._replay.policies._engine_counts import extended, mark
from ctxlab._replay.policies.base import Event
from ctxlab._replay.policies.deepagents.filesystem import (
    NUM_CHARS_PER_TOKEN,
    TOOLS_EXCLUDED_FROM_EVICTION,
    sanitize_tool_call_id,
    tool_stub,
)
from ctxlab._replay.policies.engine import (
    AUTO,
    KEEPS_MARKS,
    Context,
    Item,
    Stage,
    StagePolicy,
    appended,
    replaced,
)

if TYPE_CHECKING:
    from ctxlab._replay.policies._engine_counts import Mark
    from ctxlab._replay.policies.counts_only import CallCounts
    from ctxlab._trace import Trace
    from ctxlab.summarizers import Summarizer


class OffloadStage:
    """Replace big results by their stub (persistent: the state stores the stub).

    Fast path: when the input is the previous input plus new messages, only the new results
    are looked at, on the previous output (a result's fate depends on itself and the name of
    its call, known once the call is in the input).
    """

    capabilities = frozenset({KEEPS_MARKS})

    def __init__(self, limit_chars: int, excluded: frozenset[str]) -> None:
        self.limit = limit_chars
        self.excluded = excluded
        self.done: set[int] = set()
        self.prev_in: list[Item] | Mark | None = None
        self.prev_out: list[Item] = []
        self.names: dict[str, str] = {}  # tool_call_id -> tool name, over the input so far

    def _names(self, items: list[Item]) -> bool:
        """Add the calls of `items`' AI messages; False if one renames a known call id."""
        names = self.names
        same = True
        for it in items:
            if isinstance(it.msg, AIMessage):
                for c in it.msg.tool_calls:
                    if cid := c.get("id"):
                        same = same and names.get(cid, c["name"]) == c["name"]
                        names[cid] = c["name"]
        return same

    def apply(self, items: list[Item], ctx: Context) -> list[Item]:
        new = appended(self.prev_in, items)
        out: list[Item]
        if new is not None and self._names(new):
            start = len(self.prev_out)
            out = extended(self.prev_out, new, edits=False, owner=self)  # new items edited only
        else:
            self.names = {}
            self._names(items)
            out, start = list(items), 0
        for i in range(start, len(items)):
            self._offload(out, i, ctx)
        self.prev_in, self.prev_out = mark(items), out
        return out

    def _offload(self, out: list[Item], i: int, ctx: Context) -> None:
        it = out[i]
        msg = it.msg
        if not isinstance(msg, ToolMessage) or it.kind != "tool_results":
            return
        name = self.names.get(msg.tool_call_id) or msg.name
        if name in self.excluded:
            return
        text = message_text(msg)
        if len(text) <= self.limit:
            return
        path = f"/large_tool_results/{sanitize_tool_call_id(msg.tool_call_id)}"
        stub = replaced(msg, ("offload", path), partial(tool_stub, msg, path, text))
        out[i] = Item(it.pos, stub, "stubs")
        if it.pos is not None and it.pos not in self.done:
            self.done.add(it.pos)
            ctx.files.write(path, text)
            ctx.events.append(
                Event(
                    "offload_tool_result",
                    ctx.turn.index,
                    (it.pos,),
                    ctx.tokens(msg),
                    ctx.tokens(stub),
                    path,
                    f"> {self.limit} chars",
                )
            )


@dataclass(frozen=True)
class ToolResultOffload(StagePolicy):
    """`FilesystemMiddleware(tool_token_limit_before_evict=20000)` offload on its own."""

    name: ClassVar[str] = "tool-result-offload"
    source: ClassVar[str] = (
        "deepagents 0.7.32 FilesystemMiddleware.wrap_tool_call (tool_token_limit_before_evict="
        "20000, NUM_CHARS_PER_TOKEN=4, TOOLS_EXCLUDED_FROM_EVICTION; stub from "
        "_message_eviction); docs/deepagents.md §3"
    )

    tool_token_limit_before_evict: int = 20000
    exclude_tools: tuple[str, ...] = tuple(sorted(TOOLS_EXCLUDED_FROM_EVICTION))
    window: int | None | Literal["auto"] = AUTO
    model: str | None = None

    def stages(self, trace: Trace, window: int | None) -> list[Stage]:
        """One offload stage."""
        limit = NUM_CHARS_PER_TOKEN * int(self.tool_token_limit_before_evict)
        return [OffloadStage(limit, frozenset(self.exclude_tools))]

    def counts_only(self, trace: Trace, summarizer: Summarizer) -> CallCounts | None:
        """This policy's per-call counts and events on `trace` by formula
        (`ctxlab._replay.policies.offload_counts`), for a chart that needs no requests."""
        from ctxlab._replay.policies.counts_only import single_stage
        from ctxlab._replay.policies.offload_counts import offload_counts

        return single_stage(self, trace, OffloadStage, offload_counts)


__all__ = ["OffloadStage", "ToolResultOffload"]
