"""Seeded randomness that is the same in every process, so reruns give the same bytes.

Python's `hash` of a string changes with the hash seed; these helpers derive ids and numbers
from a seeded `random.Random` or from sha256 instead.
"""

from __future__ import annotations

import hashlib
import random
import string

ID_ALPHABET = string.ascii_letters + string.digits


def token_stream(rng: random.Random, alphabet: str, length: int) -> str:
    """Random-looking but seeded identifiers, so reruns give the same ids."""
    return "".join(rng.choice(alphabet) for _ in range(length))


def stable_int(*parts: object) -> int:
    """A hash that does not change between processes (unlike `hash`)."""
    return int.from_bytes(hashlib.sha256(repr(parts).encode()).digest()[:8], "big")
