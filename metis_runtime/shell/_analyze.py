"""Split a shell command line into the simple commands it would run.

tree-sitter-bash gives the syntax tree; this module walks it, descends into
every place a command can hide (lists, pipelines, groups, subshells, loops,
`case`, function bodies, command and process substitutions in words,
assignments, arithmetic, redirections and unquoted here-documents), and sees
through programs that run their arguments as a command (the table in
`runners.json`, shells' `-c`, `eval`, `find -exec`, interpreter one-liners).
Whatever it cannot see through marks the analysis opaque, with a reason: a
gate must then never allow the line outright. A quoted here-document body is
data, never commands.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Sequence
from typing import Any

from attrs import define, evolve, field, frozen

from ._interp import GIT_BUILTINS, git_split, interpreter_code, shell_literals
from ._readonly import command_is_read_only
from ._runners import Runner, option_value, runner, skip_options, subcommand_programs
from ._types import ShellAnalysis, SimpleCommand
from ._words import has_active_expansion, has_glob_or_brace, parser, unquote

_MAX_DEPTH = 8  # nested `bash -c` / `eval` levels before giving up
_MAX_LENGTH = 100_000  # characters; longer lines are opaque (Claude Code prompts past 10,000)

_DEVICES = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty"})

# Variables that change which program a name runs or what a shell executes.
_SENSITIVE_VARS = frozenset(
    [
        "PATH",
        "BASH_ENV",
        "ENV",
        "IFS",
        "PROMPT_COMMAND",
        "SHELLOPTS",
        "BASHOPTS",
        "PS4",
        "PAGER",
        "EDITOR",
        "VISUAL",
        "CDPATH",
        "GLOBIGNORE",
        "NODE_OPTIONS",
        "PYTHONSTARTUP",
        "PERL5OPT",
        "RUBYOPT",
    ]
)
_SENSITIVE_PREFIXES = ("LD_", "DYLD_", "GIT_", "BASH_FUNC_", "BASH_ALIASES", "BASH_CMDS")

_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh", "fish"})

# Builtins and programs that run text or files the parser cannot see.
_OPAQUE_COMMANDS = frozenset(
    [
        "source",
        ".",
        "trap",
        "alias",
        "enable",
        "fc",
        "bind",
        "complete",
        "compgen",
        "mapfile",
        "readarray",
        "sg",
        "coproc",
        "exec-in-shell",
    ]
)
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})

# Statement nodes whose named children are statements (or words to scan).
_CONTAINERS = frozenset(
    {
        "program",
        "list",
        "pipeline",
        "compound_statement",
        "subshell",
        "do_group",
        "if_statement",
        "elif_clause",
        "else_clause",
        "while_statement",
        "for_statement",
        "c_style_for_statement",
        "case_statement",
        "case_item",
        "negated_command",
    }
)
_STATEMENTS = _CONTAINERS | {
    "command",
    "redirected_statement",
    "declaration_command",
    "unset_command",
    "variable_assignment",
    "variable_assignments",
    "function_definition",
    "test_command",
    "comment",
}
# Words bash reads as syntax where a command name stands: tree-sitter may
# take them for a program name, bash refuses the line or reads it otherwise.
_RESERVED = frozenset(
    [
        "{",
        "}",
        "!",
        "[[",
        "]]",
        "then",
        "do",
        "done",
        "fi",
        "esac",
        "in",
        "elif",
        "else",
        "if",
        "while",
        "until",
        "for",
        "case",
        "select",
        "function",
        "time",
    ]
)
# tree-sitter-bash drops a word that starts with an escaped blank (`echo \  x`).
_ESCAPED_BLANK = re.compile(r"(?<![A-Za-z0-9_./:=@%+,-])\\[ \t]")
# The grammar sees every non-ASCII byte as `a`: bash's syntax is all ASCII
# (any other byte is a word character, U+00A0 and U+3000 included), and
# tree-sitter-bash 0.25.1 crashes on some code points (`{` and U+F798A).
# Offsets are unchanged, so words are still cut from the real bytes.
_ASCII_MASK = bytes(range(128)) + b"a" * 128
_REDIRECTS = frozenset({"file_redirect", "heredoc_redirect", "herestring_redirect"})
_SUBSTITUTIONS = frozenset({"command_substitution", "process_substitution"})


@frozen
class _Word:
    text: str
    dynamic: bool
    start: int


@frozen
class _Ctx:
    src: bytes
    depth: int
    wrappers: tuple[tuple[str, ...], ...] = ()
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()
    opaque_writes: bool = False

    def text(self, node: Any) -> str:
        return str(self.src[node.start_byte : node.end_byte].decode("utf-8", "surrogateescape"))


@define
class _Acc:
    commands: list[SimpleCommand] = field(factory=list)
    reasons: list[str] = field(factory=list)

    def opaque(self, reason: str) -> None:
        if reason not in self.reasons:
            self.reasons.append(reason)


def analyze_command(command: str) -> ShellAnalysis:
    """Parse `command` and list every simple command it would run.

    Never raises on bad input: what cannot be parsed is opaque.
    """
    acc = _Acc()
    if len(command) > _MAX_LENGTH:
        acc.opaque(f"longer than {_MAX_LENGTH} characters")
    else:
        try:
            analyze_source(command, acc, wrappers=(), depth=0)
        except RecursionError:  # absurd nesting
            acc.opaque("nested too deeply")
    opaque = bool(acc.reasons)
    read_only = not opaque and all(c.read_only for c in acc.commands)
    return ShellAnalysis(
        commands=tuple(acc.commands), opaque=opaque, read_only=read_only, reasons=acc.reasons
    )


def analyze_source(src: str, acc: _Acc, wrappers: tuple[tuple[str, ...], ...], depth: int) -> None:
    """Add the commands of the script `src` (run under `wrappers`) to `acc`."""
    if depth > _MAX_DEPTH:
        acc.opaque("nested too deeply")
        return
    if "\x00" in src:
        acc.opaque("NUL byte in the command")
        return
    if _ESCAPED_BLANK.search(src):
        acc.opaque("a word starting with an escaped blank (the grammar drops it)")
    data = src.encode("utf-8", "surrogateescape")
    tree = parser().parse(data.translate(_ASCII_MASK))
    root = tree.root_node
    ctx = _Ctx(src=data, depth=depth, wrappers=wrappers)
    if root.has_error:
        acc.opaque(f"cannot parse: {_first_error(root, ctx)}")
        _fallback(src, acc, wrappers, depth)
    _visit(root, ctx, acc)


_SYNTAX = re.compile(r"`|\$\(|\$\{")
_SEPARATORS = re.compile(r"[;&|\n(){}]+")


def _fallback(src: str, acc: _Acc, wrappers: tuple[tuple[str, ...], ...], depth: int) -> None:
    """A line the grammar rejects stays opaque (never allowed), but its words,
    read loosely (substitution syntax dropped, split at operators), are
    listed too, so that deny and ask rules on a part still apply: bash may
    run what tree-sitter rejects (``rm x`` runs `rm x`)."""
    text = _SYNTAX.sub(" ", src)
    for segment in _SEPARATORS.split(text):
        try:
            argv = shlex.split(segment)
        except ValueError:
            argv = segment.split()
        while argv and (_ASSIGNMENT.match(argv[0]) or argv[0] in _RESERVED):
            argv = argv[1:]
        if not argv:
            continue
        data = segment.encode("utf-8", "surrogateescape")
        ctx = _Ctx(src=data, depth=depth, wrappers=wrappers)
        words = [_Word(text=w, dynamic=False, start=0) for w in argv]
        _Run(ctx, acc, len(data)).unwrap(words, wrappers, open_ended=True)


def _first_error(node: Any, ctx: _Ctx) -> str:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.is_missing:
            return f"missing {n.type!r} at byte {n.start_byte}"
        if n.type == "ERROR":
            return f"unexpected {ctx.text(n)[:40]!r} at byte {n.start_byte}"
        stack.extend(reversed(n.children))
    return "syntax error"


def _visit(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    kind = node.type
    if kind == "command":
        _command(node, ctx, acc)
    elif kind == "redirected_statement":
        _redirected(node, ctx, acc)
    elif kind in _CONTAINERS or kind == "ERROR":
        for child in node.named_children:
            if child.type in _STATEMENTS or child.type == "ERROR":
                _visit(child, ctx, acc)
            else:
                _scan(child, ctx, acc)
    elif kind in ("variable_assignment", "variable_assignments"):
        _assignments(node, ctx, acc)
    elif kind in ("declaration_command", "unset_command"):
        _declaration(node, ctx, acc)
    elif kind == "function_definition":
        # The body runs wherever the function is called: its commands count
        # as run (an over-approximation), and calls name an unknown program.
        for child in node.named_children:
            if child.type in _STATEMENTS:
                _visit(child, ctx, acc)
    elif kind == "comment":
        return
    else:
        _scan(node, ctx, acc)


def _scan(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    """Visit the commands of every substitution inside a non-statement node."""
    if node.type in _SUBSTITUTIONS:
        inner = _Ctx(src=ctx.src, depth=ctx.depth, wrappers=ctx.wrappers)
        for child in node.named_children:
            _visit(child, inner, acc)
        return
    if node.type == "ERROR" or node.is_missing:
        acc.opaque(f"cannot parse: {ctx.text(node)[:40]!r}")
    if node.type in _REDIRECTS:
        _redirects([node], ctx, acc)
        return
    for child in node.named_children:
        if child.type in _STATEMENTS and child.type not in ("variable_assignment",):
            _visit(child, ctx, acc)
        else:
            _scan(child, ctx, acc)


def _word(node: Any, ctx: _Ctx, acc: _Acc) -> _Word:
    """Visit the commands hidden in a word and report whether it is static."""
    _scan(node, ctx, acc)
    kind = node.type
    raw = ctx.text(node)
    if kind == "command_name" and node.named_children:
        return _word(node.named_children[0], ctx, acc)
    if kind in ("word", "number"):
        dynamic = has_glob_or_brace(raw)
        if not dynamic and has_active_expansion(raw):
            acc.opaque(f"expansion the parser did not resolve: {raw}")
            dynamic = True
    elif kind == "raw_string":
        return _Word(text=raw[1:-1], dynamic=False, start=node.start_byte)
    elif kind == "string":
        dynamic = any(c.type != "string_content" for c in node.named_children)
    elif kind == "concatenation":
        parts = [_word(c, ctx, acc) for c in node.named_children]
        dynamic = any(p.dynamic for p in parts) or has_glob_or_brace(raw)
    else:  # expansions, substitutions, $'...', $"...", brace expressions
        dynamic = True
    return _Word(text=raw if dynamic else unquote(raw), dynamic=dynamic, start=node.start_byte)


def _redirects(
    nodes: Sequence[Any], ctx: _Ctx, acc: _Acc
) -> tuple[tuple[str, ...], tuple[str, ...], bool]:
    """Write targets, read targets and whether a write target is only known at run time."""
    writes: list[str] = []
    reads: list[str] = []
    opaque_write = False
    for r in nodes:
        if r.type == "heredoc_redirect":
            nested = [c for c in r.named_children if c.type in _REDIRECTS]
            w, rd, o = _redirects(nested, ctx, acc)
            writes.extend(w)
            reads.extend(rd)
            opaque_write = opaque_write or o
            _heredoc(r, ctx, acc)
            continue
        if r.type == "herestring_redirect":
            for child in r.named_children:
                _word(child, ctx, acc)
            continue
        op = next((ctx.text(c) for c in r.children if not c.is_named), ">")
        targets = [c for c in r.named_children if c.type != "file_descriptor"]
        if not targets:
            continue
        target = targets[-1]
        if op in (">&", "<&") and (target.type == "number" or ctx.text(target) == "-"):
            continue  # fd duplication: 2>&1
        word = _word(target, ctx, acc)
        if op.startswith("<") and op != "<>":
            reads.append(word.text)
        elif word.dynamic:
            opaque_write = True
            writes.append(word.text)
        elif word.text not in _DEVICES:
            writes.append(word.text)
    return tuple(writes), tuple(reads), opaque_write


def _heredoc(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
    delim = ctx.text(start) if start is not None else ""
    if any(q in delim for q in "'\"\\"):
        return  # a quoted delimiter: the body is data
    for body in (c for c in node.named_children if c.type == "heredoc_body"):
        _scan(body, ctx, acc)
        if "`" in ctx.text(body):
            acc.opaque("backquote in a here-document")


def _redirected(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    redirects = [c for c in node.named_children if c.type in _REDIRECTS]
    writes, reads, opaque_write = _redirects(redirects, ctx, acc)
    inner = evolve(
        ctx,
        writes=ctx.writes + writes,
        reads=ctx.reads + reads,
        opaque_writes=ctx.opaque_writes or opaque_write,
    )
    before = len(acc.commands)
    for child in node.named_children:
        if child.type not in _REDIRECTS:
            _visit(child, inner, acc)
    if len(acc.commands) == before and (writes or opaque_write):
        _Run(inner, acc, node.end_byte).emit(
            [], inner.wrappers, open_ended=False, start=node.start_byte
        )


def _check_assignment(name: str, acc: _Acc) -> None:
    name = name.rstrip("+")
    if name in _SENSITIVE_VARS or name.startswith(_SENSITIVE_PREFIXES):
        acc.opaque(f"assignment to {name}")


def _assignment_name(node: Any, ctx: _Ctx) -> str:
    name = next((c for c in node.named_children if c.type in ("variable_name", "subscript")), None)
    text = ctx.text(name) if name is not None else ctx.text(node).split("=", 1)[0]
    return text.split("[", 1)[0]


def _assignments(node: Any, ctx: _Ctx, acc: _Acc) -> list[str]:
    nodes = [node] if node.type == "variable_assignment" else list(node.named_children)
    names: list[str] = []
    for a in nodes:
        name = _assignment_name(a, ctx)
        _check_assignment(name, acc)
        names.append(name)
        _scan(a, ctx, acc)
    return names


def _declaration(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    keyword = next((ctx.text(c) for c in node.children if not c.is_named), "declare")
    words = [_Word(text=keyword, dynamic=False, start=node.start_byte)]
    for child in node.named_children:
        if child.type == "variable_assignment":
            _assignments(child, ctx, acc)
            words.append(_Word(text=ctx.text(child), dynamic=True, start=child.start_byte))
        else:
            w = _word(child, ctx, acc)
            if w.dynamic and keyword in _DECLARERS:
                acc.opaque(f"{keyword} with a run-time argument")
            words.append(w)
    _Run(ctx, acc, node.end_byte).emit(words, ctx.wrappers, open_ended=False)


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


def _command(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    words: list[_Word] = []
    redirects: list[Any] = []
    env: list[str] = []
    for child in node.named_children:
        kind = child.type
        if kind == "variable_assignment":
            env.extend(_assignments(child, ctx, acc))
        elif kind in _REDIRECTS:
            redirects.append(child)
        else:
            words.append(_word(child, ctx, acc))
    writes, reads, opaque_write = _redirects(redirects, ctx, acc)
    inner = evolve(
        ctx,
        writes=ctx.writes + writes,
        reads=ctx.reads + reads,
        opaque_writes=ctx.opaque_writes or opaque_write,
    )
    run = _Run(inner, acc, node.end_byte, env=tuple(env))
    if not words:
        if run.ctx.writes or run.ctx.opaque_writes:  # `> file` alone still truncates it
            run.emit([], ctx.wrappers, open_ended=False, start=node.start_byte)
        return
    run.unwrap(words, ctx.wrappers, open_ended=False)


@define
class _Run:
    """Unwraps and records the commands of one syntax-tree command node."""

    ctx: _Ctx
    acc: _Acc
    end: int
    env: tuple[str, ...] = ()

    def emit(
        self,
        words: Sequence[_Word],
        wrappers: tuple[tuple[str, ...], ...],
        open_ended: bool,
        start: int | None = None,
        all_dynamic_args: bool = False,
        container: bool = False,
        subcommand: tuple[str, ...] = (),
    ) -> None:
        ctx = self.ctx
        argv = tuple(w.text for w in words)
        dynamic = tuple(w.dynamic or (all_dynamic_args and i > 0) for i, w in enumerate(words))
        begin = words[0].start if words else (start or 0)
        privileged = any(
            w and (r := runner(posixpath.basename(w[0]))) is not None and r.privileged
            for w in wrappers
        )
        read_only = (
            not ctx.writes
            and not ctx.opaque_writes
            and not privileged
            and (container or command_is_read_only(argv, dynamic, open_ended))
        )
        self.acc.commands.append(
            SimpleCommand(
                argv=argv,
                text=ctx.src[begin : self.end].decode("utf-8", "surrogateescape").strip(),
                dynamic=dynamic,
                open_ended=open_ended,
                wrappers=wrappers,
                writes=ctx.writes,
                reads=ctx.reads,
                read_only=read_only,
                container=container,
                env=self.env,
                opaque_writes=ctx.opaque_writes,
                subcommand=subcommand,
            )
        )

    def unwrap(
        self,
        words: Sequence[_Word],
        wrappers: tuple[tuple[str, ...], ...],
        open_ended: bool,
        all_dynamic_args: bool = False,
    ) -> None:
        acc = self.acc
        for _ in range(64):  # each pass strips one wrapper
            head = words[0]
            if head.dynamic:
                acc.opaque(f"command name is not static: {head.text}")
                self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args)
                return
            name = posixpath.basename(head.text)
            if _ASSIGNMENT.match(head.text) and len(words) > 1:
                # `timeout 5 A=1 rm x` execs a program named `A=1`: unknowable;
                # what follows is what a reader sees, so deny rules meet it.
                acc.opaque(f"a program named like an assignment: {head.text}")
                words = words[1:]
                continue
            if head.text in _RESERVED - {"time"}:
                acc.opaque(f"reserved word {head.text!r} where a command name stands")
                if len(words) > 1:  # what follows may still run: deny rules see it
                    words = words[1:]
                    continue
            if name in _SHELLS:
                self.shell(words, wrappers, open_ended)
                return
            if name == "eval":
                self.script_of(words, wrappers, open_ended, words[1:], "eval")
                return
            if name in _OPAQUE_COMMANDS:
                acc.opaque(f"{name} runs code the parser cannot see")
                self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args)
                return
            if name == "git":
                self.git(words, wrappers, open_ended, all_dynamic_args)
                return
            code = interpreter_code(name, [w.text for w in words], [w.dynamic for w in words])
            if code is not None:
                self.interpreter(words, wrappers, open_ended, code)
                return
            if name in _DECLARERS:
                for w in words[1:]:
                    if w.dynamic:
                        acc.opaque(f"{name} with a run-time argument")
                    elif _ASSIGNMENT.match(w.text):
                        _check_assignment(w.text.split("=", 1)[0], acc)
            globals_ = subcommand_programs().get(name)
            if globals_ is not None and len(words) > 1 and words[1].text.startswith("-"):
                texts = [w.text for w in words[1:]]
                index = skip_options(texts, globals_, [w.dynamic for w in words[1:]])
                if index is None:
                    acc.opaque(f"{name}: global options not understood")
                elif index + 1 < len(words):
                    subcommand = (words[0].text, *texts[index:])
                    self.emit(
                        words,
                        wrappers,
                        open_ended,
                        all_dynamic_args=all_dynamic_args,
                        subcommand=subcommand,
                    )
                    return
            spec = runner(name)
            if spec is None or len(words) == 1 or _lookup_only(name, words):
                if spec is not None and spec.stdin_commands and len(words) == 1:
                    acc.opaque(f"{name} reads commands from stdin")
                self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args)
                if name == "find":
                    self._find_exec(words, wrappers)
                return
            step = self._step(spec, words, wrappers, open_ended)
            if step is None:
                return
            words, wrappers, open_ended, dyn_args = step
            all_dynamic_args = all_dynamic_args or dyn_args
        acc.opaque("too many wrappers")
        self.emit(words, wrappers, open_ended)

    def _step(
        self,
        spec: Runner,
        words: Sequence[_Word],
        wrappers: tuple[tuple[str, ...], ...],
        open_ended: bool,
    ) -> tuple[Sequence[_Word], tuple[tuple[str, ...], ...], bool, bool] | None:
        """Strip one runner: the command it runs, or None when done here."""
        acc = self.acc
        name = spec.name
        texts = [w.text for w in words[1:]]
        dyn = [w.dynamic for w in words[1:]]
        if spec.script_option:
            found = option_value(texts, spec.script_option)
            if found is not None:
                at, _ = found
                self.script_of(words, wrappers, open_ended, [words[1 + at]], name, joins=False)
                return None
            if spec.stdin_commands and (spec.user_operand or spec.no_command_operand):
                acc.opaque(f"{name} without -c runs a shell the parser cannot see")
                self.emit(words, wrappers, open_ended)
                return None
        skipped = skip_options(texts, spec, dyn)
        if skipped is None:
            acc.opaque(f"{name}: options not understood")
            self.emit(words, wrappers, open_ended)
            return None
        index = skipped + 1 + spec.operands
        if spec.assignments:
            while index < len(words) and _ASSIGNMENT.match(words[index].text):
                if words[index].dynamic:
                    acc.opaque(f"{name}: run-time assignment")
                _check_assignment(words[index].text.split("=", 1)[0], acc)
                index += 1
        if name == "sudo" and _sudo_runs_shell(words[1:index]):
            acc.opaque("sudo -s/-i re-parses its arguments in a shell")
        if name == "env" and any(w.text.startswith(("-S", "--split-string")) for w in words):
            acc.opaque("env -S splits a string the parser cannot see")
        if name == "doas" and any(w.text.startswith("-s") for w in words[1:index]):
            acc.opaque("doas -s runs a shell")
        if spec.script_args:
            self.script_of(words, wrappers, open_ended, words[index:], name)
            return None
        inner = list(words[index:])
        if spec.stop_words:
            cut = next((i for i, w in enumerate(inner) if w.text in spec.stop_words), len(inner))
            inner = inner[:cut]
        dyn_args = False
        if spec.open_ended:
            open_ended = True
            dyn_args = any(w.text.startswith(("-I", "-i", "--replace")) for w in words[1:index])
            dyn_args = dyn_args or (name == "parallel" and any("{" in w.text for w in inner))
        if not inner:
            if spec.stdin_commands:
                acc.opaque(f"{name} reads commands from stdin")
            self.emit(words, wrappers, open_ended)  # plain `xargs` runs echo
            return None
        return inner, (*wrappers, tuple(w.text for w in words[:index])), open_ended, dyn_args

    def _find_exec(self, words: Sequence[_Word], wrappers: tuple[tuple[str, ...], ...]) -> None:
        i = 1
        while i < len(words):
            if words[i].text in {"-exec", "-execdir", "-ok", "-okdir"} and not words[i].dynamic:
                j = i + 1
                while j < len(words) and words[j].text not in {";", "+"}:
                    j += 1
                inner = [
                    _Word(text=w.text, dynamic=w.dynamic or "{}" in w.text, start=w.start)
                    for w in words[i + 1 : j]
                ]
                if inner:
                    outer = (*wrappers, tuple(w.text for w in words[: i + 1]))
                    self.unwrap(inner, outer, open_ended=False)
                i = j
            i += 1

    def git(
        self,
        words: Sequence[_Word],
        wrappers: tuple[tuple[str, ...], ...],
        open_ended: bool,
        all_dynamic_args: bool,
    ) -> None:
        """git: global options are skipped to find the subcommand; `-c` can
        name a program to run and an unknown subcommand may be an alias."""
        split = git_split([w.text for w in words], [w.dynamic for w in words])
        if split is None:
            self.acc.opaque("git: global options not understood")
        else:
            index, configs = split
            if configs:
                self.acc.opaque("git -c sets configuration that can run programs")
            if index < len(words):
                sub = words[index]
                if sub.dynamic or sub.text not in GIT_BUILTINS:
                    self.acc.opaque(f"git {sub.text}: not a git command (may be an alias)")
                subcommand = ("git", *(w.text for w in words[index:]))
                self.emit(
                    words,
                    wrappers,
                    open_ended,
                    all_dynamic_args=all_dynamic_args,
                    subcommand=subcommand if index > 1 else (),
                )
                return
        self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args)

    def interpreter(
        self,
        words: Sequence[_Word],
        wrappers: tuple[tuple[str, ...], ...],
        open_ended: bool,
        code: str,
    ) -> None:
        """A one-liner is opaque; shell commands visible in its string
        literals are analysed so that deny and ask rules still see them."""
        name = posixpath.basename(words[0].text)
        self.emit(words, wrappers, open_ended)
        if not code:
            self.acc.opaque(f"{name} runs program text the parser cannot see")
            return
        self.acc.opaque(f"{name} one-liner: program text the parser cannot see")
        outer = (*wrappers, (words[0].text,))
        for literal in shell_literals(code):
            analyze_source(literal, self.acc, outer, self.ctx.depth + 1)

    def shell(
        self, words: Sequence[_Word], wrappers: tuple[tuple[str, ...], ...], open_ended: bool
    ) -> None:
        """`bash -c SCRIPT`: analyse SCRIPT; any other use of a shell is opaque."""
        i = 1
        has_c = False
        while i < len(words):
            w = words[i]
            t = w.text
            if w.dynamic:
                break
            if t in {"-o", "+o", "-O", "+O"}:
                i += 2
                continue
            if t in {"--norc", "--noprofile", "--login", "--posix", "--noediting", "--restricted"}:
                i += 1
                continue
            if t == "--":
                i += 1
                break
            if re.fullmatch(r"[-+][A-Za-z]+", t):
                if "s" in t[1:]:
                    break  # reads commands from stdin
                has_c = has_c or "c" in t[1:]
                i += 1
                continue
            break
        runs_script = has_c and i < len(words) and not words[i].dynamic
        self.emit(words, wrappers, open_ended, container=runs_script)
        if not has_c or i >= len(words):
            self.acc.opaque(f"{words[0].text} runs a script or stdin the parser cannot see")
            return
        script = words[i]
        if script.dynamic:
            self.acc.opaque(f"{words[0].text} -c with a run-time script")
            return
        outer = (*wrappers, tuple(w.text for w in words[:i]))
        analyze_source(script.text, self.acc, outer, self.ctx.depth + 1)

    def script_of(
        self,
        words: Sequence[_Word],
        wrappers: tuple[tuple[str, ...], ...],
        open_ended: bool,
        script: Sequence[_Word],
        name: str,
        joins: bool = True,
    ) -> None:
        """`eval ARGS`, `watch ARGS`, `su -c SCRIPT`: the joined words are
        parsed again. When arguments appended at run time join the script
        (`xargs eval rm`), it is opaque, and its visible part still meets
        deny and ask rules."""
        self.emit(words, wrappers, open_ended, container=True)
        if any(w.dynamic for w in script):
            self.acc.opaque(f"{name} of run-time text")
            return
        if open_ended and joins:
            self.acc.opaque(f"{name} of run-time text")
        outer = (*wrappers, tuple(w.text for w in words[: len(words) - len(script)]))
        analyze_source(" ".join(w.text for w in script), self.acc, outer, self.ctx.depth + 1)


def _lookup_only(name: str, words: Sequence[_Word]) -> bool:
    """`command -v x` only looks `x` up."""
    return name == "command" and any(w.text in {"-v", "-V"} for w in words[1:2])


def _sudo_runs_shell(options: Sequence[_Word]) -> bool:
    for w in options:
        t = w.text
        if t in {"--shell", "--login"}:
            return True
        if re.fullmatch(r"-[A-Za-z]+", t) and ("s" in t or "i" in t):
            return True
    return False
