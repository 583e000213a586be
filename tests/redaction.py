"""Redact a Codex rollout or a Claude Code session the way people redact traces they share.

Every text becomes `[REDACTED_TEXT len=N sha=H]` and every tool-call argument
`[REDACTED_ARGUMENTS len=N sha=H]` (N: the hidden text's length; H: the first 12 hex digits of
its SHA-256), usage and structure untouched. Tests build the copies from the shared files
(never committed) and check that ctxlab reads them as it reads the originals.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from pathlib import Path
from typing import Any


def marker(text: str, kind: str = "TEXT") -> str:
    """The marker that replaces `text`."""
    digest = hashlib.sha256(text.encode()).hexdigest()[:12]
    return f"[REDACTED_{kind} len={len(text)} sha={digest}]"


def _text(value: Any) -> Any:
    return marker(value) if isinstance(value, str) and value else value


def _arguments(value: Any) -> Any:
    """Arguments as the producer wrote them (a JSON string, or an object serialised)."""
    if value is None:
        return value
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return marker(text, "ARGUMENTS") if text else value


def _parts(parts: Any) -> Any:
    """Content parts (`input_text`, `output_text`, `text`, ...) with their texts redacted."""
    if isinstance(parts, str):
        return _text(parts)
    if not isinstance(parts, list):
        return parts
    out = []
    for part in parts:
        if isinstance(part, dict):
            part = dict(part)
            for key in ("text", "thinking"):
                if key in part:
                    part[key] = _text(part[key])
            if part.get("type") == "tool_use" and "input" in part:
                part["input"] = _arguments(part["input"])
            if part.get("type") == "tool_result" and "content" in part:
                part["content"] = _parts(part["content"])
        out.append(part)
    return out


def redact_codex_line(line: dict[str, Any]) -> dict[str, Any]:
    """One rollout line with its texts and arguments redacted."""
    line = json.loads(json.dumps(line))
    payload = line.get("payload")
    if not isinstance(payload, dict):
        return line
    kind = payload.get("type")
    if line.get("type") == "session_meta" and isinstance(payload.get("base_instructions"), dict):
        payload["base_instructions"]["text"] = _text(payload["base_instructions"].get("text"))
    if line.get("type") == "turn_context":
        payload["user_instructions"] = _text(payload.get("user_instructions"))
    if kind == "message":
        payload["content"] = _parts(payload.get("content"))
    elif kind == "reasoning":
        payload["summary"] = _parts(payload.get("summary"))
        payload["content"] = _parts(payload.get("content"))
    elif kind == "function_call":
        payload["arguments"] = _arguments(payload.get("arguments"))
    elif kind == "custom_tool_call":
        payload["input"] = _arguments(payload.get("input"))
    elif kind in ("function_call_output", "custom_tool_call_output"):
        output = payload.get("output")
        payload["output"] = _text(output) if isinstance(output, str) else _parts(output)
    elif kind in ("user_message", "agent_message"):
        payload["message"] = _text(payload.get("message"))
    return line


def redact_claude_code_line(line: dict[str, Any]) -> dict[str, Any]:
    """One session line with its texts and tool inputs redacted."""
    line = json.loads(json.dumps(line))
    message = line.get("message")
    if isinstance(message, dict) and "content" in message:
        message["content"] = _parts(message["content"])
    if "toolUseResult" in line:
        result = line["toolUseResult"]
        line["toolUseResult"] = _arguments(result) if result is not None else None
    if line.get("type") == "summary":
        line["summary"] = _text(line.get("summary"))
    return line


def redact_file(source: Path, target: Path, redact: Any) -> Path:
    """Write `source` (JSONL, gzipped or not) redacted line by line to `target` (JSONL)."""
    opener = gzip.open if source.suffix == ".gz" else open
    with opener(source, "rt", encoding="utf-8") as lines, open(target, "w") as out:
        for text in lines:
            if text.strip():
                out.write(json.dumps(redact(json.loads(text)), ensure_ascii=False) + "\n")
    return target
