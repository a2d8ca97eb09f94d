"""Shell command lines built from labelled simple commands, wrapped and combined."""

from __future__ import annotations

import shlex
from collections.abc import Iterable

import attrs
from hypothesis import strategies as st

from ._world import DYN


@attrs.frozen
class ShellAtom:
    """A simple command and what is true of it. `argv` is the effective
    command (wrappers seen through); `privileged` means it runs under sudo.
    `reads` / `writes` are the tags of the files it reads and writes (for
    Read and Edit rules); `redirect`: it writes by a redirection (only an
    Edit allow covers that); `edit`: one of acceptEdits's file commands;
    `opaque`: the analysis cannot see what it runs; `dynamic_read`: it reads
    a file only known at run time (never allowed past a Read rule)."""

    text: str
    argv: tuple[str, ...]
    read_only: bool
    secret: bool = False
    protected: bool = False  # names a protected path
    out_of_scope: bool = False
    privileged: bool = False
    reads: frozenset[str] = frozenset()
    writes: frozenset[str] = frozenset()
    has_write: bool = False
    redirect: bool = False
    edit: bool = False
    opaque: bool = False
    dynamic_read: bool = False  # reads a file known only at run time (issue 26)


def _a(
    text: str,
    argv: Iterable[str] | None = None,
    *,
    ro: bool,
    reads: Iterable[str] = (),
    writes: Iterable[str] | None = None,
    **labels: bool,
) -> ShellAtom:
    words = tuple(argv) if argv is not None else tuple(text.split())
    return ShellAtom(
        text,
        words,
        ro,
        reads=frozenset(reads),
        writes=frozenset(writes or ()),
        has_write=writes is not None,
        **labels,
    )


ATOMS: tuple[ShellAtom, ...] = (
    _a("git status", ro=True),
    _a("git push origin main", ro=False),
    _a("rm -rf build", ro=False, writes=(), edit=True),
    _a("cat .env", ro=True, secret=True, reads=["env"]),
    _a("cat link_env", ro=True, secret=True, reads=["env"]),
    _a("cat .env.example", ro=True),
    _a("cat src/app.py", ro=True, reads=["src"]),
    _a("cat .git/config", ro=True, protected=True, reads=["git"]),
    _a("ls src", ro=True, reads=["src"]),
    _a("grep foo src/app.py", ro=True, reads=["src"]),
    _a("echo hi > out.txt", ("echo", "hi"), ro=False, writes=(), redirect=True),
    _a(
        "echo x >> {home}/.bashrc",
        ("echo", "x"),
        ro=False,
        protected=True,
        out_of_scope=True,
        writes=["home"],
        redirect=True,
    ),
    _a("touch .git/hooks/pre-commit", ro=False, protected=True, writes=["git"], edit=True),
    _a("npm run test", ro=False),
    _a("curl https://example.com", ro=False),
    _a("python3 -c 'print(1)'", ("python3", "-c", "print(1)"), ro=False, opaque=True),
    _a("cat ../outside/notes.txt", ro=True, out_of_scope=True, reads=["outside"]),
    _a(
        "sudo rm -f {outside}/notes.txt",
        ("rm", "-f", "{outside}/notes.txt"),
        ro=False,
        out_of_scope=True,
        privileged=True,
        writes=["outside"],
    ),
    _a("cat $F", ("cat", DYN), ro=True, dynamic_read=True),
)
ECHO_DYN = _a("echo $(...)", ("echo", DYN), ro=True)  # the outer command of a substitution
PREFIX_WRAPPERS = ("timeout 5", "env A=1", "nice", "nohup")
OPERATORS = (";", "&&", "||", "|")
# Wrappers Claude Code strips before matching allow rules; the others stay
# part of the command an allow rule must name.
STRIPPED = frozenset({"timeout 5", "nice", "nohup"})


@attrs.frozen
class Occ:
    """A simple command as it occurs in a line: under which wrappers."""

    atom: ShellAtom
    wrappers: tuple[str, ...] = ()  # outermost first, as written
    top: bool = True  # the line's own command, not one inside a substitution of it

    @property
    def kept(self) -> tuple[str, ...]:
        """The words of the wrappers an allow rule must match too."""
        return tuple(w for wr in self.wrappers if wr not in STRIPPED for w in wr.split())

    @property
    def wrapped(self) -> bool:
        return bool(self.kept)


@attrs.frozen
class Shell:
    """A command line (with {home}/{outside} placeholders) and the simple
    commands it runs. `simple`: a prefix wrapper may be put before it."""

    text: str
    occs: tuple[Occ, ...]
    simple: bool = True

    @property
    def atoms(self) -> tuple[ShellAtom, ...]:
        return tuple(o.atom for o in self.occs)


def line(text: str, *atoms: ShellAtom) -> Shell:
    """A line of unwrapped atoms."""
    return Shell(text, tuple(Occ(a) for a in atoms))


def _under(wrapper: str, inner: Shell, *, script: bool) -> tuple[Occ, ...]:
    """`inner`'s commands under `wrapper`: all of them when the wrapper runs
    `inner` as a script (`bash -c`), else only the line's own command (a
    substitution in its words runs before the wrapper, in the shell)."""
    return tuple(
        attrs.evolve(o, wrappers=(wrapper, *o.wrappers), top=True) if script or o.top else o
        for o in inner.occs
    )


def _prefixed(wrapper: str, inner: Shell) -> Shell:
    if inner.simple:
        return Shell(f"{wrapper} {inner.text}", _under(wrapper, inner, script=False))
    text = f"{wrapper} bash -c {shlex.quote(inner.text)}"
    scripted = Shell(inner.text, _under("bash -c", inner, script=True))
    return Shell(text, _under(wrapper, scripted, script=False))


def _bash_c(inner: Shell) -> Shell:
    return Shell(f"bash -c {shlex.quote(inner.text)}", _under("bash -c", inner, script=True))


def _substituted(inner: Shell) -> Shell:
    # Spaces inside `$( ... )` keep `$((` (arithmetic) from appearing.
    occs = tuple(attrs.evolve(o, top=False) for o in inner.occs)
    return Shell(f"echo $( {inner.text} )", (*occs, Occ(ECHO_DYN)))


def _compound(op: str, left: Shell, right: Shell) -> Shell:
    return Shell(f"{left.text} {op} {right.text}", left.occs + right.occs, False)


def _subshell(inner: Shell) -> Shell:
    return Shell(f"( {inner.text} )", inner.occs, simple=False)


def _extend(children: st.SearchStrategy[Shell]) -> st.SearchStrategy[Shell]:
    return st.one_of(
        st.builds(_prefixed, st.sampled_from(PREFIX_WRAPPERS), children),
        children.map(_bash_c),
        children.map(_substituted),
        st.builds(_compound, st.sampled_from(OPERATORS), children, children),
        children.map(_subshell),
    )


def shells() -> st.SearchStrategy[Shell]:
    """Command lines: labelled simple commands, wrapped and combined."""
    base = st.sampled_from(ATOMS).map(lambda a: line(a.text, a))
    return st.recursive(base, _extend, max_leaves=4)
