"""`ddtriage show 'SOURCE:61-62'`: print lines of a log as reports name it, archives included."""

from __future__ import annotations

from collections.abc import Callable

import click

from ..core.errors import DDTriageError
from .base import cli, fail, redact_options


@cli.command()
@click.argument("where", nargs=-1, required=True)
@click.option("--context", "-C", "around", type=click.IntRange(0, 500), default=0, show_default=True,
              help="Also show N lines before and after.")
@redact_options
def show(where: tuple[str, ...], around: int, redact: bool, redact_key: str | None) -> None:
    """Print lines of a log: WHERE is `PATH:LINE`, `PATH:FIRST-LAST` or `PATH`, where PATH may name an
    archive member as reports do: 'bundle.tar.gz!node-2/plog.tar.gz!plog-1.log:61-62'."""
    from ..run.readback import parse_where, read_lines
    from ..writers.safe import terminal

    shown = []
    for text in where:
        try:
            place = parse_where(text)
            notes: list[str] = []
            lines = read_lines(place.source, max(1, place.first - around), place.last + around, notes=notes)
        except DDTriageError as exc:
            fail(str(exc))
        shown.append((place, lines, notes))
    hide = _redactor([(p.source, lines) for p, lines, _ in shown], redact_key) if redact or redact_key else None
    for n, (place, lines, notes) in enumerate(shown):
        if len(where) > 1:
            click.echo(("" if n == 0 else "\n") + f"==> {terminal(hide(place.source) if hide else place.source)} <==")
        if not lines:
            fail(f"{place.source}: has no line {place.first}")
        for number, line in lines:
            mark = ">" if place.first <= number <= place.last and around else " " if around else ""
            click.echo(f"{mark}{number:>6}  {terminal(hide(line) if hide else line)}")  # never drives the terminal
        for note in notes:  # a truncated .gz: the lines up to the cut, as zcat prints them, then why
            click.echo(f"warning: {terminal(note)}", err=True)


def _redactor(shown: list[tuple[str, list[tuple[int, str]]]], key: str | None) -> Callable[[str], str]:
    """`--redact` for lines read back: what they and their paths hold, and the node their path names."""
    from ..inputs import layout_of
    from ..run.redact import Redactor

    red = Redactor(key)
    for source, lines in shown:
        red.harvest(source)
        red.note("node", layout_of(source).node)
        for _, line in lines:
            red.harvest(line)
    red.freeze()
    return red.text
