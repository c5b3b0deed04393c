"""The `ddtriage` command: parse options, call the library, pick a writer, map errors to exits.

Exit codes: 0 no finding reaches --fail-on; 1 one does; 2 usage, rule or input error.
"""

from __future__ import annotations

import sys
from datetime import datetime, timedelta
from pathlib import Path

import click

from .errors import DDTriageError
from .writers import WRITERS, write_report

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
_MISSING = "no such file or directory"

rules_option = click.option(
    "--rules", "rules_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
    help="Extra rules directory (repeatable); its rules add to or override the built-in ones.")


def _load_rules(rules_dirs):
    from .rules import RuleSet

    return RuleSet.load(list(rules_dirs))


def _fail(message: str) -> None:
    click.echo(f"ddtriage: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ddtriage")
def cli() -> None:
    """Triage LLM-DataDist failures in CANN host/device logs and application logs."""


class _When(click.ParamType):
    """A point in time: `2025-11-12`, `2025-11-12 03:40`, `2025-11-12T03:40:05.123`. As an end
    (`--until`) it is inclusive to the precision given: `--until 2025-11-12` is the whole day."""

    name = "TIME"

    def __init__(self, end: bool = False):
        self.end = end

    def convert(self, value, param, ctx):
        if isinstance(value, datetime):
            return value
        text = value.strip().replace("/", "-")
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            self.fail(f"{value!r} is not a date/time like 2025-11-12 or 2025-11-12T03:40:05", param, ctx)
        when = when.replace(tzinfo=None)  # log timestamps carry no zone: the logs' own local time
        if self.end:
            clock = text[10:].lstrip("T ").split("+")[0].split("Z")[0]
            step = {0: timedelta(days=1), 2: timedelta(hours=1), 5: timedelta(minutes=1),
                    8: timedelta(seconds=1)}.get(len(clock))
            if step:
                when += step - timedelta(microseconds=1)
        return when


class _Size(click.ParamType):
    """A byte count with an optional K/M/G/T suffix (powers of 1024)."""

    name = "SIZE"

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = value.strip().upper().removesuffix("B").removesuffix("I")
        scale = 1
        if text and text[-1] in "KMGT":
            scale = 1024 ** ("KMGT".index(text[-1]) + 1)
            text = text[:-1]
        try:
            size = int(float(text) * scale)
        except ValueError:
            size = 0
        if size <= 0:
            self.fail(f"{value!r} is not a size like 512M or 50G", param, ctx)
        return size


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
@click.option("--since", type=_When(), help="Only findings at or after this time.")
@click.option("--until", type=_When(end=True), help="Only findings at or before this time (inclusive to its precision).")
@click.option("--year", type=click.IntRange(1970, 2999), default=None,
              help="Year for timestamps that print none (vLLM); default: from the file name or mtime.")
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=None,
              help="Worker processes (default: the CPU count). The report is the same for any N.")
@click.option("--max-bytes", type=_Size(), default="50G", show_default=True, metavar="SIZE",
              help="Decompression guard: most bytes one input may expand to.")
@click.option("--max-ratio", type=click.FloatRange(1.0), default=2000.0, show_default=True,
              help="Decompression guard: highest expansion ratio of compressed data.")
@click.option("--strict", is_flag=True, help="Exit 2 when any input (or part of one) was skipped.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no warnings on stderr.")
@rules_option
def scan(paths, fmt, output, fail_on, include, exclude, since, until, year, jobs, max_bytes, max_ratio,
         strict, quiet, rules_dirs) -> None:
    """Scan PATHS (files, folders, archives, - for stdin) and write a triage report.

    With no PATHS, scans $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log.
    """
    from .api import Options, analyze
    from .inputs import Limits, Selection, default_paths
    from .parallel import cpu_count
    from .progress import Progress, ProgressBar

    if since and until and since > until:
        _fail("--since is later than --until")
    try:
        paths = list(paths) or default_paths()
        options = Options(limits=Limits(max_bytes=max_bytes, max_ratio=max_ratio),
                          selection=Selection(tuple(include), tuple(exclude)), since=since, until=until, year=year,
                          not_these=() if output == "-" else (output,))
        show_bar = not quiet and sys.stderr.isatty()
        analysis = analyze(paths, rules=_load_rules(rules_dirs), options=options, jobs=jobs or cpu_count(),
                           progress=ProgressBar() if show_bar else Progress())
    except DDTriageError as exc:
        _fail(str(exc))
    usage_error = False
    for skipped in analysis.inputs.to_dict()["skipped"]:
        level = "error" if skipped["reason"] == _MISSING and skipped["source"] in paths else "warning"
        usage_error |= level == "error"
        if level == "error" or not quiet:
            click.echo(f"ddtriage: {level}: {skipped['source']}: {skipped['reason']}", err=True)
    try:
        with click.open_file(output, "w", encoding="utf-8") as handle:
            write_report(fmt, analysis, handle)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except OSError as exc:
        _fail(f"{output}: cannot write report: {exc.strerror or exc}")
    if usage_error or (strict and analysis.inputs.skipped):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if _gate(analysis, fail_on) else EXIT_CLEAN)


def _gate(analysis, fail_on: str) -> bool:
    if fail_on == "never":
        return False
    if fail_on == "unrecoverable":
        return any(f.recoverable is not True for f in analysis.findings)
    return bool(analysis.findings)


@cli.command(context_settings={"ignore_unknown_options": True})
@click.argument("code")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@rules_option
def explain(code, fmt, rules_dirs) -> None:
    """Explain CODE (hex, decimal, C++ or Python name): meaning and every context remedy."""
    import json

    from .explain import explain as explain_code

    try:
        info = explain_code(code, _load_rules(rules_dirs))
    except DDTriageError as exc:
        _fail(str(exc))
    if fmt == "json":
        click.echo(json.dumps(info, indent=2, ensure_ascii=False))
        return
    names = info["name"] or "unknown LLM-DataDist code"
    if info["python_name"] and info["python_name"] != info["name"]:
        names += f" (Python: {info['python_name']})"
    click.echo(f"{info['code']}  {info['decimal']}  {names}")
    click.echo(f"meaning:     {info['meaning']}")
    if info["plog_text"]:
        click.echo(f"plog text:   {info['plog_text']}")
    rec = {True: "yes", False: "no", None: "not stated"}[info["recoverable"]]
    click.echo(f"recoverable: {rec}")
    if info["solution"]:
        click.echo(f"official:    {info['solution']}")
    click.echo("remedies, most specific first:")
    for r in info["rules"]:
        click.echo(f"  - [{r['id']}] when {r['when']}: {r['action']}")
        click.echo(f"      {r['remedy']}")


@cli.group()
def rules() -> None:
    """List or check remedy rules."""


@rules.command("list")
@rules_option
def rules_list(rules_dirs) -> None:
    """List every rule: id, action, codes and conditions."""
    from .explain import describe_rule

    try:
        ruleset = _load_rules(rules_dirs)
    except DDTriageError as exc:
        _fail(str(exc))
    catalog = ruleset.catalog
    for rule in sorted(ruleset.rules, key=lambda r: (r.default, r.id)):
        if rule.codes is None:
            codes = "unknown codes"
        else:
            codes = ", ".join(sorted((catalog.get(v).name if catalog.get(v) else hex(v)) for v in rule.codes))
        click.echo(f"{rule.id:<36} {rule.action:<16} {codes}")
        view = describe_rule(rule)
        if view["when"] != "any context":
            click.echo(f"{'':<36} when {view['when']}")


@rules.command("check")
@click.argument("directory", required=False, type=click.Path(file_okay=False, path_type=Path))
def rules_check(directory) -> None:
    """Validate rules (built-in plus DIRECTORY) and prove every rule's example lines."""
    from .rulecheck import check_examples

    try:
        ruleset = _load_rules([directory] if directory else [])
    except DDTriageError as exc:
        _fail(str(exc))
    problems = check_examples(ruleset)
    for problem in problems:
        click.echo(f"ddtriage: error: {problem}", err=True)
    if problems:
        sys.exit(EXIT_ERROR)
    click.echo(f"{len(ruleset.rules)} rules OK ({len(ruleset.sources)} files)")


def _quiet_broken_pipe() -> None:
    """The reader went away (`| head`): stop without a traceback, as other CLI tools do."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(EXIT_CLEAN)


def main() -> None:
    """Console-script entry point."""
    try:
        cli(standalone_mode=True)
    except BrokenPipeError:
        _quiet_broken_pipe()
    except KeyboardInterrupt:
        click.echo("ddtriage: interrupted", err=True)
        sys.exit(130)
