"""metis_proofs: z3 encodings, proofs and counterexamples.

The one place (with `proofs/`) where z3 is imported. Everything is built from
the shared enums of `metis_trace` (and `_agents`' `RefusalCode` and
`GUARD_ORDER`), and tests keep the encodings in step with the Python model
(`resolve`, `settle_ask`, `step`, `guard_decision`, `admit`, `finish`).
See specs/proofs.md.
"""

from ._cex import Counterexample
from ._cex import CounterexampleFiles
from ._cex import event_graph
from ._cex import find_counterexample
from ._cex import write_trace_files
from ._convert import Path
from ._convert import PathStep
from ._convert import decode_path
from ._convert import path_to_trace
from ._convert import to_itf
from ._convert import trace_itf
from ._engine import BmcOutcome
from ._engine import Induction
from ._engine import InductionOutcome
from ._engine import Invariant
from ._engine import Unrolling
from ._engine import bmc
from ._engine import houdini
from ._engine import k_induction
from ._guard import GuardProof
from ._guard import check_guard
from ._guard import prove_spawn_guard
from ._guard_mirror import GUARD_ABLATIONS
from ._guard_mirror import GuardAblation
from ._guard_mirror import concrete_decision
from ._guard_mirror import guard_z3
from ._guard_sym import SymGuard
from ._guard_system import GuardSystem
from ._loop_session import LoopSession
from ._perm import SymFacts
from ._perm import SymResolution
from ._perm import child_mode_z3
from ._perm import concrete_resolution
from ._perm import concrete_settlement
from ._perm import mode_at_most_z3
from ._perm import resolve_z3
from ._perm import settle_z3
from ._perm_claims import PERM_RULE_SLOTS
from ._properties import prove
from ._properties import prove_all
from ._property_table import DEFAULT_DEPTH
from ._property_table import PROPERTIES
from ._property_table import WIDTHS_TIMEOUT_S
from ._property_table import Property
from ._property_table import UnknownProperty
from ._property_table import get_property
from ._property_table import property_ids
from ._results import ProofResult
from ._results import Verdict
from ._smt2 import cvc5_answers
from ._smt2 import expected_answers
from ._smt2 import z3_answers
from ._system import LoopSystem
from ._system_config import ABLATIONS
from ._system_config import LoopConfig
from ._system_config import UnknownAblation
from ._system_fields import CHECKED
from ._system_terms import State

__all__ = [
    "ABLATIONS",
    "CHECKED",
    "DEFAULT_DEPTH",
    "GUARD_ABLATIONS",
    "PERM_RULE_SLOTS",
    "PROPERTIES",
    "WIDTHS_TIMEOUT_S",
    "BmcOutcome",
    "Counterexample",
    "CounterexampleFiles",
    "GuardAblation",
    "GuardProof",
    "GuardSystem",
    "Induction",
    "InductionOutcome",
    "Invariant",
    "LoopConfig",
    "LoopSession",
    "LoopSystem",
    "Path",
    "PathStep",
    "ProofResult",
    "Property",
    "State",
    "SymFacts",
    "SymGuard",
    "SymResolution",
    "UnknownAblation",
    "UnknownProperty",
    "Unrolling",
    "Verdict",
    "bmc",
    "check_guard",
    "child_mode_z3",
    "concrete_decision",
    "concrete_resolution",
    "concrete_settlement",
    "cvc5_answers",
    "decode_path",
    "event_graph",
    "expected_answers",
    "find_counterexample",
    "get_property",
    "guard_z3",
    "houdini",
    "k_induction",
    "mode_at_most_z3",
    "path_to_trace",
    "property_ids",
    "prove",
    "prove_all",
    "prove_spawn_guard",
    "resolve_z3",
    "settle_z3",
    "to_itf",
    "trace_itf",
    "write_trace_files",
    "z3_answers",
]
