"""A server's input schema, checked before the model sees it, and the
arguments checked against it (jsonschema, the schema's own draft).

A schema that is not a JSON Schema object of type `object` (the MCP spec's
`inputSchema`) would make the provider refuse the whole request, so such a
tool is not offered (`schema_problem`). Arguments are validated in full, not
only at the top level as the built-in tools' `ToolSpec.validate` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import ToolInputError


def schema_problem(schema: object) -> str | None:
    """Why `schema` cannot be a tool's input schema (None: it can)."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    if not isinstance(schema, Mapping):
        return "the input schema is not an object"
    if schema.get("type") != "object":
        return f"the input schema's type is {schema.get('type')!r}, not 'object'"
    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        return f"the input schema is not valid JSON Schema at {where}: {_first_line(exc.message)}"
    return None


def _first_line(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


class ArgumentValidator:
    """Validates a call's arguments against a (checked) input schema."""

    def __init__(self, tool: str, schema: Mapping[str, Any]) -> None:
        from jsonschema.validators import validator_for
        from referencing import Registry

        self.tool = tool
        # An empty registry: a `$ref` resolves inside the schema, never over the network.
        self._validator = validator_for(schema)(dict(schema), registry=Registry())

    def validate(self, arguments: object) -> None:
        """ToolInputError (one line, naming the field) unless the arguments fit."""
        from jsonschema.exceptions import best_match

        if not isinstance(arguments, Mapping):
            raise ToolInputError(f"{self.tool}: input must be an object")
        error = best_match(self._validator.iter_errors(dict(arguments)))
        if error is None:
            return
        where = "/".join(str(p) for p in error.absolute_path)
        field = f"field '{where}': " if where else ""
        raise ToolInputError(f"{self.tool}: {field}{_first_line(error.message)}")
