"""Split a shell command line into the simple commands it would run.

bashlex gives the syntax tree; this module walks it, descends into every
place a command can hide (lists, pipelines, groups, subshells, loops,
command and process substitutions in words, assignments and redirections),
and sees through wrappers that run their arguments as a command (`timeout`,
`nice`, `env`, `xargs`, `sudo`, `bash -c`, `eval`, ...). Whatever it cannot see
through marks the analysis opaque, with a reason: a gate must then never
allow the line outright.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Sequence
from typing import Any

import bashlex
from attrs import define, field, frozen

from ._readonly import command_is_read_only
from ._types import ShellAnalysis, SimpleCommand

_MAX_DEPTH = 8  # nested `bash -c` / `eval` levels before giving up

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
    ]
)
_SENSITIVE_PREFIXES = ("LD_", "DYLD_", "GIT_", "BASH_FUNC_")

_SHELLS = frozenset({"bash", "sh", "zsh", "dash", "ksh", "ash", "mksh"})

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
        "watch",
        "su",
        "runuser",
        "parallel",
        "script",
        "sg",
        "coproc",
        "exec-in-shell",
    ]
)
_DECLARERS = frozenset({"export", "declare", "typeset", "local", "readonly"})
_PRIVILEGED = frozenset({"sudo", "doas"})


@frozen
class _Word:
    text: str
    dynamic: bool
    start: int


@frozen
class _Ctx:
    src: str
    depth: int
    wrappers: tuple[tuple[str, ...], ...] = ()
    writes: tuple[str, ...] = ()
    reads: tuple[str, ...] = ()


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
    try:
        _analyze_source(command, acc, wrappers=(), depth=0)
    except RecursionError:  # absurd nesting: bashlex coped, the walk did not
        acc.opaque("nested too deeply")
    opaque = bool(acc.reasons)
    read_only = not opaque and all(c.read_only for c in acc.commands)
    return ShellAnalysis(
        commands=tuple(acc.commands), opaque=opaque, read_only=read_only, reasons=acc.reasons
    )


def _is_blank(src: str) -> bool:
    return all(not line.strip() or line.lstrip().startswith("#") for line in src.splitlines())


def _analyze_source(src: str, acc: _Acc, wrappers: tuple[tuple[str, ...], ...], depth: int) -> None:
    if depth > _MAX_DEPTH:
        acc.opaque("nested too deeply")
        return
    if _is_blank(src):
        return
    try:
        trees = bashlex.parse(src)
    except Exception as exc:  # bashlex raises several types, and bugs; all mean "cannot see"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        acc.opaque(f"cannot parse: {first}")
        # Still opaque (never allowed), but look inside what bashlex choked on so
        # that deny and ask rules on the parts still apply: bashlex rejects, for
        # one, `$(a && b)`, which bash runs happily.
        outer, inner = _split_substitutions(src)
        for part in inner:
            _analyze_source(part, acc, wrappers, depth + 1)
        if inner and outer != src:
            _analyze_source(outer, acc, wrappers, depth + 1)
        return
    ctx = _Ctx(src=src, depth=depth, wrappers=wrappers)
    for tree in trees:
        _visit(tree, ctx, acc)


def _split_substitutions(src: str) -> tuple[str, list[str]]:
    """`src` with each `$(...)` and backquoted part replaced by a plain word,
    and the texts of those parts. Single quotes are respected; an unbalanced
    substitution runs to the end of the text (bash would refuse it anyway)."""
    outer: list[str] = []
    inner: list[str] = []
    i, n = 0, len(src)
    quote = False
    while i < n:
        ch = src[i]
        if ch == "'" and (i == 0 or src[i - 1] != "\\"):
            quote = not quote
        if not quote and src.startswith("$(", i) and not src.startswith("$((", i):
            depth, j = 1, i + 2
            while j < n and depth:
                depth += {"(": 1, ")": -1}.get(src[j], 0)
                j += 1
            inner.append(src[i + 2 : j - 1 if depth == 0 else j])
            outer.append("SUBST")
            i = j
            continue
        if not quote and ch == "`":
            j = src.find("`", i + 1)
            j = n if j < 0 else j
            inner.append(src[i + 1 : j])
            outer.append("SUBST")
            i = j + 1
            continue
        outer.append(ch)
        i += 1
    return "".join(outer), inner


def _visit(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    kind = node.kind
    if kind == "command":
        _command(node, ctx, acc)
    elif kind in {"operator", "pipe", "reservedword"}:
        return
    elif kind == "word":
        _word(node, ctx, acc)  # e.g. the words of `for i in $(...)`
    elif kind in {"list", "pipeline", "if", "for", "while", "until"}:
        for part in node.parts:
            _visit(part, ctx, acc)
    elif kind == "compound":
        writes, reads = _redirects(getattr(node, "redirects", []), ctx, acc)
        inner = _Ctx(
            src=ctx.src,
            depth=ctx.depth,
            wrappers=ctx.wrappers,
            writes=ctx.writes + writes,
            reads=ctx.reads + reads,
        )
        for part in node.list:
            _visit(part, inner, acc)
    elif kind == "function":
        acc.opaque("function definition")
        for part in node.parts:
            _visit(part, ctx, acc)
    else:
        acc.opaque(f"unsupported construct: {kind}")
        for part in getattr(node, "parts", []):
            _visit(part, ctx, acc)


def _word(node: Any, ctx: _Ctx, acc: _Acc) -> _Word:
    """Visit the commands hidden in a word and report whether it is static."""
    dynamic = False
    for part in getattr(node, "parts", []):
        if part.kind in {"commandsubstitution", "processsubstitution"}:
            dynamic = True
            sub = _Ctx(src=ctx.src, depth=ctx.depth, wrappers=ctx.wrappers)
            _visit(part.command, sub, acc)
        elif part.kind == "parameter":
            dynamic = True
            value = getattr(part, "value", "") or ""
            # bashlex does not parse substitutions nested in ${...}.
            if any(c in value for c in "$`("):
                acc.opaque("substitution inside a parameter expansion")
        elif part.kind == "tilde":
            continue
        else:
            dynamic = True
    start, end = node.pos
    raw = ctx.src[start:end]
    if _has_glob_or_brace(raw):
        dynamic = True
    if not dynamic and _has_active_expansion(raw):
        # bashlex missed an expansion the shell would perform (e.g. ``rm``).
        acc.opaque(f"expansion the parser did not resolve: {raw}")
        dynamic = True
    # bashlex's own quote removal is wrong for mixed quoting ('a'"'"'b').
    text = node.word if dynamic else _unquote(raw)
    return _Word(text=text, dynamic=dynamic, start=start)


def _unquote(raw: str) -> str:
    """Shell quote removal of a word without expansions."""
    out: list[str] = []
    i = 0
    n = len(raw)
    while i < n:
        c = raw[i]
        if c == "\\":
            if i + 1 < n and raw[i + 1] != "\n":
                out.append(raw[i + 1])
            i += 2
        elif c == "'":
            close = raw.find("'", i + 1)
            close = n if close < 0 else close
            out.append(raw[i + 1 : close])
            i = close + 1
        elif c == '"':
            i += 1
            while i < n and raw[i] != '"':
                if raw[i] == "\\" and i + 1 < n and raw[i + 1] in '$`"\\\n':
                    if raw[i + 1] != "\n":
                        out.append(raw[i + 1])
                    i += 2
                else:
                    out.append(raw[i])
                    i += 1
            i += 1
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _has_active_expansion(raw: str) -> bool:
    """Whether `raw` has an unescaped `$x`, `${`, `$(` or backquote outside single quotes."""
    single = double = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and not single:
            i += 2
            continue
        if c == "'" and not double:
            single = not single
        elif c == '"' and not single:
            double = not double
        elif not single and (c == "`" or (c == "$" and raw[i + 1 : i + 2] in _EXPANSION_START)):
            return True
        i += 1
    return False


_EXPANSION_START = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789{(@*#?$!-'\""
)


def _has_glob_or_brace(raw: str) -> bool:
    """Whether `raw` has an unquoted glob or brace expansion."""
    if raw == "{}":
        return False  # literal; find -exec's placeholder
    single = double = False
    i = 0
    while i < len(raw):
        c = raw[i]
        if c == "\\" and not single:
            i += 2
            continue
        if c == "'" and not double:
            single = not single
        elif c == '"' and not single:
            double = not double
        elif not single and not double:
            if c in "*?":
                return True
            if c == "[" and "]" in raw[i + 1 :]:
                return True
            if c == "{" and _is_brace_expansion(raw[i + 1 :]):
                return True
        i += 1
    return False


def _is_brace_expansion(after: str) -> bool:
    """`{a,b}` and `{1..3}` expand; `{}` and `{x}` stay literal."""
    close = after.find("}")
    return close >= 0 and ("," in after[:close] or ".." in after[:close])


def _redirects(
    nodes: Sequence[Any], ctx: _Ctx, acc: _Acc
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    writes: list[str] = []
    reads: list[str] = []
    for r in nodes:
        rtype: str = r.type
        target = getattr(r, "output", None)
        if rtype in {"<<", "<<-"}:
            delim = ctx.src[target.pos[0] : target.pos[1]] if target is not None else ""
            heredoc = getattr(r, "heredoc", None)
            body = getattr(heredoc, "value", "") or ""
            quoted = any(q in delim for q in "'\"\\")
            if not quoted and ("$" in body or "`" in body):
                acc.opaque("here-document with expansions")
            continue
        if target is None or isinstance(target, int):
            continue  # fd duplication: 2>&1
        word = _word(target, ctx, acc)
        if rtype == "<<<":
            continue
        if ">" in rtype:
            if word.dynamic or word.text not in _DEVICES:
                writes.append(word.text)
        elif rtype == "<":
            reads.append(word.text)
    return tuple(writes), tuple(reads)


def _command(node: Any, ctx: _Ctx, acc: _Acc) -> None:
    words: list[_Word] = []
    redirect_nodes: list[Any] = []
    for part in node.parts:
        if part.kind == "assignment":
            _word(part, ctx, acc)
            _check_assignment(part.word, acc)
        elif part.kind == "word":
            words.append(_word(part, ctx, acc))
        elif part.kind == "redirect":
            redirect_nodes.append(part)
        else:
            _visit(part, ctx, acc)
    writes, reads = _redirects(redirect_nodes, ctx, acc)
    run = _Run(
        ctx=ctx,
        acc=acc,
        end=node.pos[1],
        writes=ctx.writes + writes,
        reads=ctx.reads + reads,
    )
    if not words:
        if run.writes:  # `> file` alone still truncates the file
            run.emit([], ctx.wrappers, open_ended=False, start=node.pos[0])
        return
    run.unwrap(words, ctx.wrappers, open_ended=False)


def _check_assignment(text: str, acc: _Acc) -> None:
    name = text.split("=", 1)[0].rstrip("+")
    if name in _SENSITIVE_VARS or name.startswith(_SENSITIVE_PREFIXES):
        acc.opaque(f"assignment to {name}")


_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")


@frozen
class _Options:
    """The option grammar of a wrapper, enough to find where its command starts."""

    short_arg: frozenset[str] = frozenset()
    short_flag: frozenset[str] = frozenset()
    long_arg: frozenset[str] = frozenset()
    long_flag: frozenset[str] = frozenset()
    short_optional: frozenset[str] = frozenset()  # value, if any, is attached: `-i{}`
    numeric: bool = False  # `nice -5`


def _skip_options(words: Sequence[_Word], opts: _Options) -> int | None:
    """Index of the first operand, or None when an option is not understood."""
    i = 0
    while i < len(words):
        w = words[i]
        if w.dynamic:
            return None
        t = w.text
        if t == "--":
            return i + 1
        if not t.startswith("-") or t == "-":
            return i
        if opts.numeric and re.fullmatch(r"-\d+", t):
            i += 1
            continue
        if t.startswith("--"):
            name = t[2:].split("=", 1)[0]
            if name in opts.long_arg:
                i += 1 if "=" in t else 2
            elif name in opts.long_flag:
                i += 1
            else:
                return None
            continue
        j = 1
        consumed_next = False
        while j < len(t):
            c = t[j]
            if c in opts.short_arg:
                if j == len(t) - 1:
                    consumed_next = True
                break
            if c in opts.short_optional:
                break
            if c not in opts.short_flag:
                return None
            j += 1
        i += 2 if consumed_next else 1
    return i


_TIMEOUT = _Options(
    short_arg=frozenset("sk"),
    short_flag=frozenset("v"),
    long_arg=frozenset({"signal", "kill-after"}),
    long_flag=frozenset({"preserve-status", "foreground", "verbose"}),
)
_NICE = _Options(short_arg=frozenset("n"), long_arg=frozenset({"adjustment"}), numeric=True)
_NOHUP = _Options()
_ENV = _Options(
    short_arg=frozenset("uC"),
    short_flag=frozenset("i0v"),
    long_arg=frozenset({"unset", "chdir"}),
    long_flag=frozenset({"ignore-environment", "null", "debug"}),
)
_COMMAND = _Options(short_flag=frozenset("p"))
_EXEC = _Options(short_arg=frozenset("a"), short_flag=frozenset("cl"))
_XARGS = _Options(
    short_arg=frozenset("adEILnPs"),
    short_flag=frozenset("0rtpxo"),
    short_optional=frozenset("ile"),
    long_arg=frozenset(
        ["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"]
    ),
    long_flag=frozenset(
        [
            "null",
            "no-run-if-empty",
            "verbose",
            "interactive",
            "exit",
            "open-tty",
            "show-limits",
            "replace",
            "eof",
            "max-lines",
        ]
    ),
)
_SUDO = _Options(
    short_arg=frozenset("ugCDhprtTU"),
    short_flag=frozenset("AbEHnPSBN"),
    long_arg=frozenset(
        [
            "user",
            "group",
            "close-from",
            "chdir",
            "host",
            "prompt",
            "role",
            "type",
            "command-timeout",
            "other-user",
        ]
    ),
    long_flag=frozenset(
        [
            "askpass",
            "background",
            "preserve-env",
            "set-home",
            "non-interactive",
            "preserve-groups",
            "stdin",
            "bell",
            "no-update",
        ]
    ),
)
_DOAS = _Options(short_arg=frozenset("uC"), short_flag=frozenset("n"))
_STDBUF = _Options(short_arg=frozenset("ioe"), long_arg=frozenset({"input", "output", "error"}))
_SETSID = _Options(short_flag=frozenset("cfw"), long_flag=frozenset({"ctty", "fork", "wait"}))
_IONICE = _Options(short_arg=frozenset("cnpPu"), short_flag=frozenset("t"))
_TIME = _Options(
    short_arg=frozenset("fo"),
    short_flag=frozenset("pvqa"),
    long_arg=frozenset({"format", "output"}),
    long_flag=frozenset({"portability", "verbose", "quiet", "append"}),
)

# name -> (options, number of operands before the command)
_WRAPPERS: dict[str, tuple[_Options, int]] = {
    "timeout": (_TIMEOUT, 1),
    "nice": (_NICE, 0),
    "nohup": (_NOHUP, 0),
    "env": (_ENV, 0),
    "command": (_COMMAND, 0),
    "builtin": (_NOHUP, 0),
    "exec": (_EXEC, 0),
    "xargs": (_XARGS, 0),
    "sudo": (_SUDO, 0),
    "doas": (_DOAS, 0),
    "stdbuf": (_STDBUF, 0),
    "setsid": (_SETSID, 0),
    "ionice": (_IONICE, 0),
    "time": (_TIME, 0),
}


@define
class _Run:
    """Unwraps and records the commands of one syntax-tree command node."""

    ctx: _Ctx
    acc: _Acc
    end: int
    writes: tuple[str, ...]
    reads: tuple[str, ...]

    def emit(
        self,
        words: Sequence[_Word],
        wrappers: tuple[tuple[str, ...], ...],
        open_ended: bool,
        start: int | None = None,
        all_dynamic_args: bool = False,
        container: bool = False,
    ) -> None:
        argv = tuple(w.text for w in words)
        dynamic = tuple(w.dynamic or (all_dynamic_args and i > 0) for i, w in enumerate(words))
        begin = words[0].start if words else (start or 0)
        read_only = (
            not self.writes
            and not any(w and posixpath.basename(w[0]) in _PRIVILEGED for w in wrappers)
            and (container or command_is_read_only(argv, dynamic, open_ended))
        )
        self.acc.commands.append(
            SimpleCommand(
                argv=argv,
                text=self.ctx.src[begin : self.end].strip(),
                dynamic=dynamic,
                open_ended=open_ended,
                wrappers=wrappers,
                writes=self.writes,
                reads=self.reads,
                read_only=read_only,
                container=container,
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
            handler = _SPECIAL.get(name)
            if handler is not None:
                handler(self, words, wrappers, open_ended)
                return
            if name in _OPAQUE_COMMANDS:
                acc.opaque(f"{name} runs code the parser cannot see")
                self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args)
                return
            if name in _DECLARERS:
                for w in words[1:]:
                    if w.dynamic:
                        acc.opaque(f"{name} with a run-time argument")
                    elif _ASSIGNMENT.match(w.text):
                        _check_assignment(w.text, acc)
            spec = _WRAPPERS.get(name)
            if spec is None or len(words) == 1 or _lookup_only(name, words):
                self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args)
                if name == "find":
                    self._find_exec(words, wrappers)
                return
            opts, operands = spec
            index = _skip_options(words[1:], opts)
            if index is None:
                acc.opaque(f"{name}: options not understood")
                self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args)
                return
            index += 1 + operands
            if name in {"env", "sudo", "doas"}:
                while index < len(words) and _ASSIGNMENT.match(words[index].text):
                    if words[index].dynamic:
                        acc.opaque(f"{name}: run-time assignment")
                    _check_assignment(words[index].text, acc)
                    index += 1
            if name == "sudo" and _sudo_runs_shell(words[1:index]):
                acc.opaque("sudo -s/-i re-parses its arguments in a shell")
            if name == "env" and any(w.text.startswith(("-S", "--split-string")) for w in words):
                acc.opaque("env -S splits a string the parser cannot see")
            if name == "xargs":
                open_ended = True
                prefix = words[1:index]
                if any(w.text.startswith(("-I", "-i", "--replace")) for w in prefix):
                    all_dynamic_args = True
            inner = words[index:]
            if not inner:
                if name == "xargs":  # plain `xargs` runs echo
                    self.emit(words, wrappers, open_ended)
                    return
                self.emit(words, wrappers, open_ended, all_dynamic_args=all_dynamic_args)
                return
            wrappers = (*wrappers, tuple(w.text for w in words[:index]))
            words = inner
        acc.opaque("too many wrappers")
        self.emit(words, wrappers, open_ended)

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
        _analyze_source(script.text, self.acc, outer, self.ctx.depth + 1)

    def eval(
        self, words: Sequence[_Word], wrappers: tuple[tuple[str, ...], ...], open_ended: bool
    ) -> None:
        """`eval ARGS`: the joined arguments are parsed again."""
        self.emit(words, wrappers, open_ended, container=True)
        args = words[1:]
        if open_ended or any(w.dynamic for w in args):
            self.acc.opaque("eval of run-time text")
            return
        outer = (*wrappers, (words[0].text,))
        _analyze_source(" ".join(w.text for w in args), self.acc, outer, self.ctx.depth + 1)


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


def _shell_handler(
    run: _Run, words: Sequence[_Word], wrappers: tuple[tuple[str, ...], ...], open_ended: bool
) -> None:
    run.shell(words, wrappers, open_ended)


def _eval_handler(
    run: _Run, words: Sequence[_Word], wrappers: tuple[tuple[str, ...], ...], open_ended: bool
) -> None:
    run.eval(words, wrappers, open_ended)


_Handler = Callable[[_Run, Sequence[_Word], tuple[tuple[str, ...], ...], bool], None]
_SPECIAL: dict[str, _Handler] = {name: _shell_handler for name in _SHELLS}
_SPECIAL["eval"] = _eval_handler
