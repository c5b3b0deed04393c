"""`ddtriage watch`: follow logs as they are written; report findings and incidents as they form.

The library does the following (`run.watch.Follower`); this module shows it: a live view on a
terminal (rich), a line per event in a pipe, or JSON Lines events (`--format jsonl`, or any
`-o jsonl:FILE`), and at the end (Ctrl-C, SIGTERM, end of standard input) the final reports asked
for with `-o FORMAT:FILE`, and scan's exit code.
"""

from __future__ import annotations

import json
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from datetime import tzinfo
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import click

from ..core.errors import DDTriageError
from .base import EXIT_CLEAN, EXIT_FINDINGS, FiniteRange, Zone, cli, fail, lang_option, load_rules, rules_option, warn
from .settings import FAIL_ON

if TYPE_CHECKING:
    from ..run.analysis import Analysis
    from ..run.watch import Follower, Update

EVENTS_FORMAT = "jsonl"  # in watch, jsonl is the event stream, written as it happens
VIEWS = ("live", "lines", EVENTS_FORMAT)


@cli.command()
@click.argument("paths", nargs=-1)
@click.option("--format", "view", type=click.Choice(VIEWS), default=None,
              help="What standard output shows as it happens: live (a view of the incidents, updated in "
                   "place; the default on a terminal), lines (one line per event; the default elsewhere) "
                   "or jsonl (one JSON event per line).")
@click.option("--output", "-o", "outputs", multiple=True, metavar="[FORMAT:]FILE",
              help="jsonl:FILE (or FILE.jsonl): the events, as they happen. Any other format: the final "
                   "report, written when watch stops (Ctrl-C, SIGTERM, end of standard input). Repeatable.")
@click.option("--state", "state", metavar="FILE", type=click.Path(dir_okay=False),
              help="Keep what was read and reported here (device, inode, offset per file; incidents): a "
                   "restart reports nothing twice and misses nothing written while it was down.")
@click.option("--poll", is_flag=True, help="Look for changes every --interval instead of waiting for file "
              "notifications (network file systems); automatic when notifications fail.")
@click.option("--interval", type=FiniteRange(0.05, 60), default=0.5, show_default=True, metavar="SECONDS",
              help="How often --poll looks.")
@click.option("--fail-on", type=click.Choice(FAIL_ON), default="any",
              show_default=True, help="Which findings make the exit code 1, as for scan.")
@click.option("--include", multiple=True, metavar="GLOB", help="Only logs whose path matches (as for scan).")
@click.option("--exclude", multiple=True, metavar="GLOB", help="Skip what matches (as for scan).")
@click.option("--hidden", is_flag=True, help="Also read hidden files and folders.")
@click.option("--tz", "tz", type=Zone(), default=None, metavar="ZONE", help="Zone of stamps printed without one.")
@click.option("--year", type=click.IntRange(1970, 2999), default=None, help="Year for stamps that print none.")
@click.option("--node", metavar="NAME", help="The node of everything read (watching ~/ascend/log on the node).")
@click.option("--follow", is_flag=True, help="Follow symlinks that lead out of the folders given.")
@click.option("--quiet", "-q", is_flag=True, help="No notes on stderr.")
@lang_option
@rules_option
def watch(paths: tuple[str, ...], view: str | None, outputs: tuple[str, ...], state: str | None, poll: bool,
          interval: float, fail_on: str, include: tuple[str, ...], exclude: tuple[str, ...], hidden: bool,
          tz: tzinfo | None, year: int | None, node: str | None, follow: bool, quiet: bool, lang: str | None,
          rules_dirs: tuple[Path, ...]) -> None:
    """Follow PATHS (folders, files, or - for a stream such as `kubectl logs -f`) as they are
    written: appended lines, new files and folders, rotations, truncations, deletions.

    With no PATHS, follows $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log.
    """
    from ..inputs import default_paths
    from ..run.api import Options
    from ..run.watch import Follower
    from .outputs import resolve_outputs
    from .scan import _gate as scan_gate
    from .scan import _selection
    from .scan import _write as write_final

    reports = resolve_outputs(None, outputs) if outputs else []
    events = [r.path for r in reports if r.fmt == EVENTS_FORMAT]
    finals = [r for r in reports if r.fmt != EVENTS_FORMAT]
    if any(r.path == "-" for r in reports):
        fail("watch writes its final reports to files: give -o FORMAT:FILE (standard output shows --format)")
    selection = _selection(include, exclude, hidden)
    try:
        targets = list(paths) or default_paths()
        if "-" in targets and len(targets) > 1:
            fail("- (standard input) is watched alone: give it without other paths")
        if targets == ["-"] and state:
            fail("--state keeps offsets in files; a stream has none to resume from (drop --state)")
        _refuse(targets, selection, [*events, *(r.path for r in finals)], state)
        written = (*events, *(r.path for r in finals), *((state,) if state else ()))
        options = Options(selection=selection, year=year, tz=tz, not_these=written, node=node or None,
                          follow=follow)
        ruleset = load_rules(rules_dirs, lang)
        from .scan import _nearby_notes

        _nearby_notes(ruleset)
        engine = options.engine_factory(ruleset)()
        follower = Follower(targets, engine, options, state=state)
    except DDTriageError as exc:
        fail(str(exc))
    view = view or ("live" if sys.stdout.isatty() else "lines")
    note = (lambda _: None) if quiet else (lambda text: warn("note", text))
    stop = threading.Event()
    with ExitStack() as stack:
        stack.enter_context(_stop_on_signals(stop))
        sinks = [stack.enter_context(_event_file(p, resumed=bool(state) and follower.resumed)) for p in events]
        show = stack.enter_context(_view(view, sys.stdout, sinks, note))
        show.event({"kind": "watch", "tool": "ddtriage", "paths": targets, "resumed": follower.resumed})
        analysis = _follow(follower, stop, show, poll, interval, note)
    for report in finals:
        write_final(report, analysis)
    gate = scan_gate(analysis, fail_on)
    analysis.close()
    sys.exit(EXIT_FINDINGS if gate else EXIT_CLEAN)


def _follow(follower: Follower, stop: threading.Event, show: _Shower, poll: bool, interval: float,
            note: Callable[[str], None]) -> Analysis:
    """Sync on every wake-up until `stop` (or the end of standard input); the final analysis."""
    from ..run.watch import read_stdin, wakeups

    pace = _Pace(follower, show)
    if follower.stdin:
        for data in read_stdin(stop):
            pace.report(follower.feed(data, final=not data))
        if stop.is_set():  # stopped before the stream ended: its last line too
            pace.report(follower.feed(b"", final=True), last=True)
    else:
        for _ in wakeups(follower.paths, stop, poll, interval, note):
            pace.report(follower.sync())
        pace.report(follower.sync(final=True), last=True)
    if pace.pending or pace.analysis is None:
        pace.report(None, last=True)
    assert pace.analysis is not None
    return pace.analysis


class _Pace:
    """Shows each update's events at once, and concludes the analysis again (incidents) after a
    change, spending at most a fifth of the time on it: a storm of findings is not re-tallied on
    every wake-up (what waits is done on a later one, at most `RESYNC_MS` later)."""

    def __init__(self, follower: Follower, show: _Shower) -> None:
        self.follower, self.show = follower, show
        self.analysis: Analysis | None = None
        self.pending = True
        self.cost, self.at = 0.0, float("-inf")

    def report(self, update: Update | None, last: bool = False) -> None:
        from ..run.watch import finding_event, related_event

        if update is not None:
            for skipped in update.notes:
                self.show.event({"kind": "note", "source": skipped.source, "note": skipped.reason})
            for f in update.findings:
                self.show.event(finding_event(f, self.follower.engine.rules.texts))
            for e in update.related:
                self.show.event(related_event(e))
            self.show.flush()  # the lines' events out before the analysis is concluded again
            self.pending |= bool(update or update.notes or update.changed)
        if not self.pending or (not last and time.monotonic() - self.at < 4 * self.cost):
            return  # nothing changed (no work, no redraw, no write), or too soon
        started = time.monotonic()
        if self.analysis is not None:
            self.analysis.close()
        self.analysis = self.follower.analysis()
        for event in self.follower.incident_events(self.analysis):
            self.show.event(event)
        self.show.refresh(self.follower, self.analysis)
        self.follower.save()
        self.at = time.monotonic()
        self.cost, self.pending = self.at - started, False


def _refuse(targets: list[str], selection: Any, written: list[str], state: str | None) -> None:
    """One line and exit 2 for an output that would overwrite a log (as scan refuses)."""
    from .output import refusal

    for option, path, what in [("--output", p, "report") for p in written] + (
            [("--state", state, "state file")] if state else []):
        why = refusal(path, targets, selection, what)
        if why:
            fail(f"{option} {path}: {why}")


@contextmanager
def _stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Ctrl-C and SIGTERM set `stop` (and raise nothing): the loop ends, and the final reports are
    written. A second Ctrl-C while they are written interrupts as usual."""
    def handler(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()

    try:
        old = {s: signal.signal(s, handler) for s in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread (a test's runner): stopped by other means
        yield
        return
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


@contextmanager
def _event_file(path: str, resumed: bool) -> Iterator[IO[str]]:
    try:
        handle = open(path, "a" if resumed else "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        fail(f"{path}: cannot write events: {exc.strerror or exc}")
    with handle:
        yield handle


class _Shower:
    """Where events go: the event files, and standard output in the chosen view."""

    def __init__(self, sinks: list[IO[str]], out: IO[str] | None, lines: bool) -> None:
        self.sinks, self.out, self.lines = sinks, out, lines

    def event(self, event: dict[str, Any]) -> None:
        from ..writers.safe import json_text

        text = json_text(json.dumps(event, ensure_ascii=False))
        for sink in self.sinks:
            sink.write(text + "\n")
        if self.out is not None:
            self.out.write((_line(event) if self.lines else text) + "\n")

    def flush(self) -> None:
        for sink in self.sinks:
            sink.flush()
        if self.out is not None:
            self.out.flush()

    def refresh(self, follower: Follower, analysis: Analysis) -> None:
        self.flush()


class _LiveShower(_Shower):
    """The incidents on a terminal, most severe first, updated in place (rich)."""

    def __init__(self, sinks: list[IO[str]], live: Any) -> None:
        super().__init__(sinks, None, False)
        self.live = live
        self.recent: list[str] = []

    def event(self, event: dict[str, Any]) -> None:
        super().event(event)
        if event["kind"] in ("finding", "related", "note"):
            self.recent = [*self.recent[-4:], _line(event)]

    def refresh(self, follower: Follower, analysis: Analysis) -> None:
        super().refresh(follower, analysis)
        self.live.update(_render(follower, analysis, self.recent), refresh=True)


@contextmanager
def _view(view: str, out: IO[str], sinks: list[IO[str]], note: Callable[[str], None]) -> Iterator[_Shower]:
    if view == "live":
        try:
            from rich.console import Console
            from rich.live import Live
        except ImportError:
            note("rich is not installed: one line per event instead of the live view")
        else:
            # auto_refresh off: the view is drawn when something changed, so an idle watch costs no CPU
            with Live(console=Console(file=out), auto_refresh=False, transient=False) as live:
                yield _LiveShower(sinks, live)
            return
    yield _Shower(sinks, out, lines=view == "lines")


def _render(follower: Follower, analysis: Analysis, recent: list[str]) -> Any:
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from ..run.watch import stable_id
    from ..writers.safe import terminal

    summary = analysis.summary
    head = Text(f"ddtriage watch · {len(follower.order)} files · {summary.findings} findings · "
                f"{len(analysis.related)} related errors · {len(summary.incidents)} incidents · "
                f"{time.strftime('%H:%M:%S')}", style="bold")
    table = Table(expand=True, show_lines=False)
    for column in ("incident", "state", "nodes", "lead", "action", "findings", "last"):
        table.add_column(column, overflow="fold")
    incidents = sorted(summary.incidents, key=lambda i: getattr(i, "state", None) == "recovered")  # broken first
    for incident in incidents[:20]:
        lead = incident.lead
        state = getattr(incident, "state", None) or "-"
        table.add_row(stable_id(incident, analysis), state, terminal(", ".join(incident.nodes)),
                      terminal(f"{lead.meaning or lead.code} ({lead.family})"), terminal(incident.action_word),
                      str(incident.findings), terminal((incident.end or "")[11:19]),
                      style="red" if incident.severe and state != "recovered" else None)
    lines = [Text(line) for line in recent]
    return Group(head, table, *lines)


def _line(event: dict[str, Any]) -> str:
    """One event as a line of text (`--format lines`)."""
    from ..writers.safe import terminal

    kind = event["kind"]
    if kind == "finding":
        where = f"{event['node'] or '-'} {event['source']}:{event['line']}"
        text = f"{where} {event['code']} {event['name'] or 'unknown code'} {event['api'] or '-'} -> {event['action']}"
    elif kind == "related":
        where = f"{event['node'] or '-'} {event['source']}:{event['line']}"
        text = f"{where} {event['family']} {event['code']} {event['meaning']}"
    elif kind == "incident":
        state = f" {event['state']}" if event.get("state") else ""
        text = (f"{event['change']} {event['id']}{state}: {event['findings']} findings on "
                f"{', '.join(event['nodes']) or '-'}; {event['action']}")
    elif kind == "note":
        text = f"{event['source']}: {event['note']}"
    else:
        text = f"watching {' '.join(event.get('paths', []))}" + (" (resumed)" if event.get("resumed") else "")
    return terminal(f"{kind}: {text}")
