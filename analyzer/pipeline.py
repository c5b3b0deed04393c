"""The whole triage as library calls: paths -> sources -> streams -> candidates -> findings -> summary.

    from analyzer import analyze
    result = analyze(["sample_logs/"])
    result.findings, result.summary, result.inputs

The CLI is a thin layer over `analyze`.
"""

from __future__ import annotations

import io
import os
from collections import deque
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Callable, Iterable, Iterator

from .catalog import format_code
from .context import LOOKBACK_LINES, ApiResolver, same_thread
from .inputs import (READ_ERRORS, Limits, SafeStream, Selection, Source, Unpacker, iter_sources, layout_of, sniff,
                     year_hint)
from .logline import Header, header_for, parse_header, record_headers
from .neighbours import NeighbourMatcher
from .patterns import GENERIC_FAILED, CodeMatcher
from .progress import Progress
from .records import Finding, InputStats, Skipped
from .rules import RuleSet
from .scanner import HISTORY_BYTES, Prefilter, ScanCounts, scan_stream

TEXT_WIDTH = 600  # characters of a hit line kept in a finding
SPLIT_MIN_BYTES = 64 << 20  # a lone plain file at least this big is split across workers


@dataclass(frozen=True)
class Options:
    """How to read inputs: unpacking limits, selection, time window, year for year-less stamps."""

    limits: Limits = field(default_factory=Limits)
    selection: Selection = field(default_factory=Selection)
    since: datetime | None = None
    until: datetime | None = None
    year: int | None = None
    prefilter: str = "auto"
    not_these: tuple[str, ...] = ()  # files never to read (the report being written)


@dataclass
class Engine:
    """Everything compiled once per run (or per worker): rules, patterns, prefilter, resolver."""

    rules: RuleSet
    options: Options = field(default_factory=Options)
    progress: Progress = field(default_factory=Progress)
    matcher: CodeMatcher = field(init=False)
    neighbours: NeighbourMatcher = field(init=False)
    resolver: ApiResolver = field(init=False)
    prefilter: Prefilter = field(init=False)

    def __post_init__(self) -> None:
        self.matcher = CodeMatcher(self.rules.catalog)
        self.resolver = ApiResolver(self.rules.apis)
        self.neighbours = self.rules.neighbours
        # Neighbour errors are looked for only in the few lines before a finding: their short,
        # digit-heavy literals would slow the prefilter three times over on every byte.
        self.prefilter = Prefilter(self.matcher.literals, self.options.prefilter)

    # -- one top-level input ---------------------------------------------------------------
    def scan_source(self, source: Source, stats: InputStats) -> list[Finding]:
        """Findings of one input (a file, an archive, stdin). Lines and bytes read are added to
        `stats` even when the input breaks half-way; what could not be read is listed."""
        findings: list[Finding] = []
        try:
            raw = source.open()
        except OSError as exc:
            stats.skipped.append(Skipped(source.name, exc.strerror or str(exc)))
            return findings
        raw = _ReportingReader(raw, self.progress.advance)
        unpacker = Unpacker(self.options.limits, self.options.selection, stats.skipped)
        try:
            leaves = unpacker.leaves(source.name, raw, source.path, source.mtime)
            while True:
                try:
                    leaf = next(leaves)
                except StopIteration:
                    break
                except READ_ERRORS as exc:
                    stats.skipped.append(Skipped(source.name, _reason(exc)))
                    break
                hint = year_hint(leaf.name, leaf.mtime, self.options.year)
                findings.extend(self.scan_leaf(leaf.name, leaf.stream, hint, stats, year_guessed=hint.guessed))
        finally:
            if source.path is not None:
                raw.close()
        stats.excluded += unpacker.excluded
        return findings

    def scan_leaf(self, name: str, stream, year, stats: InputStats, history: bytes = b"",
                  year_guessed: bool = False) -> list[Finding]:
        counts = ScanCounts()
        findings: list[Finding] = []
        try:
            for finding in self.scan_stream(name, stream, counts, year, history, year_guessed):
                findings.append(finding)
        except READ_ERRORS as exc:
            # Whatever was read before the break is kept and accounted for.
            stats.skipped.append(Skipped(name, f"stopped after {counts.lines} lines: {_reason(exc)}"))
        stats.files += 1
        stats.lines += counts.lines
        stats.bytes += counts.bytes
        return findings

    # -- one text stream ---------------------------------------------------------------------
    def scan_stream(self, name: str, stream, counts: ScanCounts, year=None,
                    history: bytes = b"", year_guessed: bool = False) -> Iterator[Finding]:
        layout = layout_of(name)
        # Specific codes seen lately, to recognise the generic LLM_FAILED echoes that follow them.
        recent: deque[tuple[int, int, Header]] = deque(maxlen=64)
        # Per process: the line (and end offset) of its previous specific finding. A lower-level
        # error before that line was that finding's cause, not a cause of what follows.
        last_seen: dict[str | None, tuple[int, int]] = {}
        # A known year (file name, --year) is the year the log starts in: a year-less stamp that
        # jumps back from December to January has crossed into the next one. (A year guessed
        # from an mtime is the year it ends in; YearHint handles that side.)
        roll = _Rollover() if getattr(year, "rolls", False) else None
        if history:
            self._seed_recent(history, recent, last_seen, year)
        for cand in scan_stream(stream, self.prefilter, counts, history=history):
            text = cand.text()
            hits = self.matcher.find(text)
            if not hits:
                continue
            headers = record_headers(text, year)
            lookback = _memo(cand.lookback)
            # Neighbour-family errors (HCCL, runtime, ...) of this process since its previous
            # finding: the likely causes of what this line reports.
            after_line, after_end = last_seen.get(headers[0].pid, (-(1 << 62), -(1 << 62)))
            events = self._neighbour_events(cand, text, lookback, after_line, after_end, year)

            def nearby_text(lookback=lookback, text=text):  # the burst a `nearby:` rule looks at
                return "\n".join(t for _, t in lookback()[-LOOKBACK_LINES:]) + "\n" + text

            for hit in hits:
                header = header_for(headers, hit.start)
                ctx = self.resolver.resolve(text, header, hit.start, lookback, year)
                if hit.form == "generic" and not (
                    self._ties_to_llm_datadist(ctx) or self.resolver.mentions_llm(text)
                    or _echoes(recent, cand, header)
                ):
                    continue  # the graph engine's own failure, not LLM-DataDist's
                if hit.value != GENERIC_FAILED:
                    recent.append((cand.line_no, cand.offset, header))
                    last_seen[headers[0].pid] = (cand.line_no, cand.offset + len(cand.raw))
                rule = self.rules.match(hit.value, ctx.api, hit.in_cluster_results, nearby_text)
                before = _causes(events, header, cand.line_no, hit.value)
                hint, hint_guessed = (None, False) if header.timestamp else _time_before(lookback(), header, year)
                stamp = header.timestamp
                if roll is not None and header.yearless and stamp:
                    stamp = roll.adjust(stamp)
                elif roll is not None and hint_guessed and hint:
                    hint = roll.adjust(hint)
                code = self.rules.catalog.get(hit.value)
                recoverable = rule.recoverable if rule.recoverable_set else (code.recoverable if code else None)
                yield Finding(
                    source=name, line=cand.line_no, timestamp=stamp,
                    code=format_code(hit.value), name=code.name if code else None,
                    api=ctx.api, api_evidence=ctx.evidence, api_line=ctx.line,
                    recoverable=recoverable, rule=rule.id, action=rule.action, remedy=rule.remedy,
                    text=_clip(text, hit.start), form=hit.form, pid=header.pid or layout.pid, tid=header.tid,
                    in_cluster_results=hit.in_cluster_results, known=code is not None,
                    generic=code.generic if code else False, references=rule.references,
                    node=layout.node, kind=layout.kind, device=layout.device,
                    year_guessed=year_guessed and bool((header.yearless and stamp) or (hint and hint_guessed)),
                    causes=before, time_hint=hint,
                )

    def _ties_to_llm_datadist(self, ctx) -> bool:
        """Whether API evidence alone makes a generic failure LLM-DataDist's: an API read from the
        line or its traceback (not a nearby line) whose name other components do not use."""
        return bool(ctx.api) and ctx.evidence != "nearby" and ctx.api not in self.rules.apis.shared

    def _neighbour_events(self, cand, text: str, lookback, after_line: int, after_offset: int, year) -> list[tuple]:
        """(line, family, code, meaning, pid) of neighbour errors on this line and on the lines
        before it that come after the previous finding, at most CAUSE_LINES back."""
        span = min(CAUSE_LINES, cand.line_no - after_line - 1)
        # The bytes since the previous finding when that is close (no line walking needed); a
        # longer stretch than CAUSE_LINES only widens this pre-test, not the result.
        since = cand.raw_since(after_offset) if 0 <= cand.offset - after_offset <= 4096 else None
        families = self.neighbours.families_in((cand.raw_before(span) if since is None else since) + cand.raw)
        if not families:
            return []  # the usual case: nothing to decode
        lines = [(n, t) for n, t in lookback()[-CAUSE_LINES:] if n > after_line] + [(cand.line_no, text)]
        events = []
        for n, t in lines:
            found = self.neighbours.find(t, families)
            if found:
                other = parse_header(t, year)
                events.extend((n, family, code, meaning, other.pid, other.timestamp) for family, code, meaning in found)
        return events

    def _seed_recent(self, history: bytes, recent: deque, last_seen: dict, year) -> None:
        """Specific codes in the bytes before a parallel range, so that echoes and causes right
        after the range start come out exactly as in a sequential scan. (Specific codes are
        always findings; only they bound causes and start echoes, so nothing here depends on
        where the range starts.)"""
        lines = history.count(b"\n")
        for cand in scan_stream(io.BytesIO(history), self.prefilter, ScanCounts()):
            text = cand.text()
            line_no, offset = cand.line_no - lines - 1, cand.offset - len(history)
            headers = record_headers(text, year)
            for hit in self.matcher.find(text):
                if hit.value != GENERIC_FAILED:
                    recent.append((line_no, offset, header_for(headers, hit.start)))
                    last_seen[headers[0].pid] = (line_no, offset + len(cand.raw))


def _time_before(earlier, header: Header, year: int | None) -> tuple[str | None, bool]:
    """(timestamp, from a year-less vLLM stamp) of the nearest earlier record of the same
    process: the time of a traceback's last line is the time its traceback was logged."""
    for _, text in reversed(earlier):
        other = parse_header(text, year)
        if other.timestamp and (not header.pid or not other.pid or other.pid == header.pid):
            return other.timestamp, other.yearless
    return None, False


CAUSE_LINES = 15  # how far before a finding a neighbour error still counts as its likely cause


CAUSE_SECONDS = 30.0  # ... and how long before it


def _causes(events: list[tuple], header: Header, line_no: int, value: int) -> tuple:
    """The events that may have caused a finding: same process, not long before, and not the
    finding's own number printed on its own line (`LLM_SUSPECT_REMOTE_ERROR: 507057`)."""
    out = []
    for n, family, code, meaning, pid, stamp in events:
        if header.pid and pid and pid != header.pid:
            continue
        if n == line_no and code == str(value):
            continue
        if header.timestamp and stamp:
            t0, t1 = _parse_ts(stamp), _parse_ts(header.timestamp)
            if t0 and t1 and not 0 <= (t1 - t0).total_seconds() <= CAUSE_SECONDS:
                continue
        out.append((n, family, code, meaning))
    return tuple(out)


def _memo(fn: Callable[[], list]) -> Callable[[], list]:
    cache: list = []

    def get():
        if not cache:
            cache.append(fn())
        return cache[0]
    return get


ECHO_SECONDS = 2.0


def _echoes(recent: deque, cand, header: Header) -> bool:
    """A generic failure right after a specific code in the same thread (a few lines, a
    moment) is its echo; a graph-engine failure half a minute later is not."""
    for seen_line, seen_offset, seen_header in reversed(recent):
        if cand.line_no - seen_line > LOOKBACK_LINES or cand.offset - seen_offset > HISTORY_BYTES:
            return False
        if same_thread(header, seen_header):
            t0, t1 = _parse_ts(seen_header.timestamp), _parse_ts(header.timestamp)
            return not (t0 and t1 and abs((t1 - t0).total_seconds()) > ECHO_SECONDS)
    return False


def settle_years(findings: list[Finding]) -> list[Finding]:
    """Year-less timestamps whose year was only guessed from an mtime (a copy's time, not the
    incident's) take the year that puts them nearest the node's other logs (else the whole
    run's): the report must not depend on when the bundle was unpacked. Stamp by stamp, so a
    log that crosses New Year keeps December and January in the right years."""
    known: dict[str | None, list[str]] = {}
    for f in findings:
        if f.timestamp and not f.year_guessed:
            known.setdefault(f.node, []).append(f.timestamp)
    everything = sorted(t for stamps in known.values() for t in stamps)

    def middle(stamps: list[str]) -> datetime | None:
        return _parse_ts(sorted(stamps)[len(stamps) // 2]) if stamps else None

    refs = {node: middle(stamps) for node, stamps in known.items()}
    overall = middle(everything)

    def nearest(stamp: str | None, ref: datetime) -> str | None:
        if not stamp:
            return stamp
        options = []
        for year in (ref.year - 1, ref.year, ref.year + 1):
            when = _parse_ts(f"{year:04d}{stamp[4:]}")  # None on February 29th of a common year
            if when is not None:
                options.append((abs((when - ref).total_seconds()), year))
        return f"{min(options)[1]:04d}{stamp[4:]}" if options else stamp

    out = []
    for f in findings:
        ref = (refs.get(f.node) or overall) if f.year_guessed else None
        if ref is not None:
            f = f._replace(timestamp=nearest(f.timestamp, ref), time_hint=nearest(f.time_hint, ref))
        out.append(f)
    return out


class _Rollover:
    """Counts year crossings in a log whose year-less stamps run forward in time."""

    def __init__(self) -> None:
        self.month: int | None = None
        self.years = 0

    def adjust(self, stamp: str) -> str:
        month = int(stamp[5:7])
        if self.month is not None and self.month - month >= 6:  # December, then January
            self.years += 1
        self.month = month
        return f"{int(stamp[:4]) + self.years:04d}{stamp[4:]}" if self.years else stamp


def apply_window(findings: list[Finding], since: datetime | None, until: datetime | None) -> list[Finding]:
    """Findings inside [since, until]. A line without a timestamp (a traceback's last line) takes
    the time of the record before it; with none in reach, it is kept rather than lost."""
    if not since and not until:
        return findings
    kept = []
    for f in findings:
        when = _parse_ts(f.timestamp) or _parse_ts(f.time_hint)
        if when is None or ((not since or when >= since) and (not until or when <= until)):
            kept.append(f)
    return kept


def _parse_ts(ts: str | None) -> datetime | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts)
    except ValueError:
        return None


def _clip(text: str, at: int) -> str:
    if len(text) <= TEXT_WIDTH:
        return text
    begin = max(0, min(at - TEXT_WIDTH // 3, len(text) - TEXT_WIDTH))
    return ("…" if begin else "") + text[begin:begin + TEXT_WIDTH] + ("…" if begin + TEXT_WIDTH < len(text) else "")


def _reason(exc: BaseException) -> str:
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).rstrip(".")


def sort_key(f: Finding) -> tuple:
    return (f.source, f.line, f.code)


# -- parallel work ----------------------------------------------------------------------------
@dataclass(frozen=True)
class WorkUnit:
    """A whole input, or one newline-aligned byte range [start, end) of a big plain file."""

    source: Source
    start: int = 0
    end: int | None = None


def plan_units(sources: list[Source], jobs: int) -> list[WorkUnit]:
    """One unit per input; a lone big plain-text file is cut into `jobs` line-aligned ranges."""
    if jobs > 1 and len(sources) == 1:
        src = sources[0]
        if src.path is not None and src.size and src.size >= SPLIT_MIN_BYTES and _is_plain(src):
            cuts = _aligned_cuts(src.path, src.size, jobs)
            return [WorkUnit(src, a, b) for a, b in zip(cuts, cuts[1:]) if b > a]
    return [WorkUnit(s) for s in sources]


def _is_plain(src: Source) -> bool:
    try:
        with open(src.path, "rb") as handle:
            return sniff(SafeStream(handle)) == "text"
    except OSError:
        return False


def _aligned_cuts(path: str, size: int, parts: int) -> list[int]:
    """Byte offsets that split the file into `parts` ranges, each starting at a line start.
    The newline is searched in small reads: a line of gigabytes (NUL padding) costs no memory;
    where no newline falls before the next cut, the two ranges become one."""
    cuts = [0]
    with open(path, "rb") as handle:
        for i in range(1, parts):
            pos = max(cuts[-1], size * i // parts)
            limit = size * (i + 1) // parts
            handle.seek(pos)
            while pos < limit:
                piece = handle.read(min(1 << 16, limit - pos))
                if not piece:
                    break
                nl = piece.find(b"\n")
                if nl != -1:
                    cuts.append(pos + nl + 1)
                    break
                pos += len(piece)
    cuts.append(size)
    return sorted(set(cuts))


class _ReportingReader(io.RawIOBase):
    """Tells the progress bar how many bytes of the input itself (compressed or not) were read."""

    def __init__(self, inner, report: Callable[[int], None]):
        self.inner, self.report = inner, report

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        data = self.inner.read(size)
        self.report(len(data))
        return data

    def close(self) -> None:
        self.inner.close()
        super().close()


class _Bounded(io.RawIOBase):
    def __init__(self, handle, remaining: int):
        self.handle, self.remaining = handle, remaining

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.remaining <= 0:
            return b""
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self.handle.read(size)
        self.remaining -= len(data)
        return data


def run_unit(engine: Engine, unit: WorkUnit) -> tuple[list[Finding], InputStats]:
    """Scan one work unit; line numbers of a range are local (1 = its first line)."""
    stats = InputStats()
    if unit.end is None:
        return engine.scan_source(unit.source, stats), stats
    src = unit.source
    with open(src.path, "rb") as handle:
        lead = max(0, unit.start - HISTORY_BYTES)
        handle.seek(lead)
        history = handle.read(unit.start - lead)
        if lead > 0:
            history = history[history.find(b"\n") + 1:]
        hint = year_hint(src.name, src.mtime, engine.options.year)
        findings = engine.scan_leaf(src.name, _Bounded(handle, unit.end - unit.start), hint, stats, history,
                                    hint.guessed)
    stats.files = 0  # the parent counts the file once
    return findings, stats


_WORKER: Engine | None = None


def _init_worker(rules: RuleSet, options: Options) -> None:
    global _WORKER
    _WORKER = Engine(rules, options)


def _run_in_worker(unit: WorkUnit):
    return run_unit(_WORKER, unit)


def _merge(units: list[WorkUnit], results: list) -> tuple[list[Finding], InputStats]:
    """Combine unit results (consuming them, so a big result is not held twice); shift range
    line numbers by the lines of the ranges before."""
    stats, findings = InputStats(), []
    shift, previous = 0, None
    results.reverse()
    for unit in units:
        found, unit_stats = results.pop()
        if unit.end is not None:
            if previous is not unit.source:
                shift, previous = 0, unit.source
                stats.files += 1
            if shift:
                for i, f in enumerate(found):
                    found[i] = f._replace(line=f.line + shift,
                                          api_line=None if f.api_line is None else f.api_line + shift,
                                          causes=tuple((c[0] + shift, *c[1:]) for c in f.causes))
            shift += unit_stats.lines
        findings.extend(found)
        stats.add(unit_stats)
    return findings, stats


@dataclass
class Analysis:
    """What a triage run produced, as data."""

    findings: list[Finding]
    inputs: InputStats
    rules: RuleSet
    summary: dict = field(default_factory=dict)


def analyze(paths: Iterable[str], rules: RuleSet | None = None, rules_dirs: Iterable[str | Path] = (),
            options: Options | None = None, jobs: int = 1, progress: Progress | None = None) -> Analysis:
    """Scan `paths` (files, folders, archives, `-`) and return findings, input stats and summary.
    The result is the same whatever `jobs` is."""
    from .triage import summarize  # pandas is imported only when a summary is built

    if isinstance(paths, (str, Path)):
        paths = [paths]  # one path, not its characters
    paths = [str(p) for p in paths]
    options = options or Options()
    progress = progress or Progress()
    ruleset = rules or RuleSet.load([Path(d) for d in rules_dirs])
    skipped: list[Skipped] = []
    excluded: list[str] = []
    sources = list(iter_sources(paths, skipped, options.selection, excluded, options.not_these))
    units = plan_units(sources, jobs)
    progress.start(sum(s.size or 0 for s in sources), len(sources))
    results = []
    if jobs > 1 and len(units) > 1 and not any(u.source.path is None for u in units):
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(max_workers=min(jobs, len(units)), initializer=_init_worker,
                                 initargs=(ruleset, options)) as pool:
            mapped = pool.map(_run_in_worker, units)
            import pandas  # noqa: F401 - the workers are forked by now; load it while they scan
            for unit, result in zip(units, mapped):
                results.append(result)
                progress.advance((unit.end - unit.start) if unit.end is not None else (unit.source.size or 0))
                if unit.end is None or unit.end == unit.source.size:
                    progress.file_done()
    else:
        engine = Engine(ruleset, options, progress)
        for unit in units:
            results.append(run_unit(engine, unit))
            progress.file_done()
    progress.finish()
    findings, stats = _merge(units, results)
    stats.skipped[:0] = skipped
    stats.excluded += len(excluded)
    findings.sort(key=sort_key)
    findings = settle_years(findings)
    windowed = apply_window(findings, options.since, options.until)
    stats.outside_window = len(findings) - len(windowed)
    findings = windowed
    analysis = Analysis(findings, stats, ruleset)
    analysis.summary = summarize(findings, ruleset)
    return analysis


def analyze_text(text: str, rules: RuleSet | None = None, name: str = "<text>") -> list[Finding]:
    """Findings of a snippet of log text (rule examples, notebooks)."""
    return analyze_snippet(Engine(rules or RuleSet.load(), Options(prefilter="find")), text, name)


def analyze_snippet(engine: Engine, text: str, name: str = "<text>") -> list[Finding]:
    """Findings of a snippet of log text with an already compiled engine."""
    stats = InputStats()
    found = engine.scan_leaf(name, io.BytesIO(text.encode("utf-8")), None, stats)
    return sorted(found, key=sort_key)


def cpu_count() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
