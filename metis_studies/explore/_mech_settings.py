"""The settings hierarchy (`metis_runtime/permissions/_hierarchy.py`;
specs/permissions.md, "How Claude Code's settings map onto the five sources").

Both workloads run as `metis run --settings-hierarchy` under a HOME and a
managed folder of the run's own (`_mech_run`), with files at four levels:

- `precedence`: a managed deny over a project allow (`rm`: deny dominates,
  PERM-2), a user ask over a project allow (`touch`: stage 4 before 6), a
  local deny on a path the project allows (`Write(private/**)`), and a
  project allow that speaks (`Write` elsewhere);
  and a user `Read(notes/**)` ask with an edit of `notes/n.txt` (a Read
  rule covers the edits of its paths: the deriver's `_covers`, AUTH-4);
- `default-mode`: `defaultMode` acceptEdits in the shared project file,
  plan in the local one (read after it: it wins), dontAsk in the user's:
  the run must come up in plan (its write denied at the `plan` stage, PERM-4);
- `project-bypass`: `defaultMode` bypassPermissions in the shared project
  file and nowhere else: Claude Code ignores it there (2.1.257, #91296;
  specs/permissions.md), so the run must come up in default and ask; and a
  user ask rule no reader can parse (`LOST`), which must be recorded as an
  ask on its whole tool (a lost ask must not open anything).

Checks of their own (the workload placed the files, so it knows what the
header must record): every placed file is in `meta.settings` at its
documented level, and every placed rule is in `meta.permissions.rules` with
its documented source, the local file's after the shared one's (AUTH-4:
the deriver checks decisions against the recorded settings, so a file the
runtime forgot must not vanish from the record too); the run's mode is the
hierarchy's `defaultMode` (PERM-4, when that is plan).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from metis_trace import Decision
from metis_trace import Mode
from metis_trace import RuleBehavior
from metis_trace import Source
from metis_trace import ToolKind

from ._mech_case import Case
from ._mech_case import Problem
from ._mech_read import Traces
from ._mech_read import decisions_of
from ._mech_read import recorded_rules
from ._mech_read import script
from ._pieces import bash
from ._pieces import edit
from ._pieces import write
from ._workload import Workload

# The placed file, its documented level, its source.
LEVELS: dict[str, tuple[str, Source]] = {
    "managed/managed-settings.json": ("managed", Source.POLICY),
    "ws/.claude/settings.json": ("project", Source.PROJECT),
    "ws/.claude/settings.local.json": ("local", Source.PROJECT),
    "home/.claude/settings.json": ("user", Source.PERSISTED),
}


def _file(
    allow: tuple[str, ...] = (),
    ask: tuple[str, ...] = (),
    deny: tuple[str, ...] = (),
    mode: str | None = None,
) -> str:
    perms: dict[str, Any] = {
        k: list(v) for k, v in (("allow", allow), ("ask", ask), ("deny", deny)) if v
    }
    if mode is not None:
        perms["defaultMode"] = mode
    return json.dumps({"permissions": perms}, indent=1)


# Rules the workloads place that no reader can parse (an unclosed paren), and
# the ask that must stand in for each in the record: a lost deny or ask is an
# ask on its whole tool (specs/permissions.md, the hierarchy table; `_salvage`).
LOST = {"Write(docs/**": "Write"}


def precedence() -> Workload:
    placed = {
        "managed/managed-settings.json": _file(deny=("Bash(rm *)",)),
        "ws/.claude/settings.json": _file(allow=("Bash(rm *)", "Bash(touch *)", "Write")),
        "ws/.claude/settings.local.json": _file(deny=("Write(private/**)",)),
        "home/.claude/settings.json": _file(ask=("Bash(touch *)", "Read(notes/**)")),
    }
    batch = [
        bash("rm -f junk.txt"),
        bash("touch made.txt"),
        write("private/x.txt", "no\n"),
        write("public/y.txt", "yes\n"),
        edit("notes/n.txt", "n", "m"),
    ]
    return Workload(
        name="mech-settings:precedence",
        aims=("settings:precedence",),
        files={"junk.txt": "junk\n", "notes/n.txt": "n\n"},
        turns=script(batch),
        mode=Mode.DEFAULT,
        placed=placed,
        hierarchy=True,
    )


def default_mode() -> Workload:
    placed = {
        "ws/.claude/settings.json": _file(mode="acceptEdits"),
        "ws/.claude/settings.local.json": _file(mode="plan"),
        "home/.claude/settings.json": _file(mode="dontAsk"),
    }
    return Workload(
        name="mech-settings:default-mode",
        aims=("settings:default-mode",),
        files={"notes.txt": "n\n"},
        turns=script([write("out.txt", "x\n"), ("read", {"path": "notes.txt"})]),
        mode=Mode.PLAN,  # what the hierarchy must come to
        placed=placed,
        hierarchy=True,
    )


def project_bypass() -> Workload:
    return Workload(
        name="mech-settings:project-bypass",
        aims=("settings:project-bypass",),
        files={"notes.txt": "n\n"},
        turns=script([write("out.txt", "x\n")]),
        mode=Mode.DEFAULT,  # the project's bypassPermissions is ignored
        placed={
            "ws/.claude/settings.json": _file(mode="bypassPermissions"),
            "home/.claude/settings.json": _file(ask=tuple(LOST)),  # lost: asks on Write
        },
        hierarchy=True,
    )


def _origin_level(origin: object, root: Path) -> str | None:
    text = str(origin or "")
    for name, (level, _) in LEVELS.items():
        if text.startswith(str(root / name)):
            return level
    return None


def reached(workload: Workload, root: Path, traces: Traces) -> Counter[str]:
    seen: Counter[str] = Counter()
    for header, d in decisions_of(traces):
        if not header.meta.get("settings_hierarchy"):
            continue
        by_key = {
            (r.get("pattern"), r.get("source"), r.get("recency")): r for r in recorded_rules(header)
        }
        levels = set()
        for rule in d.facts.rules:
            meta = by_key.get((rule.pattern, rule.source.value, rule.recency))
            level = _origin_level(meta.get("origin") if meta else None, root)
            if level is not None:
                levels.add(level)
                seen[f"settings:{level}"] += 1
        behaviors = {r.behavior for r in d.facts.rules}
        if d.stage == "deny_rule" and RuleBehavior.ALLOW in behaviors and len(levels) > 1:
            seen["settings:deny-over-allow"] += 1
        if d.stage == "ask_rule" and RuleBehavior.ALLOW in behaviors and len(levels) > 1:
            seen["settings:ask-over-allow"] += 1
        if header.mode is Mode.PLAN and d.stage == "plan" and d.decision is Decision.DENY:
            seen["settings:default-mode"] += 1
        if d.facts.kind is ToolKind.EDIT and any(
            r.behavior is RuleBehavior.ASK and r.pattern.startswith("Read(") for r in d.facts.rules
        ):
            seen["settings:read-ask-edit"] += 1
        if "bypassPermissions" in str(workload.placed) and header.mode is Mode.DEFAULT:
            seen["settings:project-bypass"] += 1
    return seen


def check(workload: Workload, root: Path, traces: Traces) -> list[Problem]:
    out: list[Problem] = []
    for name, (header, _) in traces.items():
        if header.depth != 0:
            continue
        files = header.meta.get("settings")
        recorded = (
            {str(f.get("path")): f for f in files if isinstance(f, dict)}
            if isinstance(files, list)
            else {}
        )
        rules = recorded_rules(header)
        for placed, text in workload.placed.items():
            if placed not in LEVELS:
                continue
            level, source = LEVELS[placed]
            path = str(root / placed)
            got = recorded.get(path)
            if got is None or got.get("level") != level or got.get("source") != source.value:
                out.append(
                    (
                        "AUTH-4",
                        f"the header's settings record {got} for {placed}, placed at the {level}"
                        " level",
                        name,
                    )
                )
            perms = json.loads(text)["permissions"]
            for behavior in ("allow", "ask", "deny"):
                for placed_pattern in perms.get(behavior, ()):
                    pattern = LOST.get(placed_pattern, placed_pattern)
                    want = "ask" if placed_pattern in LOST else behavior
                    if not any(
                        r.get("pattern") == pattern
                        and r.get("behavior") == want
                        and r.get("source") == source.value
                        and str(r.get("origin", "")).startswith(path)
                        for r in rules
                    ):
                        out.append(
                            (
                                "AUTH-4",
                                f"the recorded settings lack the {want} rule {pattern} of"
                                f" {placed} ({source.value})",
                                name,
                            )
                        )
        recency = {_origin_level(r.get("origin"), root): r.get("recency", 0) for r in rules}
        if "local" in recency and "project" in recency and recency["local"] <= recency["project"]:
            out.append(
                (
                    "AUTH-4",
                    "the local project file's rules are recorded before the shared file's",
                    name,
                )
            )
        if workload.hierarchy and header.mode is not workload.mode:
            out.append(
                (
                    "PERM-4" if workload.mode is Mode.PLAN else "AUTH-4",
                    f"the hierarchy's defaultMode comes to {workload.mode.value};"
                    f" the run ran in {header.mode.value}",
                    name,
                )
            )
    return out


CASES = (
    Case(
        "settings:precedence",
        "permissions",
        (
            "settings:managed",
            "settings:user",
            "settings:project",
            "settings:local",
            "settings:deny-over-allow",
            "settings:ask-over-allow",
            "settings:read-ask-edit",
        ),
        precedence,
        reached,
        check,
    ),
    Case(
        "settings:default-mode",
        "permissions",
        ("settings:default-mode",),
        default_mode,
        reached,
        check,
    ),
    Case(
        "settings:project-bypass",
        "permissions",
        ("settings:project-bypass",),
        project_bypass,
        reached,
        check,
    ),
)
