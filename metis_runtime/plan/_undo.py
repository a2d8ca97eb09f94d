"""`restore_files`: the executor of the `undo` route.

Before a plan turn's `edit` step runs, the driver keeps each file it is about
to change (or notes that it did not exist) under
`.metis/plan/turns/<turn>/undo/`, once per file and turn. `restore_files`
puts those files back as they were (and removes the ones the turn created).
It is an ordinary `edit` tool: its paths go through the gate (scope,
protected paths, the mode), it is asked about in `default` mode, and a
failure rolls back through the dispatcher's file transaction.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from metis_trace import CallClass
from metis_trace import ToolKind

from .._errors import ToolError
from .._errors import ToolInputError
from ..tools import Classification
from ..tools import Tool
from ..tools import ToolContext
from ..tools import ToolInput
from ..tools import ToolOutput
from ..tools import ToolSpec
from ..tools import atomic_write
from ..tools._base import object_schema


def _index(workspace: Path, turn: str) -> tuple[Path, list[dict[str, Any]]]:
    if not turn or "/" in turn or turn.startswith("."):
        raise ToolInputError(f"restore_files: field 'turn' is not a turn id: {turn!r}")
    folder = workspace / ".metis" / "plan" / "turns" / turn / "undo"
    index = folder / "index.json"
    if not index.is_file():
        return folder, []
    try:
        entries = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ToolError(f"restore_files: {index}: unreadable ({exc})") from exc
    if not isinstance(entries, list):
        raise ToolError(f"restore_files: {index}: not a list")
    return folder, entries


class RestoreTool(Tool):
    def __init__(self) -> None:
        self._spec = ToolSpec(
            "restore_files",
            "Put back the files a previous plan turn changed, as they were before it.",
            object_schema({"turn": {"type": "string", "minLength": 1}}, ("turn",)),
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def kind(self, input: ToolInput) -> ToolKind:
        return ToolKind.EDIT

    def _paths(self, input: ToolInput, ctx: ToolContext) -> tuple[Path, ...]:
        _, entries = _index(ctx.workspace, str(input.get("turn", "")))
        return tuple(Path(os.path.realpath(e["path"])) for e in entries)

    def classify(self, input: ToolInput, ctx: ToolContext) -> Classification:
        return Classification(CallClass.EXCLUSIVE, None, ToolKind.EDIT, self._paths(input, ctx))

    async def run(self, input: ToolInput, ctx: ToolContext) -> ToolOutput:
        self.validate(input)
        folder, entries = _index(ctx.workspace, str(input["turn"]))
        if not entries:
            raise ToolError(
                f"restore_files: turn {input['turn']} changed no file that can be restored"
            )
        restored, removed = [], []
        for e in entries:
            path = Path(e["path"])
            if ctx.transaction is not None:
                ctx.transaction.snapshot(path)
            if e.get("existed"):
                atomic_write(path, (folder / str(e["saved"])).read_bytes())
                restored.append(str(path.relative_to(ctx.workspace)))
            elif path.exists():
                path.unlink()
                removed.append(str(path.relative_to(ctx.workspace)))
        return ToolOutput(json.dumps({"restored": restored, "removed": removed}))
