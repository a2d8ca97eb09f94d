from __future__ import annotations

import click


@click.group()
@click.version_option(package_name="metis", prog_name="metis")
def cli() -> None:
    """metis: check agent-runtime invariants."""


def main() -> None:
    cli()
