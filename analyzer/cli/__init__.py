"""The `ddtriage` command: parse options, call the library, pick a writer, map errors to exits.

One module per command; `base` holds the group, the exit codes and the shared option types.
Exit codes: 0 no finding reaches --fail-on; 1 one does; 2 usage, rule or input error.
"""

from __future__ import annotations

import sys

import click

from . import config, explain, merge, rules, scan  # noqa: F401 - each registers its command on the group
from .base import EXIT_CLEAN, EXIT_ERROR, EXIT_FINDINGS, cli, quiet_broken_pipe

__all__ = ["EXIT_CLEAN", "EXIT_ERROR", "EXIT_FINDINGS", "cli", "main"]


def main() -> None:
    """Console-script entry point."""
    try:
        cli(standalone_mode=True)
    except BrokenPipeError:
        quiet_broken_pipe()
    except KeyboardInterrupt:
        click.echo("ddtriage: interrupted", err=True)
        sys.exit(130)

