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
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any
from xml.sax.saxutils import escape as xml_escape

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab import _messages as message_facts
from ctxlab._cost import tokens as tk
from ctxlab._trace import Trace

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

SCAN_EDGE_CHARS = 25_000
"""A message text longer than twice this is read at its first and last `SCAN_EDGE_CHARS`
(cut at line ends); the middle of a long log, listing or file dump is skipped. What a long
output establishes is at its edges (the command's header, the error and summary at the end:
what Deep Agents' own head/tail preview keeps), and this bounds extraction's cost per message."""

MAX_ARG_SCAN_CHARS = 2_000
"""Longest tool-call argument read for paths and urls: longer ones are file contents, edits
and patches the call writes (their target is another, short argument), and exactly what Deep
Agents' argument truncation cuts."""

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


def keys(fact: Fact) -> tuple[str, ...]:
    """The normalised forms `mentions` looks for: the fact's text; the same text escaped as a
    JSON string (a command or todo with quotes, backslashes or newlines is written that way
    inside a tool call's arguments); and both XML-escaped (`&`, `<`, `>`: how LangChain's XML
    transcript, which Deep Agents' history files hold, writes them). Each form once."""
    return tuple(key for key, _ in _keys(fact.text))


@lru_cache(maxsize=65536)
def _keys(text: str) -> tuple[tuple[str, frozenset[str]], ...]:
    """`keys` of a fact text (they depend on the text alone), each with its word runs."""
    forms = [normalise(text), normalise(json.dumps(text, ensure_ascii=False)[1:-1])]
    forms += [xml_escape(form) for form in forms]
    return tuple((key, frozenset(_RUN.findall(key))) for key in dict.fromkeys(forms))


_RUN = re.compile(r"\w+")


def mentions(text: str, fact: Fact) -> bool:
    """Does `text` hold `fact` verbatim?

    Both sides are `normalise`d (whitespace runs collapsed); matching is case-sensitive and
    exact otherwise, also inside JSON-escaped tool arguments and XML-escaped transcripts
    (`keys`). The match must not continue a longer token: a fact starting or ending with a
    letter, digit or `_` needs a non-word character (or the text's end, or a `\\n`/`\\t`
    escape) beside it, a path starting with `/` may not continue a longer path, and a fact
    ending in a word character may not be followed by `.`, `/` or `-` plus a word character:
    `app.py` is not found in `myapp.py`, `/src/app.py` not in `/repo/src/app.py` nor
    `/src/app.py.bak`, `v2.3` not in `v2.3.1`. Callers testing many facts against one text
    use `Haystack` (or `normalise` once and `mentions_normalised`).
    """
    return mentions_normalised(normalise(text), fact)


def mentions_normalised(haystack: str, fact: Fact) -> bool:
    """`mentions` for a text already passed through `normalise`."""
    return any(key in haystack and bounded(haystack, key) for key, _ in _keys(fact.text))


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


def bounded(haystack: str, key: str) -> bool:
    """Some occurrence of `key` in `haystack` is a whole token (`_fits`).

    The first occurrence is tried directly (it is the one that fits, nearly always); past it
    the search is one regular-expression scan (`token_pattern`), linear in the haystack. A
    `find` loop testing every occurrence was quadratic-like on a long run of one character
    (each of its ~n overlapping occurrences failing `_fits`: 8 s for 240,000 characters)."""
    at = haystack.find(key)
    if at < 0:
        return False
    return _fits(haystack, at, key) or token_pattern(key).search(haystack, at + 1) is not None


@lru_cache(maxsize=4096)
def token_pattern(key: str) -> re.Pattern[str]:
    """`key` as a whole token, the boundary `_fits` asks written as lookarounds, so one
    `search` finds the first fitting occurrence. `\\w` is `str.isalnum()` or `_`, as `_word`."""
    body = re.escape(key)
    escape = r"(?<=\\[nt])"
    if key[:1].isalnum() or key[:1] == "_":
        body = rf"(?:(?<!\w)|{escape})" + body
    elif key[:1] == "/":
        body = rf"(?:(?<![\w/.\-~])|{escape})" + body
    if key[-1:].isalnum() or key[-1:] == "_":
        body += r"(?!\w|[./\-]\w)"
    return re.compile(body)


class Haystack:
    """A text prepared for many `mentions` checks: `fact in Haystack(text)` is
    `mentions(text, fact)`, answered faster.

    The text is normalised once, and the set of its word runs is built on the first check: a
    fact whose key holds a word run the text lacks cannot be in it (a whole-token occurrence
    keeps every word run of the key whole, also after a `\\n`/`\\t` escape, which is why the runs
    of the text with those escapes spaced out count too), so most facts are ruled out with a
    set lookup instead of a substring search. Survival builds one per message it checks.
    """

    __slots__ = ("text", "_runs")

    def __init__(self, text: str) -> None:
        self.text = normalise(text)
        self._runs: frozenset[str] | None = None

    def __contains__(self, fact: object) -> bool:
        if not isinstance(fact, Fact):
            return False
        runs = self._runs
        if runs is None:
            spaced = self.text.replace("\\n", " ").replace("\\t", " ")
            runs = self._runs = frozenset(_RUN.findall(self.text)).union(_RUN.findall(spaced))
        text = self.text
        for key, key_runs in _keys(fact.text):
            if key_runs <= runs and key in text and bounded(text, key):
                return True
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
    "Your task is to create a detailed summary of the conversation so far",
)
"""Starts of texts a harness or a compaction writes (skill and AGENTS.md expansions, Deep
Agents offload stubs and summary message, LangChain, Claude Code and Codex summaries,
SWE-agent's masked observation, Claude Code's compaction prompt): such a message holds no
facts of its own."""

_HARNESS_WHOLE = {"[cleared]", "Error: parallel file mutations to the same path are not allowed."}
"""Whole texts a harness writes: LangChain's cleared-tool placeholder, Deep Agents' parallel
mutation error."""

_CLIP_NOTICE = re.compile(
    r"\n\n\[Output was truncated due to context window size limits\..*\]$", re.S
)
"""The notice Deep Agents appends to a `read_file` result it clipped for the budget."""


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
"""Terminal colour and cursor codes in captured command output."""


_BLANKED = (
    (_ANSI, "\x1b"),
    (_CLIP_NOTICE, "[Output was truncated"),
    (_HARNESS_BLOCK, "<"),
    (_COMMAND_ARGS, "command-args>"),
)
"""What `_own_text` blanks out, each with a substring it needs (a scan is skipped without)."""


_LEADING_SPACE = re.compile(r"\s*")


def _injected(text: str) -> bool:
    """Is `text` a harness's or a compaction's own text (`_HARNESS_START`, `_HARNESS_WHOLE`)?"""
    start = _LEADING_SPACE.match(text).end()  # type: ignore[union-attr]
    if text.startswith(_HARNESS_START, start):
        return True
    return len(text) < 100 and text.strip() in _HARNESS_WHOLE


def _own_text(text: str) -> str:
    """A message's text without the harness blocks inside it (offsets kept: blanked out)."""
    for pattern, mark in _BLANKED:
        if mark in text:
            text = pattern.sub(_spaces, text)
    return text


def _edges(text: str) -> str:
    """`text` without its middle: the first and last `SCAN_EDGE_CHARS` (cut at line ends)
    joined by a line break. Offsets past the cut shift, but their order, all extraction uses
    them for, is kept; no fact spans the break."""
    if len(text) <= 2 * SCAN_EDGE_CHARS:
        return text
    head = text.rfind("\n", 0, SCAN_EDGE_CHARS) + 1 or SCAN_EDGE_CHARS
    tail = text.find("\n", len(text) - SCAN_EDGE_CHARS)
    tail = len(text) - SCAN_EDGE_CHARS if tail < 0 else tail
    return text[:head] + "\n" + text[tail:]


def _spaces(match: re.Match[str]) -> str:
    return " " * len(match.group())


# --- patterns ----------------------------------------------------------------------------

URL = re.compile(r"\b(?:https?|ftp|wss?)://[^\s<>\"'`{}|\\^]+")
_URL_TAIL = ".,;:!?*'\")]}$"

_EXTENSIONS = (
    "py|pyi|pyx|ipynb|js|mjs|cjs|jsx|ts|tsx|vue|svelte|json|jsonl|yaml|yml|toml|ini|cfg|conf|"
    "lock|md|mdx|rst|txt|csv|tsv|parquet|xml|html|htm|css|scss|sass|less|sql|sqlite|duckdb|"
    "sh|bash|zsh|ps1|bat|rs|go|java|kt|kts|scala|c|h|cc|cpp|hpp|hh|cs|rb|php|lua|swift|jl|ex|"
    "exs|erl|hs|clj|dart|pony|zig|nim|gradle|mk|cmake|proto|graphql|gql|tf|hcl|dockerfile|"
    "log|diff|patch|pdf|png|jpg|jpeg|gif|svg|webp|ico|zip|gz|tgz|xz|bz2|tar|whl|so|dylib|dll|"
    "exe|pkl|pt|npy|npz|h5|onnx|wasm|eval|traj"
)
_BEFORE = r"(?:(?<![\w/.~:@\-\\$%)}\]])|(?<=\\[nt]))"
"""A fact starts the text, or follows a character that cannot continue it; `\n` and `\t`
escapes count as separators (tool results are often JSON-encoded text)."""

PATH = re.compile(
    _BEFORE + r"(?:"
    r"(?:~|\.{1,2})?+/[\w.\-+@]++(?:/[\w.\-+@]++)*+/?+"  # /abs/path, ~/x, ./x, ../x
    r"|[\w.\-+@]++(?:/[\w.\-+@]++)++/?+"  # rel/path
    r"|[\w\-+@]++(?:\.[\w\-+@]++)++"  # file.ext (the extension is checked in `_path`)
    r")"
    r"(?![\w/($\{])"
)
"""Path candidates (possessive: a candidate is never a shortened token); `_path` decides."""

MAX_PATH_CHARS = 250
_PATH_TAIL = ".,:;'\"`)]}"
_HAS_EXT = re.compile(r"\.(?:" + _EXTENSIONS + r")$", re.I)
_ALL_DIGITS = re.compile(r"^[\d/.\-:]+$")
_BRAND_JS = re.compile(r"^[A-Z]\w*\.js$")


_DIRS = frozenset(
    "src lib libs tests test spec specs docs doc app apps bin scripts script deps vendor "
    "node_modules packages pkg cmd internal build dist out target config configs conf etc "
    "examples example assets static public include tools data fixtures benchmarks bench "
    "notebooks templates components pages hooks types utils api migrations".split()
)
"""First parts that make an extension-less relative path (`src/agents/core`) a path rather
than a slash-separated list of words (`mount/handle_params`, `Elixir/Phoenix/Ash`)."""

_PLUMBING = ("/large_tool_results/", "/conversation_history/")
"""Deep Agents' own offload and history files: a policy's artefacts, not the task's paths."""


def _path(raw: str) -> str | None:
    """`raw` as a path fact, or None.

    Absolute (`/`, `~/`, `./`, `../`): an extension or two parts. Relative: an extension, or a
    trailing slash, or a first part that is a usual directory name (`src/`, `tests/`...), or
    a dot-directory (`.github/workflows`). Bare names need a known extension. Never a date,
    fraction or version (`2024/01/02`, `3/4`), a product (`Next.js`), a git diff side
    (`a/src/x.py` is `src/x.py`: stripped by the caller), `/dev/null` or `_PLUMBING`."""
    p = raw.rstrip(_PATH_TAIL)
    if not 3 <= len(p) <= MAX_PATH_CHARS or _ALL_DIGITS.match(p) or _BRAND_JS.match(p):
        return None
    if p == "/dev/null" or p.startswith(_PLUMBING):
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
    if p.startswith(("/", "~/", "./", "../")):
        return p if ext or len(parts) >= 2 else None
    if len(parts) == 1:
        return p if ext and not p.endswith("/") else None
    if ext or p.endswith("/") or parts[0] in _DIRS or parts[0].startswith("."):
        return p
    return None


_DIFF_SIDE = re.compile(r"^[ab]/(?=[\w.])")
"""`a/` and `b/` in front of a path in a git diff header."""


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
    r"(?<![\w.\-/@$#:\\<])"
    r"(?=[A-Za-z0-9]*+_|\w*+\.[A-Za-z_]|\w*+\(\)|[A-Z]?[a-z0-9]++[A-Z])"
    r"[A-Za-z_]\w*+(?:\.[A-Za-z_]\w*+)*+(?:\(\))?+"
    r"(?![\w\-/@(])"
)
"""Word tokens with an underscore, a dot, a call's `()` or an inner capital, whole (possessive);
`_identifier` decides. Plain words fail the lookahead in C, never reaching Python."""

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
    "LlamaIndex SwiftUI HexDocs GitHubActions CircleCI".split()
)
_DOMAIN_TAIL = re.compile(
    r"\.(?:com|org|net|io|ai|dev|gov|edu|uk|co|app|sh|me|us|de|fr|pm|info|xyz|tv|ly|gg|cloud)$"
)
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
    r"[ \t]*(?:E[ \t]+)?"
    r"(?P<fact>(?:[\w./\\-]+:\d+(?::\d+)?:[ \t]*)?(?:"
    r"(?:[A-Za-z_][\w]*\.)*[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Fault)(?::[ \t]+\S.*)?"
    r"|(?:error|ERROR|Error|fatal|FATAL|Fatal|panic)(?:\[[\w\-]+\])?[:!][ \t]+\S.*"
    r"|npm ERR![ \t]+\S.*)"
    r"|FAILED[ \t]+\S.*"
    r"|<tool_use_error>.*?(?=</tool_use_error>|$)"
    r")(?:</tool_use_error>)?$"
)
"""An error line, read from its start: an exception line (`ValueError: ...`, a Traceback's
last line), an `error:`/`fatal:`/`panic:` line, a pytest `FAILED` line, a Claude Code
`<tool_use_error>`."""

_ERROR_ANYWHERE = re.compile(
    r"[^\n]*\b(?:(?:[Ee]xit(?:ed)?(?: with)? (?:code|status)|returned non-zero exit status)"
    r"[: ]+[1-9]\d*\b|command not found\b|Segmentation fault\b)[^\n]*"
)
"""An error line known by a phrase anywhere in it: a non-zero exit status, `command not
found`, `Segmentation fault` (tried only on lines holding `_ANYWHERE_HINTS`)."""

_ANYWHERE_HINTS = ("xit", "not found", "egmentation")

_FIRST_LINE = re.compile(
    r"^(?![ \t]*(?:npm )?warn(?:ing)?\b)[ \t]*\S(?:(?!\\n)[^\n])*", re.M | re.I
)
"""The first line of a failed result that is not a warning (a `\\n` escape ends it too)."""

_CODE_END = re.compile(r"[,;{(\[]$|=>|\)\s*\{")
"""An `error:` line ending like code (`error: vi.fn(),`): an object field, not an error."""

_ERROR_CODE_LINE = re.compile(
    r"[ \t]*(?:(?:raise|except|catch|throw|class|def|import|from|return)\b|\d+(?:[\t→|:]| {2}))"
)
"""A line of code or of a numbered file listing (`raise ValueError(...)`, `  12\tValueError:`):
it names an error, it does not report one."""

_INSTRUCTION = re.compile(
    r"(?<![\w\-])(?:must|never|don['’]?t|do not|doesn['’]?t need|only|always|make sure|ensure|"
    r"avoid|should(?: not|n['’]?t)|mustn['’]?t|cannot|can['’]?t|no need to)"
    r"(?![\w\-])",
    re.I,
)
"""Constraint words: a human sentence holding one is an `instruction`."""
_SENTENCE_END = re.compile(r"(?<=[.!?])[ \t]+(?=[\"'(`*A-Z0-9])|\n+")
_LIST_MARK = re.compile(r"^(?:[-*+]\s+(?:\[[ xX]\]\s+)?|\d+[.)]\s+)")
"""A list or checklist marker in front of an instruction (not part of the fact)."""
_FENCE = re.compile(r"```.*?(?:```|\Z)", re.S)
_QUOTED_BLOCK = re.compile(
    r"<(issue_description|pr_description|issue|code|file|document)>.*?</\1>|"
    r"ISSUE:\n.*?(?=\nINSTRUCTIONS:|\Z)",
    re.S,
)
"""Quoted material in a user message (an issue, a file): its constraints are not the user's."""
_CODE_LINE = re.compile(r"[{};=<>]|^\s*(?:#|//|def |class |import |from |return )")
"""A sentence that looks like code (pasted source, comments), not a constraint."""
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
    texts (offload stubs, injected reminders, skill and AGENTS.md expansions, the prompt a
    Claude Code custom slash command expands to: the human message after its "is running"
    echo) give no facts.
    """
    facts: list[Fact] = []
    seen: set[str] = set()
    goal_done = False
    call_names: dict[str, str] = {}
    expansion = False
    for position, message in enumerate(trace.messages):
        found: list[_Found] = []
        if isinstance(message, SystemMessage) or message_facts.is_summary(message):
            continue
        raw = message_facts.message_text(message)
        after_command, expansion = expansion, "<command-name>" in raw and " is running" in raw
        if _injected(raw) or (after_command and isinstance(message, HumanMessage)):
            continue
        text = _own_text(_edges(raw))
        calls: list[list[_Found]] = []
        if isinstance(message, AIMessage):
            found.extend(_prose(text))
            for call in message.tool_calls:
                if call_id := call.get("id"):
                    call_names[call_id] = call["name"]
                calls.append(_call(call))
        elif isinstance(message, ToolMessage):
            tool = (message.name or call_names.get(message.tool_call_id, "")).lower()
            found.extend(_result(text, tool, message.status == "error"))
        elif isinstance(message, HumanMessage) or not isinstance(message, AIMessage):
            if not goal_done:
                goal = _goal(text)
                if goal is not None:
                    found.append(goal)
                    goal_done = True
            found.extend(_prose(text, human=True))
        found.sort(key=lambda f: f.offset)
        for item in found + [item for call in calls for item in call]:
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


def _lines(text: str, hits: Iterable[int]) -> list[tuple[int, int]]:
    """The (start, end) spans of the lines of `text` holding the ascending positions `hits`.

    Extraction runs its patterns only on lines a cheap scan (`str.find`, a pattern starting
    with a literal) flagged: every fact but a goal or instruction lies within one line, so the
    result is what a scan of the whole text gives, at a fraction of its cost on large results.
    """
    spans: list[tuple[int, int]] = []
    end = -1
    for at in hits:
        if at <= end:
            continue
        start = text.rfind("\n", 0, at) + 1
        end = text.find("\n", at)
        if end < 0:
            end = len(text)
        spans.append((start, end))
    return spans


def _finds(text: str, needles: Sequence[str]) -> list[int]:
    """Every position of any of `needles` in `text`, ascending (C-speed `str.find` loops)."""
    hits: list[int] = []
    for needle in needles:
        at = text.find(needle)
        while at >= 0:
            hits.append(at)
            at = text.find(needle, at + 1)
    hits.sort()
    return hits


_EXT_AT = re.compile(r"\.(?:" + _EXTENSIONS + r")\b", re.I)


def _path_hints(text: str) -> list[int]:
    """Where a path can be: a slash, or a dot starting a known extension."""
    return [at for at in _finds(text, ("/", ".")) if text[at] == "/" or _EXT_AT.match(text, at)]


def _urls_paths(text: str) -> tuple[list[_Found], str]:
    """URLs and paths of `text`, and the text with both blanked out (so their parts are not
    taken for numbers or identifiers)."""
    found: list[_Found] = []
    spans: list[tuple[int, int]] = []
    for a, b in _lines(text, _finds(text, ("://",))):
        for m in URL.finditer(text, a, b):
            url = m.group().rstrip(_URL_TAIL)
            if url.count("(") > url.count(")") and m.group()[len(url) : len(url) + 1] == ")":
                url += ")"
            if len(url) > len(m.group().split("://")[0]) + 4 and _fits(text, m.start(), url):
                found.append(_Found(m.start(), url, "url"))
            spans.append(m.span())
    masked = _blank(text, spans)
    spans = []
    for a, b in _lines(masked, _path_hints(masked)):
        for m in PATH.finditer(masked, a, b):
            raw, start = m.group(), m.start()
            if _DIFF_SIDE.match(raw):
                raw, start = raw[2:], start + 2
            path = _path(raw)
            if path is not None and _fits(masked, start, path):
                found.append(_Found(start, path, "path"))
                spans.append(m.span())
    return found, _blank(masked, spans)


_NUMBER_AT = re.compile(r"\d(?:[ ,]?[%a-zA-Zµ×]|\.\d+\.\d)|\$\d")
"""Where a measured number can be: a digit before a unit, `%` or a version's dots, or `$`."""


def _number_hints(text: str) -> list[int]:
    return [at for at in _finds(text, "0123456789$") if _NUMBER_AT.match(text, at)]


_PROGRESS = re.compile(r"\[\s*\d+%\]")
"""A progress indicator (`[ 52%]` in pytest's output), not a measured share."""

_HARNESS_LINE = re.compile(r"(?:Chunk ID|Wall time|Original token count|Total output lines):")
"""Codex's header lines on a command's output (its own timing and sizes, not the command's)."""


def _numbers(text: str) -> Iterator[_Found]:
    for a, b in _lines(text, _number_hints(text)):
        if _HARNESS_LINE.match(text, a):
            continue
        for m in NUMBER.finditer(text, a, b):
            value = m.group()
            if _IP_LIKE.match(value):
                continue
            if _SMALL_COUNT.match(value) and not value.endswith(("%", "ms", "s")):
                continue
            if value.endswith("%") and _in_progress(text, m.start(), a):
                continue
            if _fits(text, m.start(), value):
                yield _Found(m.start(), value, "number")


def _in_progress(text: str, at: int, line_start: int) -> bool:
    """Is the percentage at `at` a `[ 52%]` progress indicator?"""
    k = at - 1
    while k > line_start and text[k] == " ":
        k -= 1
    return text[k] == "[" and _PROGRESS.match(text, k) is not None


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


_VENDORED = re.compile(
    r"(?:^|/)(?:node_modules|site-packages|dist-packages|\.venv|\.git|__pycache__)/"
)
"""Third-party and tooling trees: a listing of them in a tool result is not the task's paths."""


def _result(text: str, tool: str, failed: bool) -> list[_Found]:
    """Facts of a tool result: urls and paths (not inside vendored trees); errors and numbers
    unless it shows a file. A result marked failed with no error line gives its first line."""
    found, masked = _urls_paths(text)
    found = [f for f in found if f.category != "path" or not _VENDORED.search(f.text)]
    errors = list(_errors(text)) if tool not in READ_TOOLS or failed else []
    if failed and not errors:
        first = _FIRST_LINE.search(text)
        if first is not None and first.group().strip().lower() != "error":
            errors.append(_Found(first.start(), _clip(first.group().rstrip()), "error"))
    found.extend(errors)
    if tool not in READ_TOOLS:
        found.extend(_numbers(masked))
    return found


_ERROR_HINTS = (
    "Error",
    "error:",
    "error[",
    "RROR",
    "xception",
    "atal:",
    "ATAL",
    "panic",
    "ERR!",
    "FAILED",
    "xit",
    "nterrupt",
    "Fault",
    "not found",
    "egmentation",
    "tool_use_error",
)
"""Substrings every `_ERROR` line holds one of (found with `str.find`, then the line is read)."""


def _errors(text: str) -> Iterator[_Found]:
    for a, b in _lines(text, _finds(text, _ERROR_HINTS)):
        if _ERROR_CODE_LINE.match(text, a, b):
            continue
        m = _ERROR.match(text, a, b)
        if m is not None:
            start, fact = m.start("fact"), m.group("fact")
        elif any(hint in text[a:b] for hint in _ANYWHERE_HINTS):
            m = _ERROR_ANYWHERE.match(text, a, b)
            if m is None:
                continue
            line = m.group()
            start, fact = a + len(line) - len(line.lstrip()), line
        else:
            continue
        fact = _clip(fact.strip())
        if fact.startswith("<tool_use_error>"):
            fact = fact[len("<tool_use_error>") :].strip()
            if fact:
                yield _Found(start + len("<tool_use_error>"), fact, "error")
            continue
        if _CODE_END.search(fact):
            continue
        if len(fact) >= 4:
            yield _Found(start, fact, "error")


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


_TASK_TITLE = re.compile(
    r"(?:<(?:issue_description|pr_description)>|^ISSUE:)[ \t]*\n\s*(?P<title>\S[^\n]*)", re.M
)
"""The issue a benchmark task quotes (OpenHands' `<issue_description>`, SWE-agent's `ISSUE:`):
its first line is the task's title."""

_MARKUP_LINE = re.compile(r"^[ \t]*<[^>\n]*>[ \t]*$", re.M)


def _goal(text: str) -> _Found | None:
    """The first request: the whole message if short, else its first line, else that line's
    first sentence, else a prefix cut at a space (always verbatim, so `mentions` finds it).
    A benchmark task's message gives the quoted issue's title; lines that are only markup tags
    (`<uploaded_files>`) are passed over."""
    title = _TASK_TITLE.search(text)
    if title is not None:
        return _Found(title.start("title"), _clip(title.group("title").strip()), "goal")
    text = _MARKUP_LINE.sub(lambda m: " " * len(m.group()), text)
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


def _call(call: Mapping[str, Any]) -> list[_Found]:
    """Facts of one tool call, in order: its shell command or its invocation, plan items, and
    the paths and urls in its arguments. An invocation needs a non-blank string argument
    (polls like Codex's `write_stdin` with no input are not invocations anyone names again)."""
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
                found.append(_Found(i, _clip(content.strip()), "todo"))
        return found
    values = list(_strings(args))
    command = _shell_command(lower, args)
    if command is not None:
        found.append(_Found(0, command, "command"))
    elif any(v.strip() for v in values) and sum(map(len, values)) < MAX_INVOCATION_CHARS:
        text = invocation(name, args)
        if len(text) <= MAX_INVOCATION_CHARS and "\\n" not in text:
            found.append(_Found(0, text, "command"))
    for value in values:
        if len(value) <= MAX_ARG_SCAN_CHARS:
            found.extend(sorted(_urls_paths(value)[0], key=lambda f: f.offset))
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
    "Haystack",
    "bounded",
    "extract",
    "invocation",
    "keys",
    "mentions",
    "mentions_normalised",
    "message_text",
    "normalise",
]
