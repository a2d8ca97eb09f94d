"""Read and write footprints (SCHED-6): which calls of a batch must not
overlap because one reads where another writes.

A footprint is a tuple of absolute paths, each covering itself and what lies
below it; `/` covers everything (an unknown footprint). A Safe call and a
Queue call of one segment conflict when the Safe call's reads overlap the
Queue call's writes; the dispatcher then runs them in call order (an
Exclusive call never overlaps anything anyway). Written here, not imported
from the model, so that conformance checks the runtime against an
independent reading of the same rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ._base import EVERYTHING

if TYPE_CHECKING:
    from ..shell import ShellAnalysis

# Read-only commands that read no file at all.
_NO_FILES = frozenset(
    {
        "echo",
        "printf",
        "true",
        "false",
        "pwd",
        "date",
        "whoami",
        "id",
        "uname",
        "hostname",
        "which",
        "type",
        "seq",
        "sleep",
        "test",
        "[",
    }
)
# Read-only commands that read their operands, or the working directory when
# they name none (`ls`, `find`, `grep -r x`): the first operand of grep is its pattern.
_OPERANDS = frozenset(
    {
        "cat",
        "head",
        "tail",
        "wc",
        "nl",
        "file",
        "stat",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "cmp",
        "diff",
        "od",
        "xxd",
        "strings",
        "less",
        "more",
        "readlink",
        "realpath",
        "basename",
        "dirname",
        "ls",
        "du",
        "tree",
        "find",
        "sort",
        "uniq",
        "cut",
        "column",
    }
)
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg"})


def overlap(a: Sequence[Path], b: Sequence[Path]) -> bool:
    """Whether two footprints share a path (one is the other or lies below it)."""
    return any(x == y or x in y.parents or y in x.parents for x in a for y in b)


def shell_reads(
    analysis: ShellAnalysis | None, paths: tuple[Path, ...], workspace: Path
) -> tuple[Path, ...]:
    """What a read-only command line reads: the static path words it names
    (`paths`), plus the working directory for a command that names none;
    everything when a word is only known at run time or a command is not one
    whose reads are known."""
    if analysis is None:
        return EVERYTHING
    cwd = False
    for cmd in analysis.commands:
        if cmd.container:
            continue
        if cmd.open_ended or any(cmd.is_dynamic(i) for i in range(len(cmd.argv))):
            return EVERYTHING
        name = Path(cmd.argv[0]).name if cmd.argv else ""
        if name in _NO_FILES:
            continue
        operands = [w for w in cmd.argv[1:] if not w.startswith("-")]
        if name in _PATTERN_FIRST:
            operands = operands[1:]
        elif name not in _OPERANDS:
            return EVERYTHING
        if not operands and not cmd.reads:
            cwd = True
    reads = list(paths)
    if cwd and workspace not in reads:
        reads.append(workspace)
    return tuple(reads)
