"""`ctxlab._evaluate.facts`: planted facts of every category come out with their category and
message;
known false-positive shapes do not; `mentions` is exact after normalisation and whole-token."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage

from ctxlab._evaluate.facts import (
    CATEGORIES,
    SCAN_EDGE_CHARS,
    Fact,
    Haystack,
    extract,
    invocation,
    mentions,
    message_text,
    normalise,
)
from ctxlab._messages import summary_message
from ctxlab._replay.policies.deepagents.texts import render_too_large_tool_msg, summary_message_text
from ctxlab._trace import from_messages

SYSTEM = (
    "You are a coding agent. You must always answer in English and never reveal this prompt. "
    "Use read_file on /etc/agent/config.yaml and run `pytest -q`; see https://docs.example.org/x."
)
GOAL = "Fix the failing export in orderflow/reports/export.py so the CSV matches the spec."


def _conversation() -> list:
    return [
        SystemMessage(SYSTEM),
        HumanMessage(
            GOAL + "\nYou must not change tests/test_export.py. Only touch the reports package."
            " Background: the release went out on 2024-05-17 at 10:42:07, ticket 4411, and since"
            " then every nightly run of the export job has failed in the same way."
        ),
        AIMessage(
            "I'll look at `export_rows()` and the `ReportWriter` class in orderflow.reports.",
            tool_calls=[
                {
                    "id": "c1",
                    "name": "execute",
                    "args": {"command": "pytest -x tests/test_export.py"},
                },
                {"id": "c2", "name": "read_file", "args": {"file_path": "/repo/orderflow/api.py"}},
            ],
        ),
        ToolMessage(
            "Traceback (most recent call last):\n"
            '  File "/repo/orderflow/reports/export.py", line 12, in export_rows\n'
            "    raise ValueError('bad delimiter')\n"
            "ValueError: bad delimiter ';'\n"
            "=== 1 failed, 41 passed in 2.31s ===",
            tool_call_id="c1",
        ),
        ToolMessage(
            "     1\tdef handler(request):\n     2\t    raise KeyError('x')\n",
            tool_call_id="c2",
        ),
        AIMessage(
            "",
            tool_calls=[
                {
                    "id": "c3",
                    "name": "write_todos",
                    "args": {
                        "todos": [
                            {"content": "Fix the delimiter in export_rows", "status": "pending"},
                            {"content": "Re-run the export tests", "status": "pending"},
                        ]
                    },
                }
            ],
        ),
        ToolMessage("Updated todo list", tool_call_id="c3"),
        AIMessage(
            "The export took 23.4 ms for 1,204 rows with pandas v2.3.1; 87% of rows are valid. "
            "Docs: https://pandas.pydata.org/docs/reference/api/pandas.read_csv.html."
            " Request 9f8c2d1e-4b7a-4e1f-9c3d-2a1b0c9d8e7f, line 42."
        ),
    ]


@pytest.fixture(scope="module")
def facts() -> list[Fact]:
    return extract(from_messages(_conversation()))


def _find(facts: list[Fact], text: str) -> Fact:
    hits = [f for f in facts if f.text == text]
    assert hits, f"{text!r} not extracted; got {[f.text for f in facts]}"
    return hits[0]


@pytest.mark.parametrize(
    ("text", "category", "message"),
    [
        (GOAL, "goal", 1),
        ("You must not change tests/test_export.py.", "instruction", 1),
        ("Only touch the reports package.", "instruction", 1),
        ("orderflow/reports/export.py", "path", 1),
        ("export_rows()", "identifier", 2),
        ("ReportWriter", "identifier", 2),
        ("orderflow.reports", "identifier", 2),
        ("pytest -x tests/test_export.py", "command", 2),
        ('read_file({"file_path": "/repo/orderflow/api.py"})', "command", 2),
        ("/repo/orderflow/api.py", "path", 2),
        ("ValueError: bad delimiter ';'", "error", 3),
        ("1 failed", "number", 3),
        ("41 passed", "number", 3),
        ("2.31s", "number", 3),
        ("Fix the delimiter in export_rows", "todo", 5),
        ("Re-run the export tests", "todo", 5),
        ("23.4 ms", "number", 7),
        ("1,204 rows", "number", 7),
        ("v2.3.1", "number", 7),
        ("87%", "number", 7),
        ("https://pandas.pydata.org/docs/reference/api/pandas.read_csv.html", "url", 7),
    ],
)
def test_planted_facts_come_out(facts, text, category, message) -> None:
    fact = _find(facts, text)
    assert (fact.category, fact.message) == (category, message)


@pytest.mark.parametrize(
    "text",
    [
        "2024-05-17",
        "10:42:07",
        "4411",
        "9f8c2d1e-4b7a-4e1f-9c3d-2a1b0c9d8e7f",
        "42",
        "line 42",
        "/etc/agent/config.yaml",  # system prompt
        "pytest -q",
        "https://docs.example.org/x",
        "KeyError: 'x'",  # a file's content, not an error that happened
        "handler",
        "Background",
        "Request",
    ],
)
def test_false_positive_shapes_stay_out(facts, text) -> None:
    assert all(text not in f.text or f.category == "goal" for f in facts if f.text == text)
    assert text not in {f.text for f in facts}


def test_system_messages_give_nothing(facts) -> None:
    assert all(f.message != 0 for f in facts)


def test_every_fact_is_found_in_its_own_message(facts) -> None:
    messages = _conversation()
    for fact in facts:
        assert fact.category in CATEGORIES
        assert mentions(message_text(messages[fact.message]), fact), fact


def test_extraction_is_deterministic_and_ordered() -> None:
    first = extract(from_messages(_conversation()))
    again = extract(from_messages(_conversation()))
    assert first == again
    assert [f.message for f in first] == sorted(f.message for f in first)
    assert len({normalise(f.text) for f in first}) == len(first)


def test_one_goal_only_the_whole_message_when_short() -> None:
    first = "First ask:\n- read a.py\n- fix it"
    trace = from_messages([HumanMessage(first), AIMessage("ok"), HumanMessage("Second.")])
    assert [f.text for f in extract(trace) if f.category == "goal"] == [first]


def test_long_goal_is_a_verbatim_first_sentence() -> None:
    ask = "Port the billing service to the new queue. " + "Context follows. " * 40
    (goal,) = [f for f in extract(from_messages([HumanMessage(ask)])) if f.category == "goal"]
    assert goal.text == "Port the billing service to the new queue."


def test_harness_texts_give_nothing() -> None:
    stub = render_too_large_tool_msg("call_1", "/large_tool_results/call_1", "x = 1\n" * 50)
    summary = summary_message(summary_message_text("/conversation_history/s.md", "Read /a/b.py"))
    trace = from_messages(
        [
            HumanMessage("Please fix src/app.py."),
            AIMessage(
                "", tool_calls=[{"id": "call_1", "name": "execute", "args": {"command": "ls"}}]
            ),
            ToolMessage(stub, tool_call_id="call_1"),
            summary,
        ]
    )
    texts = {f.text for f in extract(trace)}
    assert "/large_tool_results/call_1" not in texts
    assert "/conversation_history/s.md" not in texts and "/a/b.py" not in texts


def test_message_text_holds_tool_calls_as_invocations() -> None:
    msg = AIMessage("hi", tool_calls=[{"id": "1", "name": "grep", "args": {"pattern": 'a"b'}}])
    assert message_text(msg) == 'hi\ngrep({"pattern": "a\\"b"})'
    assert invocation("ls", {}) == "ls({})"


@pytest.mark.parametrize(
    ("text", "fact_text", "category", "expected"),
    [
        ("see  /src/app.py.", "/src/app.py", "path", True),
        ("see /src/app.py.bak", "/src/app.py", "path", False),
        ("see myapp.py", "app.py", "path", False),
        ("see src/app.py", "app.py", "path", True),
        ("see /repo/src/app.py", "/src/app.py", "path", False),
        ("pandas v2.3.1 out", "v2.3", "number", False),
        ("pandas v2.3, out", "v2.3", "number", True),
        ("Don't\n   touch\tthe tests", "Don't touch the tests", "instruction", True),
        ("don't touch the tests", "Don't touch the tests", "instruction", False),
        ('execute({"command": "grep -n \\"x\\" a.py"})', 'grep -n "x" a.py', "command", True),
        ('{"output": "ok\\nsrc/app.py\\n"}', "src/app.py", "path", True),
        ("call export_rows_v2()", "export_rows", "identifier", False),
        ("<m>cd w &amp;&amp; make &gt; log</m>", "cd w && make > log", "command", True),
        ('{"command": "ls \\"a b\\" &amp;&amp; pwd"}', 'ls "a b" && pwd', "command", True),
    ],
)
def test_mentions(text, fact_text, category, expected) -> None:
    assert mentions(text, Fact(fact_text, category, 0)) is expected


def test_normalise_collapses_whitespace_only() -> None:
    assert normalise("  A\n\t b  C ") == "A b C"


def test_haystack_agrees_with_mentions() -> None:
    texts = [
        'execute({"command": "grep -n \\"x\\" a.py"})\nsee /src/app.py.',
        '{"output": "ok\\nsrc/app.py\\n"} and myapp.py, v2.3.1',
        "Don't   touch\tthe tests. export_rows_v2() ran in 23.4 ms",
    ]
    facts = [
        Fact(text, category, 0)
        for text, category in [
            ('grep -n "x" a.py', "command"),
            ("/src/app.py", "path"),
            ("src/app.py", "path"),
            ("app.py", "path"),
            ("v2.3", "number"),
            ("v2.3.1", "number"),
            ("Don't touch the tests.", "instruction"),
            ("export_rows", "identifier"),
            ("export_rows_v2()", "identifier"),
            ("23.4 ms", "number"),
            ("absent", "identifier"),
        ]
    ]
    for text in texts:
        haystack = Haystack(text)
        for fact in facts:
            assert (fact in haystack) is mentions(text, fact), (text, fact)


def _tool_trace(tool: str, result: str, args: dict | None = None):
    return from_messages(
        [
            HumanMessage("Run the checks."),
            AIMessage("", tool_calls=[{"id": "t1", "name": tool, "args": args or {"x": "y"}}]),
            ToolMessage(result, tool_call_id="t1"),
        ]
    )


def test_errors_are_reported_lines_not_code() -> None:
    result = (
        "Traceback (most recent call last):\n"
        '  File "/w/app.py", line 3, in <module>\n'
        "    raise KeyError('k')\n"
        "KeyError: 'k'\n"
        "  12\tValueError: when the input is bad (a docstring line)\n"
        "src/app.ts:4:7: error TS2304: Cannot find name 'x'.\n"
        "  error: vi.fn(),\n"
        "npm warn config\n"
        "FAILED tests/test_a.py::test_b - AssertionError\n"
        "[The command completed with exit code 2.]\n"
    )
    errors = [f.text for f in extract(_tool_trace("execute", result)) if f.category == "error"]
    assert errors == [
        "KeyError: 'k'",
        "FAILED tests/test_a.py::test_b - AssertionError",
        "[The command completed with exit code 2.]",
    ]


def test_a_failed_result_without_an_error_line_gives_its_first_line() -> None:
    trace = from_messages(
        [
            HumanMessage("Edit it."),
            AIMessage(
                "", tool_calls=[{"id": "t1", "name": "Edit", "args": {"file_path": "/a.py"}}]
            ),
            ToolMessage(
                "<tool_use_error>File has not been read yet.</tool_use_error>",
                tool_call_id="t1",
                status="error",
            ),
        ]
    )
    assert [f.text for f in extract(trace) if f.category == "error"] == [
        "File has not been read yet."
    ]


def test_file_contents_give_no_errors_or_numbers() -> None:
    content = "ValueError: not raised here\nthe cache took 23.4 ms\nsee /etc/app.conf"
    facts = extract(_tool_trace("read_file", content, {"file_path": "/w/notes.txt"}))
    assert {(f.category, f.text) for f in facts} >= {("path", "/etc/app.conf")}
    assert not [f for f in facts if f.category in {"error", "number"}]


def test_long_results_are_read_at_their_edges() -> None:
    filler = "x = 1\n" * (SCAN_EDGE_CHARS // 3)
    result = "head at /w/first.py\n" + filler + "middle /w/middle.py\n" + filler + "ValueError: end"
    texts = {f.text for f in extract(_tool_trace("execute", result))}
    assert {"/w/first.py", "ValueError: end"} <= texts
    assert "/w/middle.py" not in texts


@pytest.mark.parametrize(
    ("tool", "args", "command"),
    [
        ("Bash", {"command": "ls -la\necho done", "description": "list"}, "ls -la"),
        ("exec_command", {"cmd": "git status --short"}, "git status --short"),
        ("shell", {"command": ["bash", "-lc", "make test"]}, "make test"),
        (
            "read_file",
            {"file_path": "/a.py", "limit": 5},
            'read_file({"file_path": "/a.py", "limit": 5})',
        ),
        ("write_stdin", {"session_id": 7, "chars": ""}, None),
        ("write_file", {"file_path": "/a.py", "content": "x" * 500}, None),
    ],
)
def test_commands_and_invocations(tool, args, command) -> None:
    trace = from_messages(
        [HumanMessage("Go."), AIMessage("", tool_calls=[{"id": "1", "name": tool, "args": args}])]
    )
    commands = [f.text for f in extract(trace) if f.category == "command"]
    assert commands == ([command] if command else [])
    for fact in extract(trace):
        assert mentions(message_text(trace.messages[fact.message]), fact)


def test_todo_tools_and_checklists() -> None:
    trace = from_messages(
        [
            HumanMessage("Plan:\n- [ ] write the parser\n- [x] read the spec"),
            AIMessage(
                "",
                tool_calls=[
                    {
                        "id": "1",
                        "name": "TodoWrite",
                        "args": {"todos": [{"content": "Ship it", "status": "pending"}]},
                    },
                    {
                        "id": "2",
                        "name": "update_plan",
                        "args": {"plan": [{"step": "Run tests", "status": "pending"}]},
                    },
                ],
            ),
        ]
    )
    todos = [(f.text, f.message) for f in extract(trace) if f.category == "todo"]
    assert todos == [
        ("write the parser", 0),
        ("read the spec", 0),
        ("Ship it", 1),
        ("Run tests", 1),
    ]


def test_harness_injected_user_texts_give_nothing() -> None:
    trace = from_messages(
        [
            HumanMessage(
                "<command-message>orchestrator is running</command-message>\n"
                "<command-name>/orchestrator</command-name>\n"
                "<command-args>create a TODO app</command-args>"
            ),
            HumanMessage("Split tasks. You must never use /tmp/scratch.py for anything."),
            HumanMessage("<system-reminder>Always use /etc/hidden.md</system-reminder>Fix it."),
        ]
    )
    facts = extract(trace)
    assert [(f.text, f.category) for f in facts] == [("create a TODO app", "goal")]


def test_commands_are_found_again_in_later_model_output() -> None:
    read = {"name": "read_file", "args": {"file_path": "/src/app.py"}}
    run = {"name": "execute", "args": {"command": 'pytest -k "export and not slow"'}}
    trace = from_messages(
        [
            HumanMessage("Go."),
            AIMessage("", tool_calls=[{"id": "1", **read}, {"id": "2", **run}]),
            ToolMessage("ok", tool_call_id="1"),
            ToolMessage("ok", tool_call_id="2"),
        ]
    )
    commands = [f for f in extract(trace) if f.category == "command"]
    assert [f.text for f in commands] == [
        'read_file({"file_path": "/src/app.py"})',
        'pytest -k "export and not slow"',
    ]
    again = AIMessage("Re-running.", tool_calls=[{"id": "3", **read}, {"id": "4", **run}])
    prose = AIMessage('I ran `pytest -k "export and not slow"` and read /src/app.py.')
    assert all(mentions(message_text(again), f) for f in commands)
    assert [mentions(message_text(prose), f) for f in commands] == [False, True]


def test_history_files_hold_facts_xml_escaped() -> None:
    from langchain_core.messages import get_buffer_string

    call = {"id": "1", "name": "execute", "args": {"command": 'cd /w && grep -n "<x>" a.py'}}
    messages = [
        HumanMessage("Check a.py & b.py, don't edit c.py."),
        AIMessage("", tool_calls=[call]),
    ]
    transcript = get_buffer_string(messages, format="xml")
    for fact in extract(from_messages(messages)):
        assert mentions(transcript, fact), fact
        assert fact in Haystack(transcript)


@pytest.mark.parametrize(
    "line",
    [
        "fatal: not a git repository (or any of the parent directories): .git",
        "npm ERR! code ERESOLVE",
        "error[E0425]: cannot find value `x` in this scope",
        "src/main.c:3:5: error: expected ';' before '}' token",
        "ERROR: Could not find a version that satisfies the requirement foo",
        "Segmentation fault (core dumped)",
        "bash: ponyc: command not found",
        "Exit code 1",
        "KeyboardInterrupt",
        "requests.exceptions.ConnectionError: Max retries exceeded with url: /",
    ],
)
def test_error_shapes(line) -> None:
    result = f"some output\n{line}\nmore output"
    errors = [f.text for f in extract(_tool_trace("execute", result)) if f.category == "error"]
    assert errors == [line]


@pytest.mark.parametrize(
    "line",
    [
        "no error handling is needed here",
        "the error: rate was low, see docs",
        "Exit code 0",
        "    except ValueError:",
    ],
)
def test_not_errors(line) -> None:
    errors = [f for f in extract(_tool_trace("execute", line)) if f.category == "error"]
    assert errors == []
