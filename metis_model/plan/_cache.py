"""When a cached plan may be used (specs/plan.md, "Plan reuse"; PLAN-7, PLAN-8).

`probe` decides a hit or the first reason for a miss, in this order:
an executor of the plan is gone, an executor changed, a relevant family has a
new (or lost an) alternative, the routing epoch changed, the plan's mutating
arguments are not grounded in the current request, and, for L1, the entry is
a shadow rather than a champion. A hit needs all of them to pass.

Grounding (`grounded`): every literal string in a mutating step's arguments
must occur in the current request (its text, whitespace collapsed, or one of
its explicit targets), and every `${RUNTIME:target.x}` must name a target the
request has. Values from references, fillers and runtime keys are computed
for this turn and need no grounding.
"""

from __future__ import annotations

from collections.abc import Mapping

from metis_trace import MUTATING_KINDS
from metis_trace import TERMINAL_TOOL
from metis_trace import Framework
from metis_trace import MissReason
from metis_trace import PlanPath
from metis_trace import Signatures

from ._catalog import Catalog
from ._catalog import executor_signature
from ._catalog import family_signature
from ._catalog import plan_executors
from ._catalog import plan_families
from ._refs import RefKind
from ._refs import placeholders
from ._refs import strings

__all__ = ["MISS_ORDER", "current_signatures", "grounded", "probe", "ungrounded"]

MISS_ORDER: tuple[MissReason, ...] = tuple(MissReason)


def current_signatures(framework: Framework, catalog: Catalog, epoch: int) -> Signatures:
    """The signatures a framework has against the catalog now."""
    return Signatures(
        executors=executor_signature(plan_executors(framework), catalog),
        families=family_signature(plan_families(framework, catalog), catalog),
        epoch=epoch,
    )


def probe(
    stored: Signatures,
    current: Signatures,
    *,
    grounded: bool,
    path: PlanPath = PlanPath.L0,
    champion: bool | None = None,
) -> MissReason | None:
    """None for a hit, else the first reason in `MISS_ORDER` that applies."""
    if current.executors is None:
        return MissReason.EXECUTOR_REMOVED
    if stored.executors != current.executors:
        return MissReason.EXECUTOR_CHANGED
    if stored.families != current.families:
        return MissReason.NEW_ALTERNATIVE
    if stored.epoch != current.epoch:
        return MissReason.EPOCH_CHANGED
    if not grounded:
        return MissReason.NOT_GROUNDED
    if path is PlanPath.L1 and champion is not True:
        return MissReason.NOT_CHAMPION
    return None


def ungrounded(
    framework: Framework, catalog: Catalog, request: str, targets: Mapping[str, str]
) -> tuple[str, ...]:
    """The mutating argument values of `framework` the request does not ground."""
    text = " ".join(request.split())
    known = set(targets.values())
    out: list[str] = []
    for step in framework.steps:
        executor = catalog.get(step.tool)
        if step.tool == TERMINAL_TOOL or executor is None or executor.effect not in MUTATING_KINDS:
            continue
        for value in strings(step.args):
            refs = list(placeholders(value))
            for ref in refs:
                name = ref.key.removeprefix("target.")
                if (
                    ref.kind is RefKind.RUNTIME
                    and ref.key.startswith("target.")
                    and name not in targets
                ):
                    out.append(ref.text)
            if refs:
                continue
            if value and value not in known and " ".join(value.split()) not in text:
                out.append(value)
    return tuple(out)


def grounded(
    framework: Framework, catalog: Catalog, request: str, targets: Mapping[str, str]
) -> bool:
    return not ungrounded(framework, catalog, request, targets)
