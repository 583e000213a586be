"""Typed facts of a conversation: what a compaction can lose, and how to tell if it did.

`extract(trace)` reads every message of the full history and returns the facts a researcher
would check a compacted context for: the `goal` (the first request), the user's constraints
(`instruction`), plan items (`todo`), file `path`s, shell `command`s and tool invocations,
`error` lines, measured `number`s, code `identifier`s and `url`s. Precision comes before
recall: each category takes only shapes that are almost always what the category says, from
the messages where they mean something (docs/facts.md lists the rules, with examples).

`mentions(text, fact)` is the one test every consumer uses ("does this request, summary, file
or model output still hold the fact?"): exact, case-sensitive, after `normalise` on both
sides, and bounded so a fact is not found inside a longer token. Facts are always found again
in `message_text` of the message they came from.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import message_facts
from ctxlab import tokens as tk
from ctxlab.trace import Trace

CATEGORIES = (
    "goal",
    "instruction",
    "todo",
    "path",
    "command",
    "error",
    "number",
    "identifier",
    "url",
)
"""Fact categories, in the order tables list them."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact: its text as it first appears (verbatim, stripped), its category (one of
    `CATEGORIES`) and the full-history position (`trace.messages` index) of that message."""

    text: str
    category: str
    message: int


MAX_FACT_CHARS = 300
"""Longest fact text: longer commands, goals and sentences are cut at a space before this
(a verbatim prefix, so `mentions` still finds them); longer instruction sentences are skipped
(pasted material, not a constraint someone wrote)."""

MAX_INVOCATION_CHARS = 200
"""Longest `name({args})` invocation kept as a `command` fact: longer argument sets are file
contents or edits, not something a reader (or the agent) names again."""

SHELL_TOOLS = frozenset(
    {
        "bash",
        "shell",
        "sh",
        "zsh",
        "execute",
        "execute_bash",
        "execute_command",
        "exec_command",
        "run_command",
        "run_shell_command",
        "shell_command",
        "local_shell",
        "terminal",
        "powershell",
    }
)
"""Tool names (lower-cased) whose `command`/`cmd` argument is a shell command line."""

TODO_TOOLS = {
    "write_todos": ("todos", "content"),
    "todowrite": ("todos", "content"),
    "update_plan": ("plan", "step"),
}
"""Plan tools (lower-cased name -> list argument, item field): Deep Agents `write_todos`,
Claude Code `TodoWrite`, Codex `update_plan`."""

READ_TOOLS = frozenset(
    {
        "read_file",
        "read",
        "view",
        "open",
        "cat",
        "str_replace_editor",
        "ls",
        "glob",
        "grep",
        "find_file",
        "search_file",
        "search_dir",
    }
)
"""Tools whose results are file contents or listings: their lines are code and data, not
errors that happened or values that were measured, so no `error` or `number` facts."""


def message_text(message: BaseMessage) -> str:
    """The text a fact can be found in: the content's text blocks, then, for an assistant
    message, each tool call as `name({args})` with its arguments as JSON (keys in the order the
    model wrote them, non-ASCII kept), one a line.

    Extraction and every survival check read this same text, so a fact found in a message is
    found again wherever that message is sent unchanged, and not where a policy changed it
    (a truncated argument, an offload stub). Memoised per live message object.
    """
    if not isinstance(message, AIMessage) or not message.tool_calls:
        return message_facts.message_text(message)
    return tk.derived(message, "facts_text", lambda: _with_calls(message))


def _with_calls(message: AIMessage) -> str:
    parts = [message_facts.message_text(message)]
    parts.extend(invocation(call["name"], call.get("args")) for call in message.tool_calls)
    return "\n".join(parts)


def invocation(name: str, args: Any) -> str:
    """A tool call as `message_text` writes it: `read_file({"file_path": "/src/app.py"})`."""
    return f"{name}({json.dumps(args or {}, ensure_ascii=False)})"


def normalise(text: str) -> str:
    """`text` with every whitespace run collapsed to one space and the ends stripped: the
    only normalisation `mentions` applies (case and punctuation are kept)."""
    return " ".join(text.split())


@lru_cache(maxsize=65536)
def keys(fact: Fact) -> tuple[str, ...]:
    """The normalised forms `mentions` looks for: the fact's text, and the same text escaped as
    a JSON string when that differs (a command or todo with quotes, backslashes or newlines is
    written that way inside a tool call's arguments)."""
    plain = normalise(fact.text)
    escaped = normalise(json.dumps(fact.text, ensure_ascii=False)[1:-1])
    return (plain,) if escaped == plain else (plain, escaped)


def mentions(text: str, fact: Fact) -> bool:
    """Does `text` hold `fact` verbatim?

    Both sides are `normalise`d (whitespace runs collapsed); matching is case-sensitive and
    exact otherwise, also inside JSON-escaped tool arguments (`keys`). The match must not
    continue a longer token: a fact starting or ending with a letter, digit or `_` needs a
    non-word character (or the text's end) beside it, and one ending in a word character may
    not be followed by `.`, `/` or `-` plus a word character, so `app.py` is not found in
    `myapp.py`, `/src/app.py` not in `/src/app.py.bak`, `v2.3` not in `v2.3.1`.
    Callers testing many facts against one text should `normalise` it once and use
    `mentions_normalised`.
    """
    return mentions_normalised(normalise(text), fact)


def mentions_normalised(haystack: str, fact: Fact) -> bool:
    """`mentions` for a text already passed through `normalise`."""
    return any(key in haystack and _bounded(haystack, key) for key in keys(fact))


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _fits(text: str, at: int, key: str) -> bool:
    """Is `key`, found at `at` in `text`, a whole token there (the boundary `mentions` asks)?"""
    end = at + len(key)
    if at:
        before = text[at - 1]
        escape = before in "nt" and at >= 2 and text[at - 2] == "\\"
        if not escape and (
            (_word(key[0]) and _word(before))
            or (key[0] == "/" and (_word(before) or before in "/.-~"))
        ):
            return False
    if end < len(text) and _word(key[-1]):
        after = text[end]
        if _word(after) or (after in "./-" and end + 1 < len(text) and _word(text[end + 1])):
            return False
    return True


def _bounded(haystack: str, key: str) -> bool:
    """Some occurrence of `key` in `haystack` is a whole token (`_fits`)."""
    at = haystack.find(key)
    while at >= 0:
        if _fits(haystack, at, key):
            return True
        at = haystack.find(key, at + 1)
    return False


# --- what is not the user's or the agent's own text -------------------------------------------

_HARNESS_BLOCK = re.compile(
    r"<(system-reminder|local-command-caveat|local-command-stdout|local-command-stderr|"
    r"command-name|command-message|environment_context|user_instructions|INSTRUCTIONS)>"
    r".*?</\1>",
    re.S,
)
"""Blocks a harness injects into user messages (Claude Code reminders and slash-command
echoes, Codex environment context and AGENTS.md instructions)."""

_COMMAND_ARGS = re.compile(r"</?command-args>")

_HARNESS_START = (
    "Base directory for this skill:",
    "# AGENTS.md instructions for",
    "Caveat: The messages below were generated by the user while running local commands",
    "Tool result too large, the result of this tool call",
    "Message content too large and was saved to the filesystem at:",
    "You are in the middle of a conversation that has been summarized.",
    "Here is a summary of the conversation to date:",
    "This session is being continued from a previous conversation",
    "Another language model started to solve this problem",
    "Old environment output: (",
)
"""Starts of texts a harness or a compaction writes (skill and AGENTS.md expansions, Deep
Agents offload stubs and summary message, LangChain, Claude Code and Codex summaries,
SWE-agent's masked observation): such a message holds no facts of its own."""

_HARNESS_WHOLE = {"[cleared]", "Error: parallel file mutations to the same path are not allowed."}

_CLIP_NOTICE = re.compile(
    r"\n\n\[Output was truncated due to context window size limits\..*\]$", re.S
)


def _injected(text: str) -> bool:
    head = text.lstrip()
    return head.startswith(_HARNESS_START) or head.strip() in _HARNESS_WHOLE


def _own_text(text: str) -> str:
    """A message's text without the harness blocks inside it (offsets kept: blanked out)."""
    text = _CLIP_NOTICE.sub(lambda m: " " * len(m.group()), text)
    text = _HARNESS_BLOCK.sub(lambda m: " " * len(m.group()), text)
    return _COMMAND_ARGS.sub(lambda m: " " * len(m.group()), text)


# --- patterns ----------------------------------------------------------------------------

URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s<>\"'`{}|\\^]+")
_URL_TAIL = ".,;:!?*'\")]}"

_EXTENSIONS = (
    "py|pyi|pyx|ipynb|js|mjs|cjs|jsx|ts|tsx|vue|svelte|json|jsonl|yaml|yml|toml|ini|cfg|conf|"
    "lock|md|mdx|rst|txt|csv|tsv|parquet|xml|html|htm|css|scss|sass|less|sql|sqlite|duckdb|"
    "sh|bash|zsh|ps1|bat|rs|go|java|kt|kts|scala|c|h|cc|cpp|hpp|hh|cs|rb|php|lua|swift|jl|ex|"
    "exs|erl|hs|clj|dart|pony|zig|nim|gradle|mk|cmake|proto|graphql|gql|tf|hcl|dockerfile|"
    "log|diff|patch|pdf|png|jpg|jpeg|gif|svg|webp|ico|zip|gz|tgz|xz|bz2|tar|whl|so|dylib|dll|"
    "exe|pkl|pt|npy|npz|h5|onnx|wasm|eval|traj"
)
_BEFORE = r"(?:(?<=\\[nt])|(?<![\w/.~:@\-\\$%]))"
"""A fact starts the text, or follows a character that cannot continue it; `\n` and `\t`
escapes count as separators (tool results are often JSON-encoded text)."""

PATH = re.compile(
    _BEFORE + r"(?:"
    r"(?:~|\.{1,2})?+/[\w.\-+@]++(?:/[\w.\-+@]++)*+/?+"  # /abs/path, ~/x, ./x, ../x
    r"|[\w.\-+@]++(?:/[\w.\-+@]++)++/?+"  # rel/path
    r"|[\w\-+@][\w.\-+@]*+"  # file.ext (checked in `_path`)
    r")"
    r"(?![\w/(])"
)
"""Path candidates (possessive: a candidate is never a shortened token); `_path` decides."""

MAX_PATH_CHARS = 250
_PATH_TAIL = ".,:;'\"`)]}"
_HAS_EXT = re.compile(r"\.(?:" + _EXTENSIONS + r")$", re.I)
_ALL_DIGITS = re.compile(r"^[\d/.\-:]+$")
_BRAND_JS = re.compile(r"^[A-Z]\w*\.js$")


def _path(raw: str) -> str | None:
    """`raw` as a path fact, or None: absolute paths with an extension or two parts,
    relative ones with an extension, a trailing slash or two slashes; never a date, fraction
    or version (`2024/01/02`, `3/4`), never a product name (`Next.js`)."""
    p = raw.rstrip(_PATH_TAIL)
    if not 3 <= len(p) <= MAX_PATH_CHARS or _ALL_DIGITS.match(p) or _BRAND_JS.match(p):
        return None
    body = p.rstrip("/")
    parts = body.split("/")
    if body.startswith("/"):
        parts = parts[1:]
    if not parts or any(not s or (".." in s and s != "..") for s in parts):
        return None
    if all(s in {".", "..", "~"} for s in parts):
        return None
    ext = bool(_HAS_EXT.search(parts[-1]))
    slashes = body.count("/")
    if p.startswith(("/", "~/", "./", "../")):
        return p if ext or len(parts) >= 2 else None
    if slashes == 0:
        return p if ext and not p.endswith("/") else None
    if ext or slashes >= 2 or p.endswith("/"):
        return p
    return None


_NUM = r"(?:\d{1,3}(?:,\d{3})++|\d++)(?:\.\d++)?+"
_SUFFIX = r"(?:[-+.]?(?:rc|a|b|alpha|beta|dev|post|pre)(?:\.?\d+)?)?+"
_UNITS = (
    r"ms|µs|us|ns|s|sec|secs|seconds?|mins?|minutes?|h|hrs?|hours?|days?|"
    r"[KMGT]i?B|kB|bytes?|[KMGT]bps|Hz|[kKMG]Hz|"
    r"tokens?|chars?|characters?|lines?|rows?|records?|files?|tests?|items?|entries|"
    r"requests?|calls?|errors?|failures?|warnings?|passed|failed|skipped|errored|"
    r"turns?|messages?|steps?|commits?|stars?|issues?|words?|pages?|iterations?|epochs?|"
    r"users?|samples?|points?|nodes?|edges?|columns?|tables?|queries|documents?|docs|"
    r"retries|attempts?|runs?|modules?|functions?|classes|packages?|dependencies|"
    r"rps|qps|req/s|ops/s|it/s|fps|x|×"
)
NUMBER = re.compile(
    r"(?<![\w.\-/:#@$\\])"
    r"(?:"
    r"v\d++(?:\.\d++){1,3}+"
    + _SUFFIX  # v2.3.1
    + r"|\d++\.\d++\.\d++"
    + _SUFFIX  # 2.3.1
    + r"|\$"
    + _NUM
    + r"(?:\s?[kKMB]\b)?+"  # $0.41
    r"|" + _NUM + r"\s?+%"  # 87%
    r"|" + _NUM + r"\s?+(?:" + _UNITS + r")(?![\w/])"  # 23.4 ms, 1,204 rows
    r")"
    r"(?![\w.]?\d)"
)
"""Measured values with a unit, counts of something, percentages, money and versions."""

_SMALL_COUNT = re.compile(r"^\d\s?+(?!passed|failed|skipped|errors?|errored|failures?)[A-Za-z]")
"""A one-digit count ("2 files"): too small to be a measurement, except test outcomes."""
_IP_LIKE = re.compile(r"^\d+\.\d+\.\d+\.\d+$")

IDENTIFIER = re.compile(
    r"(?<![\w.\-/@$#:\\])"
    r"[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)*+(?:\(\))?+"
    r"(?![\w\-/@(])"
)
"""Word tokens, dotted ones and calls (possessive: always whole); `_identifier` decides."""

_SNAKE = re.compile(r"^_*[A-Za-z][A-Za-z0-9]*(?:_+[A-Za-z0-9]+)+_*$")
_CAMEL = re.compile(r"^[a-z][a-z0-9]+(?:[A-Z][a-z0-9]+)+[A-Z]?$")
_PASCAL = re.compile(r"^[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+$")
_PLAIN_WORD = re.compile(r"^[A-Za-z][a-z]*$")
_BRANDS = frozenset(
    "JavaScript TypeScript CoffeeScript GitHub GitLab BitBucket LangChain LangGraph LangSmith "
    "YouTube PowerPoint LinkedIn WordPress OpenAI OpenHands DeepAgents DeepSeek PyPI PyTorch "
    "TensorFlow MacBook MacOS PlayStation DevOps FastAPI GraphQL NoSQL PostgreSQL MySQL "
    "SQLite DuckDB MongoDB WebSocket WebSockets OAuth iPhone iPad VSCode VsCode JetBrains "
    "PyCharm IntelliJ CloudFlare DigitalOcean HuggingFace ChatGPT ClickHouse NextJs ReactJs "
    "NodeJs VueJs VueJS TodoMVC McDonald McKinsey OpenTelemetry PowerShell AutoGen CrewAI "
    "LlamaIndex SwiftUI".split()
)
_DOMAIN_TAIL = re.compile(r"\.(?:com|org|net|io|ai|dev|gov|edu|uk|co|app|sh|me|us|de|fr)$")
_ID_NOISE = re.compile(
    r"^(?:toolu|call|msg|run|chatcmpl|resp|req|sess|sesn|fc|item|rs|evt|ws)_|[0-9a-f]{8,}", re.I
)
_ENGLISH_DOTTED = frozenset({"e.g", "i.e", "a.m", "p.m", "u.s", "et.al", "vs"})


def _identifier(token: str) -> bool:
    """Is `token` (a whole word, dotted name or call) a code identifier rather than a word?

    Calls `name()`, snake_case (an inner underscore), camelCase and PascalCase with two humps
    (not product names), dotted names whose parts are identifiers or lower-case modules
    (not `e.g`, domains, file names, or `word.Word` typos at a sentence end)."""
    if token.endswith("()"):
        return len(token) >= 5
    if token in _BRANDS or _ID_NOISE.search(token):
        return False
    if "." in token:
        if token.lower() in _ENGLISH_DOTTED or _DOMAIN_TAIL.search(token):
            return False
        if _HAS_EXT.search(token):
            return False
        parts = token.split(".")
        if any(len(s) < 2 for s in parts):
            return False
        if any(
            _PLAIN_WORD.match(a) and a.islower() and b[:1].isupper()
            for a, b in zip(parts, parts[1:], strict=False)
        ):
            return False
        return any(not _PLAIN_WORD.match(s) or s.islower() for s in parts) and not all(
            s.isdigit() for s in parts
        )
    if "_" in token:
        if not _SNAKE.match(token):
            return False
        core = token.strip("_")
        if len(core) < 3:
            return False
        return not any(sum(ch.isdigit() for ch in part) >= 5 for part in core.split("_"))
    return bool(_CAMEL.match(token) or _PASCAL.match(token))


_ERROR = re.compile(
    r"^[ \t]*(?:E[ \t]+)?(?:[\w./\\-]+:\d+(?::\d+)?:[ \t]*)?"
    r"(?P<fact>"
    r"(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault)(?::[ \t]+\S.*)?"
    r"|(?:error|ERROR|Error|fatal|FATAL|Fatal|panic|npm ERR!)(?:\[[\w\-]+\])?[:!][ \t]+\S.*"
    r"|FAILED[ \t]+\S.*"
    r"|.*\b(?:[Ee]xit(?:ed)?(?: with)? (?:code|status)|returned non-zero exit status)"
    r"[: ]+[1-9]\d*\b.*"
    r"|.*\bcommand not found\b.*"
    r"|.*\bSegmentation fault\b.*"
    r")$",
    re.M,
)
"""An error line: an exception line (`ValueError: ...`, a Traceback's last line), an
`error:`/`fatal:`/`panic:` line, a pytest `FAILED` line, a non-zero exit status."""

_ERROR_CODE_LINE = re.compile(
    r"^\s*(?:raise|except|catch|throw|class|def|import|from|return)\b|"
    r"^\s*\d+[\t→|:]|^\s*\d+ {2}"
)

_INSTRUCTION = re.compile(
    r"(?<![\w\-])(?:must|never|don'?t|do not|doesn'?t need|only|always|make sure|ensure|avoid|"
    r"should(?: not|n'?t)|must not|mustn'?t|cannot|can'?t|no need to|without|instead of)"
    r"(?![\w\-])",
    re.I,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+(?=[\"'(`*A-Z0-9])|\n+")
_LIST_MARK = re.compile(r"^(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+|#+\s+)")
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_QUOTED_BLOCK = re.compile(
    r"<(issue_description|pr_description|issue|code|file|document)>.*?</\1>|"
    r"ISSUE:\n.*?(?=\nINSTRUCTIONS:|\Z)",
    re.S,
)
_CODE_LINE = re.compile(r"[{};=<>]|^\s*(?:#|//|def |class |import |from |return )")
_CHECKLIST = re.compile(r"^[ \t]*[-*+][ \t]+\[[ xX]\][ \t]+(?P<fact>\S.*?)[ \t]*$", re.M)


# --- extraction --------------------------------------------------------------------------


@dataclass(slots=True)
class _Found:
    offset: int
    text: str
    category: str


def extract(trace: Trace) -> list[Fact]:
    """The facts of `trace.messages`, ordered by (message, offset in `message_text`), one per
    distinct `normalise`d text (its first appearance wins, whatever the category).

    Deterministic and linear in the history's size. System messages, summaries and harness
    texts (offload stubs, injected reminders, skill and AGENTS.md expansions) give no facts.
    """
    facts: list[Fact] = []
    seen: set[str] = set()
    goal_done = False
    call_names: dict[str, str] = {}
    for position, message in enumerate(trace.messages):
        found: list[_Found] = []
        if isinstance(message, SystemMessage) or message_facts.is_summary(message):
            continue
        raw = message_facts.message_text(message)
        if _injected(raw):
            continue
        text = _own_text(raw)
        if isinstance(message, AIMessage):
            found.extend(_prose(text))
            base = len(raw) + 1
            for call in message.tool_calls:
                if call.get("id"):
                    call_names[call["id"]] = call["name"]
                found.extend(_call(call, base))
                base += len(invocation(call["name"], call.get("args"))) + 1
        elif isinstance(message, ToolMessage):
            tool = (message.name or call_names.get(message.tool_call_id, "")).lower()
            found.extend(_result(text, tool))
        elif isinstance(message, HumanMessage) or not isinstance(message, AIMessage):
            if not goal_done:
                goal = _goal(text)
                if goal is not None:
                    found.append(goal)
                    goal_done = True
            found.extend(_prose(text, human=True))
        found.sort(key=lambda f: f.offset)
        for item in found:
            key = normalise(item.text)
            if key and key not in seen:
                seen.add(key)
                facts.append(Fact(item.text, item.category, position))
    return facts


def _blank(text: str, spans: Sequence[tuple[int, int]]) -> str:
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for a, b in spans:
        out.append(text[last:a])
        out.append(" " * (b - a))
        last = b
    out.append(text[last:])
    return "".join(out)


def _urls_paths(text: str) -> tuple[list[_Found], str]:
    """URLs and paths of `text`, and the text with both blanked out (so their parts are not
    taken for numbers or identifiers)."""
    found: list[_Found] = []
    spans: list[tuple[int, int]] = []
    for m in URL.finditer(text):
        url = m.group().rstrip(_URL_TAIL)
        if url.count("(") > url.count(")") and m.group()[len(url) : len(url) + 1] == ")":
            url += ")"
        if len(url) > len(m.group(0).split("://")[0]) + 4 and _fits(text, m.start(), url):
            found.append(_Found(m.start(), url, "url"))
        spans.append(m.span())
    masked = _blank(text, spans)
    spans = []
    for m in PATH.finditer(masked):
        path = _path(m.group())
        if path is not None and _fits(masked, m.start(), path):
            found.append(_Found(m.start(), path, "path"))
            spans.append(m.span())
    return found, _blank(masked, spans)


def _numbers(text: str) -> Iterator[_Found]:
    for m in NUMBER.finditer(text):
        value = m.group()
        if _IP_LIKE.match(value):
            continue
        if _SMALL_COUNT.match(value) and not value.endswith(("%", "ms", "s")):
            continue
        if not _fits(text, m.start(), value):
            continue
        yield _Found(m.start(), value, "number")


def _identifiers(text: str) -> Iterator[_Found]:
    for m in IDENTIFIER.finditer(text):
        token = m.group()
        if _identifier(token) and _fits(text, m.start(), token):
            yield _Found(m.start(), token, "identifier")


def _prose(text: str, human: bool = False) -> list[_Found]:
    """Facts of a person's or the model's own writing: urls, paths, numbers, identifiers,
    checklist items, and for a person, instructions and error lines they pasted."""
    found, masked = _urls_paths(text)
    found.extend(_numbers(masked))
    found.extend(_identifiers(masked))
    for m in _CHECKLIST.finditer(text):
        found.append(_Found(m.start("fact"), m.group("fact"), "todo"))
    if human:
        found.extend(_instructions(text))
        found.extend(_errors(text))
    return found


def _result(text: str, tool: str) -> list[_Found]:
    """Facts of a tool result: urls and paths; errors and numbers unless it shows a file."""
    found, masked = _urls_paths(text)
    if tool not in READ_TOOLS:
        found.extend(_numbers(masked))
        found.extend(_errors(text))
    return found


def _errors(text: str) -> Iterator[_Found]:
    for m in _ERROR.finditer(text):
        line_start = text.rfind("\n", 0, m.start()) + 1
        line = text[line_start : m.end()]
        if _ERROR_CODE_LINE.match(line):
            continue
        fact = _clip(m.group("fact").strip())
        if len(fact) >= 4:
            yield _Found(m.start("fact"), fact, "error")


def _instructions(text: str) -> Iterator[_Found]:
    """Sentences of a user's message that constrain the work (must, never, don't, only...)."""
    hidden = _blank(text, [m.span() for m in _FENCE.finditer(text)])
    hidden = _blank(hidden, [m.span() for m in _QUOTED_BLOCK.finditer(hidden)])
    start = 0
    for m in [*_SENTENCE_END.finditer(hidden), None]:
        end = m.start() if m else len(hidden)
        sentence = hidden[start:end]
        offset = start
        start = m.end() if m else end
        stripped = sentence.strip()
        if not stripped or not _INSTRUCTION.search(stripped):
            continue
        lead = len(sentence) - len(sentence.lstrip())
        mark = _LIST_MARK.match(stripped)
        if mark:
            lead += mark.end()
            stripped = stripped[mark.end() :]
        if len(stripped) > MAX_FACT_CHARS or len(stripped.split()) < 3:
            continue
        if _CODE_LINE.search(stripped):
            continue
        yield _Found(offset + lead, stripped, "instruction")


def _goal(text: str) -> _Found | None:
    """The first request: the whole message if short, else its first line, else that line's
    first sentence, else a prefix cut at a space (always verbatim, so `mentions` finds it)."""
    stripped = text.strip()
    if not stripped:
        return None
    offset = len(text) - len(text.lstrip())
    if len(normalise(stripped)) <= MAX_FACT_CHARS:
        return _Found(offset, stripped, "goal")
    line = stripped.split("\n", 1)[0].strip()
    if len(line) > MAX_FACT_CHARS:
        first = re.split(r"(?<=[.!?])\s", line, maxsplit=1)[0]
        line = first if len(first) <= MAX_FACT_CHARS else _clip(line)
    return _Found(offset, line, "goal")


def _clip(text: str) -> str:
    """`text` cut at the last space before `MAX_FACT_CHARS` when longer (a verbatim prefix)."""
    if len(text) <= MAX_FACT_CHARS:
        return text
    cut = text.rfind(" ", 0, MAX_FACT_CHARS)
    return text[: cut if cut > MAX_FACT_CHARS // 2 else MAX_FACT_CHARS].rstrip()


def _call(call: dict[str, Any], base: int) -> list[_Found]:
    """Facts of one tool call: its shell command or its invocation, plan items, and the
    paths and urls in its arguments."""
    name = call["name"]
    args = call.get("args") or {}
    lower = name.lower()
    found: list[_Found] = []
    if lower in TODO_TOOLS:
        field, key = TODO_TOOLS[lower]
        items = args.get(field) if isinstance(args, dict) else None
        for i, item in enumerate(items if isinstance(items, list) else []):
            content = item.get(key) if isinstance(item, dict) else None
            if isinstance(content, str) and content.strip():
                found.append(_Found(base + i, _clip(content.strip()), "todo"))
        return found
    command = _shell_command(lower, args)
    if command is not None:
        found.append(_Found(base, command, "command"))
    else:
        text = invocation(name, args)
        if args and len(text) <= MAX_INVOCATION_CHARS and "\\n" not in text:
            found.append(_Found(base, text, "command"))
    for i, value in enumerate(_strings(args)):
        for item in _urls_paths(value)[0]:
            found.append(_Found(base + 1 + i, item.text, item.category))
    return found


def _shell_command(tool: str, args: Any) -> str | None:
    if tool not in SHELL_TOOLS or not isinstance(args, dict):
        return None
    value = args.get("command", args.get("cmd"))
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        shell = len(value) == 3 and value[0].rsplit("/", 1)[-1] in {"bash", "sh", "zsh"}
        value = value[2] if shell else " ".join(value)
    if not isinstance(value, str) or not value.strip():
        return None
    line = value.strip().split("\n", 1)[0].strip()
    return _clip(line) if len(line) >= 2 else None


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a tool call's arguments, depth first."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


__all__ = [
    "CATEGORIES",
    "Fact",
    "extract",
    "invocation",
    "keys",
    "mentions",
    "mentions_normalised",
    "message_text",
    "normalise",
]
