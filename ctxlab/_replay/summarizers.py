"""Summarisers: what writes the summary text when a policy compacts history.

A summariser is anything with `summarize(messages, *, prompt) -> str`. Policies decide *when* and
*what* to summarise; the summariser only writes the text, so replays can swap a real LLM for a
fixed or an offline extractive summary without touching decisions (decisions depend on the
summary only through its length).

* `Fixed(text)`: the same text every time (tests, conformance, `--summary-text-file`).
* `LLM(chat_model)`: any LangChain chat model, prompted exactly as deepagents prompts it (and,
  like it, retried with the middle of the history cut out if the prompt overflows, then in
  chunks within the model's window), with a cache keyed by (model, prompt, input) so
  re-running a replay never pays twice.
* `Extractive()`: the offline default. No key, no model: it fills the sections the prompt asks
  for (deepagents': session intent, summary, artifacts, next steps) with text taken from the
  conversation itself, deterministically, so prompts can be compared offline. It reads the
  sections and limits of any prompt through `ctxlab._replay.prompt_sections`.
* `CachedExtractive()`: the same text, with per-message work remembered across replays (what
  the widgets use, since sliders re-replay one trace many times).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
import warnings
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property, lru_cache, partial
from pathlib import Path
from typing import Any, ClassVar, Protocol

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages import get_buffer_string as _buffer
from langchain_core.messages.utils import count_tokens_approximately

from ctxlab._cost import tokens as tk
from ctxlab._messages import PATH, is_summary, message_text
from ctxlab._replay.model_calls import DEFAULT_CALLS, CallSettings
from ctxlab._replay.overflow import is_overflow, model_window, stated_window
from ctxlab._replay.policies.deepagents.texts import DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
from ctxlab._replay.prompt_sections import Section, outline
from ctxlab._replay.prompt_template import PromptError, checked_prompt, literal_prompt
from ctxlab._store.schema import SummaryRow

DEFAULT_PROMPT = DEEPAGENTS_DEFAULT_SUMMARY_PROMPT
"""The prompt Deep Agents sends its summariser (`ctxlab._replay.policies.deepagents.texts`)."""


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:16]


class Summarizer(Protocol):
    """Writes a summary of `messages`; `prompt` is the policy's summary prompt template.

    `name` identifies what the summaries depend on (the store keys cached replays by it).
    """

    @property
    def name(self) -> str:
        """Stable identity, e.g. `fixed:<digest of the text>`."""
        ...

    def summarize(self, messages: Sequence[BaseMessage], *, prompt: str = DEFAULT_PROMPT) -> str:
        """The summary text (the caller strips surrounding whitespace, as deepagents does)."""
        ...


def format_prompt(messages: Sequence[BaseMessage], prompt: str = DEFAULT_PROMPT) -> str:
    """The exact string LangChain's summarisation sends: XML-rendered history in the template
    (`checked_prompt`: refused or completed when it cannot hold the history)."""
    return checked_prompt(prompt).format(messages=_buffer(list(messages), format="xml")).rstrip()


@dataclass(frozen=True)
class Fixed:
    """Always the same text: decisions become independent of any model."""

    text: str

    @property
    def name(self) -> str:
        """`fixed:` + digest of the text."""
        return f"fixed:{_digest(self.text)}"

    def summarize(self, messages: Sequence[BaseMessage], *, prompt: str = DEFAULT_PROMPT) -> str:
        """`text`, whatever the input."""
        return self.text

    @classmethod
    def from_file(cls, path: str | Path) -> Fixed:
        """The text of a file (UTF-8), as `--summary-text-file` reads it."""
        return cls(Path(path).read_text(encoding="utf-8"))


CHUNK_TRIES = 4
"""How many windows, each smaller, a chunked summary tries before `SummaryError`."""

CHUNK_SHARE = 0.7
"""Share of the window one part's whole prompt fills by LangChain's approximate count (4
characters a token), leaving room for tokenizers that count up to 40% more."""


class _PartOverflow(Exception):
    """A part of a chunked summary the model refused as too long (`error`, as it raised it)."""

    def __init__(self, error: BaseException) -> None:
        super().__init__(str(error))
        self.error = error


class SummaryError(RuntimeError):
    """A summary the model could not write: the input does not fit its window even cut, or the
    call failed. `replay` adds the trace and turn to the message."""


@dataclass
class LLM:
    """A LangChain chat model as summariser, with a cache so a replay never pays twice.

    The cache maps sha256(model identity, rendered prompt) to the summary. With a `store` (a
    `ctxlab.Store` or its path) it lives in the store's `summaries` table, shared by every
    process and session using that file; otherwise in memory (`cache`). Entries are keyed by
    what was asked, and the first one stored for a key wins, so every process reads the same
    text for the same request: same cache, same replay, byte for byte.

    The summariser knows its model's window (`window`, else `ctxlab._replay.overflow.
    model_window`: the profile's `max_input_tokens`, a local backend's context size): a
    prompt larger than it, or one the model refuses as too long (any backend's wording,
    `ctxlab._replay.overflow.is_overflow`), is asked again with the middle of the history cut
    out as LangChain does, then, if that still does not fit, as a chunked summary (each part
    summarised within the window, then the parts' summaries summarised). When even that fails,
    `SummaryError` says the sizes and what to change. `stats` counts the cut, chunked and empty
    answers; an empty answer is warned about once, kept in `empty` and never cached.
    """

    chat_model: Any
    prompt: str | None = None
    store: Any = None
    """A `ctxlab.Store` (or the path of one) holding the cache; None keeps it in memory."""
    cache: dict[str, str] = field(default_factory=dict)
    pending: list[SummaryRow] = field(default_factory=list, repr=False)
    """Entries written without a store, for the caller to store (`take_pending`)."""
    window: int | None = None
    """The model's input window in tokens; None: read from the model (`model_window`)."""
    calls: CallSettings = DEFAULT_CALLS
    """Retries, backoff and time limit of each model call (`ctxlab._replay.model_calls`)."""
    stats: Counter[str] = field(default_factory=Counter, repr=False)
    """How many times a summary was asked with the middle cut (`middle_cut`), in chunks
    (`chunked`), or came back empty (`empty`)."""
    empty: list[str] = field(default_factory=list, repr=False)
    """The rendered prompts whose answer was empty (for inspection; not cached)."""

    def __post_init__(self) -> None:
        if self.store is not None and not hasattr(self.store, "put_summaries"):
            from ctxlab._store.store import Store

            self.store = Store(self.store)
        if self.prompt is not None:
            self.prompt = checked_prompt(self.prompt)

    def for_workers(self, store: Any = None) -> LLM:
        """A copy for processes that must not write a store (sweep workers): the entries of
        this model's cache in its memory (from `self.store`, else from `store`: the sweep's),
        new ones kept in `pending`, which the worker returns with its results for the one
        writer to store."""
        cache = dict(self.cache)
        source = self.store if self.store is not None else store
        if source is not None:
            cache.update(source.summaries(self._model_id()))
        return LLM(self.chat_model, self.prompt, None, cache, window=self.window, calls=self.calls)

    def take_pending(self) -> list[SummaryRow]:
        """The entries written since the last call (only without a store), handed over once."""
        rows, self.pending = self.pending, []
        return rows

    @property
    def name(self) -> str:
        """`llm:` + digest of the model identity and the prompt override."""
        return f"llm:{_digest(self._model_id(), self.prompt or '')}"

    def _model_id(self) -> str:
        """The chat model's identity as LangChain describes it (`asdict`: its identifying
        parameters and type), so two differently configured models never share a cache entry."""
        return json.dumps(
            {"type": type(self.chat_model).__name__, **self.chat_model.asdict()},
            sort_keys=True,
            default=str,
        )

    def key(self, messages: Sequence[BaseMessage], prompt: str) -> str:
        """Cache key of one summary request."""
        text = format_prompt(messages, self.prompt or prompt)
        return hashlib.sha256(f"{self._model_id()}\x00{text}".encode()).hexdigest()

    def summarize(self, messages: Sequence[BaseMessage], *, prompt: str = DEFAULT_PROMPT) -> str:
        """The model's answer to deepagents' prompt, from the cache when seen before."""
        template = checked_prompt(self.prompt or prompt)
        key = self.key(messages, template)
        text = self.cache.get(key)
        if text is None and self.store is not None:
            text = self.store.get_summary(key)
        if text is None:
            asked = format_prompt(messages, template)
            text = self._fitted(messages, template, asked).strip()
            if not text:
                self._empty(asked)
                return text
            row = SummaryRow(key, self._model_id(), _sha(template), _sha(asked), text)
            if self.store is None:
                self.pending.append(row)
            else:  # another process may have stored its answer first: that one counts
                self.store.put_summaries([row])
                text = self.store.get_summary(key) or text
        self.cache[key] = text
        return text

    def _empty(self, asked: str) -> None:
        self.stats["empty"] += 1
        self.empty.append(asked)
        if self.stats["empty"] == 1:
            warnings.warn(
                f"summariser {self.model_label}: the model returned an empty summary (kept in "
                "LLM.empty, not cached; LLM.stats['empty'] counts them)",
                UserWarning,
                stacklevel=3,
            )

    @property
    def model_label(self) -> str:
        """The model's name for messages: its model id or path, else its type."""
        from ctxlab._evaluate.probe_calls import model_name

        return model_name(self.chat_model)

    def _ask(self, text: str) -> str:
        return self.calls.invoke(self.chat_model, text).text

    def _fitted(self, messages: Sequence[BaseMessage], template: str, asked: str) -> str:
        """The answer to `asked`, or, when it does not fit the window, to the middle cut (as
        LangChain cuts it; again at a smaller window the model's error states, if any) and
        then to a chunked summary."""
        window = model_window(self.chat_model, self.window)
        size = _tokens(asked, self.chat_model)
        if window is None or size <= window:
            try:
                return self._ask(asked)
            except Exception as exc:
                if not is_overflow(exc):
                    raise
                window = self.window or stated_window(exc) or window
        for _ in range(CHUNK_TRIES):
            cut = middle_cut_prompt(messages, template, self.chat_model, window=window)
            if cut is None or (window is not None and _tokens(cut, self.chat_model) > window):
                break
            self.stats["middle_cut"] += 1
            try:
                return self._ask(cut)
            except Exception as exc:
                if not is_overflow(exc):
                    raise
                stated = stated_window(exc)
                if stated is None or (window is not None and stated >= window):
                    window = window or _tokens(cut, self.chat_model) // 2
                    break
                window = stated
        return self._chunked(messages, template, window or size // 2, size)

    def _chunked(
        self, messages: Sequence[BaseMessage], template: str, window: int, asked: int
    ) -> str:
        """Each part of the history that fits the window summarised, then the parts' summaries
        summarised in one call. A part the model still refuses (its tokenizer counts more than
        the approximation) starts it over with the window it states, else two thirds of the
        one tried, `CHUNK_TRIES` times at most; then `SummaryError`."""
        self.stats["chunked"] += 1
        for _ in range(CHUNK_TRIES):
            try:
                return self._chunked_within(messages, template, window, asked)
            except _PartOverflow as part:
                stated = stated_window(part.error)
                window = stated if stated is not None and stated < window else window * 2 // 3
        self._fail(window, asked, "every part overflowed, the window shrunk each time")
        raise AssertionError("unreachable")

    def _chunked_within(
        self, messages: Sequence[BaseMessage], template: str, window: int, asked: int
    ) -> str:
        """`_chunked` at one window: raises `_PartOverflow` when the model refuses a part."""
        fixed = _tokens(template.format(messages=""), self.chat_model)
        budget = int(window * CHUNK_SHARE)  # a whole part's prompt, by the approximate count
        if fixed >= budget:
            self._fail(window, asked, f"the prompt alone is ~{fixed:,} tokens")
        parts: list[str] = []
        for chunk in _chunks(messages, template, self.chat_model, budget):
            prompt = format_prompt(chunk, template)
            if _tokens(prompt, self.chat_model) > budget:  # one message alone too long
                room = (budget - fixed) * 5 // 2  # the middle cut keeps 2/5 of its window
                prompt = middle_cut_prompt(chunk, template, self.chat_model, window=room) or ""
            parts.append(self._ask_part(prompt).strip())
        joined = "\n\n".join(
            f"Summary of part {i} of {len(parts)}:\n{part}" for i, part in enumerate(parts, 1)
        )
        final = template.format(messages=joined).rstrip()
        if _tokens(final, self.chat_model) > window:
            self._fail(window, asked, "the summaries of its parts are themselves too long")
        return self._ask_part(final)

    def _ask_part(self, prompt: str) -> str:
        try:
            return self._ask(prompt)
        except Exception as exc:
            if is_overflow(exc):
                raise _PartOverflow(exc) from exc
            raise

    def _fail(self, window: int, asked: int, why: str) -> None:
        raise SummaryError(
            f"summary input of about {asked:,} tokens does not fit {self.model_label}'s window "
            f"of {window:,} tokens even with the middle cut out or in chunks: {why}. Use a model "
            "with a larger window, pass LLM(model, window=N) with its real window, or lower "
            "the policy's trigger (or its trim_tokens_to_summarize) so slices are smaller"
        )


MIDDLE_OMITTED = "\n\n[... middle of conversation omitted ...]\n\n"
"""What LangChain's summarisation puts where it cut the middle of an overflowing history."""


def middle_cut_prompt(
    messages: Sequence[BaseMessage], template: str, chat_model: Any, *, window: int | None = None
) -> str | None:
    """LangChain's summarisation retry after an overflow, owned here (the upstream method is
    private): the XML history keeps its start (where the objective usually is) and its most
    recent part within half its approximate token count and 40% of the model's input window
    (`window`, else its profile's), a quarter of the kept characters from the head; None if
    nothing fits. `tests/test_summarizers.py` compares it with the installed LangChain."""
    formatted = _buffer(list(messages), format="xml")
    cpt = _chars_per_token(chat_model)
    tokens = count_tokens_approximately([HumanMessage(content=formatted)], chars_per_token=cpt)
    budget = tokens // 2
    profile = getattr(chat_model, "profile", None)
    limit = profile.get("max_input_tokens") if isinstance(profile, Mapping) else None
    limit = window if window is not None else limit
    if isinstance(limit, int) and not isinstance(limit, bool):
        budget = min(budget, limit * 2 // 5)
    keep = len(formatted) * budget // max(tokens, 1)
    if keep <= 0:
        return None
    head = keep // 4
    cut = f"{formatted[:head]}{MIDDLE_OMITTED}{formatted[-(keep - head) :]}"
    return template.format(messages=cut).rstrip()


def _chars_per_token(chat_model: Any) -> float:
    anthropic = type(chat_model).__module__.startswith("langchain_anthropic")
    return tk.ANTHROPIC_CHARS_PER_TOKEN if anthropic else tk.CHARS_PER_TOKEN


def _tokens(text: str, chat_model: Any) -> int:
    """LangChain's approximate token count of a prompt sent as one human message."""
    cpt = _chars_per_token(chat_model)
    return count_tokens_approximately([HumanMessage(content=text)], chars_per_token=cpt)


def _chunks(
    messages: Sequence[BaseMessage], template: str, chat_model: Any, budget: int
) -> Iterator[list[BaseMessage]]:
    """Consecutive runs of `messages` whose prompt stays within `budget` tokens (a message too
    long on its own is a run by itself)."""
    chunk: list[BaseMessage] = []
    for message in messages:
        if chunk and _tokens(format_prompt([*chunk, message], template), chat_model) > budget:
            yield chunk
            chunk = []
        chunk.append(message)
    if chunk:
        yield chunk


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


_IDENT = re.compile(r"\b(?:[A-Za-z_]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z][a-z]+[A-Z]\w*)\b")
_NUMBER = re.compile(r"(?<![\w.\-/])\d{2,}(?:\.\d+)?(?![\w/])")
_NAMES = (_IDENT, _NUMBER)

_ERROR_LINE = re.compile(
    r"\s*(?:E\s+)?(?:FAILED\b|ERROR\b|Error\b|error\b|fatal:|\w*(?:Error|Exception):)"
)
_ERROR_MESSAGE = re.compile(r"\w(?:Error|Exception): \S")
"""A line saying what went wrong (pytest's `E   KeyError: 'x'`), preferred over a bare FAILED."""
_WRITES = re.compile(r"write|edit|create|delete|remove|move|rename|patch|apply|insert|replace")
"""Tool names that change files (`write_file`, `edit_file`, `apply_patch`, ...)."""


@lru_cache(maxsize=1 << 10)
def _writes(tool: str) -> bool:
    """`tool` changes files (`_WRITES`), remembered: a summary asks it of every path's tools,
    and a conversation uses few tool names."""
    return _WRITES.search(tool) is not None


@lru_cache(maxsize=1 << 16)
def _line_names(line: str) -> tuple[list[str], list[str]]:
    """`_IDENT` and `_NUMBER` matches of one line, remembered (read-only lists)."""
    return _IDENT.findall(line), _NUMBER.findall(line)


_TO_LINE_END = re.compile("[^\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]*")
"""Up to the first of the characters `str.splitlines` breaks at."""


def _first_line(text: str, limit: int) -> str:
    """The first non-blank line of `text`, stripped and clipped to `limit`: the line
    `text.splitlines()` gives, found without splitting the rest (every line break is
    whitespace, so stripping the text's start skips the blank lines)."""
    found = _TO_LINE_END.match(text.lstrip())
    line = found.group().rstrip() if found else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _clip_words(lines: list[str], budget: int) -> list[str]:
    """`lines` cut to `budget` words in total; a leading "- " bullet marker is not a word."""
    out = []
    for line in lines:
        if budget <= 0:
            break
        marker = "- " if line.startswith("- ") else ""
        words = line[len(marker) :].split()
        out.append(marker + " ".join(words[:budget]) + ("..." if len(words) > budget else ""))
        budget -= len(words)
    return out


_AI, _HUMAN, _TOOL, _OTHER = range(4)
_Row = tuple[int, str, tuple[tuple[str, str], ...], tuple[str, ...], str | None]
"""`_Conversation._row`: (role, first line or "", (path, tool) of its calls, paths mentioned,
what a tool result's error entry says or None)."""


class Memo:
    """Where a summary's per-message facts come from: computed every time (`Extractive`)."""

    remembers: ClassVar[bool] = False
    """Whether facts outlive the summary (`Remembered`). Then a tool result's row carries its
    error too (`_Conversation._row`), worked out once for every later summary; here rows
    carry none, and errors are worked out only for a section that lists them (working them
    out for every row a walk read made a 1,000-turn Deep Agents replay 7% slower)."""

    def __call__(self, message: BaseMessage, fact: str, compute: Callable[[], Any]) -> Any:
        """The `fact` of `message`: `compute()`."""
        return compute()

    def each(
        self, messages: Sequence[BaseMessage], fact: str, make: Callable[[BaseMessage], Any]
    ) -> list[Any]:
        """The `fact` of every message: `make(message)`."""
        return [make(m) for m in messages]


class Remembered(Memo):
    """Facts remembered per live message object in `ctxlab._cost.tokens.derived`
    (`CachedExtractive`),
    keyed by fact and `line_chars`."""

    remembers: ClassVar[bool] = True

    def __init__(self, line_chars: int) -> None:
        self.line_chars = line_chars

    def __call__(self, message: BaseMessage, fact: str, compute: Callable[[], Any]) -> Any:
        """The `fact` of `message`, computed once per message object."""
        return tk.derived(message, ("extractive", fact, self.line_chars), compute)

    def each(
        self, messages: Sequence[BaseMessage], fact: str, make: Callable[[BaseMessage], Any]
    ) -> list[Any]:
        """The `fact` of every message, the memo lookup inlined (`tokens.derived_each`): each
        summary reads one row per message it covers."""
        return tk.derived_each(messages, ("extractive", fact, self.line_chars), make)


def _error_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if _ERROR_LINE.match(ln)]


def _question_lines(text: str) -> list[str]:
    return [ln for ln in text.splitlines() if ln.strip().endswith("?")]


def _called_paths(message: AIMessage) -> list[tuple[str, str]]:
    """(path, tool) of each tool call of `message` naming a `file_path` or `path`."""
    out = []
    for call in message.tool_calls:
        path = call.get("args", {}).get("file_path") or call.get("args", {}).get("path")
        if isinstance(path, str):
            out.append((path, call["name"]))
    return out


WALK = 16
"""Messages a walk through a summary's input reads at a time (`_Conversation._rows_of`)."""

READ_ALL = 4 * WALK
"""`CachedExtractive.read_all`: a summary of at most this many messages reads every
(remembered) row up front, as the walks would read most of them anyway, a block at a time
(Deep Agents' summaries of 35 messages: 32 -> 28 us; of 115, walking stays ahead: 41 against
58 us)."""


class _Conversation:
    """The facts extractors read, each computed at most once per summary and only if a section
    asks for it (replays summarise often; most prompts need three or four of these).

    A message's row (`_row`) is read only where a section needs it: the last statements are
    found walking back from the end, the first artifacts walking forward until there are
    enough, the requests by type; a section that needs every message (`paths`, `said`) reads
    all rows at once (`rows`), up front when the prompt has one (`every_row`). Deep Agents'
    prompt then reads a few dozen rows of a summary of hundreds of messages."""

    def __init__(
        self,
        messages: Sequence[BaseMessage],
        line_chars: int,
        memo: Memo | None = None,
        *,
        every_row: bool = False,
    ) -> None:
        # a list: walks read it by slices (a policy may hand a lazy sequence, `Sent`)
        self.messages = messages if isinstance(messages, list) else list(messages)
        self.line_chars = line_chars
        self.memo: Memo = memo or Memo()
        self._said_tail: list[str] = []  # `_said_last`'s statements so far, newest first
        self._statements: dict[int, list[str]] = {}  # `statements` by limit
        self._said_from = len(self.messages) - 1
        if every_row:  # a section reads them all: one memo pass, and no walks
            humans = [
                m
                for m, row in zip(self.messages, self.rows, strict=True)
                if row[0] == _HUMAN and row[1]
            ]
        else:
            asked = [m for m in self.messages if isinstance(m, HumanMessage)]  # `_row`'s _HUMAN
            rows = self.memo.each(asked, "row", self._row)
            humans = [m for m, row in zip(asked, rows, strict=True) if row[1]]
        self.prior = [h for h in humans if is_summary(h)]
        self.asks = [h for h in humans if not is_summary(h)]

    @cached_property
    def rows(self) -> list[_Row]:
        """Every message's row, in one memo pass."""
        return self.memo.each(self.messages, "row", self._row)

    def _rows_of(
        self, lo: int, hi: int, kinds: type[BaseMessage] | tuple[type[BaseMessage], ...]
    ) -> list[_Row]:
        """The rows of the messages [lo, hi) that are of `kinds`, in order: a walk reads
        rows `WALK` messages at a time, one memo pass each."""
        chosen = [m for m in self.messages[lo:hi] if isinstance(m, kinds)]
        return self.memo.each(chosen, "row", self._row)

    def _row(self, m: BaseMessage) -> _Row:
        """What the common sections read of `m`, in one memo entry (one lookup per message
        and summary instead of one per fact): role, first line if it has text, the paths its
        tool calls name, the paths its text mentions, and, where facts are remembered
        (`Memo.remembers`), a tool result's error (`_error_of`). A tool result's first line is
        left out: no section reads it, and it would split a long result into lines. With the
        error in the row, a summary that reads every row (JetBrains' prompt, 116 messages)
        makes one memo pass, not a second one over its results."""
        text = self.text(m)
        if isinstance(m, ToolMessage):  # no section reads a result's first line
            error = self._error_of(m) if self.memo.remembers else None
            return _TOOL, "", (), tuple(PATH.findall(text[:4000])), error
        first = self.line(text) if text.strip() else ""
        if isinstance(m, AIMessage):
            return _AI, first, tuple(_called_paths(m)), (), None
        if isinstance(m, HumanMessage):
            return _HUMAN, first, (), tuple(PATH.findall(text[:4000])), None
        return _OTHER, first, (), (), None

    def text(self, m: BaseMessage) -> str:
        return self.memo(m, "text", lambda: message_text(m))

    def line(self, text: str) -> str:
        return _first_line(text, self.line_chars)

    def first(self, m: BaseMessage) -> str:
        """The first non-blank line of a message, clipped to `line_chars`."""
        return self.memo(m, "row", lambda: self._row(m))[1]

    @cached_property
    def said(self) -> list[str]:
        """The first line of every assistant message that has one, in order."""
        return [row[1] for row in self.rows if row[0] == _AI and row[1]]

    def _said_last(self, limit: int) -> list[str]:
        """`said[-limit:]` (limit > 0): from `said` when every row is read, else walking back
        from the end, a later call going on from where the last one stopped (prompts ask for
        the latest statements in several sections)."""
        if "rows" in self.__dict__:
            return self.said[-limit:]
        found, i = self._said_tail, self._said_from  # newest first; where to look next
        while len(found) < limit and i >= 0:
            lo = max(0, i + 1 - WALK)
            for row in reversed(self._rows_of(lo, i + 1, AIMessage)):  # `_row`'s _AI
                if row[1]:
                    found.append(row[1])
            i = lo - 1
        self._said_from = i
        return found[:limit][::-1]

    @cached_property
    def calls(self) -> dict[str, Mapping[str, Any]]:
        return {
            call_id: call
            for m in self.messages
            if isinstance(m, AIMessage)
            for call in m.tool_calls
            if (call_id := call.get("id"))
        }

    def intent(self, section: Section, limit: int) -> list[str]:
        """The first request (a prior summary's own intent line when chaining)."""
        intent = "None"
        if self.prior:
            found = re.search(re.escape(section.header) + r"\s*\n(.+)", self.text(self.prior[0]))
            intent = found.group(1).strip() if found else intent
        if intent == "None" and self.asks:
            intent = self.first(self.asks[0])
        return [intent][:limit]

    def statements(self, section: Section, limit: int) -> list[str]:
        """The last assistant statements: the most recent state of the work (worked out once
        per limit: prompts such as JetBrains' fill four sections with them)."""
        if not limit:
            return []
        done = self._statements.get(limit)
        if done is None:
            done = self._statements[limit] = [f"- {s}" for s in self._said_last(limit)]
        return done

    @cached_property
    def paths(self) -> dict[str, list[str]]:
        """Path -> the tools whose call named it (`file_path` or `path`), in call order, then
        paths only seen in tool results and requests (-> `["mentioned"]`)."""
        found: dict[str, list[str]] = {}
        seen: list[str] = []  # mentioned paths, in order, joined after every called one
        for _, _, called, mentioned, _ in self.rows:
            for path, tool in called:
                found.setdefault(path, []).append(tool)
            seen += mentioned
        for path in seen:
            found.setdefault(path, ["mentioned"])
        return found

    def artifacts(self, section: Section, limit: int) -> list[str]:
        """Paths a tool call read or wrote (with the first tool), then paths seen: the first
        `limit` of `paths`; when not every row is read, walking forward only until there are
        that many."""
        if limit <= 0:
            return []
        if "rows" in self.__dict__:
            return [f"- {p} ({tools[0]})" for p, tools in list(self.paths.items())[:limit]]
        found: dict[str, str] = {}
        for path, tool in self._walked_paths():
            if path not in found:
                found[path] = tool
                if len(found) == limit:
                    break
        return [f"- {p} ({t})" for p, t in found.items()]

    def _walked_paths(self) -> Iterator[tuple[str, str]]:
        """(path, tool) in `paths`' order, called paths then paths seen ("mentioned"), rows
        read `WALK` messages at a time and only as far as the caller goes on."""
        n = len(self.messages)
        for lo in range(0, n, WALK):
            for row in self._rows_of(lo, lo + WALK, AIMessage):  # the rows naming called paths
                yield from row[2]
        for lo in range(0, n, WALK):
            for row in self._rows_of(lo, lo + WALK, (ToolMessage, HumanMessage)):  # mentions
                for path in row[3]:
                    yield path, "mentioned"

    def changes(self, section: Section, limit: int) -> list[str]:
        """Paths a writing tool touched (with that tool) ahead of the other artifacts, for
        prompts that ask what changed rather than what was looked at."""
        written: list[str] = []  # in call order, then the others in call order
        others: list[str] = []
        for p, tools in self.paths.items():
            tool = next((t for t in tools if _writes(t)), None)
            if tool is not None:
                written.append(f"- {p} ({tool})")
                if len(written) == limit:
                    break
            elif len(others) < limit:
                others.append(f"- {p} ({tools[0]})")
        return (written + others)[:limit]

    def next(self, section: Section, limit: int) -> list[str]:
        """What was asked last and what the assistant was doing: where to resume."""
        steps = [f"- Last request: {self.first(self.asks[-1])}"] if self.asks else []
        last = self._said_last(1)
        if last:
            steps.append(f"- Last assistant step: {last[0]}")
        return steps[:limit]

    def errors(self, section: Section, limit: int) -> list[str]:
        """Failed tool calls and error lines in tool results, latest last, one per result."""
        return self._errors[-limit:] if limit else []

    @cached_property
    def _errors(self) -> list[str]:
        """Every error entry, latest last (a repeated one at its latest place), worked out
        once per summary: prompts often have two sections that list errors."""
        found: dict[str, None] = {}
        results = [m for m in self.messages if isinstance(m, ToolMessage)]  # `_row`'s _TOOL
        if not self.memo.remembers:  # rows carry no errors
            said_each: Iterable[str | None] = map(self._error_of, results)
        elif "rows" in self.__dict__:  # read already: no second memo pass
            said_each = (row[4] for row in self.rows if row[0] == _TOOL)
        else:
            said_each = (row[4] for row in self.memo.each(results, "row", self._row))
        for m, said in zip(results, said_each, strict=True):
            if said is None:
                continue
            tool = m.name or self.calls.get(m.tool_call_id, {}).get("name", "tool")
            found.pop(entry := f"- {tool}: {said}", None)
            found[entry] = None
        return list(found)

    def _error_of(self, m: ToolMessage) -> str | None:
        """What a result's error entry says after its tool (the error line, clipped, and how
        many more), or None: a fact of the message alone, kept in its row where facts are
        remembered (`_row`)."""
        lines = _error_lines(self.text(m))
        if not lines and m.status != "error":
            return None
        what = (
            self.text(m)
            if m.status == "error"
            else next((ln for ln in lines if _ERROR_MESSAGE.search(ln)), lines[0])
        )
        more = f" (+{len(lines) - 1} more)" if len(lines) > 1 else ""
        return f"{self.line(what)}{more}"

    def questions(self, section: Section, limit: int) -> list[str]:
        """Questions the user or the assistant asked, latest last."""
        found: dict[str, None] = {}
        asked = [m for m in self.messages if isinstance(m, HumanMessage | AIMessage)]
        for lines in self.memo.each(asked, "questions", lambda m: _question_lines(self.text(m))):
            for ln in lines:
                found.pop(q := f"- {self.line(ln)}", None)
                found[q] = None
        return list(found)[-limit:] if limit else []

    def users(self, section: Section, limit: int) -> list[str]:
        """Every user request, latest last."""
        return [f"- {self.first(h)}" for h in self.asks[-limit:]] if limit else []

    def identifiers(self, section: Section, limit: int) -> list[str]:
        """Names and numbers the conversation repeats most (ties: first seen first).

        Counted over each message's first 4,000 characters; matching message by message gives
        the matches of the joined text, since no pattern matches across a line break."""
        lines = []
        for k, label in enumerate(("Identifiers", "Numbers")):
            found = itertools.chain.from_iterable(
                self.memo.each(self.messages, label, partial(self._names, k=k))
            )
            common = [w for w, _ in Counter(found).most_common(limit)]
            if common:
                lines.append(f"- {label}: {', '.join(common)}")
        return lines[:limit]

    def _names(self, m: BaseMessage, k: int) -> list[str]:
        """The identifiers (`k` 0) or numbers (1) in `m`'s first 4,000 characters. A summary
        message is new at every replay but repeats the lines of earlier summaries and
        messages, so its lines are matched one by one through a cache (the patterns never
        match across a line break, so the matches are the same)."""
        text = self.text(m)[:4000]
        if not is_summary(m):
            return _NAMES[k].findall(text)
        return [w for line in text.split("\n") for w in _line_names(line)[k]]

    def tools(self, section: Section, limit: int) -> list[str]:
        """The last tool calls, each with its first string argument."""
        out = []
        for call in list(self.calls.values())[-limit:] if limit else []:
            arg = next((v for v in call.get("args", {}).values() if isinstance(v, str)), "")
            out.append(f"- {call['name']}" + (f": {self.line(arg)}" if arg.strip() else ""))
        return out


_EXTRACTORS: dict[str, Callable[[_Conversation, Section, int], list[str]]] = {
    "intent": _Conversation.intent,
    "said": _Conversation.statements,
    "artifacts": _Conversation.artifacts,
    "changes": _Conversation.changes,
    "next": _Conversation.next,
    "errors": _Conversation.errors,
    "questions": _Conversation.questions,
    "users": _Conversation.users,
    "identifiers": _Conversation.identifiers,
    "tools": _Conversation.tools,
}


@dataclass(frozen=True)
class Extractive:
    """Offline, deterministic summary in the sections the prompt asks for, built from the
    messages, so two prompts give two different summaries without a model (`PromptDiff`).

    Sections are the prompt's `## HEADING` lines (else `<section name=...>` tags, else
    upper-case fields such as OpenHands' `PENDING: (Tasks that still need to be done)`, else a
    list of labelled items such as `1. Pending Tasks: ...` or Codex's `- Goal / user
    objective`, outermost level only); `<example>` blocks are skipped. Each section is filled
    by keyword in its title (a field's bracketed description if its name says nothing):

    * intent, goal, task, request: the first request (a prior summary's own line when chaining);
    * summary, decisions, progress, current work, and any title matching nothing: the last
      assistant statements;
    * artifacts, files, paths: paths with the tool that touched them ("changed", "modified":
      paths a writing tool touched first);
    * next, todo, pending, remaining: the last request and the last assistant step;
    * errors, failures, problems: failed tool calls and error lines of tool results;
    * questions: questions asked; identifiers, numbers, values, concepts: the names and
      numbers repeated most; tools, commands, actions: the last tool calls; "user messages":
      every request.

    A prompt naming none of these gets deepagents' four sections. "At most N words/bullets"
    holds for the whole summary (headings not counted), or for each section if it says so.
    The deepagents prompt gives exactly the text this class wrote before it read prompts.
    """

    max_items: int = 8
    line_chars: int = 200
    read_all: ClassVar[int] = 0
    """Summaries of at most this many messages read every row up front (`READ_ALL`); none
    here: each row is worked out afresh, so reading only what the sections need saves work
    (reading all made a 1,000-turn Deep Agents replay 18 -> 29 ms)."""

    @property
    def name(self) -> str:
        """`extractive:<max_items>:<line_chars>` (the prompt is part of the policy's identity)."""
        return f"extractive:{self.max_items}:{self.line_chars}"

    def _memo(self) -> Memo:
        """Where per-message facts are kept: nowhere here (`CachedExtractive` keeps them)."""
        return Memo()

    def summarize(self, messages: Sequence[BaseMessage], *, prompt: str = DEFAULT_PROMPT) -> str:
        """One block per section of `prompt`; "None" where the conversation gives nothing."""
        every_row, plan = _plan(prompt, self.max_items)
        every_row = every_row or len(messages) <= self.read_all
        conversation = _Conversation(messages, self.line_chars, self._memo(), every_row=every_row)
        blocks = []
        for extract, section, limit, words in plan:
            lines = extract(conversation, section, limit)
            body = "\n".join(lines if words is None else _clip_words(lines, words)) or "None"
            blocks.append("\n".join(filter(None, [section.header, body, section.footer])))
        return "\n\n".join(blocks)


_Step = tuple[Callable[["_Conversation", Section, int], list[str]], Section, int, "int | None"]


@lru_cache(maxsize=256)
def _plan(prompt: str, max_items: int) -> tuple[bool, tuple[_Step, ...]]:
    """What `Extractive.summarize` does for `prompt`: whether a section reads every message
    (`every_row`), and each section's extractor, item limit and word limit, worked out once
    per prompt (a replay summarises with the same prompt dozens of times)."""
    asked = outline(prompt, DEFAULT_PROMPT)
    steps = []
    for i, section in enumerate(asked.sections):
        bullets = asked.share(asked.bullets, i)
        limit = max_items if bullets is None else min(max_items, bullets)
        steps.append((_EXTRACTORS[section.extractor], section, limit, asked.share(asked.words, i)))
    return any(s.extractor == "changes" for s in asked.sections), tuple(steps)


@dataclass(frozen=True)
class CachedExtractive(Extractive):
    """`Extractive` with its per-message facts remembered per message object: same text and
    `name` as `Extractive(max_items, line_chars)`, faster when the same trace is summarised
    again.

    A slider re-replays one trace many times, and each replay summarises overlapping slices of
    the same message objects; `Extractive` re-reads every message's text and re-runs its
    regexes (paths, error lines, identifiers, numbers) each time: 25 ms a summary on a
    catalogue preset's long slices, 300 ms a 1,000-turn replay. The facts depend only on the
    message (and `line_chars`), so they live in `ctxlab._cost.tokens.derived`, the memo that already
    keeps each live message's size and edited copies and forgets them with the message.
    """

    read_all: ClassVar[int] = READ_ALL

    def _memo(self) -> Memo:
        return Remembered(self.line_chars)


__all__ = [
    "DEFAULT_PROMPT",
    "LLM",
    "PromptError",
    "SummaryError",
    "checked_prompt",
    "literal_prompt",
    "CachedExtractive",
    "Extractive",
    "Fixed",
    "Summarizer",
    "format_prompt",
]
