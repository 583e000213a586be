"""The JSON encoding of a tracer payload, as the LangSmith client would send it.

`langsmith.Client` encodes each run with `langsmith._internal._serde.dumps_json`, which is
private. This is the part of it these recordings reach: orjson writes times, UUIDs and plain
data natively, and a pydantic model (a message in a chain's state) becomes its JSON-mode
`model_dump` without `None` fields, as the client's encoder does. Anything else is refused
rather than guessed, so a new payload type after an upgrade fails loudly instead of changing
the samples. tests/test_samples_script.py checks that every payload of both sessions encodes
to the same bytes as langsmith's own encoder.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel


def _json_form(value: Any) -> Any:
    """What orjson cannot write itself: pydantic models, as the LangSmith client dumps them."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True, warnings=False)
    raise TypeError(f"no JSON form for {type(value).__qualname__} in a tracer payload")


def dumps_json(payload: Any) -> bytes:
    """UTF-8 JSON of one tracer payload, byte for byte what the LangSmith client would send."""
    return orjson.dumps(payload, default=_json_form)
