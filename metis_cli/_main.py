"""The `metis` command line.

Exit codes, for every command: 0 everything holds, 1 a violation was found,
2 bad input or usage.

Commands load lazily: `COMMANDS` maps a name to the module and attribute of its
click command, and only the command that runs is imported (`metis --version`
imports click and nothing else). To add a command, write it in its own
`metis_cli/_<name>.py` and add one line to `COMMANDS`. Keep module-level
imports of z3, networkx, httpx, the shell parser and `metis_runtime` out of
modules that light commands (`conform`, `spec`) load; `tests/cli/test_fast_start.py`
fails when one of them is imported.
"""

from __future__ import annotations

import importlib
import sys

import click

COMMANDS: dict[str, str] = {
    "ablate": "metis_cli._agents:ablate",
    "agents": "metis_cli._agents:agents",
    "check": "metis_cli._spec:check",
    "conform": "metis_cli._conform:conform",
    "counterexample": "metis_cli._prove:counterexample",
    "draw": "metis_cli._draw:draw",
    "demo": "metis_cli._demo:demo",
    "explore": "metis_cli._explore:explore",
    "faults": "metis_cli._faults:faults",
    "hook": "metis_cli._hook:hook",
    "permissions": "metis_cli._permissions:permissions",
    "plan": "metis_cli._plan:plan",
    "prove": "metis_cli._prove:prove",
    "run": "metis_cli._run:run",
    "settings": "metis_cli._settings:settings",
    "spec": "metis_cli._spec:spec",
    "study": "metis_cli._study:study",
    "tasks": "metis_cli._plan:tasks",
}


# Packages of the optional extras that some commands need (`metis explore` and
# `metis demo` draw with Hypothesis): a command without them says so in one line.
OPTIONAL: dict[str, str] = {
    "hypothesis": "test",
    "pytest": "test",
    "distributed": "dask",
    "matplotlib": "studies",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when looked up."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return super().get_command(ctx, cmd_name)
        module, _, attr = target.partition(":")
        command = getattr(importlib.import_module(module), attr)
        if not isinstance(command, click.Command):
            raise TypeError(f"{target} is not a click command")
        return command


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="metis", prog_name="metis")
def cli() -> None:
    """metis: check the invariants of tool-using agent runtimes.

    Exit codes: 0 everything holds, 1 a violation was found, 2 bad input or usage.
    """


def main() -> None:
    """Run the CLI; a usage error is one line naming the command, exit 2.
    Whatever it prints goes through the redactor (`_redacting`)."""
    if sys.argv[1:2] == ["run"]:
        from metis_witness._launch import early

        early(sys.argv[1:])  # `--witness`: the witness starts before the runtime loads
    from ._redacting import redact_standard_streams

    redact_standard_streams()
    if sys.argv[1:2] == ["run"]:
        # `metis run` is this process's program: it may guard its process tree.
        from . import _run

        _run.STANDALONE = True
    try:
        code = cli.main(standalone_mode=False)
    except click.UsageError as exc:
        where = exc.ctx.command_path if exc.ctx is not None else "metis"
        click.echo(f"{where}: error: {exc.format_message()} (see {where} --help)", err=True)
        sys.exit(2)
    except click.exceptions.Abort:
        click.echo("metis: aborted", err=True)
        sys.exit(1)
    except click.ClickException as exc:
        click.echo(f"metis: error: {exc.format_message()}", err=True)
        sys.exit(exc.exit_code)
    except ModuleNotFoundError as exc:  # a command body reached for an optional extra
        extra = OPTIONAL.get((exc.name or "").split(".")[0])
        if extra is None:
            raise
        click.echo(
            f"metis: error: this command needs {exc.name}, from the {extra!r} extra: "
            f"pip install 'metis[{extra}]'",
            err=True,
        )
        sys.exit(2)
    except Exception as exc:
        from metis_trace import InputError  # light: the error classes only

        if not isinstance(exc, InputError):
            raise
        # Any reader's bad input that its command did not map: one line, exit 2.
        click.echo(f"metis: error: {exc}", err=True)
        sys.exit(2)
    sys.exit(code if isinstance(code, int) else 0)
