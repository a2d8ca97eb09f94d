"""What a simple command reads and writes on disk, for Read/Edit rules,
protected paths and scope (https://code.claude.com/docs/en/permissions:
"Read and Edit deny rules also cover recognised file commands").

The docs name `cat`, `head`, `tail` and `sed`; issue 12 adds `less`, `cp`,
`mv`, `tee`, `dd`, `install` and redirections. Beyond those, any command's
`--output=FILE`, `--output FILE` and (for commands outside the read-only
set) `-o FILE` count as writes. A write target known only at run time is
reported as such, never guessed.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence

from attrs import field
from attrs import frozen

from ..shell import SimpleCommand
from ..shell import command_is_read_only
from ..shell import trusted_name
from ._interpfiles import interpreter_reads
from ._shellcopies import REMOTE
from ._shellcopies import bulk as copied_whole


@frozen
class FileEffects:
    reads: tuple[str, ...] = ()
    writes: tuple[str, ...] = ()
    deletes: tuple[str, ...] = ()  # rm / rmdir targets (also in writes)
    dynamic_write: bool = False  # a write target only known at run time
    recursive_reads: tuple[str, ...] = field(default=())  # roots a search reads below
    dynamic_read: bool = False  # a file read is only known at run time
    read_globs: tuple[str, ...] = ()  # patterns the shell expands against the disk
    bulk_reads: tuple[str, ...] = ()  # folders copied or archived whole (cp -r, tar, zip)
    # Reads a run-time word expands to (`$HOME/x`, `{a,b}`, `$f`): they meet
    # deny and ask rules and the secret check; scope reads the words as written.
    expanded_reads: tuple[str, ...] = ()


# Commands whose operands (not options) are files they read.
_READERS = frozenset(
    [
        "cat",
        "head",
        "tail",
        "less",
        "more",
        "nl",
        "od",
        "xxd",
        "hexdump",
        "strings",
        "wc",
        "md5sum",
        "sha1sum",
        "sha256sum",
        "sha512sum",
        "cksum",
        "base64",
        "file",
        "stat",
        "tac",
        "rev",
        "cut",
        "sort",
        "uniq",
        "diff",
        "cmp",
        "comm",
        "paste",
        "fold",
        "expand",
        "unexpand",
        "column",
        "bat",
        "jq",
        "yq",
    ]
)
# Search commands: the first operand is a pattern, the rest are roots.
_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag", "ack"})
_RECURSIVE = frozenset({"find", "ls", "du", "tree", "fd"})
# Writers: every operand is a target (mkdir, touch, rm, rmdir, chmod...).
_ALL_TARGETS = frozenset({"mkdir", "touch", "rm", "rmdir", "truncate", "shred", "unlink"})
_LAST_TARGET = frozenset({"cp", "mv", "install", "ln"})
# Commands whose option values are known not to be paths.
_OPT_VALUE = {
    "head": "nc",
    "tail": "nc",
    "sort": "kt",
    "cut": "dfc",
    "grep": "efmABC",
    "rg": "egmABCtT",
    "install": "mogS",
    "cp": "tS",
    "mv": "tS",
    "ln": "tS",
    "xxd": "cglsno",
    "od": "AjNtw",
    "chmod": "",
    "truncate": "sr",
    "sed": "el",
    "tee": "",
    "uniq": "fsw",
    "wc": "",
    "touch": "dtr",
    "mkdir": "m",
    "diff": "UCx",
}
# acceptEdits auto-approves these on in-scope paths (permission-modes docs).
ACCEPT_EDITS_COMMANDS = frozenset({"mkdir", "touch", "rm", "rmdir", "mv", "cp", "sed"})


_Operand = tuple[str, bool, int]  # word, whether dynamic, index in argv


def _operands(argv: Sequence[str], dynamic: Sequence[bool], name: str) -> list[_Operand]:
    """Operands (with whether each is dynamic, and where), skipping options
    and the values of options known to take one."""
    takes = _OPT_VALUE.get(name, "")
    out: list[_Operand] = []
    i = 1
    after = False
    while i < len(argv):
        word, dyn = argv[i], dynamic[i]
        if after or dyn or not word.startswith("-") or word == "-":
            if word != "-":
                out.append((word, dyn, i))
        elif word == "--":
            after = True
        elif not word.startswith("--") and len(word) == 2 and word[1] in takes:
            i += 1
        i += 1
    return out


def _option_targets(
    argv: Sequence[str], dynamic: Sequence[bool], read_only: bool
) -> list[tuple[str, bool]]:
    """`--output=F`, `--output F`, `-o F`/`-oF` (not for read-only commands),
    `-O F` (wget), `of=F` (dd)."""
    out: list[tuple[str, bool]] = []
    name = posixpath.basename(argv[0]) if argv else ""
    for i, word in enumerate(argv[1:], 1):
        nxt = (argv[i + 1], dynamic[i + 1]) if i + 1 < len(argv) else None
        if word.startswith(("--output=", "--output-document=", "--log-file=")):
            out.append((word.split("=", 1)[1], dynamic[i]))
        elif (word in ("--output", "--output-document", "--log-file") and nxt) or (
            not read_only and word == "-o" and nxt
        ):
            out.append(nxt)
        elif (
            not read_only and word.startswith("-o") and len(word) > 2 and not word.startswith("--")
        ):
            out.append((word[2:], dynamic[i]))
        elif name == "wget" and word == "-O" and nxt:
            out.append(nxt)
        elif name == "dd" and word.startswith("of="):
            out.append((word[3:], dynamic[i]))
    return out


def file_effects(cmd: SimpleCommand) -> FileEffects:
    """The files `cmd` reads and writes, as far as its arguments show."""
    argv = cmd.argv
    if not argv:
        return FileEffects(
            writes=cmd.writes,
            reads=cmd.reads,
            dynamic_write=cmd.opaque_writes,
            dynamic_read=cmd.opaque_reads,
        )
    dynamic = tuple(cmd.is_dynamic(i) for i in range(len(argv)))
    name = trusted_name(argv[0]) or ""
    acc = _Reads(cmd)
    writes: list[str] = list(cmd.writes)
    deletes: list[str] = []
    recursive: list[str] = []
    dyn_write = cmd.opaque_writes
    ro = command_is_read_only(argv, dynamic, cmd.open_ended)
    targets = [(w, d) for w, d in _option_targets(argv, dynamic, ro)]
    operands = _operands(argv, dynamic, name)
    bulk = copied_whole(name, argv, dynamic, operands)
    if bulk is not None:
        roots, archive = bulk
        acc.add(roots, bulk=True)
        # `-` is standard output; `host:path` is another machine.
        remote = name in ("rsync", "scp")
        targets.extend(
            (w, d) for w, d, _ in archive if w != "-" and not (remote and REMOTE.match(w))
        )
    elif name == "dd":
        acc.reads.extend(w[3:] for w in argv[1:] if w.startswith("if="))
    elif name == "sed":
        in_place = any(w.startswith(("-i", "--in-place")) for w in argv[1:])
        scripted = any(w in ("-e", "--expression", "-f", "--file") for w in argv[1:])
        files = operands if scripted else operands[1:]
        if in_place:
            targets.extend((w, d) for w, d, _ in files)
        acc.add(files)  # `sed -i` reads the files too
    elif name == "tee":
        targets.extend((w, d) for w, d, _ in operands)
    elif name == "uniq":  # POSIX: uniq [options] [input_file [output_file]]
        acc.add(operands[:1])
        targets.extend((w, d) for w, d, _ in operands[1:2])
    elif name in _ALL_TARGETS:
        targets.extend((w, d) for w, d, _ in operands)
        if name in ("rm", "rmdir", "unlink", "shred"):
            deletes.extend(w for w, _, _ in operands)
            dyn_write = dyn_write or any(d for _, d, _ in operands)
    elif name in _LAST_TARGET and operands:
        *sources, dest = operands
        if any(
            w in ("-t", "--target-directory") or w.startswith("--target-directory=") for w in argv
        ):
            targets.extend((w, d) for w, d, _ in operands)  # -t names the target
            for i, w in enumerate(argv):
                if w == "-t" and i + 1 < len(argv):
                    targets.append((argv[i + 1], dynamic[i + 1]))
        else:
            targets.append(dest[:2])
        if name == "mv":
            targets.extend((w, d) for w, d, _ in sources)  # a moved source is gone from its place
            acc.add(sources, bulk=True)  # and its whole tree is readable elsewhere
        else:
            acc.add(sources)
    elif name in _READERS:
        acc.add(operands)
    elif name in _SEARCHERS:
        explicit = any(w in ("-e", "-f", "--regexp", "--file") for w in argv)
        roots = operands if explicit else operands[1:]
        acc.add(roots)
        recursive.extend(w for w, d, _ in roots if not d)
    elif name in _RECURSIVE:
        recursive.extend(w for w, d, _ in operands if not d and not w.startswith(("-", "(", "!")))
    else:
        acc.add(interpreter_reads(name, argv, dynamic, operands))
    if name == "find":
        targets.extend(_find_outputs(argv, dynamic))
    if cmd.open_ended and (name in _ALL_TARGETS or name in _LAST_TARGET or name == "tee"):
        dyn_write = True  # `xargs rm`: the targets come at run time
    if cmd.open_ended and (name in _READERS or name in _SEARCHERS or name in ("sed", "awk")):
        acc.dynamic = True  # `xargs cat`: the files come at run time
    for word, dyn in targets:
        if dyn:
            dyn_write = True
        elif word and word not in ("/dev/null", "/dev/stdout", "/dev/stderr"):
            writes.append(word)
    for word, dyn in targets:  # what a run-time target may be, for deny rules
        if dyn:
            index = next((i for i, w in enumerate(argv) if w == word and dynamic[i]), -1)
            known = cmd.expansion(index) if index >= 0 else None
            if known is not None and not known.globbed:
                writes.extend(known.words)
    return FileEffects(
        reads=tuple(acc.reads),
        writes=tuple(writes),
        deletes=tuple(deletes),
        dynamic_write=dyn_write,
        recursive_reads=tuple(recursive),
        dynamic_read=acc.dynamic or cmd.opaque_reads,
        read_globs=tuple(acc.globs),
        bulk_reads=tuple(acc.bulk),
        expanded_reads=tuple(acc.expanded),
    )


class _Reads:
    """The files a command reads: static words, the words a run-time word
    expands to (brace, `$HOME`, same-line variables), glob patterns for the
    gate, and whether some read is only known at run time."""

    def __init__(self, cmd: SimpleCommand) -> None:
        self.cmd = cmd
        self.reads: list[str] = list(cmd.reads)
        self.expanded: list[str] = []
        self.globs: list[str] = []
        self.bulk: list[str] = []
        self.dynamic = False

    def add(self, operands: Sequence[_Operand], bulk: bool = False) -> None:
        for word, dyn, index in operands:
            if not dyn:
                self.reads.append(word)
                if bulk:
                    self.bulk.append(word)
                continue
            known = self.cmd.expansion(index)
            if known is None:
                self.dynamic = True
                continue
            self.dynamic = self.dynamic or not known.complete
            if known.globbed:
                self.globs.extend(known.words)
                if bulk:
                    self.dynamic = True  # a globbed folder copied whole: not walked
            else:
                self.expanded.extend(known.words)
                if bulk:
                    self.bulk.extend(known.words)


_FIND_OUTPUTS = frozenset({"-fprint", "-fprint0", "-fprintf", "-fls"})


def _find_outputs(argv: Sequence[str], dynamic: Sequence[bool]) -> list[tuple[str, bool]]:
    """`find -fprint FILE` and its kin write FILE (find(1))."""
    return [
        (argv[i + 1], dynamic[i + 1])
        for i, w in enumerate(argv[:-1])
        if w in _FIND_OUTPUTS and not dynamic[i]
    ]
