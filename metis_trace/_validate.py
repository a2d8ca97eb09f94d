"""Validate decoded JSON against a pydantic schema in strict mode.

Strict mode (https://docs.pydantic.dev/latest/concepts/strict_mode/) accepts
no coercion: `"seq": "2"` is not an integer, `true` is not an integer, `1` is
not a string. Validation runs on the JSON text (`validate_json`), where
strictness keeps JSON's own meaning: a string names an enum member and an
array fills a tuple, as the schema says, while a Python object would have to
be an enum instance. The text is checked by `decode_json` first (depth,
numbers, duplicate keys), so pydantic's own parser sees only strict JSON.
"""

from __future__ import annotations

import json
import re
from typing import Any
from typing import TypeVar

from pydantic import BaseModel
from pydantic import TypeAdapter
from pydantic import ValidationError

from ._errors import InputError

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


def first_error(exc: ValidationError) -> str:
    """`field.path: what is wrong (got <value>)` for the first error pydantic found."""
    err = exc.errors(include_url=False)[0]
    where = ".".join(str(p) for p in err["loc"])
    got = err.get("input")
    shown = ""
    if err["type"] not in ("missing", "extra_forbidden") and not isinstance(got, dict | list):
        text = repr(got)
        shown = f" (got {text[:60]}{'...' if len(text) > 60 else ''})"
    return f"{where}: {err['msg']}{shown}" if where else f"{err['msg']}{shown}"


# pydantic-core's JSON parser refuses lone surrogate escapes, which the runtime
# writes for file names that are not UTF-8 (Python's surrogateescape).
_LONE_SURROGATE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def validate_strict(
    schema: TypeAdapter[T], text: str, *, line: int | None = None, source: str = ""
) -> T:
    """`text` (strict JSON) as a value of `schema`, with no type coercion."""
    try:
        return schema.validate_json(text, strict=True)
    except ValidationError as exc:
        if exc.errors()[0]["type"] != "json_invalid" or not _LONE_SURROGATE.search(text):
            raise InputError(line, first_error(exc), source) from exc
    # Types are checked strictly on the text with each lone surrogate replaced
    # (only string contents change); the value is the decoder's, surrogates kept.
    try:
        schema.validate_json(_LONE_SURROGATE.sub(r"\\ufffd", text), strict=True)
        return schema.validate_python(json.loads(text))
    except ValidationError as exc:
        raise InputError(line, first_error(exc), source) from exc


def model_strict(model: type[M], text: str, *, line: int | None = None, source: str = "") -> M:
    """Like `validate_strict`, for a model class."""
    return validate_strict(_adapter(model), text, line=line, source=source)


_ADAPTERS: dict[type[BaseModel], TypeAdapter[Any]] = {}


def _adapter(model: type[M]) -> TypeAdapter[M]:
    adapter = _ADAPTERS.get(model)
    if adapter is None:
        adapter = _ADAPTERS[model] = TypeAdapter(model)
    return adapter


def value_strict(model: type[M], value: Any, *, line: int | None = None, source: str = "") -> M:
    """A decoded value (from YAML, say) validated with JSON's strictness: it is
    written back as JSON text and validated as such, so a YAML `'2'` stays a
    string and is no integer."""
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InputError(line, f"not a JSON value ({exc})", source) from exc
    return model_strict(model, text, line=line, source=source)
