"""The part of JSON Schema an executor's argument schema is checked by.

The top level of an object schema: `required`, `additionalProperties: false`,
and per property `type` (a name or a list of names), `enum`, and an `anyOf`
/ `oneOf` whose every branch names a `type` (the union of those types: how
pydantic, and so FastMCP, pydantic-ai and the OpenAI Agents SDK, write an
optional argument). Other keywords (`$ref`, `const`, formats, nested
schemas) are accepted and not checked (the executor's own validation runs
again when it is called).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from metis_trace import json_type_name

__all__ = ["JSON_TYPES", "required_args", "type_errors"]

JSON_TYPES = ("string", "integer", "number", "boolean", "array", "object", "null")


def _fits(value: object, name: str) -> bool:
    got = json_type_name(value)
    return got == name or (name == "number" and got == "integer")


def required_args(schema: Mapping[str, Any]) -> tuple[str, ...]:
    raw = schema.get("required", ())
    return tuple(r for r in raw if isinstance(r, str)) if isinstance(raw, list | tuple) else ()


def _properties(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    props = schema.get("properties", {})
    return props if isinstance(props, Mapping) else {}


def property_types(schema: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    """The JSON types an argument may have, or None when any is fine."""
    prop = _properties(schema).get(name)
    return _types_of(prop) if isinstance(prop, Mapping) else None


def _types_of(prop: Mapping[str, Any]) -> tuple[str, ...] | None:
    if "type" in prop:
        types = prop["type"]
        names = (types,) if isinstance(types, str) else tuple(types)
        known = tuple(n for n in names if n in JSON_TYPES)
        return known or None
    branches = prop.get("anyOf", prop.get("oneOf"))
    if not isinstance(branches, list | tuple) or not branches:
        return None
    union: list[str] = []
    for branch in branches:
        types = _types_of(branch) if isinstance(branch, Mapping) else None
        if types is None:
            return None  # a branch of any type (or unchecked): so is the union
        union += [t for t in types if t not in union]
    return tuple(union)


def is_closed(schema: Mapping[str, Any]) -> bool:
    return schema.get("additionalProperties", True) is False


def type_errors(schema: Mapping[str, Any], args: Mapping[str, Any]) -> list[str]:
    """Each argument that does not fit its property (unknown ones when closed)."""
    problems: list[str] = []
    props = _properties(schema)
    for name, value in args.items():
        prop = props.get(name)
        if not isinstance(prop, Mapping):
            if is_closed(schema):
                problems.append(f"unknown argument {name!r}")
            continue
        types = property_types(schema, name)
        if types is not None and not any(_fits(value, t) for t in types):
            problems.append(
                f"argument {name!r} must be {' or '.join(types)}, not {json_type_name(value)}"
            )
        enum = prop.get("enum")
        if isinstance(enum, list | tuple) and value not in enum:
            problems.append(f"argument {name!r} must be one of {list(enum)}")
    return problems
