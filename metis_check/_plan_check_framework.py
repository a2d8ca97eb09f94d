"""The turn header and the plan it runs, against the plan model.

The step cap and a scheduled task's identity (PLAN-12, PLAN-10), the catalog
the turn runs with, the cache path's L0 entry (PLAN-7), and each framework
record: validation by the model (PLAN-1, PLAN-2, PLAN-12) and, for a cached
plan, its hit: signatures, grounding and digest (PLAN-7, PLAN-8, PLAN-13).
"""

from __future__ import annotations

import attrs

from metis_model.plan._cache import current_signatures
from metis_model.plan._cache import grounded
from metis_model.plan._cache import probe
from metis_model.plan._catalog import catalog_of
from metis_model.plan._exec import Failure
from metis_model.plan._exec import initial_exec
from metis_model.plan._request import canonical_request
from metis_model.plan._validate import effective_cap
from metis_model.plan._validate import validate_tagged
from metis_trace import HARD_STEP_MAX
from metis_trace import MUTATING_KINDS
from metis_trace import TERMINAL_TOOL
from metis_trace import CatalogRecord
from metis_trace import FrameworkRecord
from metis_trace import MissReason
from metis_trace import PathRecord
from metis_trace import PlanPath
from metis_trace import ProbeOutcome
from metis_trace import Route
from metis_trace import framework_digest

from ._plan_check_base import _Attempt
from ._plan_check_base import _CheckerBase

# A validation failure of these checks is about references, or the cap.
_CHECK_ID = {"reference": "PLAN-2", "cap": "PLAN-12"}


class _FrameworkChecks(_CheckerBase):
    """The checks of the turn header, the catalog, the path and the framework records."""

    def header(self) -> None:
        h = self.h
        self.expect(
            "PLAN-12",
            h.hard_max == HARD_STEP_MAX and 1 <= h.cap <= h.hard_max,
            f"the turn's step cap {h.cap} (hard maximum {h.hard_max}) is above {HARD_STEP_MAX}",
        )
        if h.task is not None:
            t = h.task
            self.expect(
                "PLAN-10",
                (h.owner, h.channel, h.mode, h.actor, h.route)
                == (t.owner, t.channel, t.mode, "scheduler", Route.BACKGROUND),
                f"task {t.id} of {t.owner} ({t.channel}, {t.mode}) fired as {h.owner} "
                f"({h.channel}, {h.mode}, actor {h.actor}, route {h.route})",
            )

    def catalog_record(self, r: CatalogRecord) -> None:
        self.catalog = catalog_of(r.executors)

    def path_record(self, r: PathRecord) -> None:
        if r.outcome is ProbeOutcome.HIT:
            self.hits.append(r)
        if r.path is PlanPath.L0 and r.entry is not None:
            self.expect(
                "PLAN-7",
                r.entry == self.h.canonical == canonical_request(self.h.request),
                f"L0 entry {r.entry!r} is not this request's canonical form "
                f"{canonical_request(self.h.request)!r}",
            )

    def framework_record(self, r: FrameworkRecord) -> None:
        h = self.h
        expected_attempt = 0 if self.attempt is None else 1
        self.expect(
            "PLAN-4",
            r.attempt == expected_attempt and r.attempt <= self.recoveries,
            f"framework attempt {r.attempt} without a recovery before it",
        )
        tagged = validate_tagged(r.framework, self.catalog, h.cap)
        if r.valid and tagged:
            check, first = tagged[0]
            self.fail(
                _CHECK_ID.get(check, "PLAN-1"), f"accepted, but the model finds: {first.message}"
            )
        self.expect(
            "PLAN-1",
            r.valid or bool(tagged),
            "the runtime refused a framework the model accepts",
        )
        body = sum(1 for s in r.framework.steps if s.tool != TERMINAL_TOOL)
        if r.valid:
            self.expect(
                "PLAN-12",
                body <= effective_cap(h.cap),
                f"{body} steps run under a cap of {effective_cap(h.cap)}",
            )
        attempt = _Attempt(r)
        if r.source in (PlanPath.L0, PlanPath.L1):
            attempt.hit = self._check_hit(r)
        self.attempt = attempt
        mutating = [
            (self.catalog[s.tool].effect in MUTATING_KINDS) if s.tool in self.catalog else False
            for s in r.framework.steps
            if s.tool != TERMINAL_TOOL
        ]
        if self.exec is None:
            self.exec = initial_exec(mutating)
        else:
            self.exec = attrs.evolve(self.exec, slots=initial_exec(mutating).slots)
        if not r.valid:
            self.exec = attrs.evolve(self.exec, failure=Failure.STRUCTURAL)

    def _check_hit(self, r: FrameworkRecord) -> PathRecord | None:
        hit = next((p for p in reversed(self.hits) if p.path is r.source), None)
        self.expect("PLAN-7", hit is not None, f"a cached {r.source} plan used without a hit")
        if hit is None:
            return None
        now = current_signatures(r.framework, self.catalog, self.h.epoch)
        is_grounded = grounded(r.framework, self.catalog, self.h.request, self.h.targets)
        self.expect(
            "PLAN-7",
            hit.current == now,
            "the hit's current signatures are not the catalog's "
            f"(recorded {hit.current}, catalog {now})",
        )
        reason = (
            probe(hit.stored, now, grounded=is_grounded, path=r.source, champion=hit.champion)
            if hit.stored is not None
            else None
        )
        self.expect("PLAN-7", hit.stored is not None, "a hit without stored signatures")
        if reason is not None:
            inv = "PLAN-8" if reason is MissReason.NOT_GROUNDED else "PLAN-7"
            self.fail(inv, f"served from {r.source}, but the entry is a miss: {reason.value}")
        else:
            self.checks["PLAN-8"] += 1
        self.expect(
            "PLAN-8",
            hit.grounded == is_grounded,
            f"grounding recorded as {hit.grounded}, the model finds {is_grounded}",
        )
        self.expect(
            "PLAN-13",
            hit.framework_digest == framework_digest(r.framework),
            "the cached framework changed: its digest is not the stored one",
        )
        return hit
