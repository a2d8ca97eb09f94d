"""The files an interpreter reads, as far as its command line plainly shows
them (issue 26: `awk '{print}' .env`, `python -c 'open(".env")'`).

- awk: every operand after the program (or after `-f FILE`, which is read
  too), but `var=value` assignments;
- an interpreter running a one-liner (`python -c`, `perl -ne`, `node -e`,
  ...): the operands after the program text, and every string literal in
  the text that could be a path;
- an interpreter running a script: the script and its operands.

A path the line does not show (built at run time inside the program) is not
seen: the docs say Read rules cover recognised file commands, not arbitrary
subprocesses (code.claude.com/docs/en/permissions); a one-liner is opaque
anyway (never allowed, `_analyze.py`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..shell import interpreter_code
from ..shell import interpreter_names

_Operand = tuple[str, bool, int]  # word, whether dynamic, index in argv
_LITERAL = re.compile(r"""'([^'\\\s]{1,4096})'|"([^"\\\s]{1,4096})\"""")
_AWK_VALUE = frozenset({"-F", "-v", "--field-separator", "--assign"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


def interpreter_reads(
    name: str, argv: Sequence[str], dynamic: Sequence[bool], operands: Sequence[_Operand]
) -> list[_Operand]:
    """What `argv` (an interpreter, else nothing) reads; see the module doc."""
    awk, code_options = interpreter_names()
    if name in awk:
        return _awk(argv, dynamic)
    base = re.sub(r"[0-9.]+$", "", name) if name.startswith("python") else name
    if name not in code_options and base not in code_options:
        return []
    # A run-time argument of a program is not taken for a file it reads
    # (`python3 tool.py "$ARG"`): only the words the line shows.
    shown = [op for op in operands if not op[1]]
    code = interpreter_code(name, argv, dynamic)
    if code is None:
        return shown  # a script file and its arguments
    at = next((i for i, w in enumerate(argv) if i and (w == code or w.endswith(code))), None)
    if not code or at is None:
        return shown
    out = [op for op in shown if op[2] > at]
    out.extend((a or b, False, -1) for a, b in _LITERAL.findall(code))
    return out


def _awk(argv: Sequence[str], dynamic: Sequence[bool]) -> list[_Operand]:
    out: list[_Operand] = []
    program_seen = False
    i = 1
    while i < len(argv):
        w, dyn = argv[i], dynamic[i]
        if not dyn and w in _AWK_VALUE:
            i += 2
            continue
        if not dyn and w in ("-f", "--file") and i + 1 < len(argv):
            out.append((argv[i + 1], dynamic[i + 1], i + 1))
            program_seen = True
            i += 2
            continue
        if not dyn and w.startswith("-") and w != "-" and not program_seen:
            i += 1
            continue
        if not program_seen:
            program_seen = True
            out.extend((a or b, False, -1) for a, b in _LITERAL.findall(w))
        elif dyn or not _ASSIGNMENT.match(w):
            out.append((w, dyn, i))
        i += 1
    return out
