"""What a mechanism's workload adds to `metis run`: flags and a controlled environment.

- The settings hierarchy: every `metis run` of explore is told explicitly
  whether to read it. Without `hierarchy` it gets `--no-settings-hierarchy`
  (a run never depends on the machine's `~/.claude/settings.json` or
  `/etc/claude-code/`); with it, `--settings-hierarchy` under a HOME and a
  managed folder of the run's own (`<root>/home`, `<root>/managed`, seeded
  from `Workload.placed`), and no `--mode`: the hierarchy's `defaultMode`
  decides, and the workload's `mode` is what it must come to.
- `detach_jobs`: `--detach-jobs` (background jobs left running, recorded
  `detached`).
- `mcp_servers`: `--mcp-config` with those servers (`{"mcpServers": ...}`),
  strict (no `.mcp.json`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from ._workload import Workload

if TYPE_CHECKING:
    from ._harness import RunPaths

__all__ = ["MANAGED_ENV", "mech_env", "needs_metis_run", "with_mechanisms"]

_CODE = Path(__file__).resolve().parents[2]
MANAGED_ENV = "METIS_MANAGED_SETTINGS_DIRS"  # metis_runtime.permissions._hierarchy reads it


def needs_metis_run(workload: Workload) -> bool:
    """Whether only `metis run` expresses the workload (the harness has no
    hierarchy reader, no MCP host and no detach option)."""
    return workload.hierarchy or workload.detach_jobs or bool(workload.mcp_servers)


def with_mechanisms(workload: Workload, paths: RunPaths, argv: list[str]) -> list[str]:
    out = list(argv)
    if workload.hierarchy:
        at = out.index("--mode")
        del out[at : at + 2]
        out.append("--settings-hierarchy")
    else:
        out.append("--no-settings-hierarchy")
    if workload.detach_jobs:
        out.append("--detach-jobs")
    if workload.mcp_servers:
        config = paths.root / "mcp.json"
        text = json.dumps({"mcpServers": workload.mcp_servers}, indent=1)
        # `@ROOT@`: the run folder; `@CODE@`: this copy of metis (a server of ours).
        text = text.replace("@ROOT@", str(paths.root)).replace("@CODE@", str(_CODE))
        config.write_text(text)
        out += ["--mcp-config", str(config), "--strict-mcp-config"]
    return out


def mech_env(workload: Workload, paths: RunPaths, env: Mapping[str, str]) -> dict[str, str]:
    """The processes' environment: with the hierarchy on, HOME is the run's own."""
    out = dict(env)
    if workload.hierarchy:
        out["HOME"] = str(paths.root / "home")
    out[MANAGED_ENV] = str(paths.root / "managed")
    return out
