"""Differential permission oracle: the runtime gate against the model, on all five routes.

Strategies and the per-call check live in `metis_studies.oracle` (the lead's
`metis demo` runs them too). Here: each route gets a Hypothesis run that must
agree on every call (model decision and stage, labelled facts, settlement),
the checks are shown to fail on wrong inputs, and the parser gap that once
let a deny rule slip through `$(a && b)` (bashlex) stays closed.
"""

from __future__ import annotations

import asyncio
import io
from pathlib import Path
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings

from metis_model import resolve
from metis_model import settle_ask
from metis_runtime.permissions import Gate
from metis_runtime.permissions import GateDecision
from metis_runtime.permissions import Policy
from metis_runtime.permissions import TerminalAsker
from metis_studies.oracle import ATOMS
from metis_studies.oracle import ECHO_DYN
from metis_studies.oracle import PATHS
from metis_studies.oracle import ROUTES
from metis_studies.oracle import RULES
from metis_studies.oracle import Call
from metis_studies.oracle import Case
from metis_studies.oracle import ChildDraw
from metis_studies.oracle import PathAtom
from metis_studies.oracle import RuleDraw
from metis_studies.oracle import RuleTemplate
from metis_studies.oracle import Tally
from metis_studies.oracle import World
from metis_studies.oracle import build_world
from metis_studies.oracle import cases
from metis_studies.oracle import check_case
from metis_studies.oracle import line
from metis_studies.oracle import run_oracle
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import Stage
from metis_trace import ToolKind

EXAMPLES = 150  # per route; every example decides 1 to 4 calls
MIN_ASKS = 10  # settlement must actually be exercised on every route

COUNTS: dict[Route, Tally] = {}


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> World:
    return build_world(tmp_path_factory.mktemp("oracle"))


class _CountsSummary:
    """A plugin printing the calls checked per route in the terminal summary."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_sep("-", "permission oracle: calls checked per route")
        for route, tally in COUNTS.items():
            terminalreporter.write_line(
                f"{route.value:12} {tally.cases:5} calls, {tally.agreements:5} agree, "
                f"{tally.asks:4} asks settled"
            )


@pytest.fixture(scope="module", autouse=True)
def _report_counts(request: pytest.FixtureRequest) -> None:
    """Shown without -s. Under xdist the workers have no terminal: there the
    counts are each test's user_properties (and the tests assert minimums)."""
    manager = request.config.pluginmanager
    if manager.get_plugin("terminalreporter") is not None and not manager.has_plugin(
        "metis-oracle-counts"
    ):
        manager.register(_CountsSummary(), "metis-oracle-counts")


# --- the oracle, per route --------------------------------------------------------------------


@pytest.mark.parametrize("route", ROUTES, ids=[r.value for r in ROUTES])
def test_gate_agrees_with_model_on_every_route(
    route: Route, world: World, record_property: Any
) -> None:
    tally = Tally()

    @settings(max_examples=EXAMPLES, suppress_health_check=[HealthCheck.filter_too_much])
    @given(case=cases(route))
    def check(case: Case) -> None:
        outcome = check_case(world, case)
        tally.add(outcome)
        assert outcome.ok, outcome.describe()

    check()
    COUNTS[route] = tally
    record_property("oracle_calls", tally.cases)
    record_property("oracle_agreements", tally.agreements)
    record_property("oracle_asks", tally.asks)
    assert tally.cases >= EXAMPLES
    assert tally.agreements == tally.cases
    assert tally.asks >= MIN_ASKS


def test_run_oracle_with_the_substituted_list_agrees_everywhere() -> None:
    counts = run_oracle(3)
    assert all(agreed == decided for decided, agreed in counts.values()), counts


def test_run_oracle_counts_every_route() -> None:
    counts = run_oracle(15)
    assert set(counts) == set(Route)
    for route, (decided, agreed) in counts.items():
        assert decided >= 15, route
        assert agreed == decided, route


# --- the checks can fail --------------------------------------------------------------------


def _case(
    call: Call,
    *rules: RuleDraw,
    route: Route = Route.HEADLESS,
    mode: Mode = Mode.DEFAULT,
    child: ChildDraw | None = None,
) -> Case:
    return Case(
        route, mode, rules, (call,), (True,) * 4, Decision.DENY, transition=False, child=child
    )


def _path(text: str) -> PathAtom:
    return next(p for p in PATHS if p.text == text)


def _rule(text: str) -> RuleTemplate:
    return next(r for r in RULES if r.text == text)


def test_a_wrong_label_is_caught(world: World) -> None:
    right = _case(Call("read", _path(".env")))
    assert check_case(world, right).ok
    wrong = _case(Call("read", attrs.evolve(_path(".env"), secret=False)))
    assert "fact secret: gate True, labels False" in check_case(world, wrong).describe()


def test_a_wrong_rule_label_is_caught(world: World) -> None:
    deny_src = RuleDraw(Source.PROJECT, RuleBehavior.DENY, _rule("Read(src/**)"))
    assert check_case(world, _case(Call("read", _path("src/app.py")), deny_src)).ok
    mislabelled = RuleDraw(
        Source.PROJECT, RuleBehavior.DENY, attrs.evolve(_rule("Read(src/**)"), tag="docs")
    )
    outcome = check_case(world, _case(Call("read", _path("src/app.py")), mislabelled))
    assert "rules: gate recorded [('deny', 'project', 'Read(src/**)', 1)]" in outcome.describe()


def test_a_gate_that_misreports_its_stage_is_caught(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = Gate.decide

    def lying(self: Gate, *args: Any, **kwargs: Any) -> GateDecision:
        d = real(self, *args, **kwargs)
        return attrs.evolve(d, stage=Stage.SCOPE)

    monkeypatch.setattr(Gate, "decide", lying)
    outcome = check_case(world, _case(Call("read", _path("src/app.py"))))
    assert "gate allow/scope/None but model allow/mode/None" in outcome.describe()


def test_a_headless_ask_that_waits_is_caught(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    real = Gate.resolve_ask

    async def waiting(self: Gate, *args: Any) -> Any:
        await asyncio.sleep(0)
        return await real(self, *args)

    monkeypatch.setattr(Gate, "resolve_ask", waiting)
    ask = _case(Call("write", _path("src/app.py")))  # default mode asks for edits
    assert "suspended on a route that never waits" in check_case(world, ask).describe()


def test_a_settlement_with_the_wrong_resolver_is_caught(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(TerminalAsker, "resolver", "protocol")
    ask = _case(Call("write", _path("src/app.py")), route=Route.INTERACTIVE)
    assert "ask settled True/protocol, model True/user" in check_case(world, ask).describe()


def test_a_refused_clone_is_checked_against_the_mode_order(world: World) -> None:
    # default -> bypassPermissions is above the parent: refused by both.
    child = ChildDraw(Route.HEADLESS, Mode.DEFAULT, Mode.BYPASS, ())
    outcome = check_case(world, _case(Call("read", _path("README.md")), child=child))
    assert outcome.ok
    assert outcome.checks[0].stage == "mode"


# --- concrete cases through the same machinery ------------------------------------------------

RM = next(a for a in ATOMS if a.text == "rm -rf build")
WRAPPED_RM = (
    "timeout 5 rm -rf build",
    "env A=1 rm -rf build",
    "nice rm -rf build",
    "nohup rm -rf build",
    "bash -c 'rm -rf build'",
    "bash -c 'bash -c '\"'\"'rm -rf build'\"'\"''",
    "echo $(rm -rf build)",
    "echo `rm -rf build`",
    "git status | rm -rf build",
    "git status; rm -rf build",
    "git status && rm -rf build",
    "( rm -rf build )",
    "echo $(rm -rf build | cat)",
)


@pytest.mark.parametrize("command", WRAPPED_RM)
@pytest.mark.parametrize("mode", list(Mode), ids=[m.value for m in Mode])
def test_a_deny_rule_reaches_through_every_wrapper(command: str, mode: Mode, world: World) -> None:
    policy = Policy()
    policy.add(Source.PERSISTED, RuleBehavior.ALLOW, "Bash")
    policy.add(Source.PROJECT, RuleBehavior.DENY, "Bash(rm:*)")
    gate = Gate(policy, mode, world.workspace, Route.HEADLESS)
    d = gate.decide("bash", {"command": command}, ToolKind.EXEC)
    want = Stage.PLAN if mode is Mode.PLAN else Stage.DENY_RULE
    assert (d.decision, d.stage) == (Decision.DENY, want)
    assert (resolve(d.facts).decision, resolve(d.facts).stage) == (Decision.DENY, want)


def test_labelled_shell_lines_agree_one_by_one(world: World) -> None:
    # Each labelled simple command, alone, with every Bash rule as a deny rule.
    rules = tuple(RuleDraw(Source.CLI, RuleBehavior.DENY, r) for r in RULES if r.group == "bash")
    for atom in ATOMS:
        outcome = check_case(world, _case(Call("bash", shell=line(atom.text, atom)), *rules))
        assert outcome.ok, outcome.describe()


def test_a_deny_rule_holds_inside_a_substituted_list(world: World) -> None:
    policy = Policy()
    policy.add(Source.PROJECT, RuleBehavior.DENY, "Bash(rm:*)")
    asker = TerminalAsker(io.StringIO("y\n"), io.StringIO())
    gate = Gate(policy, Mode.DEFAULT, world.workspace, Route.INTERACTIVE, asker)
    command = "echo $(rm -rf build && ls)"
    d = gate.decide("bash", {"command": command}, ToolKind.EXEC)
    answer = asyncio.run(gate.resolve_ask("1.0", "bash", {"command": command}, d))
    # Deny dominates (PERM-2): the call must never reach an approvable ask.
    assert not answer.approved
    assert (d.decision, d.stage) == (Decision.DENY, Stage.DENY_RULE)


LS = next(a for a in ATOMS if a.text == "ls src")
DENY_RM = RuleDraw(Source.PROJECT, RuleBehavior.DENY, _rule("Bash(rm:*)"))


def test_a_substituted_list_with_semicolons_agrees(world: World) -> None:
    readable = line("echo $( rm -rf build ; ls src )", RM, LS, ECHO_DYN)
    outcome = check_case(world, _case(Call("bash", shell=readable), DENY_RM))
    assert outcome.ok, outcome.describe()
    assert (outcome.checks[0].decision, outcome.checks[0].stage) == ("deny", "deny_rule")


def test_a_substituted_list_with_and_agrees(world: World) -> None:
    # bashlex could not parse this list (the oracle's first finding); the grammar can.
    listed = line("echo $( rm -rf build && ls src )", RM, LS, ECHO_DYN)
    outcome = check_case(world, _case(Call("bash", shell=listed), DENY_RM))
    assert outcome.ok, outcome.describe()
    assert (outcome.checks[0].decision, outcome.checks[0].stage) == ("deny", "deny_rule")


def test_child_of_a_headless_parent_never_waits_though_the_model_says_it_waits(
    world: World,
) -> None:
    # settle_ask(CHILD) reports waited=True whatever the parent's route; the
    # runtime's child of a headless parent settles at once (the oracle checks that).
    child = ChildDraw(Route.HEADLESS, Mode.DEFAULT, None, ())
    ask = _case(Call("write", _path("src/app.py")), route=Route.CHILD, child=child)
    outcome = check_case(world, ask)
    assert outcome.ok and outcome.checks[0].asked
    assert settle_ask(Route.CHILD, Decision.DENY, False).waited


def test_world_paths_are_what_the_labels_say(world: World) -> None:
    assert (world.workspace / "link_env").resolve() == (world.workspace / ".env").resolve()
    assert (world.workspace / "link_out").resolve() == world.outside.resolve()
    assert Path(world.render("{home}/.bashrc")).is_file()
