"""`ddtriage show 'SOURCE:61-62'`: print lines of a log as reports name it, archives included."""

from __future__ import annotations

import click

from ..core.errors import DDTriageError
from .base import cli, fail


@cli.command()
@click.argument("where", nargs=-1, required=True)
@click.option("--context", "-C", "around", type=click.IntRange(0, 500), default=0, show_default=True,
              help="Also show N lines before and after.")
def show(where: tuple[str, ...], around: int) -> None:
    """Print lines of a log: WHERE is `PATH:LINE`, `PATH:FIRST-LAST` or `PATH`, where PATH may name an
    archive member as reports do: 'bundle.tar.gz!node-2/plog.tar.gz!plog-1.log:61-62'."""
    from ..run.readback import parse_where, read_lines
    from ..writers.safe import terminal

    for n, text in enumerate(where):
        try:
            place = parse_where(text)
            notes: list[str] = []
            lines = read_lines(place.source, max(1, place.first - around), place.last + around, notes=notes)
        except DDTriageError as exc:
            fail(str(exc))
        if len(where) > 1:
            click.echo(("" if n == 0 else "\n") + f"==> {terminal(place.source)} <==")
        if not lines:
            fail(f"{place.source}: has no line {place.first}")
        for number, line in lines:
            mark = ">" if place.first <= number <= place.last and around else " " if around else ""
            click.echo(f"{mark}{number:>6}  {terminal(line)}")  # a log line cannot drive the terminal
        for note in notes:  # a truncated .gz: the lines up to the cut, as zcat prints them, then why
            click.echo(f"warning: {terminal(note)}", err=True)
