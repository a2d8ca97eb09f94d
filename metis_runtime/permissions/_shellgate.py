"""The facts of one shell command line, for the gate (`specs/permissions.md`,
"Shell commands").

Every part (simple command) is checked on its own. Recorded:

- every deny and ask rule that may match any part (`bash -c` and other
  containers included), and every Read/Edit deny or ask rule that may match
  a file the line reads or writes (`cat .env`, `echo x >> f`, `cp a src/b`);
- allow rules only when the whole line is allowed: every part that is not an
  in-scope read-only command is surely matched by a Bash allow rule, every
  write target by an Edit allow, every out-of-scope read by a Read or Edit
  allow (a command rule never covers the files it writes);
- `protected` when a write (or a word of a mutating line) names a protected
  path, when a write target is only known at run time, when `rm` aims at a
  critical path, when a `cd` elsewhere is followed by `git` (hooks there can
  run), when `git config` writes configuration, and when the line is opaque:
  stage 5 then caps the decision at ask;
- secret and scope from reads, writes and path-like words, resolved against
  every directory a `cd`/`pushd` before them may have entered.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path

from attrs import define
from attrs import field

from metis_trace import RuleBehavior
from metis_trace import ToolKind

from ..shell import ShellAnalysis
from ..shell import SimpleCommand
from ..shell import command_is_read_only
from ..shell import runner
from ..shell import trusted_name
from ._paths import is_critical
from ._paths import is_protected
from ._paths import is_secret
from ._paths import is_within
from ._paths import lexical
from ._paths import resolve
from ._rules import SAFE_ENV
from ._rules import Rule
from ._rules import SpecKind
from ._rules import bash_matches
from ._rules import path_matches
from ._rules import path_under_matches
from ._shellfiles import ACCEPT_EDITS_COMMANDS
from ._shellfiles import file_effects
from ._shelltrees import Trees as _Trees
from ._shelltrees import expand_glob
from ._shelltrees import hidden_command

_NOT_PATHS = frozenset({"echo", "printf"})  # their words are text, not paths
_CHDIR = frozenset({"cd", "pushd"})
_WRAPPER_CHDIR = {"env": ("C", "--chdir"), "sudo": ("D", "--chdir")}
_GIT_CONFIG_READS = frozenset(
    {
        "--get",
        "--get-all",
        "--get-regexp",
        "--get-urlmatch",
        "-l",
        "--list",
        "--show-origin",
        "--show-scope",
        "--name-only",
        "get",
        "list",
    }
)


@define
class ShellFacts:
    rules: list[Rule] = field(factory=list)
    kind: ToolKind = ToolKind.EXEC
    protected: bool = False
    secret: bool = False
    in_scope: bool = True
    details: list[str] = field(factory=list)

    def guard(self, reason: str) -> None:
        self.protected = True
        if reason not in self.details:
            self.details.append(reason)


@define
class _Part:
    cmd: SimpleCommand
    reads: list[tuple[Path, Path]] = field(factory=list)  # (lexical, real)
    writes: list[tuple[Path, Path]] = field(factory=list)
    redirects: list[tuple[Path, Path]] = field(factory=list)  # redirection targets
    roots: list[tuple[Path, Path]] = field(factory=list)  # recursive reads
    bulk: list[tuple[Path, Path]] = field(factory=list)  # folders copied or archived whole
    scoped: list[tuple[Path, Path]] = field(factory=list)  # reads as written, for scope
    dynamic_read: bool = False  # some file it reads is only known at run time
    git_elsewhere: bool = False  # git aimed elsewhere by its own -C/--git-dir alone
    in_scope: bool = True


RulesFor = Callable[[str], Sequence[Rule]]


def shell_facts(
    analysis: ShellAnalysis,
    declared: ToolKind,
    *,
    workspace: Path,
    roots: Sequence[Path],
    protected_roots: Sequence[Path] = (),
    rules_for: RulesFor,
    base: Callable[[Rule], Path],
    usable: Callable[[Rule], bool],
) -> ShellFacts:
    """The facts of a bash call whose command was analysed as `analysis`."""
    out = ShellFacts()
    home = resolve("~", Path("/"))
    parts, words, lost, git_elsewhere = _walk(analysis, workspace, home)
    for p in parts:
        p.in_scope = all(is_within(real, roots) for _, real in (*p.scoped, *p.writes))
    out.in_scope = all(p.in_scope for p in parts) and all(is_within(w, roots) for w in words[1])
    mutating_words = any(not p.cmd.read_only for p in parts)
    out.secret = any(is_secret(w) for w in words[0]) or any(
        is_secret(real) for p in parts for _, real in (*p.reads, *p.writes)
    )
    if mutating_words and any(is_protected(w, protected_roots, workspace) for w in words[0]):
        out.protected = True
    bash_rules = rules_for("bash")
    read_rules = rules_for("read")
    edit_rules = rules_for("edit")
    allows = [r for r in bash_rules if r.behavior is RuleBehavior.ALLOW and usable(r)]
    read_limits = [
        r
        for r in read_rules
        if r.behavior is not RuleBehavior.ALLOW
        and r.spec.kind is SpecKind.PATH
        and r.spec.tool.lower() == "read"
    ]
    # Deny and ask rules that may match any part, or a file any part touches.
    for rule in bash_rules:
        if rule.behavior is RuleBehavior.ALLOW:
            continue
        if rule.spec.kind is SpecKind.ANY or (
            rule.spec.bash is not None
            and any(bash_matches(rule.spec.bash, c, definite=False) for c in analysis.commands)
        ):
            out.rules.append(rule)
    trees = _Trees()
    for rule in _unique((*read_rules, *edit_rules)):
        if rule.behavior is RuleBehavior.ALLOW or rule.spec.kind is not SpecKind.PATH:
            continue
        if _file_rule_hits(rule, parts, base(rule), workspace, trees):
            out.rules.append(rule)
    # Guards.
    if read_limits:
        if any(p.dynamic_read for p in parts):
            out.guard("reads a file known only when it runs, and a Read rule denies or asks")
        if trees.too_large:
            out.guard(f"copies a folder too large to check against Read rules ({trees.too_large})")
    limits = [r for r in bash_rules if r.behavior is not RuleBehavior.ALLOW]
    for p in parts:
        hidden = hidden_command(p.cmd, limits)
        if hidden is not None:
            out.guard(
                f"{p.cmd.argv[0]} (a program metis does not know) may run "
                f"{' '.join(hidden[0])!r}, which {hidden[1].pattern} names"
            )
        if p.cmd.unknown_options and not _exactly_allowed(p.cmd, allows):
            out.guard(
                f"{p.cmd.argv[0]}: global options metis does not know "
                "(only an exact rule allows it)"
            )
    for p in parts:
        effects = file_effects(p.cmd)
        if effects.dynamic_write:
            out.guard("writes to a path known only when it runs")
        if any(
            is_protected(real, protected_roots, workspace)
            or is_protected(lex, protected_roots, workspace)
            for lex, real in p.writes
        ):
            out.protected = True
        if effects.deletes and any(is_critical(real, workspace, home) for _, real in p.writes):
            out.guard("removes a critical path (/, ~, the workspace or a parent)")
        if _git_config_write(p.cmd):
            out.guard("git config writes configuration that can run programs")
    if git_elsewhere:
        out.guard("git after a cd to another directory (its hooks can run)")
    if any(p.git_elsewhere and not _exactly_allowed(p.cmd, allows) for p in parts):
        out.guard("git -C/--git-dir aimed at another directory (its hooks can run)")
    if analysis.opaque:
        out.guard("not fully analysable: " + "; ".join(analysis.reasons))
    elif lost:
        out.guard("changes directory to a place known only when it runs")
    out.kind = _kind(analysis, declared, parts, out)

    def here(rule: Rule) -> tuple[Path, Path]:
        return base(rule), workspace  # `/x` anchors at the rule's root, `./x` at the workspace

    granted = _allow_rules(parts, allows, read_rules, edit_rules, here, usable, analysis)
    out.rules.extend(granted)
    return out


def _exactly_allowed(cmd: SimpleCommand, allows: Sequence[Rule]) -> bool:
    """Whether an exact allow rule names this very command (global options
    and all: `Bash(git -C dir status)`, `Bash(npm --weird x)`)."""
    if any(cmd.dynamic) or any(name not in SAFE_ENV for name in cmd.env):
        return False
    text = " ".join(cmd.argv)
    return any(
        r.spec.bash is not None and r.spec.bash.exact and "".join(r.spec.bash.symbols) == text
        for r in allows
    )


def _unique(rules: Sequence[Rule]) -> list[Rule]:
    seen: set[int] = set()
    out = []
    for r in rules:
        if r.recency not in seen:
            seen.add(r.recency)
            out.append(r)
    return out


def _file_rule_hits(
    rule: Rule, parts: Sequence[_Part], base: Path, cwd: Path, trees: _Trees
) -> bool:
    pattern = rule.spec.path
    assert pattern is not None
    written = rule.spec.tool.lower()
    reads = written == "read"  # a Read deny also covers writes of the path
    for p in parts:
        targets = list(p.writes)
        if reads:
            targets += p.reads
        for lex, real in targets:
            if path_matches(pattern, lex, base, True, cwd) or path_matches(
                pattern, real, base, True, cwd
            ):
                return True
        if reads:
            for lex, real in p.roots:
                if path_under_matches(pattern, lex, base, cwd) or path_under_matches(
                    pattern, real, base, cwd
                ):
                    return True
            for lex, real in p.bulk:
                if path_under_matches(pattern, lex, base, cwd) or path_under_matches(
                    pattern, real, base, cwd
                ):
                    return True
                if any(path_matches(pattern, f, base, True, cwd) for f in trees.files(real)):
                    return True  # the folder holds a file the rule names
                if any(path_under_matches(pattern, d, base, cwd) for d in trees.linked_dirs(real)):
                    return True  # or links to a folder that does
    return False


def _surely(rule: Rule, lex: Path, real: Path, base: Path, cwd: Path) -> bool:
    assert rule.spec.path is not None
    pattern = rule.spec.path
    return path_matches(pattern, lex, base, cwd=cwd) and path_matches(pattern, real, base, cwd=cwd)


def _allow_rules(
    parts: Sequence[_Part],
    allows: Sequence[Rule],
    read_rules: Sequence[Rule],
    edit_rules: Sequence[Rule],
    base: Callable[[Rule], tuple[Path, Path]],
    usable: Callable[[Rule], bool],
    analysis: ShellAnalysis,
) -> list[Rule]:
    if analysis.opaque:
        return []
    used: dict[int, Rule] = {}
    finds: list[tuple[str, ...]] = []  # find commands an exact rule allows, -exec and all
    for p in parts:
        hits = [
            r
            for r in allows
            if r.spec.kind is SpecKind.ANY
            or (r.spec.bash is not None and bash_matches(r.spec.bash, p.cmd, definite=True))
        ]
        if hits and p.cmd.exact_only and p.cmd.argv[:1] == ("find",):
            finds.append(p.cmd.argv)
        if not hits and _run_by_allowed_find(p.cmd, finds):
            continue  # what `find -exec` runs, under the exact rule that allowed the find
        if not hits and not (p.cmd.read_only and p.in_scope and not p.cmd.writes):
            return []  # one part not allowed: no allow rule counts
        used.update((r.recency, r) for r in hits)
    file_allows = [
        r
        for r in _unique((*edit_rules, *read_rules))
        if r.behavior is RuleBehavior.ALLOW
        and r.spec.kind in (SpecKind.PATH, SpecKind.ANY)
        and usable(r)
    ]
    for p in parts:
        if file_effects(p.cmd).dynamic_write:
            return []
        # A redirection target needs an Edit allow (a command rule never
        # covers it); a file a command writes or reads outside the scope
        # needs an Edit (or Read) allow too.
        writes = p.redirects if p.in_scope else p.writes
        for lex, real in writes:
            hits = [r for r in file_allows if _edit_allows(r, lex, real, *base(r))]
            if not hits:
                return []
            used.update((r.recency, r) for r in hits)
        if not p.in_scope:
            for lex, real in p.reads:
                hits = [r for r in file_allows if _covers(r, lex, real, *base(r))]
                if not hits:
                    return []
                used.update((r.recency, r) for r in hits)
    return list(used.values())


def _run_by_allowed_find(cmd: SimpleCommand, finds: Sequence[tuple[str, ...]]) -> bool:
    for wrapper in cmd.wrappers:
        if wrapper[:1] == ("find",) and any(f[: len(wrapper)] == wrapper for f in finds):
            return True
    return False


def _edit_allows(rule: Rule, lex: Path, real: Path, base: Path, cwd: Path) -> bool:
    """Only `Edit` rules grant writes (`Write(path)` is never consulted)."""
    if rule.spec.tool.lower() != "edit":
        return False
    return rule.spec.kind is SpecKind.ANY or _surely(rule, lex, real, base, cwd)


def _covers(rule: Rule, lex: Path, real: Path, base: Path, cwd: Path) -> bool:
    return rule.spec.kind is SpecKind.ANY or _surely(rule, lex, real, base, cwd)


def _kind(
    analysis: ShellAnalysis, declared: ToolKind, parts: Sequence[_Part], facts: ShellFacts
) -> ToolKind:
    """READ_ONLY only as declared and true; EDIT when every part is a
    read-only command or one of acceptEdits's file commands and every
    write is static and in scope (its documented auto-approval); else EXEC."""
    has_writes = any(p.writes for p in parts)
    if declared is ToolKind.READ_ONLY and analysis.read_only and not has_writes:
        return ToolKind.READ_ONLY
    if declared is ToolKind.EDIT:
        return ToolKind.EDIT
    if analysis.opaque or facts.protected or not has_writes:
        return ToolKind.EXEC
    for p in parts:
        name = trusted_name(p.cmd.argv[0]) if p.cmd.argv else ""
        if _kept_wrappers(p.cmd) or any(v not in SAFE_ENV for v in p.cmd.env) or not p.in_scope:
            return ToolKind.EXEC  # behind safe prefixes and stripped wrappers it counts (2.1.97)
        if not (name in ACCEPT_EDITS_COMMANDS or p.cmd.read_only or _redirect_only(p.cmd)):
            return ToolKind.EXEC
        if name == "sed" and not any(w.startswith(("-i", "--in-place")) for w in p.cmd.argv):
            return ToolKind.EXEC
    return ToolKind.EDIT


def _kept_wrappers(cmd: SimpleCommand) -> bool:
    """Whether a wrapper Claude Code does not strip (sudo, env, bash -c) runs it."""
    for wrapper in cmd.wrappers:
        spec = runner(posixpath.basename(wrapper[0])) if wrapper else None
        if spec is None or not (spec.strip or (spec.strip_bare and len(wrapper) == 1)):
            return True
    return False


def _redirect_only(cmd: SimpleCommand) -> bool:
    """A read-only command whose only effect is its redirections (`echo x > f`)."""
    dyn = tuple(cmd.is_dynamic(i) for i in range(len(cmd.argv)))
    return bool(cmd.writes) and command_is_read_only(cmd.argv, dyn, cmd.open_ended)


_GIT_CONFIG_WRITES = frozenset(
    {
        "--add",
        "--unset",
        "--unset-all",
        "--replace-all",
        "--rename-section",
        "--remove-section",
        "-e",
        "--edit",
    }
)


def _git_config_write(cmd: SimpleCommand) -> bool:
    """`git config KEY VALUE` (or `--add`, `--unset`, `set`, ...) writes git
    configuration: `.git/config` (protected) or the global or system file,
    where `core.hooksPath`, `core.fsmonitor`, aliases and pagers run programs."""
    words = cmd.subcommand or cmd.argv
    if len(words) < 2 or posixpath.basename(words[0]) != "git" or words[1] != "config":
        return False
    args = words[2:]
    if any(a in _GIT_CONFIG_READS for a in args):
        return False
    if any(a in _GIT_CONFIG_WRITES for a in args):
        return True
    operands = [a for a in args if not a.startswith("-")]
    if operands[:1] in (["set"], ["unset"], ["edit"], ["rename-section"], ["remove-section"]):
        return True
    return len(operands) >= 2


def _walk(
    analysis: ShellAnalysis, workspace: Path, home: Path
) -> tuple[list[_Part], tuple[list[Path], list[Path]], bool, bool]:
    """Per part, its resolved reads and writes; the resolved static words of
    every part (for protected/secret) and the path-looking ones (for
    scope); whether a `cd` went somewhere only known when it runs; and
    whether `git` runs after a `cd` elsewhere or with `-C` elsewhere.

    A relative word is resolved against the workspace and against every
    directory a `cd`/`pushd` before it may have entered (`cd .metis &&
    cp x .` writes the settings folder): an over-approximation, since a
    subshell or a failed `cd` leaves the directory as it was."""
    parts: list[_Part] = []
    words: list[Path] = []
    scoped: list[Path] = []
    bases = [workspace]
    lost = False
    moved = False
    git_elsewhere = False
    for c in analysis.commands:
        if c.container:
            continue
        name = trusted_name(c.argv[0]) if c.argv else None
        outer = bases
        bases, known = _wrapper_dirs(c, outer)
        lost = lost or not known
        part = _Part(c)
        effects = file_effects(c)
        for target in effects.writes:
            part.writes.extend(_both(target, b) for b in bases)
        for target in effects.reads:
            part.reads.extend(_both(target, b) for b in bases)
        part.scoped = list(part.reads)  # expansions and globs: rules and secrets only
        for target in effects.expanded_reads:
            part.reads.extend(_both(target, b) for b in bases)
        for target in c.writes:
            part.redirects.extend(_both(target, b) for b in bases)
        for target in effects.recursive_reads:
            part.roots.extend(_both(target, b) for b in bases)
        for target in effects.bulk_reads:
            part.bulk.extend(_both(target, b) for b in bases)
        part.dynamic_read = effects.dynamic_read or (
            bool(effects.read_globs) and (lost or not known)
        )
        for pattern in effects.read_globs:
            for b in bases:
                found = expand_glob(pattern, b)
                if found is None:
                    part.dynamic_read = True  # too many matches to check
                    continue
                part.reads.extend(_both(f, b) for f in found)
        parts.append(part)
        if name == "git" and (moved or len(bases) > 1):
            git_elsewhere = True
        elif name == "git" and _git_dir_elsewhere(c, workspace):
            part.git_elsewhere = True
        if name in _CHDIR:
            entered, known = _entered(c, bases)
            moved = moved or any(p != workspace for p in entered) or not known
            outer = [*outer, *(p for p in entered if p not in outer)]
            lost = lost or not known
        candidates = list(enumerate(c.argv))
        if name in _NOT_PATHS:
            candidates = []
        elif c.argv and "/" not in c.argv[0]:
            candidates = candidates[1:]
        for i, word in candidates:
            if c.is_dynamic(i) or not word or "://" in word or "\x00" in word:
                continue
            if word.startswith("-"):
                _, eq, value = word.partition("=")
                if not eq or not value:
                    continue
                word = value  # --file=.env
            path_like = "/" in word or word.startswith("~") or word in {".", ".."}
            for b in bases:
                p = resolve(word, b)
                words.append(p)
                if path_like:
                    scoped.append(p)
        for _, known_words in _expanded_words(c):
            for word in known_words:  # `$HOME/.ssh/x`, `{a,b}`: secret and protected too
                for b in bases:
                    words.append(resolve(word, b))
        bases = outer  # a wrapper's directory is its command's alone
    for part in parts:
        scoped.extend(real for _, real in (*part.scoped, *part.writes))
    return parts, (words, scoped), lost, git_elsewhere


def _expanded_words(c: SimpleCommand) -> list[tuple[int, tuple[str, ...]]]:
    if trusted_name(c.argv[0]) in _NOT_PATHS if c.argv else True:
        return []
    return [(i, e.words) for i, e in c.expansions if not e.globbed and i > 0]


def _both(target: str, base: Path) -> tuple[Path, Path]:
    return lexical(target, base), resolve(target, base)


def _git_dir_elsewhere(c: SimpleCommand, workspace: Path) -> bool:
    argv = c.argv
    for i, w in enumerate(argv[1:], 1):
        if w in ("-C", "--git-dir", "--work-tree") and i + 1 < len(argv):
            value = argv[i + 1]
        elif w.startswith(("--git-dir=", "--work-tree=")):
            value = w.split("=", 1)[1]
        else:
            continue
        target = resolve(value, workspace)
        if target != workspace and not (w != "-C" and is_within(target, [workspace])):
            return True
    return False


def _entered(c: SimpleCommand, bases: Sequence[Path]) -> tuple[list[Path], bool]:
    """The directories a `cd`/`pushd` may enter from any of `bases`, and
    whether they are all known (a dynamic word or `cd -` is not)."""
    args = [(i, w) for i, w in enumerate(c.argv[1:], 1) if w != "--"]
    if any(c.is_dynamic(i) for i, _ in args):
        return [], False
    targets = [w for _, w in args if not w.startswith("-") or w in {"-"}]
    if not targets:
        return [resolve("~", Path("/"))], True  # `cd` alone: home
    if "-" in targets or len(targets) > 1:
        return [], False  # the previous directory, or a form we do not model
    return [resolve(targets[0], base) for base in bases], True


def _wrapper_dirs(c: SimpleCommand, bases: list[Path]) -> tuple[list[Path], bool]:
    """`bases` plus the directories `env -C DIR` / `sudo -D DIR` wrappers of
    `c` run it in (each resolved from every base), and whether all are known.
    Read conservatively: a cluster such as `-iC DIR` counts too."""
    dirs = list(bases)
    known = True
    for wrapper in c.wrappers:
        spec = _WRAPPER_CHDIR.get(posixpath.basename(wrapper[0])) if wrapper else None
        if spec is None:
            continue
        short, long = spec
        found: list[str] = []
        args = wrapper[1:]
        for i, word in enumerate(args):
            if word == long or word.startswith(long + "="):
                value = word.partition("=")[2] if "=" in word else None
            elif word.startswith("-") and not word.startswith("--") and short in word[1:]:
                value = word[word.index(short, 1) + 1 :] or None
            else:
                continue
            if value is None:
                value = args[i + 1] if i + 1 < len(args) else ""
            found.append(value)
        for value in found:
            if not value or any(ch in value for ch in "$`*?["):
                known = False  # a run-time directory
                continue
            for base in bases:
                p = resolve(value, base)
                if p not in dirs:
                    dirs.append(p)
    return dirs, known
