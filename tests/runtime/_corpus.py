"""The bypass corpus and its controls (`tests/data/permissions/bypass_corpus.yaml`),
and the one way the tests decide its commands with the real gate."""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import yaml

from metis_runtime.permissions import Gate
from metis_runtime.permissions import GateDecision
from metis_runtime.permissions import Policy
from metis_trace import Decision
from metis_trace import Mode
from metis_trace import Route
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind

CORPUS = Path(__file__).resolve().parent.parent / "data" / "permissions" / "bypass_corpus.yaml"
OLD_DECISIONS = CORPUS.with_name("old_decisions.json")
RANK = {Decision.DENY: 0, Decision.ASK: 1, Decision.ALLOW: 2}


@functools.cache
def _load() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(CORPUS.read_text(encoding="utf-8"))
    return data


def shapes() -> list[dict[str, Any]]:
    return list(_load()["shapes"])


def controls() -> list[dict[str, Any]]:
    return list(_load()["controls"])


def workspace(root: Path) -> Path:
    """The workspace every corpus command is decided in."""
    (root / "src").mkdir(parents=True, exist_ok=True)
    (root / "secret.txt").write_text("s\n")
    return Path(os.path.realpath(root))


def shape_policy(entry: dict[str, Any]) -> Policy:
    policy = Policy()
    for pattern in entry.get("deny", ["Bash(rm:*)"]):
        policy.add(Source.PROJECT, RuleBehavior.DENY, pattern)
    for pattern in entry.get("allow", ["Bash"]):
        policy.add(Source.PROJECT, RuleBehavior.ALLOW, pattern)
    return policy


def decide(
    entry: dict[str, Any],
    mode: Mode,
    ws: Path,
    policy: Policy | None = None,
    *,
    infer: bool = False,
) -> GateDecision:
    """A shape is declared exec (the strictest claim a tool may make); a
    control's kind is inferred as the CLI and the hook do."""
    from metis_cli._permissions import infer_kind

    gate = Gate(policy if policy is not None else shape_policy(entry), mode, ws, Route.HEADLESS)
    tool_input = {"command": entry["command"]}
    kind = infer_kind("bash", tool_input) if infer else ToolKind.EXEC
    return gate.decide("bash", tool_input, kind)


def plain(command: str, mode: Mode, ws: Path) -> GateDecision:
    """The decision with no rules at all, the kind inferred as the CLI does."""
    from metis_cli._permissions import infer_kind

    gate = Gate(Policy(), mode, ws, Route.HEADLESS)
    tool_input = {"command": command}
    return gate.decide("bash", tool_input, infer_kind("bash", tool_input))
