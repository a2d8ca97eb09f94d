"""Differential permission oracle: the runtime gate against the reference model.

Hypothesis draws a case: a mode, rules from every source in Claude Code
syntax, a batch of concrete calls (file tools on labelled paths, shell
commands built from labelled simple commands under wrappers, substitutions,
`bash -c` and compound operators), scripted answers, and the route. Each call
is classified by the real tool and decided by the real `Gate`, exactly as the
loop's preflight does; nothing is executed. Three things are checked per call:

1. the model agrees: `resolve(decision.facts)` gives the same decision, stage
   and rule as the gate (PERM-1 across two independent implementations);
2. the facts are right: mode, kind, protected, secret, in_scope and the exact
   set of matching rules equal what the case's labels say. Without this the
   first check is weak, since both sides read the same facts;
3. an ask settles as `settle_ask` says: approved, resolver, and whether anyone
   was waited on (headless and background must finish without suspending).

`oracle_study(n)` runs `n` examples per route and returns a `RouteResult` per
route; `run_oracle(n)` the same as `{route: (calls, agreements)}`.
"""

from ._cases import Call
from ._cases import Case
from ._cases import ChildDraw
from ._cases import RuleDraw
from ._cases import calls
from ._cases import cases
from ._cases import rule_draws
from ._check import CallCheck
from ._check import CaseOutcome
from ._check import check_case
from ._run import RouteResult
from ._run import Tally
from ._run import oracle_study
from ._run import run_oracle
from ._run import run_route
from ._run import substituted_list_case
from ._shells import ATOMS
from ._shells import ECHO_DYN
from ._shells import Occ
from ._shells import Shell
from ._shells import ShellAtom
from ._shells import line
from ._shells import shells
from ._world import PATHS
from ._world import ROUTES
from ._world import RULES
from ._world import BashPattern
from ._world import PathAtom
from ._world import RuleTemplate
from ._world import World
from ._world import build_world

__all__ = [
    "ATOMS",
    "ECHO_DYN",
    "PATHS",
    "ROUTES",
    "RULES",
    "BashPattern",
    "Call",
    "CallCheck",
    "Case",
    "CaseOutcome",
    "ChildDraw",
    "Occ",
    "PathAtom",
    "RouteResult",
    "RuleDraw",
    "RuleTemplate",
    "Shell",
    "ShellAtom",
    "Tally",
    "World",
    "build_world",
    "calls",
    "cases",
    "check_case",
    "line",
    "oracle_study",
    "rule_draws",
    "run_oracle",
    "run_route",
    "shells",
    "substituted_list_case",
]
