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

The walk and the unwrapping of runners (`_Run`) stay in one module: they are
one recursion (a command's `bash -c`, `eval` or one-liner script is walked
again by `analyze_source`), which a module boundary would make an import
cycle. The names they know are in `_vocabulary.py`; the word, context and
accumulator they pass around in `_walk_state.py`.
"""

from __future__ import annotations

import functools
import posixpath
import re
import shlex
from collections.abc import Sequence
from typing import Any

from attrs import define
from attrs import evolve

from ._expand import expand_word
from ._interp import GIT_BUILTINS
from ._interp import git_split
from ._interp import interpreter_code
from ._interp import shell_literals
from ._readonly import command_is_read_only
from ._runners import Runner
from ._runners import option_value
from ._runners import runner
from ._runners import skip_options
from ._runners import subcommand_programs
from ._types import ShellAnalysis
from ._types import SimpleCommand
from ._vocabulary import _ASCII_MASK
from ._vocabulary import _CONTAINERS
from ._vocabulary import _DECLARERS
from ._vocabulary import _DEVICES
from ._vocabulary import _ESCAPED_BLANK
from ._vocabulary import _FIND_ACTIONS
from ._vocabulary import _OPAQUE_COMMANDS
from ._vocabulary import _REDIRECTS
from ._vocabulary import _RESERVED
from ._vocabulary import _SEQUENTIAL
from ._vocabulary import _SETS_VARIABLES
from ._vocabulary import _SHELLS
from ._vocabulary import _STATEMENTS
from ._vocabulary import _SUBSTITUTIONS
from ._walk_state import _Acc
from ._walk_state import _assigned
from ._walk_state import _assignment_name
from ._walk_state import _check_assignment
from ._walk_state import _Ctx
from ._walk_state import _first_error
from ._walk_state import _lookup_only
from ._walk_state import _read_write_targets
from ._walk_state import _sudo_runs_shell
from ._walk_state import _Word
from ._words import has_active_expansion
from ._words import has_glob_or_brace
from ._words import parser
from ._words import unquote

_MAX_DEPTH = 8  # nested `bash -c` / `eval` levels before giving up
_MAX_LENGTH = 100_000  # characters; longer lines are opaque (Claude Code prompts past 10,000)


@functools.lru_cache(maxsize=512)
def analyze_command(command: str) -> ShellAnalysis:
    """Parse `command` and list every simple command it would run.

    Never raises on bad input: what cannot be parsed is opaque. Cached (the
    analysis is a frozen value of the text alone): the gate, the Bash tool's
    class and the hook's kind all ask about the same line.
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
    try:
        data = src.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # a lone surrogate (`\ud800`): no program's argv can hold it
        acc.opaque("a lone surrogate in the command")
        return
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
        argv, opened = _read_write_targets(argv)
        data = segment.encode("utf-8", "surrogateescape")
        ctx = _Ctx(src=data, depth=depth, wrappers=wrappers, writes=opened, reads=opened)
        words = [_Word(text=w, dynamic=False, start=0) for w in argv]
        if words:
            _Run(ctx, acc, len(data)).unwrap(words, wrappers, open_ended=True)
        else:  # `<> target` alone: no command, but the file is opened both ways
            _Run(ctx, acc, len(data)).emit(words, wrappers, open_ended=True)


def _visit(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    kind = node.type
    if kind == "command":
        _command(node, ctx, acc)
    elif kind == "redirected_statement":
        _redirected(node, ctx, acc)
    elif kind == "for_statement":
        _for(node, ctx, acc)
    elif kind in _CONTAINERS or kind == "ERROR":
        first = True
        for child in node.named_children:
            # Only the line's top level, a `{ }` group and the first part of
            # a list surely run in the line's shell; anything else may not.
            sure = ctx.certain and (kind in _SEQUENTIAL or (kind == "list" and first))
            inner = ctx if sure == ctx.certain else evolve(ctx, certain=sure)
            if child.type in _STATEMENTS or child.type == "ERROR":
                _visit(child, inner, acc)
                first = False
            else:
                _scan(child, inner, acc)
    elif kind in ("variable_assignment", "variable_assignments"):
        _assignments(node, ctx, acc, record=True)
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
        inner = _Ctx(src=ctx.src, depth=ctx.depth, wrappers=ctx.wrappers, certain=False)
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
    if not dynamic:
        return _Word(text=unquote(raw), dynamic=False, start=node.start_byte)
    found = expand_word(raw, acc.lookup)
    expansion = None
    if found is not None:
        expansion = evolve(found[0], complete=found[1])
    return _Word(text=raw, dynamic=True, start=node.start_byte, expansion=expansion)


def _redirects(
    nodes: Sequence[Any], ctx: _Ctx, acc: _Acc
) -> tuple[tuple[str, ...], tuple[str, ...], bool, bool]:
    """Write targets, read targets, and whether a write target and a read
    target are only known at run time."""
    writes: list[str] = []
    reads: list[str] = []
    opaque_write = opaque_read = False
    for r in nodes:
        if r.type == "heredoc_redirect":
            nested = [c for c in r.named_children if c.type in _REDIRECTS]
            w, rd, o, ord_ = _redirects(nested, ctx, acc)
            writes.extend(w)
            reads.extend(rd)
            opaque_write = opaque_write or o
            opaque_read = opaque_read or ord_
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
            known = word.expansion
            if not word.dynamic:
                reads.append(word.text)
            elif known is not None and not known.globbed:
                reads.extend(known.words)
                opaque_read = opaque_read or not known.complete
            else:
                opaque_read = True
        elif word.dynamic:
            opaque_write = True
            writes.append(word.text)
            if word.expansion is not None and not word.expansion.globbed:
                writes.extend(word.expansion.words)  # for deny rules; still never allowed
        elif word.text not in _DEVICES:
            writes.append(word.text)
    return tuple(writes), tuple(reads), opaque_write, opaque_read


def _heredoc(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    start = next((c for c in node.named_children if c.type == "heredoc_start"), None)
    delim = ctx.text(start) if start is not None else ""
    if any(q in delim for q in "'\"\\"):
        return  # a quoted delimiter: the body is data
    for body in (c for c in node.named_children if c.type == "heredoc_body"):
        _scan(body, ctx, acc)
        if "`" in ctx.text(body):
            acc.opaque("backquote in a here-document")


def _redirected_ctx(redirects: list[Any], ctx: _Ctx, acc: _Acc) -> tuple[_Ctx, bool]:
    """`ctx` with what `redirects` write and read added, and whether they write."""
    writes, reads, opaque_write, opaque_read = _redirects(redirects, ctx, acc)
    inner = evolve(
        ctx,
        writes=ctx.writes + writes,
        reads=ctx.reads + reads,
        opaque_writes=ctx.opaque_writes or opaque_write,
        opaque_reads=ctx.opaque_reads or opaque_read,
    )
    return inner, bool(writes) or opaque_write


def _redirected(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    redirects = [c for c in node.named_children if c.type in _REDIRECTS]
    inner, writing = _redirected_ctx(redirects, ctx, acc)
    before = len(acc.commands)
    for child in node.named_children:
        if child.type not in _REDIRECTS:
            _visit(child, inner, acc)
    if len(acc.commands) == before and writing:
        _Run(inner, acc, node.end_byte).emit(
            [], inner.wrappers, open_ended=False, start=node.start_byte
        )


def _assignments(node: Any, ctx: _Ctx, acc: _Acc, record: bool = False) -> list[str]:
    """The names assigned; with `record` (a shell variable, not a command's
    environment) their values are kept for later words of the line."""
    nodes = [node] if node.type == "variable_assignment" else list(node.named_children)
    names: list[str] = []
    for a in nodes:
        name = _assignment_name(a, ctx)
        _check_assignment(name, acc)
        names.append(name)
        _scan(a, ctx, acc)
        if record:
            if name == "HOME":  # later `~` words would name another folder than they seem
                acc.opaque("assignment to HOME")
            acc.assign(name, _assigned(a, ctx, acc), ctx.certain)
    return names


def _for(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    """`for f in WORDS; do ...; done`: in the body, `$f` is one of WORDS."""
    name_node = next((c for c in node.named_children if c.type == "variable_name"), None)
    values: list[str] = []
    known = name_node is not None and any(
        not c.is_named and ctx.text(c) == "in" for c in node.children
    )
    body = [c for c in node.named_children if c.type in _STATEMENTS or c.type == "do_group"]
    for child in node.named_children:
        if child is name_node or child in body:
            continue
        w = _word(child, ctx, acc)
        if not w.dynamic:
            values.append(w.text)
        elif w.expansion is not None and w.expansion.complete and not w.expansion.globbed:
            values.extend(w.expansion.words)
        else:
            known = False
    inner = evolve(ctx, certain=False)
    if name_node is not None:
        name = ctx.text(name_node)
        had, before = name in acc.variables, acc.variables.get(name)
        acc.variables[name] = (tuple(values), True) if known else None
        for child in body:
            _visit(child, inner, acc)
        if had:
            acc.variables[name] = before
        else:
            del acc.variables[name]
        acc.assign(name, (tuple(values), True) if known else None, certain=False)
    else:
        for child in body:
            _visit(child, inner, acc)


def _declaration(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    keyword = next((ctx.text(c) for c in node.children if not c.is_named), "declare")
    words = [_Word(text=keyword, dynamic=False, start=node.start_byte)]
    for child in node.named_children:
        if child.type == "variable_assignment":
            _assignments(child, ctx, acc, record=keyword in _DECLARERS)
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
    inner, _ = _redirected_ctx(redirects, ctx, acc)
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
        exact_only: bool = False,
        unknown_options: bool = False,
    ) -> None:
        ctx = self.ctx
        argv = tuple(w.text for w in words)
        dynamic = tuple(w.dynamic or (all_dynamic_args and i > 0) for i, w in enumerate(words))
        expansions = tuple(
            (i, w.expansion)
            for i, w in enumerate(words)
            if w.dynamic and w.expansion is not None and not (all_dynamic_args and i > 0)
        )
        if argv and argv[0] in _SETS_VARIABLES:
            for word in argv[1:]:
                if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", word):
                    self.acc.variables[word] = None  # set at run time
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
                exact_only=exact_only,
                unknown_options=unknown_options,
                expansions=expansions,
                opaque_reads=ctx.opaque_reads,
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
                    # Only an exact rule approves it; deny and ask rules see
                    # every later word as a possible subcommand.
                    self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args,
                              exact_only=True, unknown_options=True)  # fmt: skip
                    return
                if index + 1 < len(words):
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
                # `find -exec/-ok/-delete` needs an exact rule (permissions docs).
                actions = name == "find" and any(w.text in _FIND_ACTIONS for w in words[1:])
                self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args,
                          exact_only=actions)  # fmt: skip
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
                    w
                    if "{}" not in w.text
                    else _Word(text=w.text, dynamic=True, start=w.start)  # a found path
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
            # Only an exact rule approves it (the gate asks otherwise).
            self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args,
                      exact_only=True, unknown_options=True)  # fmt: skip
            return
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
