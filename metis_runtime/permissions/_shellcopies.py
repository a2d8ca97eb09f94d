"""Copies and archives: the folders a command reads whole, and the archive
it writes (issue 26: `cp -r ~/.ssh /tmp`, `tar czf x.tgz ~/.ssh`, `zip -r`,
`rsync -a`). Option shapes from each program's manual page (cp(1),
rsync(1), scp(1), tar(1): its three option styles, zip(1), 7z).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

__all__ = ["REMOTE", "bulk"]

_Operand = tuple[str, bool, int]  # word, whether dynamic, index in argv
REMOTE = re.compile(r"[^/]*[^/\\]:")  # scp/rsync `host:path`, `user@host:`


def _recursive_flag(argv: Sequence[str], letters: str, longs: Sequence[str]) -> bool:
    for w in argv[1:]:
        if w == "--":
            break
        if w.startswith("--"):
            if w.split("=", 1)[0] in longs:
                return True
        elif w.startswith("-") and any(c in letters for c in w[1:]):
            return True
    return False


def bulk(
    name: str, argv: Sequence[str], dynamic: Sequence[bool], operands: Sequence[_Operand]
) -> tuple[list[_Operand], list[_Operand]] | None:
    """Folders a command copies or archives whole, and the archive it writes:
    `cp -r`/`-a`, `rsync -r`/`-a`, `scp -r` (every operand but the last),
    `tar -c` (its operands; `-f` names the archive), `zip` (the first
    operand is the archive), `7z a`. None for any other command."""
    if name in ("cp", "rsync", "scp") and len(operands) >= 2:
        letters = {"cp": "rRa", "rsync": "ra", "scp": "r"}[name]
        if _recursive_flag(argv, letters, ("--recursive", "--archive")):
            return list(operands[:-1]), [operands[-1]]
        return None
    if name == "zip" and operands:
        return list(operands[1:]), [operands[0]]
    if name in ("7z", "7za", "7zr") and len(operands) >= 2 and operands[0][0] in ("a", "u"):
        return list(operands[2:]), [operands[1]]
    if name in ("tar", "bsdtar", "gtar"):
        return _tar(argv, dynamic)
    return None


def _tar(
    argv: Sequence[str], dynamic: Sequence[bool]
) -> tuple[list[_Operand], list[_Operand]] | None:
    """tar's three option styles (`tar czf A dir`, `tar -czf A dir`,
    `tar --create --file=A dir`): in create, append and update modes the
    operands are read whole; the `f` value is the archive."""
    takes_value = set("fCTXbgHKLNV")
    mode = ""
    archive: list[_Operand] = []
    operands: list[_Operand] = []
    pending: list[str] = []  # letters whose values come in the next words
    for i, w in enumerate(argv[1:], 1):
        if pending:
            letter = pending.pop(0)
            if letter == "f":
                archive.append((w, dynamic[i], i))
            continue
        if i == 1 and not w.startswith("-"):
            w = "-" + w  # the old style: a first word of bundled letters
        if w.startswith("--"):
            opt = w[2:].split("=", 1)[0]
            mode = mode or {"create": "c", "append": "r", "update": "u", "concatenate": "A"}.get(
                opt, ""
            )
            if opt == "file" and "=" in w:
                archive.append((w.split("=", 1)[1], False, i))
            elif opt in ("file", "directory", "files-from", "exclude-from") and "=" not in w:
                pending.append("f" if opt == "file" else "C")
            continue
        if w.startswith("-") and len(w) > 1:
            for k, c in enumerate(w[1:], 1):
                if c in "cruA" and not mode:
                    mode = c
                if c in takes_value:
                    if k < len(w) - 1 and i != 1:
                        if c == "f":
                            archive.append((w[k + 1 :], False, i))
                        break
                    pending.append(c)
            continue
        operands.append((w, dynamic[i], i))
    if mode not in ("c", "r", "u", "A"):
        return archive, []  # listing or extracting: the archive is what is read
    return operands, archive
