"""`python -m traces.samples` must reproduce the sample traces in traces/ byte for byte.

The samples are only trustworthy if anyone can regenerate them, so the generator is rerun into
a temporary folder (about 20 s) and compared. It encodes the tracer's payloads with its own
encoder, not langsmith's private one, so the rerun also encodes every payload with langsmith's
and counts the differences. The long sample must also keep the properties it exists for. Ops are
read with plain `json`, independently of ctxlab's own loader.
"""

from __future__ import annotations

import json
import lzma
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
TRACES = REPO / "traces"
LONG = "deepagents_long_session.jsonl.xz"
SHORT = "deepagents_short_session.jsonl.xz"
# deepagents saves tool results longer than this to a file, except for these tools' results.
OFFLOAD_CHARS = 80_000
NEVER_OFFLOADED = {"ls", "glob", "grep", "read_file", "edit_file", "write_file", "delete"}


# The command's `main`, run in a fresh interpreter (the generator hides `rg` from deepagents,
# which caches that per process), encoding each payload with both encoders.
REGENERATE = """
import json, sys
from langsmith._internal._serde import dumps_json as langsmith_dumps_json
from traces.samples.__main__ import main
from traces.samples.encoding import dumps_json

counts = {"payloads": 0, "differing": 0}

def encode_both(payload):
    ours = dumps_json(payload)
    counts["payloads"] += 1
    counts["differing"] += ours != langsmith_dumps_json(payload)
    return ours

main([sys.argv[1]], encode=encode_both)
print(json.dumps(counts))
"""


@pytest.fixture(scope="module")
def regenerated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """The output folder of a rerun, and its payload counts."""
    out = tmp_path_factory.mktemp("samples")
    done = subprocess.run(
        [sys.executable, "-c", REGENERATE, str(out)],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
        timeout=900,
    )
    return out, json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize("name", [LONG, SHORT])
def test_regenerated_files_are_byte_identical(
    regenerated: tuple[Path, dict[str, int]], name: str
) -> None:
    committed, fresh = (TRACES / name).read_bytes(), (regenerated[0] / name).read_bytes()
    assert lzma.decompress(fresh) == lzma.decompress(committed), f"{name}: the JSONL changed"
    assert fresh == committed, f"{name}: same JSONL, different xz bytes (another liblzma?)"


def test_own_encoder_writes_what_langsmith_would(regenerated: tuple[Path, dict[str, int]]) -> None:
    ops = sum(
        len(lzma.decompress((TRACES / name).read_bytes()).splitlines()) for name in (LONG, SHORT)
    )
    assert regenerated[1] == {"payloads": ops, "differing": 0}


def test_command_is_a_module_of_the_checkout() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "traces.samples", "--help"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert "python -m traces.samples" in done.stdout and "[OUTPUT_DIR]" in done.stdout


def merged_runs(path: Path) -> dict[str, dict[str, Any]]:
    """Post and patch ops merged by run id, later fields winning."""
    runs: dict[str, dict[str, Any]] = {}
    with lzma.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            op = json.loads(line)
            runs.setdefault(op["id"], {}).update({k: v for k, v in op.items() if k != "op"})
    return runs


def ancestors(run: dict[str, Any], runs: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    chain = []
    while run.get("parent_run_id"):
        run = runs[run["parent_run_id"]]
        chain.append(run)
    return chain


def output_text(tool_run: dict[str, Any]) -> str:
    output = tool_run["outputs"]["output"]
    content = output.get("content") if isinstance(output, dict) else output
    return content if isinstance(content, str) else json.dumps(content)


def test_long_session_has_what_it_is_for() -> None:
    runs = merged_runs(TRACES / LONG)
    llm = [r for r in runs.values() if r["run_type"] == "llm"]
    tools = [r for r in runs.values() if r["run_type"] == "tool"]
    main = [
        r
        for r in llm
        if r["extra"]["metadata"].get("lc_source") != "summarization"
        and not any(a["run_type"] == "tool" for a in ancestors(r, runs))
    ]
    assert len(main) >= 150

    offloaded = [
        t for t in tools if t["name"] not in NEVER_OFFLOADED and len(output_text(t)) > OFFLOAD_CHARS
    ]
    assert len(offloaded) >= 3

    tasks = [t for t in tools if t["name"] == "task"]
    assert len(tasks) == 1
    assert any(tasks[0] in ancestors(r, runs) for r in llm)


def test_id_scanners_find_what_their_regexes_match() -> None:
    """`uuid_spans` and `hex_id_spans` (the generator's fast id searches) give exactly the
    matches of `UUID_RE` and `HEX_ID_RE`, which they stand in for, in the same order: on the
    short sample's lines and on ids packed against hex digits, overlapping and cut short."""
    from traces.samples.output import HEX_ID_RE, UUID_RE, hex_id_spans, uuid_spans

    uid = "0123abcd-4567-89ab-cdef-0123456789ab"
    hexid = "0123456789abcdef" * 2
    texts = lzma.decompress((TRACES / SHORT).read_bytes()).decode().splitlines()
    texts += [
        uid,
        "a" + uid,  # preceded by a hex digit: no match
        uid + "f",  # followed by one: no match
        uid[:8] + uid,  # a tail whose 8 digits before are themselves after hex digits
        "x" + uid + "-" + uid[9:],  # a second tail right after the first id
        uid[:-1] + " " + uid,
        f"session_{hexid} session_{hexid}0 session_{hexid[:-1]}",
        f'"lc_internal_call": "{hexid}", session_{hexid}',
        "",
    ]
    for text in texts:
        assert uuid_spans(text) == [m.span() for m in UUID_RE.finditer(text)], text[:200]
        assert hex_id_spans(text) == [m.span() for m in HEX_ID_RE.finditer(text)], text[:200]
