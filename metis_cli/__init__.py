"""The `metis` command line: a thin layer above metis_model and metis_runtime.

`metis hook claude-code` runs once per tool call of a Claude Code session, so
`main` sends it to `_hook_client` (the standard library only) before click
and the command table load; every other command goes to `_main`.
"""

import sys as _sys

__all__ = ["main"]

_HOOK = ["hook", "claude-code"]


def main() -> None:
    """Run the CLI (`metis ...`)."""
    args = _sys.argv[1:]
    if args[:2] == _HOOK and not {"-h", "--help"} & set(args):
        from ._hook_client import main as hook_main

        hook_main(args[2:])
    from ._main import main as cli_main

    cli_main()
