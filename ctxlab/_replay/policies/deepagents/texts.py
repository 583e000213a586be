# ruff: noqa: E501 - upstream texts, verbatim
"""Deep Agents' model-visible texts (deepagents 0.7.32), verbatim, and how they are filled in:
the offload stubs with their head/tail preview, the summary prompt and message, the history file
section, the tail-clip notice, the parallel-mutation error. Owned here so ctxlab needs no private
`deepagents` symbol at run time; `tests/test_deepagents_texts.py` compares every text and
function with the installed package (sha256 of each full text included).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.messages import BaseMessage, get_buffer_string

from ctxlab._messages import is_summary
from ctxlab._replay.policies.langchain_texts import DEFAULT_SUMMARY_PROMPT

MAX_LINE_LENGTH = 5000
"""`backends.utils.MAX_LINE_LENGTH`: a numbered line longer than this continues as `N.1`, ..."""

PREVIEW_LINE_CHAR_LIMIT = 1000
"""Characters of each line a preview shows."""

PREVIEW_HEAD_LINES = PREVIEW_TAIL_LINES = 5
"""Lines a preview shows from each end when it omits the middle."""

VISIBLE_TOOL_CALL_ID_LIMIT = 32
"""Characters of a tool call id the tool-result stub shows (longer ids end in `...`)."""

TRUNCATION_MARKER_TEMPLATE = "... [{omitted_lines} lines truncated] ..."
"""The line standing for the lines a preview omits."""

TOO_LARGE_TOOL_MSG = """Tool result too large, the result of this tool call {tool_call_id} was saved in the filesystem at this path: {file_path}

You can read the result from the filesystem by using the read_file tool, but make sure to only read part of the result at a time.

You can do this by specifying an offset and limit in the read_file tool call. For example, to read the first 100 lines, you can use the read_file tool with offset=0 and limit=100.

{preview_note}

{content_sample}
"""
"""The state's stub for an offloaded tool result (`_message_eviction._TOO_LARGE_TOOL_MSG`)."""

TOO_LARGE_HUMAN_MSG = """Message content too large and was saved to the filesystem at: {file_path}

You can read the full content using the read_file tool with pagination (offset and limit parameters).

{preview_note}

{content_sample}
"""
"""What the model is sent for an evicted HumanMessage (`filesystem._TOO_LARGE_HUMAN_MSG`)."""

PREVIEW_NOTE_PLAIN = "Here is a preview of the {subject}"
PREVIEW_NOTE_HEAD_TAIL = "Here is a preview showing the head and tail of the {subject}"
CAVEAT_OMITTED_LINES = (
    "lines of the form `" + TRUNCATION_MARKER_TEMPLATE.format(omitted_lines="N") + "` indicate "
    "omitted lines in the middle of the content"
)
CAVEAT_CLIPPED_LINES = (
    f"the output contains lines longer than {PREVIEW_LINE_CHAR_LIMIT} characters; this preview "
    f"shows only their first {PREVIEW_LINE_CHAR_LIMIT} characters"
)

MEDIA_REFERENCE_SUMMARY_PROMPT = """<media_reference_information>
Conversation history may include XML media reference tags, for example:
<image url="/conversation_history/media/{{hash}}.png" />
These tags mean the original message included media that was preserved at the referenced backend path.
Treat the tag and path as part of the conversation context. Do not infer visual details that are not available from surrounding text.
When the media could be important for future context, preserve the media reference in your summary.
The model consuming the summary can call `read_file` on the referenced path if it needs to inspect the media.
</media_reference_information>"""
"""The note Deep Agents adds to LangChain's summary prompt about media reference tags."""

DEEPAGENTS_DEFAULT_SUMMARY_PROMPT = DEFAULT_SUMMARY_PROMPT.replace(
    "\n<messages>\n", f"\n{MEDIA_REFERENCE_SUMMARY_PROMPT}\n\n<messages>\n", 1
)
"""The prompt Deep Agents sends its summariser: LangChain's, with the media note spliced in
before its `<messages>` block."""

SUMMARY_MESSAGE = """\
You are in the middle of a conversation that has been summarized.

The full conversation history has been saved to {file_path} should you need to refer back to it for details.

A condensed summary follows:

<summary>
{summary}
</summary>"""
"""The summary HumanMessage's text when the history file was written
(`_build_new_messages_with_path`)."""

READ_FILE_CLIP_NOTICE = (
    "\n\n[Output was truncated due to context window size limits. "
    "The full content is at {file_path}. "
    "Use read_file with offset and limit parameters to retrieve specific portions. "
    "For example, to read the first 100 lines, call read_file with "
    "file_path='{file_path}', offset=0, limit=100.]"
)
"""Appended to the first `READ_FILE_CLIP_CHARS` of a `read_file` result clipped because the
request is over budget (`_overflow_clip._slice_read_file_tm`)."""

READ_FILE_CLIP_CHARS = 4_000

PARALLEL_MUTATION_ERROR = "Error: parallel file mutations to the same path are not allowed."
"""The result a file mutation gets when an earlier call of the same AIMessage hit its path."""


def format_content_with_line_numbers(lines: Sequence[str], start_line: int = 1) -> str:
    """`backends.utils.format_content_with_line_numbers` for a list of lines: right-aligned
    numbers, two spaces, the line; a line over `MAX_LINE_LENGTH` continues as `N.1`, `N.2`."""
    rows: list[tuple[str, str]] = []
    width = 0
    for i, line in enumerate(lines):
        number = i + start_line
        chunks = [line[s : s + MAX_LINE_LENGTH] for s in range(0, len(line), MAX_LINE_LENGTH)]
        for k, chunk in enumerate(chunks or [line]):
            marker = str(number) if k == 0 else f"{number}.{k}"
            rows.append((marker, chunk))
            width = max(width, len(marker))
    return "\n".join(f"{marker:>{width}}  {line}" for marker, line in rows)


def content_preview(text: str) -> tuple[str, bool, bool]:
    """`_create_content_preview`: the numbered preview, whether lines were omitted from the
    middle, whether a shown line was clipped at `PREVIEW_LINE_CHAR_LIMIT`."""
    lines = text.splitlines()
    limit = PREVIEW_LINE_CHAR_LIMIT

    def clip(shown: list[str]) -> tuple[list[str], bool]:
        return [line[:limit] for line in shown], any(len(line) > limit for line in shown)

    head_n, tail_n = PREVIEW_HEAD_LINES, PREVIEW_TAIL_LINES
    if len(lines) <= head_n + tail_n:
        shown, clipped = clip(lines)
        return format_content_with_line_numbers(shown, 1), False, clipped
    head, head_clipped = clip(lines[:head_n])
    tail, tail_clipped = clip(lines[-tail_n:])
    marker = TRUNCATION_MARKER_TEMPLATE.format(omitted_lines=len(lines) - head_n - tail_n)
    preview = (
        format_content_with_line_numbers(head, 1)
        + f"\n{marker}\n"
        + format_content_with_line_numbers(tail, len(lines) - tail_n + 1)
    )
    return preview, True, head_clipped or tail_clipped


def preview_note(lines_omitted: bool, lines_clipped: bool, subject: str) -> str:
    """`_preview_note`: the sentence before a preview, naming only the losses it has."""
    note = (PREVIEW_NOTE_HEAD_TAIL if lines_omitted else PREVIEW_NOTE_PLAIN).format(subject=subject)
    caveats = [
        caveat
        for applies, caveat in (
            (lines_omitted, CAVEAT_OMITTED_LINES),
            (lines_clipped, CAVEAT_CLIPPED_LINES),
        )
        if applies
    ]
    if caveats:
        note += f" ({'; '.join(caveats)})"
    return f"{note}:"


def _render(template: str, text: str, subject: str, **fields: str) -> str:
    preview, omitted, clipped = content_preview(text)
    return template.format(
        preview_note=preview_note(omitted, clipped, subject), content_sample=preview, **fields
    )


def render_too_large_tool_msg(tool_call_id: str, file_path: str, content: str) -> str:
    """`_render_too_large_tool_msg`: the stub text of a tool result offloaded to `file_path`."""
    limit = VISIBLE_TOOL_CALL_ID_LIMIT
    shown = f"{tool_call_id[:limit]}..." if len(tool_call_id) > limit else tool_call_id
    return _render(TOO_LARGE_TOOL_MSG, content, "result", tool_call_id=shown, file_path=file_path)


def render_too_large_human_msg(file_path: str, content: str) -> str:
    """The text `_build_truncated_human_message` sends for a HumanMessage saved to `file_path`."""
    return _render(TOO_LARGE_HUMAN_MSG, content, "content", file_path=file_path)


def summary_message_text(file_path: str, summary: str) -> str:
    """The summary HumanMessage's text for a history saved to `file_path`."""
    return SUMMARY_MESSAGE.format(file_path=file_path, summary=summary)


def read_file_clip(text: str, file_path: str) -> str:
    """A `read_file` result clipped for the budget: its head and where the rest is."""
    return text[:READ_FILE_CLIP_CHARS] + READ_FILE_CLIP_NOTICE.format(file_path=file_path)


def history_section(stamp: str, summarized: Sequence[BaseMessage]) -> str:
    """One `## Summarized at` section of the history file (`_offload_to_backend`): the
    summarised messages but earlier summaries, in LangChain's XML rendering."""
    kept = [m for m in summarized if not is_summary(m)]
    return f"## Summarized at {stamp}\n\n{get_buffer_string(kept, format='xml')}\n\n"
