"""`message_facts.PATH` finds exactly what its spelled-out form finds (its docstring): the fast
form starts with the slash and checks the character before it afterwards."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ctxlab._messages import PATH, paths_in

SPELLED_OUT = re.compile(r"(?:(?<=[\s'\"(=])|^)(/[\w.\-/]+\.\w+|/[\w.\-]+(?:/[\w.\-]+)+)")

TEXT = st.text(alphabet="/ab.c-_'\"(=\n\t x1é\\:", max_size=40)


@settings(max_examples=3000, deadline=None)
@given(TEXT, st.data())
def test_same_matches_and_spans_as_the_spelled_out_form(text: str, data: st.DataObject) -> None:
    assert PATH.findall(text) == SPELLED_OUT.findall(text)
    pos = data.draw(st.integers(0, len(text)))
    end = data.draw(st.integers(pos, len(text)))
    fast = [(m.span(), m.group()) for m in PATH.finditer(text, pos, end)]
    assert fast == [(m.span(1), m.group(1)) for m in SPELLED_OUT.finditer(text, pos, end)]


def test_paths_start_the_text_or_follow_a_separator() -> None:
    text = "/etc/hosts and (/src/a.py) x=/tmp/b/c 'q/r.py' https://x.org/y/z.py 3/4 a/b/c.py"
    assert paths_in(text) == ["/etc/hosts", "/src/a.py", "/tmp/b/c"]
    assert paths_in("see /notes.md\n/var/log/x.log") == ["/notes.md", "/var/log/x.log"]
