"""Stateful lockstep: the runtime's SQLite plan cache and consent gate against
the model's `probe` and `authorizes`, through random sequences of changes."""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine
from hypothesis.stateful import invariant
from hypothesis.stateful import rule

from metis_check._plan_generate import TOY_CATALOG
from metis_model import plan as model
from metis_runtime.dispatch import GateDecision
from metis_runtime.plan import Catalog
from metis_runtime.plan import PlanStore
from metis_runtime.plan import _rules as runtime
from metis_runtime.plan._driver import ConsentGate
from metis_runtime.plan._plan_runtime import _probe
from metis_runtime.tools import ToolRegistry
from metis_trace import Decision
from metis_trace import ExecutorInfo
from metis_trace import Facts
from metis_trace import Framework
from metis_trace import Mode
from metis_trace import PlanPath
from metis_trace import Route
from metis_trace import Signatures
from metis_trace import Stage
from metis_trace import ToolKind
from metis_trace import parse_framework

FRAMEWORKS = [
    parse_framework(
        {
            "steps": [
                {"tool": "find_items", "args": {"folder": "notes"}},
                {"tool": "read_items", "args": {"from_step": 1}},
                {"tool": "write_doc", "args": {"from_step": 2, "path": "Reports/a.md"}},
                {"tool": "final_answer"},
            ]
        }
    ),
    parse_framework(
        {
            "steps": [
                {"tool": "send_message", "args": {"to": "${RUNTIME:owner}", "text": "hi"}},
                {"tool": "final_answer"},
            ]
        }
    ),
]
KEYS = ["write a to Reports/a.md", "say hi"]
NAMES = [e.name for e in TOY_CATALOG]


class Cache(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = tempfile.TemporaryDirectory()
        self.store = PlanStore(Path(self.dir.name))
        self.catalog: dict[str, ExecutorInfo] = {e.name: e for e in TOY_CATALOG}
        self.stored: dict[str, tuple[Framework, Signatures]] = {}
        self.version = 0

    def teardown(self) -> None:
        self.store.close()
        self.dir.cleanup()

    @rule(i=st.integers(0, 1))
    def register(self, i: int) -> None:
        fw, key = FRAMEWORKS[i], KEYS[i]
        sigs = runtime.signatures(fw, self.catalog, self.store.epoch)
        assert sigs == model.current_signatures(fw, self.catalog, self.store.epoch)
        self.store.store_plan("L0", key, fw, sigs, "turn", "2025-01-01T00:00:00")
        self.stored[key] = (fw, sigs)

    @rule(name=st.sampled_from(NAMES))
    def change_executor(self, name: str) -> None:
        if name in self.catalog:
            self.version += 1
            old = self.catalog[name]
            self.catalog[name] = old.model_copy(update={"digest": f"{old.digest}-v{self.version}"})

    @rule(name=st.sampled_from(NAMES))
    def add_alternative(self, name: str) -> None:
        if name in self.catalog:
            self.version += 1
            alt = self.catalog[name].model_copy(update={"name": f"{name}_alt{self.version}"})
            self.catalog[alt.name] = alt

    @rule(name=st.sampled_from(NAMES))
    def remove_executor(self, name: str) -> None:
        self.catalog.pop(name, None)

    @rule()
    def bump_epoch(self) -> None:
        self.store.bump_epoch()

    @rule(i=st.integers(0, 1), grounded=st.booleans())
    def probe(self, i: int, grounded: bool) -> None:
        key = KEYS[i]
        entry = self.store.lookup("L0", key)
        assert (entry is None) == (key not in self.stored)
        if entry is None:
            return
        fw, sigs = self.stored[key]
        assert entry.framework == fw and entry.signatures == sigs
        now = runtime.signatures(fw, self.catalog, self.store.epoch)
        expected = model.probe(
            sigs, model.current_signatures(fw, self.catalog, self.store.epoch), grounded=grounded
        )
        assert _probe(entry.signatures, now, grounded, PlanPath.L0, False) == expected

    @invariant()
    def epoch_only_grows(self) -> None:
        assert self.store.epoch >= 1


TestCache = Cache.TestCase
TestCache.settings = settings(max_examples=20, stateful_step_count=20, deadline=None)

WRITE = {e.name: e for e in TOY_CATALOG}["write_doc"]
_ASK = GateDecision(
    Decision.ASK,
    Stage.MODE,
    None,
    Facts(mode=Mode.DEFAULT, kind=ToolKind.EDIT),
    Route.INTERACTIVE,
)


class Consent(RuleBasedStateMachine):
    """Approvals granted in dialogs, and calls asked about: the gate approves a
    call exactly when the model finds an unused approval bound to it."""

    def __init__(self) -> None:
        super().__init__()
        registry = ToolRegistry.builtin()
        self.catalog = Catalog(registry)
        self.catalog.infos["write_doc"] = WRITE
        self.gate = ConsentGate(None, self.catalog, "alice", "turn-1")  # type: ignore[arg-type]
        self.approvals: dict[str, Any] = {}
        self.used: set[str] = set()
        self.n = 0

    @rule(
        path=st.sampled_from(["R/a.md", "R/b.md"]),
        text=st.sampled_from(["x", "y"]),
        turn=st.sampled_from(["turn-1", "turn-0"]),
    )
    def grant(self, path: str, text: str, turn: str) -> None:
        self.n += 1
        args = {"sections": [text], "path": path}
        action = runtime.action("alice", turn, WRITE, args)
        dialog = f"d{self.n}"
        self.gate.granted[dialog] = action
        self.approvals[dialog] = model.action_for("alice", turn, WRITE, args)

    @rule(path=st.sampled_from(["R/a.md", "R/b.md"]), text=st.sampled_from(["x", "y"]))
    def ask(self, path: str, text: str) -> None:
        self.n += 1
        args = {"sections": [text], "path": path}
        answer = asyncio.run(self.gate.resolve_ask(f"1.{self.n}", "write_doc", args, _ASK))
        want = model.action_for("alice", "turn-1", WRITE, args)
        ok = [
            d for d, a in self.approvals.items() if model.authorizes(a, want, used=d in self.used)
        ]
        assert answer.approved == bool(ok)
        if answer.approved:
            dialog = self.gate.by_occ[f"1.{self.n}"][0]
            assert dialog in ok
            self.used.add(dialog)


TestConsent = Consent.TestCase
TestConsent.settings = settings(max_examples=40, stateful_step_count=15, deadline=None)
