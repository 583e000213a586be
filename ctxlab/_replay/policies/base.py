"""What every policy hands the replay engine: typed events and one record per model call.

A policy is a frozen dataclass of parameters. `policy.start(trace, summarizer)` returns a
stateful `PolicyRun` that the replay drives open-loop: `run.call(turn)` is asked, once per
recorded model call and in order, what request the model would have received; the run feeds
itself the recorded history up to `turn.position` first. Keeping the state inside the run (not
the replay) lets each policy keep whatever incremental structure makes it fast.

These protocols are what `ctxlab.replay` needs of any policy. Most policies are written against
the stage API of `ctxlab._replay.policies.engine` instead, which implements them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, overload

if TYPE_CHECKING:
    from ctxlab._trace import Trace, Turn
    from ctxlab.summarizers import Summarizer

EVENT_KINDS = (
    "offload_tool_result",
    "offload_human_message",
    "truncate_args",
    "summarize",
    "tail_clip",
    "overflow_error",
    "clear_tool_uses",
    "mask_observations",
    "forget",
    "trim",
)
"""`overflow_error` is the request deepagents would refuse to send (`ContextOverflowError`).
The catalogue (`ctxlab._replay.policies.catalog`) adds `clear_tool_uses` (tool results replaced by a
placeholder), `mask_observations` (old observations elided), `forget` (events dropped without a
summary, OpenHands-style) and `trim` (oldest messages dropped to fit, `trim_messages`-style)."""


@dataclass(frozen=True, slots=True)
class Event:
    """One compaction action. `messages` are full-history positions touched; `summary` is the
    text a `summarize` event put in the request (the summariser's answer as the policy used
    it, without the policy's fixed wording around it), None for other kinds. Keeping it here
    makes a replay's summaries results that views and the store read, not something to
    reproduce by running the replay again."""

    kind: str
    turn: int | None
    messages: tuple[int, ...] = ()
    tokens_before: int | None = None
    tokens_after: int | None = None
    file_path: str | None = None
    reason: str | None = None
    summary: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able form, as the CLI prints it: every field, `messages` as a list."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["messages"] = list(self.messages)
        return out


_new = object.__new__
(
    _set_kind,
    _set_turn,
    _set_messages,
    _set_before,
    _set_after,
    _set_path,
    _set_reason,
    _set_summary,
) = (getattr(Event, f.name).__set__ for f in fields(Event))


def make_event(
    kind: str,
    turn: int | None,
    messages: tuple[int, ...],
    tokens_before: int | None,
    tokens_after: int | None,
    file_path: str | None,
    reason: str | None,
    summary: str | None = None,
) -> Event:
    """`Event(...)` with its slots set directly, not through the frozen dataclass's `__init__`
    (one `object.__setattr__` call a field): half the time (0.9 -> 0.45 us). Count-only forms
    of the masking and clearing presets make one an event at nearly every model call, about
    1,000 a slider move. The same event as the constructor's while `Event` validates nothing
    (no `__post_init__`; tests/test_counts_only.py checks both)."""
    event = _new(Event)
    _set_kind(event, kind)
    _set_turn(event, turn)
    _set_messages(event, messages)
    _set_before(event, tokens_before)
    _set_after(event, tokens_after)
    _set_path(event, file_path)
    _set_reason(event, reason)
    _set_summary(event, summary)
    return event


@dataclass(slots=True)
class Call:
    """The request of one model call, as the policy would have sent it."""

    turn: int
    position: int
    context_tokens: int
    by_kind: dict[str, int]
    messages: int
    events: list[Event] = field(default_factory=list)
    baseline_tokens: int | None = None
    """The same counter over the uncompacted context (`trace.messages[:position]`)."""
    request: Sequence[tuple[int, int]] | None = None
    """Optional: `(fingerprint, tokens)` of each part of the request in send order (tool
    schemas, then messages); equal fingerprints within one replay mean identical content. A
    plain tuple works; a `Request` (an edit of the previous call's) keeps long replays small
    and lets the prompt-cache simulation (`ctxlab._evaluate.metrics`) start where the calls
    diverge. The
    simulation takes longest common prefixes over it; runs that leave it None get an estimate
    from their events instead."""


class Request(Sequence[tuple[int, int]]):
    """The `(fingerprint, tokens)` parts of one request (`Call.request`), stored as an edit of
    the `previous` call's request: its first `kept` parts (0 for a first request, whose
    `previous` is None), then parts with the given `fingerprints` and `tokens`.

    Consecutive requests share nearly everything, so a replay keeps only what changes between
    calls (a few parts per call, not the whole request: 1,000 calls of up to 2,667 parts
    would be millions of pairs), and the prompt-cache simulation (`ctxlab._evaluate.metrics`) starts
    its common-prefix search at `kept` instead of comparing whole requests. `kept` is a common
    prefix, not always the longest (a rebuilt part may equal the one it replaces). The new
    parts are two parallel sequences, not pairs: messages fed since the last call are a
    `range` of fingerprints and a slice of token counts, no object per part. Read as a
    sequence of pairs, the parts are rebuilt from the chain of edits. Any run may use it
    (`DeepAgentsRun` and `ctxlab._replay.policies.engine.StageRun` do).
    """

    __slots__ = ("previous", "kept", "fingerprints", "tokens")

    def __init__(
        self,
        previous: Request | None,
        kept: int,
        fingerprints: Sequence[int],
        tokens: Sequence[int],
    ) -> None:
        self.previous = previous
        self.kept = kept
        self.fingerprints = fingerprints
        self.tokens = tokens

    def _parts(self) -> list[tuple[int, int]]:
        chain = []
        request: Request | None = self
        while request is not None:
            chain.append(request)
            request = request.previous
        parts: list[tuple[int, int]] = []
        for request in reversed(chain):
            del parts[request.kept :]
            parts.extend(zip(request.fingerprints, request.tokens, strict=True))
        return parts

    def __len__(self) -> int:
        return self.kept + len(self.tokens)

    @overload
    def __getitem__(self, index: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, index: slice) -> list[tuple[int, int]]: ...

    def __getitem__(self, index: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        return self._parts()[index]

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return iter(self._parts())


class Files(Mapping[str, str]):
    """A policy's virtual filesystem: path -> text, byte-exact as the backend would hold it.

    Sections can be appended as thunks: decisions never read file contents, so rendering (the
    XML of a summarised history, the bulk of an event's cost) waits until someone reads it.
    """

    def __init__(self) -> None:
        self._parts: dict[str, list[str | Callable[[], str]]] = {}

    def write(self, path: str, text: str) -> None:
        """Create or overwrite `path` (deepagents' `StateBackend.write` overwrites)."""
        self._parts[path] = [text]

    def append(self, path: str, part: str | Callable[[], str]) -> None:
        """Append text, or a function rendering it later, to `path`."""
        self._parts.setdefault(path, []).append(part)

    def __getitem__(self, path: str) -> str:
        parts = self._parts[path]
        if len(parts) != 1 or not isinstance(parts[0], str):
            parts[:] = ["".join(p if isinstance(p, str) else p() for p in parts)]
        return parts[0]  # type: ignore[return-value]

    def __iter__(self) -> Iterator[str]:
        return iter(self._parts)

    def __len__(self) -> int:
        return len(self._parts)


class PolicyRun(Protocol):
    """A policy applied to one trace, advanced one model call at a time."""

    files: Files

    def call(self, turn: Turn) -> Call:
        """The request for `turn`; the recorded output is appended afterwards by the run."""
        ...

    def finish(self) -> list[Event]:
        """Events that no model call saw (e.g. an offload after the last call)."""
        ...


class Policy(Protocol):
    """Parameters + rule. `name` and `params()` identify a replay in the store."""

    @property
    def name(self) -> str:
        """The policy's registered name (read-only here, so a class variable satisfies it)."""
        ...

    def params(self) -> dict[str, Any]:
        """Parameters as given (before defaults are resolved against a trace)."""
        ...

    def start(self, trace: Trace, summarizer: Summarizer) -> PolicyRun:
        """A fresh run of this policy over `trace`."""
        ...
