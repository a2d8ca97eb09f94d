"""The fault matrix: every row, by name (`FAULTS`), and running them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ._harness import FaultRow
from ._kill import sigkill_background
from ._kill import sigkill_duplicate_ids
from ._kill import sigkill_then_resume
from ._mcp import mcp_malformed_result
from ._mcp import mcp_server_dies
from ._mcp import mcp_server_hangs
from ._rows import background_fails
from ._rows import cancel_mid_batch
from ._rows import denial_mid_batch
from ._rows import duplicate_ids
from ._rows import interrupt_then_resume
from ._rows import malformed_arguments
from ._rows import partial_edit_rolled_back
from ._rows import partial_exec_kept
from ._rows import stream_cut
from ._rows import tool_hangs
from ._rows import tool_raises

FAULTS: dict[str, Callable[[Path, str], FaultRow]] = {
    "raises": tool_raises,
    "hangs": tool_hangs,
    "cancel": cancel_mid_batch,
    "interrupt": interrupt_then_resume,
    "stream-cut": stream_cut,
    "malformed": malformed_arguments,
    "denial": denial_mid_batch,
    "background": background_fails,
    "duplicate-ids": duplicate_ids,
    "sigkill": sigkill_then_resume,
    "sigkill-duplicate-ids": sigkill_duplicate_ids,
    "sigkill-background": sigkill_background,
    "rollback": partial_edit_rolled_back,
    "exec-partial": partial_exec_kept,
    "mcp-dies": mcp_server_dies,
    "mcp-hangs": mcp_server_hangs,
    "mcp-malformed": mcp_malformed_result,
}


def run_fault(name: str, workdir: Path, dispatcher: str = "serial") -> FaultRow:
    """One row (in `workdir/<name>`); a row whose driver crashes is reported,
    not raised."""
    try:
        return FAULTS[name](workdir, dispatcher)
    except Exception as exc:
        text = f"crashed: {type(exc).__name__}: {exc}"
        return FaultRow(name, "-", "-", text, "-", False, False, text)


def run_fault_matrix(workdir: Path, dispatcher: str = "serial") -> list[FaultRow]:
    """Every row, each in its own directory under `workdir`, with the
    loop's dispatcher `serial` or `four-class`."""
    workdir.mkdir(parents=True, exist_ok=True)
    return [run_fault(name, workdir, dispatcher) for name in FAULTS]
