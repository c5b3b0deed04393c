"""`ddtriage scan`: read logs, write a triage report, exit by --fail-on."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from datetime import datetime, tzinfo
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar

import click

from ..core.errors import DDTriageError
from ..writers import WRITERS, is_binary, write_report

if TYPE_CHECKING:
    from ..diagnose.mining import NearIncident
    from ..inputs import Selection
    from ..run.api import Analysis, Options
from .base import (
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    ClosedStream,
    Ratio,
    Size,
    When,
    Zone,
    cli,
    fail,
    lang_option,
    load_rules,
    quiet_broken_pipe,
    redact_options,
    resolve_lang,
    rules_option,
    warn,
)
from .output import atomic_file, paths_in_error, refusal
from .outputs import Output, resolve_outputs
from .settings import FAIL_ON

F = TypeVar("F", bound=Callable[..., Any])


# The options that say what is read and when, shared by the commands that read logs (scan, mine).
_SELECTION_OPTIONS = [
    click.option("--include", multiple=True, metavar="GLOB",
                  help="Only scan logs whose path, archive member or file name matches (repeatable)."),
    click.option("--exclude", multiple=True, metavar="GLOB",
                  help="Skip files, folders and archive members that match (repeatable). Globs are gitignore-style: "
                       "* stays within a name, ** crosses folders, a leading ! negates."),
    click.option("--hidden", is_flag=True, help="Also read hidden files and folders (.name), as if named explicitly."),
    click.option("--since", type=When(), help="Only findings at or after this time."),
    click.option("--until", type=When(end=True),
                 help="Only findings at or before this time (inclusive to its precision)."),
    click.option("--tz", "tz", type=Zone(), default=None, metavar="ZONE",
                  help="Zone of timestamps printed without one (+08:00, Asia/Shanghai); they are then reported "
                       "in UTC. Default: an envelope's zone when it tells one, else as printed."),
    click.option("--year", type=click.IntRange(1970, 2999), default=None,
                  help="Year for timestamps that print none (vLLM); default: from the file name or mtime."),
]
_READING_OPTIONS = [
    click.option("--max-bytes", type=Size(), default="50G", show_default=True, metavar="SIZE",
                  help="Decompression guard: most bytes one input may expand to."),
    click.option("--max-ratio", type=Ratio(), default=2000.0, show_default=True,
                  help="Decompression guard: highest expansion ratio of compressed data, over all layers."),
    click.option("--follow", is_flag=True,
                  help="Follow symlinks that lead out of the folders given (default: skip them, like ripgrep)."),
    click.option("--node", metavar="NAME",
                  help="The node of everything scanned (a scan of ~/ascend/log on the node itself); "
                       "only a host named by a log envelope beats it."),
]


def selection_options(f: F) -> F:
    """--include, --exclude, --hidden, --since, --until, --tz, --year (as `scan` reads them)."""
    for option in reversed(_SELECTION_OPTIONS):
        f = option(f)
    return f


def reading_options(f: F) -> F:
    """--max-bytes, --max-ratio, --follow, --node (as `scan` reads them)."""
    for option in reversed(_READING_OPTIONS):
        f = option(f)
    return f


def _a_file(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    """`--write-baseline -` is refused (`--baseline -` reads standard input; standard output holds
    the report): a baseline is written to a file."""
    if value == "-":
        raise click.BadParameter("a baseline is written to a file; name one")
    return value


@cli.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "fmt", type=click.Choice(sorted(WRITERS)), default=None,
              help="Report format (default: text, or what each -o FILE's name says).")
@click.option("--output", "-o", "outputs", multiple=True, metavar="[FORMAT:]FILE",
              help="Write a report here (repeatable; the scan runs once). The format comes from a FORMAT: "
                   "prefix, else the name (.sarif, .xml, .md, .json, .txt, .html), else --format; - is stdout.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="any",
              show_default=True, help="Which findings make the exit code 1 (unrecoverable: not known to be "
              "recoverable; ongoing: in a burst no later line shows recovered; related: any finding or any "
              "related runtime/HCCL/HIXL/MindIE/... error).")
@selection_options
@click.option("--jobs", "-j", type=click.IntRange(1, 256), default=None,
              help="Worker processes (default: the CPU count, for inputs of 16 MiB or more). "
                   "The report is the same for any N.")
@click.option("--dask", "dask_address", metavar="ADDRESS",
              help="Run on a Dask cluster: tcp://host:port of a scheduler, or local[:N] for N local workers.")
@reading_options
@click.option("--strict", is_flag=True, help="Exit 2 when any input (or part of one) was skipped.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar and no warnings on stderr.")
@click.option("--allow-empty", is_flag=True, help="Exit 0 (not 2) when no file was read at all.")
@click.option("--baseline", "baseline", metavar="FILE", type=click.Path(dir_okay=False),
              help="Report (and fail on) only findings whose fingerprint this baseline does not hold.")
@click.option("--write-baseline", metavar="FILE", type=click.Path(dir_okay=False), callback=_a_file,
              help="Record every finding of this scan by fingerprint, for a later --baseline.")
@click.option("--suppressions", metavar="FILE", type=click.Path(dir_okay=False),
              help="YAML list of known errors to hide (rule, code or fingerprint; reason; optional expires).")
@click.option("--context", "-C", "around", type=click.IntRange(0, 50), default=0, metavar="N",
              help="Show N lines around each incident's lead, read back from its log (text, markdown, html).")
@click.option("--color", type=click.Choice(["auto", "always", "never"]), default="auto", show_default=True,
              help="Colour the text report (auto: on a terminal, unless NO_COLOR is set).")
@click.option("--full", is_flag=True, help="List every row of every section in the text and Markdown reports "
              "(default: the first rows of each, most severe first, about 200 lines in all).")
@click.option("--no-pager", is_flag=True, help="Never page the report (default: page text longer than the "
              "terminal through $PAGER, else less -FRX, as git does).")
@click.option("--unexplained", is_flag=True, help="Also list the top templates of the ERROR/WARNING lines that "
              "nothing explains, near each incident (text, markdown, json; one more read of the inputs).")
@lang_option
@redact_options
@rules_option
def scan(paths: tuple[str, ...], fmt: str | None, outputs: tuple[str, ...], fail_on: str, include: tuple[str, ...],
         exclude: tuple[str, ...], hidden: bool, since: datetime | None, until: datetime | None,
         tz: tzinfo | None, year: int | None,
         jobs: int | None, dask_address: str | None, max_bytes: int, max_ratio: float, follow: bool,
         node: str | None, strict: bool, quiet: bool, allow_empty: bool, baseline: str | None,
         write_baseline: str | None, suppressions: str | None,
         around: int, color: str, full: bool, no_pager: bool, unexplained: bool, lang: str | None,
         redact: bool, redact_key: str | None,
         rules_dirs: tuple[Path, ...]) -> None:
    """Scan PATHS (files, folders, archives, - for stdin) and write a triage report.

    With no PATHS, scans $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log.
    """
    from ..core.progress import Progress, ProgressBar
    from ..core.times import window_bound
    from ..inputs import Limits, default_paths, printable
    from ..knowledge.messages import t
    from ..run.api import Options, analyze
    from ..run.parallel import cpu_count

    lang = resolve_lang(lang)
    low, high = window_bound(since, tz), window_bound(until, tz)
    if low and high and low > high:
        fail(t("err_since_until", lang))
    reports = resolve_outputs(fmt, outputs)
    files = tuple(r.path for r in reports if r.path != "-") + tuple(
        p for p in (baseline, write_baseline, suppressions) if p)  # never scan our own files
    if any(r.path == "-" for r in reports) and isinstance(sys.stdout, ClosedStream):
        fail(t("err_stdout_closed", lang))
    selection = _selection(include, exclude, hidden)
    cpus = cpu_count()
    if jobs and jobs > cpus and not dask_address:
        if not quiet:
            warn("note", t("note_jobs", lang, jobs=jobs, cpus=cpus))
        jobs = cpus
    try:
        targets = list(paths) or default_paths()
        for option, path, what, written in [("--output", r.path, "report", True) for r in reports] + [
                ("--write-baseline", write_baseline, "baseline", True), ("--baseline", baseline, "baseline", False),
                ("--suppressions", suppressions, "suppressions file", False)]:
            # refused before anything is read or written
            why = refusal(path, targets, selection, what, written) if path and path != "-" else None
            if why:
                fail(f"{option} {path}: {why}")
        options = Options(limits=Limits(max_bytes=max_bytes, max_ratio=max_ratio), selection=selection,
                          since=since, until=until, year=year, tz=tz, not_these=files, node=node or None,
                          follow=follow)
        show_bar = not quiet and sys.stderr is not None and sys.stderr.isatty()
        ruleset = load_rules(rules_dirs, lang)
        _nearby_notes(ruleset, quiet)
        analysis = analyze(targets, rules=ruleset, options=options, jobs=jobs,
                           progress=ProgressBar() if show_bar else Progress(), dask=dask_address)
    except DDTriageError as exc:
        fail(str(exc))
    bad = {printable(p) for p in paths_in_error(targets)}  # a path given that cannot be used at all
    usage_error = False
    for skipped in analysis.inputs.to_dict()["skipped"]:
        level = "error" if skipped["source"] in bad else "warning"
        usage_error |= level == "error"
        if level == "error" or not quiet:
            warn(level, f"{skipped['source']}: {skipped['reason']}")
    for noted in analysis.inputs.to_dict().get("notes", []) if not quiet else ():  # read in full, or ours
        warn("note", f"{noted['source']}: {noted['note']}")
    if not analysis.inputs.files and not usage_error and not allow_empty:
        left_out = analysis.inputs.excluded
        from ..knowledge.messages import noun

        fail(t("err_nothing_scanned", lang, left_out=t("err_left_out", lang, n=noun(left_out, "excluded", lang))
                                                       if left_out else ""))
    analysis = _known_errors(analysis, baseline, write_baseline, suppressions, quiet)
    if around:
        from ..run.readback import context_of

        analysis.context = context_of(((i.lead.source, i.lead.line) for i in analysis.summary.incidents), around)
    analysis.unexplained = _unexplained(unexplained, analysis, targets, options)
    analysis = redacted(analysis, redact, redact_key, [node] if node else [])
    analysis.fail_on = fail_on  # CI writers show related errors as failing when they fail the gate
    analysis.full = full  # text and Markdown: every row, not the first of each section
    for report in sorted(reports, key=lambda r: r.path == "-"):  # files first: a closed stdout stops the rest
        _write(report, analysis, color, no_pager)
    analysis.close()  # the findings' temporary files (the summary holds what the exit code needs)
    if usage_error or (strict and analysis.inputs.skipped):
        sys.exit(EXIT_ERROR)
    sys.exit(EXIT_FINDINGS if _gate(analysis, fail_on) else EXIT_CLEAN)


def _unexplained(wanted: bool, analysis: Analysis, targets: list[str], options: Options) -> list[NearIncident]:
    """--unexplained: the top unexplained templates near each incident (one more read of the inputs)."""
    if not wanted or not analysis.summary.incidents:
        return []
    from ..run.mining import unexplained_near

    try:
        return unexplained_near(targets, analysis.rules, options, analysis.summary.incidents)
    except DDTriageError as exc:
        fail(str(exc))


def _selection(include: tuple[str, ...], exclude: tuple[str, ...], hidden: bool) -> Selection:
    from ..inputs import Selection
    from ..inputs.selection import compile_glob

    for glob in include + exclude:
        try:
            compile_glob(glob)
        except (ValueError, TypeError) as exc:
            fail(f"glob {glob!r}: {exc}")
    return Selection(tuple(include), tuple(exclude), hidden)


def _known_errors(analysis: Analysis, baseline: str | None, write_to: str | None, suppressions: str | None,
                  quiet: bool) -> Analysis:
    """Record a baseline of everything found, then hide what the baseline and suppressions know."""
    from ..diagnose.known_errors import baseline_entries, write_entries
    from ..run.finish import apply_known_errors

    if not (baseline or write_to or suppressions):
        return analysis  # the findings stay where they are (on disk for a storm), not read into a list
    # One entry per fingerprint, read from the store before the known errors are taken out.
    recorded = baseline_entries(analysis.findings) if write_to else []
    if baseline and write_to and not os.path.exists(baseline):
        baseline = None  # the first run of a gate that records its baseline: nothing is known yet
    try:
        analysis = apply_known_errors(analysis, baseline, suppressions)  # against the old baseline, then record the new
        if write_to:
            write_entries(recorded, write_to)
    except DDTriageError as exc:
        fail(str(exc))
    known = analysis.known_errors
    for s in known.expired if known and not quiet else ():
        click.echo(f"ddtriage: warning: {suppressions}: suppression {s.describe()} expired on {s.expires}; "
                   "it hides nothing now: renew or remove it", err=True)
    return analysis


def _write(report: Output, analysis: Analysis, color: str = "never", no_pager: bool = True) -> None:
    """One report: standard output (on a terminal: its width, colour and a pager), or a file written
    whole through a temporary file."""
    try:
        if is_binary(report.fmt):
            if report.path == "-" and sys.stdout.isatty():
                fail(f"--format {report.fmt} is binary: write it to a file with -o FILE")
            if report.path == "-":
                write_report(report.fmt, analysis, sys.stdout.buffer)
            else:
                with atomic_file(report.path, binary=True) as binary:
                    write_report(report.fmt, analysis, binary)
            return
        if report.path == "-":
            if sys.stdout.isatty():
                to_terminal(report.fmt, analysis, color, no_pager)
            else:
                _write_to(report.fmt, analysis, sys.stdout, color)
        else:
            with atomic_file(report.path) as handle:
                _write_to(report.fmt, analysis, handle, color)
    except BrokenPipeError:
        quiet_broken_pipe()
    except OSError as exc:
        fail(f"{report.path}: cannot write report: {exc.strerror or exc}")


def _write_to(fmt: str, analysis: Analysis, handle: TextIO, color: str) -> None:
    """A report into a file or pipe: colour only when asked for (`--color always`)."""
    if fmt == "text" and color == "always":
        from ..writers.text import write as write_text

        write_text(analysis, handle, color=True)
    else:
        write_report(fmt, analysis, handle)


def to_terminal(fmt: str, analysis: Analysis, color: str, no_pager: bool) -> None:
    """The report on a terminal: its real width, colour unless NO_COLOR (or --color never), and a
    pager when it is longer than the screen."""
    import os
    import shutil

    from ..writers import render_report
    from ..writers.common import Style
    from ..writers.text import render

    size = shutil.get_terminal_size()
    use_color = color == "always" or (color == "auto" and not os.environ.get("NO_COLOR")
                                      and os.environ.get("TERM") != "dumb")
    text = render(analysis, max(60, size.columns), Style(use_color)) if fmt == "text" else render_report(fmt, analysis)
    if no_pager or fmt not in ("text", "markdown") or text.count("\n") < size.lines:
        click.echo(text, nl=False, color=use_color)
        return
    page(text)


def page(text: str) -> None:
    """Through $PAGER (else `less`) with git's LESS=FRX: quit if one screen, keep colours."""
    import os
    import shlex
    import subprocess

    command = os.environ.get("DDTRIAGE_PAGER") or os.environ.get("PAGER") or "less"
    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    try:
        proc = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE, env=env)
    except OSError:
        click.echo(text, nl=False)
        return
    assert proc.stdin is not None
    try:
        proc.stdin.write(text.encode("utf-8"))
        proc.stdin.close()
    except BrokenPipeError:
        pass
    proc.wait()


def redacted(analysis: Analysis, redact: bool, key: str | None, names: list[str] | None = None) -> Analysis:
    """`--redact`/`--redact-key`: after everything is worked out, before anything is written."""
    if not redact and key is None:
        return analysis
    from ..run.redact import redact as redact_analysis

    return redact_analysis(analysis, key, also=names or [])


def _gate(analysis: Analysis, fail_on: str) -> bool:
    if fail_on == "never":
        return False
    if fail_on == "related":  # findings or related errors (kept apart from the findings store)
        return analysis.summary.findings > 0 or bool(analysis.related)
    if fail_on == "unrecoverable":  # from the summary: the findings are not read again
        return analysis.summary.unrecoverable > 0
    if fail_on == "ongoing":  # what did not recover
        return analysis.summary.ongoing > 0
    return analysis.summary.findings > 0


def _nearby_notes(ruleset: Any, quiet: bool = False) -> None:
    """A note on stderr for each user rule whose `nearby` regex the compiled core cannot run (it runs
    in the timed Python path, with the same answers): the engine's business, not the report's."""
    from ..detect.engine import nearby_notes

    for origin, why in nearby_notes(ruleset):
        if not quiet:
            warn("note", f"{origin}: {why}")
