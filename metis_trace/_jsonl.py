"""What the three JSON Lines formats (trace, turn log, witness) share.

Each format is a header line, then records of a pydantic union discriminated
by `kind`. The list of kinds is read off that union, so adding a record class
to the union is the one edit that adds its kind; and the three JSON Schema
documents have one frame.
"""

from __future__ import annotations

from typing import Any
from typing import get_args

from pydantic import BaseModel

__all__ = ["JSON_SCHEMA_DRAFT", "jsonl_schema", "union_kinds"]

JSON_SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"


def union_kinds(union: object) -> tuple[str, ...]:
    """The `kind` of each member of `Annotated[A | B | ..., Field(discriminator="kind")]`,
    in the union's order (each member declares `kind: Literal["..."] = "..."`)."""
    members: tuple[type[BaseModel], ...] = get_args(get_args(union)[0])
    return tuple(str(member.model_fields["kind"].default) for member in members)


def jsonl_schema(
    title: str,
    version: int,
    header: type[BaseModel],
    description: str | None = None,
    **lines: dict[str, Any],
) -> dict[str, Any]:
    """The JSON Schema document of a JSON Lines format: its title, version and
    header line's schema, then the schemas in `lines`, in the order given."""
    document: dict[str, Any] = {"$schema": JSON_SCHEMA_DRAFT, "title": title}
    if description is not None:
        document["description"] = description
    return {**document, "version": version, "header": header.model_json_schema(), **lines}
