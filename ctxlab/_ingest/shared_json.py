"""JSON Lines read so that a value repeated byte for byte is parsed once and shared.

A LangSmith export repeats the whole history in every model call's inputs (and the same
inputs again on the chain runs around the call): in the bundled long sample four fifths of
the 80 MB are copies of values already read, and `orjson` spent most of `ctxlab.load` parsing
them again. `SharedLines` splits each line with msgspec's scanner (it finds where each value
ends without building it, at over 1 GB/s), looks every member of `MIN_BYTES` or more up by its
exact bytes, and hands a repeat the object built the first time; everything else is parsed by
`orjson`, as before. The long sample's lines parse about three times faster (0.27 s against
0.89 s).

Results equal `orjson.loads` of each line (tests/test_shared_json.py): a line msgspec's scanner
refuses, or nests deeper than it recurses, is parsed by `orjson` whole, which raises its own
error for invalid JSON. The one difference is identity: equal repeated values are one object.
Readers that edit what they parse must call `unshare` first (`ctxlab.load` does so for every
format but LangSmith runs and message lists, whose readers copy before they change anything).

A file that does not repeat itself (a Claude Code session, a Codex rollout) would only pay for
the look-ups, so after its first `PROBE_BYTES` a file that reused less than `MIN_REUSE` of
what it read is parsed by `orjson` alone from there on.
"""

from __future__ import annotations

from typing import Any

import msgspec
import orjson

MIN_BYTES = 128
"""Shorter values are parsed directly, never looked up (a look-up would cost more)."""
SPLIT_BYTES = 8192
"""A value seen for the first time is split into its members (each looked up in turn) only
from this size on; shorter ones are parsed whole. Chosen on the bundled samples and the real
files in ../shared/data: the long sample parses fastest from 8 kB on, and the files that
hardly repeat themselves lose least."""
LOOKUP_MAX = 1 << 18
"""Longer values are split without a look-up (nor a copy): hashing them cost more than their
repeats saved (a history array grows at each call; its messages are what repeats).
`bench.bench_load`'s 93 MB export: 2.6x `json.loads` with look-ups at every size, 2.0-2.3x
from 256 kB on; the long sample parses in 0.27 s either way."""
MAX_DEPTH = 32
"""Deeper values are parsed whole by `orjson` (keeps recursion far from Python's limit)."""
PROBE_BYTES = 1 << 20
"""Bytes read before deciding whether sharing pays on this file."""
MIN_REUSE = 0.25
"""The share of bytes read that must be repeats for sharing to go on past the probe."""

_OBJECT = msgspec.json.Decoder(dict[str, msgspec.Raw])
_ARRAY = msgspec.json.Decoder(list[msgspec.Raw])
_REFUSED = (msgspec.DecodeError, RecursionError, orjson.JSONDecodeError)


class SharedLines:
    """Parses the lines of one file (`loads`); keeps what it built, by bytes, until dropped."""

    def __init__(self) -> None:
        self._memo: dict[bytes, Any] = {}
        # where a repeat was handed out: (container, key or index, its bytes), for `unshare`
        self._reused: list[tuple[Any, Any, bytes]] = []
        self._read = 0
        self._saved = 0
        self.sharing = True
        """False once the probe found too few repeats (later lines go to `orjson` alone)."""
        self.paused = False
        """True while the caller knows sharing would not pay (lines go to `orjson` alone, and
        the probe does not count them)."""

    def loads(self, line: bytes) -> Any:
        """`orjson.loads(line)`, repeated values shared; raises `orjson.JSONDecodeError` for
        what `orjson` refuses."""
        if self.paused or not self.sharing or len(line) < MIN_BYTES:
            return orjson.loads(line)
        reused: list[tuple[Any, Any, bytes]] = []
        try:
            value = self._value(line, 0, reused)
        except _REFUSED:
            return orjson.loads(line)
        self._reused.extend(reused)
        before, self._read = self._read, self._read + len(line)
        if before < PROBE_BYTES <= self._read and self._saved < MIN_REUSE * self._read:
            self.sharing = False  # decided once, at the end of the probe
            self._memo.clear()
        return value

    def _value(
        self, raw: bytes | memoryview, depth: int, reused: list[tuple[Any, Any, bytes]]
    ) -> Any:
        if len(raw) < SPLIT_BYTES or depth >= MAX_DEPTH:
            return orjson.loads(raw)
        first = raw[0]
        if first == 0x7B:  # {
            out: Any = {}
            for key, part in _OBJECT.decode(raw).items():
                out[key] = self._part(part, depth, reused, out, key)
        elif first == 0x5B:  # [
            out = []
            for i, part in enumerate(_ARRAY.decode(raw)):
                out.append(self._part(part, depth, reused, out, i))
        else:  # a long string or number
            out = orjson.loads(raw)
        return out

    def _part(
        self,
        part: msgspec.Raw,
        depth: int,
        reused: list[tuple[Any, Any, bytes]],
        container: Any,
        key: Any,
    ) -> Any:
        """A member of a container: the object built for the same bytes before, else a new
        one (remembered when its size is worth a look-up)."""
        n = len(part)
        if n < MIN_BYTES:
            return orjson.loads(memoryview(part))
        if n > LOOKUP_MAX:
            return self._value(memoryview(part), depth + 1, reused)
        raw = bytes(part)
        hit = self._memo.get(raw)  # never None: null is shorter than MIN_BYTES
        if hit is not None:
            self._saved += n
            reused.append((container, key, raw))
            return hit
        value = self._value(raw, depth + 1, reused)
        self._memo[raw] = value
        return value

    def unshare(self) -> None:
        """Give every repeat an object of its own (as `orjson.loads` would have), for readers
        that edit what they parse; costs a parse of the repeated bytes."""
        for container, key, raw in self._reused:
            container[key] = orjson.loads(raw)
        self._reused.clear()
        self._memo.clear()


__all__ = ["MIN_BYTES", "SharedLines"]
