"""metis_proofs: z3 encodings, proofs and counterexamples.

The one place (with `proofs/`) where z3 is imported. Everything is built from
the shared enums of `metis_trace` (and `_agents`' `RefusalCode` and
`GUARD_ORDER`), and tests keep the encodings in step with the Python model
(`resolve`, `settle_ask`, `step`, `guard_decision`, `admit`, `finish`).
See specs/proofs.md.
"""

from ._cex import (
    Counterexample,
    CounterexampleFiles,
    event_graph,
    find_counterexample,
    write_trace_files,
)
from ._convert import Path, PathStep, decode_path, path_to_trace, to_itf, trace_itf
from ._engine import (
    BmcOutcome,
    Induction,
    InductionOutcome,
    Invariant,
    Unrolling,
    bmc,
    houdini,
    k_induction,
)
from ._guard import GuardProof, check_guard, prove_spawn_guard
from ._guard_mirror import GUARD_ABLATIONS, GuardAblation, concrete_decision, guard_z3
from ._guard_sym import SymGuard
from ._guard_system import GuardSystem
from ._perm import (
    SymFacts,
    SymResolution,
    child_mode_z3,
    concrete_resolution,
    concrete_settlement,
    mode_at_most_z3,
    resolve_z3,
    settle_z3,
)
from ._properties import (
    DEFAULT_DEPTH,
    PERM_RULE_SLOTS,
    PROPERTIES,
    WIDTHS_TIMEOUT_S,
    LoopSession,
    Property,
    UnknownProperty,
    get_property,
    property_ids,
    prove,
    prove_all,
)
from ._results import ProofResult, Verdict
from ._smt2 import cvc5_answers, expected_answers, z3_answers
from ._system import ABLATIONS, CHECKED, LoopConfig, LoopSystem, State, UnknownAblation

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
