"""`ddtriage merge`: combine the reports of separate scans (one per node, per bundle, per CI job)
into one report, as if everything had been scanned at once."""

from __future__ import annotations

import os
import sys

import click

from ..core.errors import DDTriageError
from ..writers import WRITERS
from .base import EXIT_CLEAN, EXIT_FINDINGS, cli, fail, lang_option, load_rules, redact_options, rules_option
from .outputs import resolve_outputs
from .scan import _gate, _write, redacted
from .settings import FAIL_ON


@cli.command()
@click.argument("parts", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--format", "fmt", type=click.Choice(sorted(WRITERS)), default=None,
              help="Report format (default: text, or what each -o file's name says).")
@click.option("--output", "-o", "outputs", multiple=True, metavar="[FORMAT:]FILE",
              help="Write the report here (repeatable; the format from a FORMAT: prefix or the name).")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="any",
              show_default=True,
              help="Which findings make the exit code 1.")
@click.option("--quiet", "-q", is_flag=True, help="No warnings on stderr.")
@click.option("--full", is_flag=True, help="List every row of every section in the text and Markdown reports.")
@lang_option
@redact_options
@rules_option
def merge(parts: tuple[str, ...], fmt: str | None, outputs: tuple[str, ...], fail_on: str, quiet: bool,
          full: bool, lang: str | None, redact: bool, redact_key: str | None, rules_dirs: tuple) -> None:
    """Merge PARTS (JSON, JSONL or Parquet reports of `ddtriage scan`) into one report.

    Scan each node where its logs are (`ddtriage scan --node NAME -o node.parquet`), bring the
    parts together, and merge: summary, bursts, bundles and failures across them are recomputed
    over all the findings.
    """
    from ..run.merge_parts import merge_parts

    reports = resolve_outputs(fmt, outputs)
    inputs = {os.path.realpath(p) for p in parts}
    for report in reports:  # never a part: writing the merge would destroy what it merges
        if report.path != "-" and os.path.realpath(report.path) in inputs:
            fail(f"--output {report.path}: it is one of the parts merged; write the merged report elsewhere")
    warn = None if quiet else (lambda message: click.echo(f"ddtriage: warning: {message}", err=True))
    try:
        analysis = merge_parts(list(parts), load_rules(rules_dirs, lang), warn)
    except DDTriageError as exc:
        fail(str(exc))
    analysis = redacted(analysis, redact, redact_key)
    analysis.fail_on = fail_on
    analysis.full = full
    for report in reports:
        _write(report, analysis)
    sys.exit(EXIT_FINDINGS if _gate(analysis, fail_on) else EXIT_CLEAN)
