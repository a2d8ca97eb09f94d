"""Shell command analysis: what a command line would run.

`analyze_command` splits a line into simple commands with a real grammar
(tree-sitter-bash), sees through the programs that run their arguments (a
data table, `runners.json`), and says when it cannot see everything.
"""

from ._analyze import analyze_command
from ._interp import interpreter_code
from ._readonly import READ_ONLY_COMMANDS
from ._readonly import command_is_read_only
from ._readonly import trusted_name
from ._runners import Runner
from ._runners import interpreter_names
from ._runners import known_programs
from ._runners import runner
from ._runners import runners
from ._types import Expansion
from ._types import ShellAnalysis
from ._types import SimpleCommand

__all__ = [
    "READ_ONLY_COMMANDS",
    "Expansion",
    "Runner",
    "ShellAnalysis",
    "SimpleCommand",
    "analyze_command",
    "command_is_read_only",
    "interpreter_code",
    "interpreter_names",
    "known_programs",
    "runner",
    "runners",
    "trusted_name",
]
