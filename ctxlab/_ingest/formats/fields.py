"""Typed reads of fields from untrusted JSON objects, for every format reader.

Hand-edited exports and other tools' variants put values of the wrong type where a reader
expects a string, object or list. These accessors check the type where a field is read and
raise `FieldTypeError` saying which field and what was expected; each reader turns it into a
`TraceFormatError` naming its file, line and run. A missing field (or null) is not an error
here: readers decide what absence means.
"""

from __future__ import annotations

from typing import Any


class FieldTypeError(ValueError):
    """A field holds a value of the wrong type; the text names the field and what it expected."""

    def __init__(self, field: str, expected: str, value: Any) -> None:
        self.field = field
        super().__init__(f"field {field!r}: expected {expected}, got {describe(value)}")


def describe(value: Any) -> str:
    """A short name for a JSON value's type, as error messages show it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value!r})"[:60]
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def obj(holder: dict[str, Any], key: str, field: str | None = None) -> dict[str, Any]:
    """`holder[key]` as an object; missing or null gives an empty one."""
    value = holder.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise FieldTypeError(field or key, "an object", value)
    return value


def obj_or_empty(holder: dict[str, Any], key: str) -> dict[str, Any]:
    """`holder[key]` when it is an object, else an empty one: for optional blocks (metadata,
    metrics) whose absence or odd shape loses only what they would have added."""
    value = holder.get(key)
    return value if isinstance(value, dict) else {}


def seq(holder: dict[str, Any], key: str, field: str | None = None) -> list[Any]:
    """`holder[key]` as a list; missing or null gives an empty one."""
    value = holder.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise FieldTypeError(field or key, "a list", value)
    return value


def text(holder: dict[str, Any], key: str, field: str | None = None) -> str | None:
    """`holder[key]` as a string (numbers are accepted as their text); missing gives None."""
    value = holder.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise FieldTypeError(field or key, "a string", value)
    return str(value)


def count(holder: dict[str, Any], key: str, field: str | None = None) -> int | None:
    """`holder[key]` as a non-negative whole number of tokens; missing gives None."""
    value = holder.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise FieldTypeError(field or key, "a non-negative number", value)
    if isinstance(value, float) and not value.is_integer():
        raise FieldTypeError(field or key, "a whole number", value)
    return int(value)
