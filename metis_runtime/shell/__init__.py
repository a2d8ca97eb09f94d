"""Shell command analysis: what a command line would run.

`analyze_command` splits a line into simple commands with a real grammar
(tree-sitter-bash), sees through the programs that run their arguments (a
data table, `runners.json`), and says when it cannot see everything.
"""

from ._analyze import analyze_command
from ._readonly import READ_ONLY_COMMANDS, command_is_read_only, trusted_name
from ._runners import Runner, runner, runners
from ._types import ShellAnalysis, SimpleCommand

__all__ = [
    "READ_ONLY_COMMANDS",
    "Runner",
    "ShellAnalysis",
    "SimpleCommand",
    "analyze_command",
    "command_is_read_only",
    "runner",
    "runners",
    "trusted_name",
]
