"""MCP results as the provider's tool result blocks (metis_runtime/mcp/_results.py)."""

from __future__ import annotations

import base64

from mcp_types import BlobResourceContents
from mcp_types import CallToolResult
from mcp_types import EmbeddedResource
from mcp_types import ImageContent
from mcp_types import ResourceLink
from mcp_types import TextContent
from mcp_types import TextResourceContents

from metis_runtime.mcp import to_output

PNG = base64.b64encode(b"\x89PNG" + b"\x00" * 60).decode()


def test_text_blocks_join_and_structured_is_not_repeated() -> None:
    result = CallToolResult(
        content=[TextContent(type="text", text="a"), TextContent(type="text", text="b")],
        structured_content={"result": "a"},
    )
    out = to_output(result)
    assert (out.content, out.is_error) == ("a\nb", False)


def test_structured_alone_is_its_json() -> None:
    out = to_output(CallToolResult(content=[], structured_content={"b": 1, "a": [True]}))
    assert out.content == '{"a": [true], "b": 1}'


def test_is_error_is_an_error_result() -> None:
    out = to_output(CallToolResult(content=[TextContent(type="text", text="no")], is_error=True))
    assert out.is_error and out.content == "no"


def test_images_and_resources_are_references() -> None:
    result = CallToolResult(
        content=[
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            ResourceLink(type="resource_link", uri="file:///r.txt", name="r"),
            EmbeddedResource(
                type="resource",
                resource=BlobResourceContents(uri="file:///b.bin", blob=PNG, mime_type="x/y"),
            ),
            EmbeddedResource(
                type="resource",
                resource=TextResourceContents(uri="file:///t.md", text="hello"),
            ),
        ]
    )
    lines = to_output(result).content.splitlines()
    assert lines[0].startswith("[image image/png, 64 bytes, sha256 ") and PNG not in lines[0]
    assert lines[1] == "[resource link file:///r.txt (r)]"
    assert lines[2].startswith("[resource file:///b.bin, x/y, 64 bytes") and PNG not in lines[2]
    assert lines[3:] == ["[resource file:///t.md, 5 characters]", "hello"]


def test_output_is_cut_never_inside_a_credential() -> None:
    key = "sk-ant-api03-" + "A" * 93 + "AA"
    text = "x" * 90 + key
    out = to_output(CallToolResult(content=[TextContent(type="text", text=text)]), limit=100)
    assert out.content.startswith("x" * 90 + "\n[output cut at 100 characters")
