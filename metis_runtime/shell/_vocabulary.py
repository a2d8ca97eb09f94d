"""The names the command analysis knows.

Node kinds of tree-sitter-bash (statements, containers, redirections,
substitutions), bash's reserved words, the builtins and shells that change
what a line runs, the variables whose assignment changes which program a name
runs, the devices a redirection writes without writing a file, and the
grammar's quirks worked around (`_analyze.py` walks with them).
"""

from __future__ import annotations

import re

# Only private names: they are shared with `_analyze.py` and `_walk_state.py`.
__all__: list[str] = []


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
_FIND_ACTIONS = frozenset({"-exec", "-execdir", "-ok", "-okdir", "-delete"})
_SETS_VARIABLES = frozenset({"read", "unset", "mapfile", "readarray", "getopts", "printf"})

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
# Statement nodes whose statements all run, in order, in the same shell.
_SEQUENTIAL = frozenset({"program", "compound_statement", "redirected_statement"})
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
