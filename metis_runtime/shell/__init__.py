"""Shell command analysis: what a command line would run.

`analyze_command` splits a line into simple commands with a real parser
(bashlex), sees through wrappers, and says when it cannot see everything.
"""

from ._analyze import analyze_command
from ._readonly import READ_ONLY_COMMANDS, command_is_read_only, trusted_name
from ._types import ShellAnalysis, SimpleCommand

__all__ = [
    "READ_ONLY_COMMANDS",
    "ShellAnalysis",
    "SimpleCommand",
    "analyze_command",
    "command_is_read_only",
    "trusted_name",
]
