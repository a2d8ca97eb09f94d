"""Wrapping a command in any wrapper of the runners table, or putting it in
any compound, never yields a more permissive decision than the command
alone, when a deny rule covers it (issue 12)."""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from metis_runtime.permissions import Gate
from metis_runtime.permissions import Policy
from metis_runtime.shell import runners
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind

RANK = {Decision.DENY: 0, Decision.ASK: 1, Decision.ALLOW: 2}

# The inner commands and the deny rule that covers each.
COVERED = [
    ("rm -rf build", "Bash(rm *)"),
    ("git push origin main", "Bash(git push *)"),
    ("curl -d @data https://x.example", "Bash(curl *)"),
    ("npm publish", "Bash(npm publish)"),
    ("cat .env", "Read(.env)"),
    ("cp a.txt src/b.txt", "Edit(src/**)"),
]


def _wrapper_prefixes() -> list[str]:
    """One way to put a command under each runner of the table."""
    out = []
    for name, spec in runners().items():
        if spec.script_option:
            out.append(f"{name} {spec.script_option[0]} Q")  # `su -c 'CMD'`
        elif spec.script_args:
            out.append(f"{name} Q")
        else:
            operands = " ".join(["x"] * spec.operands) if name != "taskset" else "1"
            if name == "chrt":
                operands = "10"
            out.append(f"{name} {operands} @".replace("  ", " "))
    out += ["bash -c Q", "sh -c Q", "eval Q", "find . -exec @ ;", "A=1 @", "env A=1 @"]
    return out


WRAPPERS = _wrapper_prefixes()
COMPOUNDS = ["true && @", "false || @", "ls; @", "ls | @", "@ | cat", "( @ )", "{ @; }",
             "echo $(@)", "echo \"$(@)\"", "cat <(@)", "if true; then @; fi", "for i in 1; do @; done",
             "while false; do :; done; @", "case x in *) @;; esac", "f() { @; }; f",
             "[[ -n x ]] && @", "@ &", "! @", "@ 2>&1 | tail -5"]  # fmt: skip


def _wrap(layer: str, command: str, simple: bool) -> str:
    """`command` under `layer`; a wrapper runs a compound line through
    `bash -c`, as a person would (bash refuses `timeout 5 if ...`)."""
    if "Q" in layer:
        return layer.replace("Q", shlex.quote(command))
    if layer in WRAPPERS and not simple:
        command = f"bash -c {shlex.quote(command)}"
    return layer.replace("@", command)


@pytest.fixture(scope="module")
def ws(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("props") / "ws"
    (root / "src").mkdir(parents=True)
    return Path(os.path.realpath(root))


def _decide(command: str, deny: str, mode: Mode, ws: Path) -> Decision:
    policy = Policy()
    policy.add(Source.PROJECT, RuleBehavior.DENY, deny)
    policy.add(Source.PROJECT, RuleBehavior.ALLOW, "Bash")
    policy.add(Source.PROJECT, RuleBehavior.ALLOW, "Edit")
    policy.add(Source.PROJECT, RuleBehavior.ALLOW, "Read")
    gate = Gate(policy, mode, ws, Route.HEADLESS)
    return gate.decide("bash", {"command": command}, ToolKind.EXEC).decision


@settings(max_examples=300)
@given(
    inner=st.sampled_from(COVERED),
    layers=st.lists(st.sampled_from(WRAPPERS + COMPOUNDS), min_size=1, max_size=3),
    mode=st.sampled_from(list(Mode)),
)
def test_wrapping_or_compounding_never_loosens_a_covered_command(
    inner: tuple[str, str], layers: list[str], mode: Mode, ws: Path
) -> None:
    command, deny = inner
    alone = _decide(command, deny, mode, ws)
    assert alone is Decision.DENY or mode is Mode.PLAN  # the rule covers it
    line, simple = command, True
    for layer in layers:
        line = _wrap(layer, line, simple)
        simple = layer in WRAPPERS
    wrapped = _decide(line, deny, mode, ws)
    assert RANK[wrapped] <= RANK[alone], (line, wrapped)
    assert wrapped is not Decision.ALLOW, line


def test_every_runner_of_the_table_is_exercised() -> None:
    assert len(WRAPPERS) >= len(runners()) + 5
    names = {layer.split()[0] for layer in WRAPPERS}
    assert set(runners()) <= names
