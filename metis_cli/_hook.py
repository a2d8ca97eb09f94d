"""`metis hook claude-code`: metis's gate as a Claude Code hook
(https://code.claude.com/docs/en/hooks).

One command for every event; the payload's `hook_event_name` says which:

- `PreToolUse`: decide the call with metis's gate, reading the user's real
  settings hierarchy (`CLAUDE_PROJECT_DIR`, else the payload's `cwd`, as the
  project; `~/.claude`, the managed files, and the `.metis/` equivalents).
  A deny or ask is the documented decision JSON on stdout
  (`hookSpecificOutput.permissionDecision`, with the stage, the rule and the
  file it came from as `permissionDecisionReason`); an allow says nothing, so
  Claude Code's own rules and prompts still decide (`--pass-allow` says
  `allow` instead). metis is a second line of defence: it never loosens.
- `PostToolUse`, `PostToolUseFailure`, `Stop`, `SubagentStop`: append to the
  session's hook trace (`metis_runtime._hook_session`), which `metis conform` checks.

What each event does, and why metis's own trouble never blocks the session
while an undecidable call with an effect is still refused:
`_hook_events`. This command only parses its options and prints; the work is
`_hook_client.run` (the session's helper process, or this process), which the
`metis-hook` console script runs without click.
"""

from __future__ import annotations

import sys

import click

from ._hook_client import run

__all__ = ["claude_code", "hook"]


@click.group()
def hook() -> None:
    """Run metis as a hook of another agent runtime."""


@hook.command("claude-code")
@click.option(
    "--trace",
    "trace_path",
    default=None,
    help="The session's hook trace ({session_id} is replaced; default: "
    "<project>/.metis/claude-code/<session_id>.jsonl).",
)
@click.option("--pass-allow", is_flag=True, help="Say allow when metis allows.")
@click.option("--no-trace", is_flag=True, help="Decide only; append nothing to the hook trace.")
def claude_code(trace_path: str | None, pass_allow: bool, no_trace: bool) -> None:
    """Read the hook payload on stdin; for PreToolUse print the decision JSON."""
    argv = ["--trace", trace_path] if trace_path is not None else []
    argv += ["--pass-allow"] * pass_allow + ["--no-trace"] * no_trace
    out, err, code = run(sys.stdin.buffer.read(), argv)
    if out:
        click.echo(out, nl=False)
    if err:
        click.echo(err, nl=False, err=True)
    sys.stdout.flush()
    raise SystemExit(code)
