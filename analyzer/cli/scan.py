"""`ddtriage scan`: read logs, write a triage report, exit by --fail-on."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, TextIO, cast

import click

from ..errors import DDTriageError
from ..writers import WRITERS, write_report

if TYPE_CHECKING:
    from ..api import Analysis
from .base import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    MISSING,
    Size,
    When,
    cli,
    fail,
    load_rules,
    quiet_broken_pipe,
    rules_option,
)


@cli.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(sorted(WRITERS)), default="text", show_default=True,
              help="Report format.")
@click.option("--output", "-o", type=click.Path(dir_okay=False, allow_dash=True), default="-",
              help="Write the report here instead of standard output.")
@click.option("--fail-on", type=click.Choice(["any", "unrecoverable", "never"]), default="any", show_default=True,
              help="Which findings make the exit code 1 (unrecoverable: not known to be recoverable).")
@click.option("--include", multiple=True, metavar="GLOB",
              help="Only scan logs whose path, archive member or file name matches (repeatable).")
@click.option("--exclude", multiple=True, metavar="GLOB",
              help="Skip files, folders and archive members that match (repeatable).")
@click.option("--since", type=When(), help="Only findings at or after this time.")
@click.option("--until", type=When(end=True), help="Only findings at or before this time (inclusive to its precision).")
@click.option("--year", type=click.IntRange(1970, 2999), default=None,
              help="Year for timestamps that print none (vLLM); default: from the file name or mtime.")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=None,
              help="Worker processes (default: the CPU count). The report is the same for any N.")
@click.option("--max-bytes", type=Size(), default="50G", show_default=True, metavar="SIZE",
              help="Decompression guard: most bytes one input may expand to.")
@click.option("--max-ratio", type=click.FloatRange(1.0), default=2000.0, show_default=True,
              help="Decompression guard: highest expansion ratio of compressed data.")
@click.option("--node", metavar="NAME",
              help="Node name for logs whose path names none (a scan of ~/ascend/log on the node itself).")
@click.option("--strict", is_flag=True, help="Exit 2 when any input (or part of one) was skipped.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no warnings on stderr.")
@rules_option
def scan(paths: tuple[str, ...], fmt: str, output: str, fail_on: str, include: tuple[str, ...],
         exclude: tuple[str, ...], since: datetime | None, until: datetime | None, year: int | None,
         jobs: int | None, max_bytes: int, max_ratio: float, node: str | None, strict: bool, quiet: bool,
         rules_dirs: tuple[Path, ...]) -> None:
    """Scan PATHS (files, folders, archives, - for stdin) and write a triage report.

    With no PATHS, scans $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log.
    """
    from ..api import Options, analyze
    from ..inputs import Limits, Selection, default_paths
    from ..parallel import cpu_count
    from ..progress import Progress, ProgressBar

    if since and until and since > until:
        fail("--since is later than --until")
    try:
        targets = list(paths) or default_paths()
        options = Options(limits=Limits(max_bytes=max_bytes, max_ratio=max_ratio),
                          selection=Selection(tuple(include), tuple(exclude)), since=since, until=until, year=year,
                          not_these=() if output == "-" else (output,), node=node or None)
        show_bar = not quiet and sys.stderr.isatty()
        analysis = analyze(targets, rules=load_rules(rules_dirs), options=options, jobs=jobs or cpu_count(),
                           progress=ProgressBar() if show_bar else Progress())
    except DDTriageError as exc:
        fail(str(exc))
    usage_error = False
    for skipped in analysis.inputs.to_dict()["skipped"]:
        level = "error" if skipped["reason"] == MISSING and skipped["source"] in targets else "warning"
        usage_error |= level == "error"
        if level == "error" or not quiet:
            click.echo(f"ddtriage: {level}: {skipped['source']}: {skipped['reason']}", err=True)
    try:
        with click.open_file(output, "w", encoding="utf-8") as handle:
            write_report(fmt, analysis, cast(TextIO, handle))
    except BrokenPipeError:
        quiet_broken_pipe()
    except OSError as exc:
        fail(f"{output}: cannot write report: {exc.strerror or exc}")
    if usage_error or (strict and analysis.inputs.skipped):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if _gate(analysis, fail_on) else EXIT_CLEAN)


def _gate(analysis: Analysis, fail_on: str) -> bool:
    if fail_on == "never":
        return False
    if fail_on == "unrecoverable":
        return any(f.recoverable is not True for f in analysis.findings)
    return bool(analysis.findings)

