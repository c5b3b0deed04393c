"""The per-stream detection engine: one input or one text stream in, findings out.

Stage: detect (the engine). It runs the stages on one stream in order: scanner (candidate lines) -> patterns
(code hits) -> context (API, generic LLM_FAILED policy) -> neighbours (likely causes) -> rules
(remedy) -> time policy (timestamps), and builds one `Finding` per hit. Everything it compiles
(patterns, prefilter, resolver) is built once per run, or once per worker process.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import KW_ONLY, dataclass, field, replace
from datetime import tzinfo
from functools import partial
from typing import IO, TYPE_CHECKING, Any, BinaryIO, Protocol, cast

from ..core import headers as record_header_grammar
from ..core import observations
from ..core.headers import CORE_TAILS, PLOG_PID_PATTERN, Header, core_grammar, header_for, record_headers
from ..core.observations import VERSION_KINDS, Fact, Observed, Proof, RelatedEvent
from ..core.progress import Progress
from ..core.records import Finding, InputStats, Record, Skipped
from ..inputs import READ_ERRORS, Layout, Limits, Selection, Source, Unpacker, layout_of, year_hint
from ..inputs.streams import Reader, reason
from ..knowledge.catalog import format_code
from ..knowledge.envelopes import HEAD_BYTES
from ..knowledge.families import NeighbourMatcher
from ..knowledge.rules import RuleMatch, RuleSet
from ..knowledge.versions import Versions
from ..scan.blocks import (
    HISTORY_BYTES,
    Candidate,
    Prefilter,
    RelatedCount,
    ScanCounts,
    core_codes,
    core_detector,
    core_families,
    core_nearby,
    core_plog_headers,
    decode,
    new_core_stream,
    scan_native,
    scan_stream,
    tune_allocator,
)
from ..scan.clock import StreamClock
from ..scan.reassembly import Rejoined, peek
from ..scan.unwrap import Unwrapper, clean, texts_of, unwrapped_lookback
from ..scan.unwrap import detect as detect_envelope
from . import observer as line_observer
from .causes import CauseFinder, causes
from .context import API_LOOKBACK_LINES, ApiResolver, GenericPolicy
from .fingerprint import core_masks, finding_fingerprint
from .observer import FINDING_LINK_KINDS, LineObserver, node_of, process_of
from .patterns import GENERIC_FAILED, CodeHit, CodeMatcher

if TYPE_CHECKING:
    from ..inputs import YearHint

# Whether a plain stream's lines are read by the engine in the compiled core where it is built;
# False: by this module's, line by line (the twin the tests compare it with).
NATIVE = True
# A byte range with at least this many findings hands the core's tally of them over (one of fewer is
# tallied in Python: handing a tally over costs more than counting a few). A whole source's tally
# always stays in the core, merged into its unit's (`Counted.core_unit`).
CORE_TALLY_MIN = 256
TEXT_WIDTH = 600  # characters of a hit line kept in a finding
SMALL_READ = 64 << 10  # the least a read of a regular file asks for once its known size is read

Lines = Sequence[tuple[int, str]]
Sink = Callable[[Finding], None]


class Counted(Protocol):
    """Where a stream goes whose findings the engine in the core also tallies: its findings to the
    runs only (`keep_all`, a list at a time), then the stream's tally: a whole source's merged in
    the core into `core_unit()` (`ddtriage_core.UnitTally`, where the core has one), else handed
    to `tallied` (`ddtriage_core.Stream.tally`'s shape, which `diagnose.tally.Tally.from_core`
    reads). `range_part`: the stream is a byte range; `fingerprint_cap`: the tally's cap on rows
    (`diagnose.summary.FINGERPRINT_CAP`)."""

    @property
    def range_part(self) -> bool: ...

    @property
    def fingerprint_cap(self) -> int: ...

    def core_unit(self) -> Any: ...

    def keep_all(self, found: list[Finding]) -> None: ...

    def tallied(self, found: tuple[object, ...]) -> None: ...


def nearby_notes(rules: RuleSet) -> list[tuple[str, str]]:
    """(rules file, note) for each user rule whose `nearby` regex the compiled core cannot run, when
    the core scans in this process (it keeps the timed Python path, with the same answers)."""
    compile_nearby = core_nearby()
    return rules.use_core(compile_nearby) if compile_nearby is not None else []


@dataclass
class Engine:
    """Everything compiled once per run (or per worker): rules, patterns, prefilter, resolver,
    and how inputs are read (unpacking limits, selection, --year, prefilter engine)."""

    rules: RuleSet
    _: KW_ONLY
    limits: Limits = field(default_factory=Limits)
    selection: Selection = field(default_factory=Selection)
    year: int | None = None  # --year: the year year-less stamps start in
    tz: tzinfo | None = None  # --tz: the zone of zone-less stamps
    prefilter_engine: str = "auto"  # auto | hyperscan | find
    node: str | None = None  # --node: the node of logs whose path names none
    fact_tier: bool = True  # False: lines with fact literals only take the full path too (tests compare)
    progress: Progress = field(default_factory=Progress)
    matcher: CodeMatcher = field(init=False)
    neighbours: NeighbourMatcher = field(init=False)
    resolver: ApiResolver = field(init=False)
    prefilter: Prefilter = field(init=False)
    # (code, API, in a result list) -> the rule, for keys whose match never read the nearby text
    _rule_memo: dict[tuple[int, str | None, bool, Versions], RuleMatch] = field(init=False, default_factory=dict)
    _prefilters: dict[str, Prefilter] = field(init=False, default_factory=dict)  # per envelope with prefilter patterns
    _detector: object = field(init=False, default=None)  # the engine in the compiled core (`core_spec`), or None

    def __post_init__(self) -> None:
        self.matcher = CodeMatcher(self.rules.catalog)
        self.resolver = ApiResolver(self.rules.apis)
        self.neighbours = self.rules.neighbours
        self.linkfacts = self.rules.linkfacts
        self.observer = LineObserver(self.linkfacts, self.neighbours, self.rules.recovery)
        # Neighbour errors are reported on their own and link facts come from INFO lines, so both
        # families of literals join the code literals: one prefilter pass still finds them all.
        # Lines with link-fact literals only are the second tier: read for their facts, cheaply (under
        # the core, a fact line without facts never crosses). Proofs of recovery are rare lines
        # (link successes) read in full, so both engines see every one.
        self._literals = (*self.matcher.literals, *(lit.encode() for lit in self.neighbours.literals),
                          *(lit for lit in self.rules.recovery.raw_literals if lit not in self.linkfacts.raw_literals))
        self._fact_literals = tuple(dict.fromkeys(self.linkfacts.raw_literals))
        if not self.fact_tier:
            self._literals, self._fact_literals = (*self._literals, *self._fact_literals), ()
        # Under the core, `nearby` regexes run in Rust's regex where they compile there (issue #17).
        # Which do not is said on stderr (`nearby_notes`), not in the report: both engines' reports
        # are the same.
        compile_nearby = core_nearby()
        if compile_nearby is not None:
            self.rules.use_core(compile_nearby)
        self._fact_table = self.linkfacts.core_table() if self.fact_tier else ()
        self.prefilter = Prefilter(self._literals, self.prefilter_engine, fact_literals=self._fact_literals,
                                   fact_table=self._fact_table, proof_table=self.rules.recovery.core_table(),
                                   header=PLOG_PID_PATTERN)
        # The plog header of each record is read in the core under it (a process-wide reader, set
        # by the engine built last: the grammar is fixed, and both readers give the same answers).
        record_header_grammar.use_core(core_plog_headers(PLOG_PID_PATTERN, CORE_TAILS)
                                       if compile_nearby is not None else None)
        if compile_nearby is not None:  # under the core its table answers the facts of every plain line
            tune_allocator()
            # the prefilter's own table when it has one (the same rows; a frozen table, ~8 ms to compile)
            owner = (self.prefilter if self._fact_table
                     else Prefilter((), "find", fact_table=self.linkfacts.core_table()))
            self.linkfacts.use_core(owner.core_facts(), judges_proofs=owner.facts_judge_proofs)
            self.matcher.use_core(core_codes(self.matcher.core_spec()))  # and it finds the codes of a line
            self.neighbours.use_core(core_families(self.neighbours.core_rows()))  # and neighbour errors
        # ... and, where every table is the core's, the whole engine of a plain stream
        spec = self.core_spec() if compile_nearby is not None else None
        self._detector = core_detector(*spec) if spec is not None else None

    # -- one top-level input ---------------------------------------------------------------
    def scan_source(self, source: Source, stats: InputStats, sink: Sink | None = None,
                    counted: Counted | None = None) -> list[Finding]:
        """Findings of one input (a file, an archive, stdin). Lines and bytes read are added to
        `stats` even when the input breaks half-way; what could not be read is listed. With a
        `sink`, each finding goes there as it is found (and the list returned is empty)."""
        findings: list[Finding] = []
        try:
            opened = source.open()
        except OSError as exc:
            stats.skipped.append(Skipped(source.name, exc.strerror or str(exc)))
            return findings
        # Readers only call read() and close(): a raw reader serves where they expect a file.
        raw = cast(BinaryIO, _ReportingReader(opened, self.progress.advance))
        unpacker = Unpacker(self.limits, self.selection, stats.skipped, stats.notes)
        try:
            for leaf in unpacker.readable_leaves(source.name, raw, source.path, source.mtime):
                hint = year_hint(leaf.name, leaf.mtime, self.year)
                findings.extend(self.scan_leaf(leaf.name, leaf.stream, hint, stats, year_guessed=hint.guessed,
                                               bundle=source.bundle, sink=sink, counted=counted))
        finally:
            if not source.is_stdin:
                raw.close()
        stats.excluded += unpacker.excluded
        return findings

    def scan_leaf(self, name: str, stream: Reader, year: YearHint | None, stats: InputStats,
                  history: bytes = b"", year_guessed: bool = False, bundle: str | None = None,
                  sink: Sink | None = None, head: bytes | None = None, counted: Counted | None = None,
                  seed: bytes = b"") -> list[Finding]:
        """Findings of one stream (a file, an archive member, a byte range after `history`);
        its lines and bytes are added to `stats`, and a read error that stops it is listed.
        `head`: the first bytes of the file a byte range is cut from (its envelope is told there).
        `seed`: whole lines right before `history` that only seed what `history` does (`_seed`).
        `counted`: where the findings go instead of `sink` when the engine in the core reads the
        stream and tallies it too."""
        counts = ScanCounts()
        findings: list[Finding] = []
        add = sink or findings.append
        try:
            for finding in self.scan_stream(name, stream, counts, year, history, year_guessed, bundle, head,
                                            stats.observed, counted, seed):
                add(finding)
        except READ_ERRORS as exc:
            # Whatever was read before the break is kept and accounted for.
            stats.skipped.append(Skipped(name, f"stopped after {counts.lines} lines: {reason(exc)}"))
        stats.files += 1
        stats.lines += counts.lines
        stats.bytes += counts.bytes
        for rule_id, why in self.rules.disabled.items():  # a user regex that ran out of time
            rule = self.rules.by_id[rule_id]
            if Skipped(rule.origin, why) not in stats.skipped:
                stats.skipped.append(Skipped(rule.origin, why))
        return findings

    # -- one text stream ---------------------------------------------------------------------
    def scan_stream(self, name: str, stream: Reader, counts: ScanCounts, year: YearHint | None = None,
                    history: bytes = b"", year_guessed: bool = False, bundle: str | None = None,
                    head: bytes | None = None, observed: Observed | None = None,
                    counted: Counted | None = None, seed: bytes = b"") -> Iterator[Finding]:
        """The findings of one stream, in order. `history` is the text right before a parallel
        byte range: it seeds what the stream's first lines look back at. The stream's envelope,
        if any, is told from its first bytes (`envelopes`): each candidate line is then unwrapped
        to the records it holds, and each record is scanned with its own header. A byte range
        of a file is told by the file's `head`, so every range unwraps alike. Link facts and
        neighbour-family errors of every candidate line go to `observed`."""
        peeked, stream = peek(stream, HEAD_BYTES)
        head = peeked if head is None else head
        unwrapper = detect_envelope(self.rules.envelopes, head, year) if self.rules.envelopes else None
        state = _StreamState(name, layout_of(name), bundle, GenericPolicy(self.resolver),
                             CauseFinder(self.neighbours, year), StreamClock(year, year_guessed, self.tz), year,
                             unwrapper.name if unwrapper else None,
                             observed if observed is not None else Observed())
        if history or seed:  # (lookback never sees `seed`: it goes HISTORY_BYTES back at most)
            self._seed(seed + history, state, unwrapper)
        prefilter = self.prefilter
        rejoined: Rejoined | None = None
        if unwrapper is not None:
            if unwrapper.envelope.partial:
                rejoined = Rejoined(stream, unwrapper.envelope.partial)
                stream = cast(BinaryIO, rejoined)
            if unwrapper.prefilter:
                prefilter = self._prefilters.get(unwrapper.name) or Prefilter(
                    self._literals, self.prefilter_engine, unwrapper.prefilter, self._fact_literals)
                self._prefilters[unwrapper.name] = prefilter
        # Plain lines with fact literals only (no code, no neighbour error) are read for their facts.
        facts = partial(self._fact_line, state) if unwrapper is None and self.fact_tier else None
        rows = partial(self.observer.fact_rows, state, self.node) if facts is not None else None
        gathered = partial(self.observer.core_facts, state, self.node) if facts is not None else None
        if (gathered is not None and line_observer.COUNT_PAST_CAP and prefilter is self.prefilter
                and self.matcher.core is not None and self.neighbours.core is not None):
            state.counting = RelatedCount(self.matcher.core, self.neighbours.core, state.observed.count_dropped,
                                          built=partial(self.observer.related_row, state, self.node)
                                          if line_observer.CORE_READS_RELATED else None)
        if unwrapper is None and facts is not None and gathered is not None and self._native_ok(prefilter):
            yield from self._scan_native(state, stream, prefilter, counts, history, gathered, counted, bool(seed))
            return
        for cand in scan_stream(stream, prefilter, counts, history=history, facts=facts, fact_rows=rows,
                                node_facts=gathered, related=state.counting):
            found = self._candidate(state, cand) if unwrapper is None else self._records(state, cand, unwrapper)
            if len(found) > 1:
                found.sort(key=_code_of)  # report order within a line: by code
            yield from found
        if rejoined is not None:  # bytes read are the file's, not the rejoined text's (same for any --jobs)
            counts.bytes += rejoined.consumed - rejoined.produced

    def _candidate(self, state: _StreamState, cand: Candidate) -> list[Finding]:
        """The findings of a candidate line of a stream without an envelope (unsorted)."""
        text = cand.text()
        if "\x1b" in text:  # colour around a code (rich, glog --colorlogtostderr)
            text = clean(text)
        lookback = _memo(cand.lookback)
        link = self.observer.line(state, cand, text, cand.raw, lookback, None, self.node)
        hits = self.matcher.find(text)
        # A line longer than MAX_LINE comes in fragments of one line number: one finding per code
        # per line, the first fragment's.
        if cand.line_no != state.line_no:
            state.line_no, state.reported = cand.line_no, set()
        if state.reported:
            hits = [h for h in hits if h.value not in state.reported]
        state.reported.update(h.value for h in hits)
        return list(self._line(state, cand, text, lookback, None, link, hits))

    # -- the engine in the compiled core ------------------------------------------------------
    def core_spec(self) -> tuple[object, ...] | None:
        """What the compiled core's engine is built from (`ddtriage_core.Detector`): the core's code
        forms, families and fact table this engine already uses, and every other table as its
        own rule hands it over. None where some part is not the core's."""
        facts = self.prefilter.core_facts() if self._fact_table else None
        if self.matcher.core is None or self.neighbours.core is None or facts is None:
            return None
        if not self.prefilter.facts_judge_proofs:
            return None
        return (self.matcher.core, self.neighbours.core, self.neighbours.core_info(), facts, core_grammar(),
                self.resolver.core_spec(), sorted(FINDING_LINK_KINDS), list(VERSION_KINDS), self.rules.uses_versions,
                core_masks())

    def _native_ok(self, prefilter: Prefilter) -> bool:
        """Whether this stream's lines are read by the engine in the core: its tables were built,
        the stream is plain (the caller says), its prefilter is the engine's own, and related
        errors past the cap are counted (the twin's switch). Under --tz the core asks the stream's
        clock for each stamp it has not seen (`StreamClock.zoned`: Python's zone rules)."""
        return NATIVE and self._detector is not None and prefilter is self.prefilter and line_observer.COUNT_PAST_CAP

    def _scan_native(self, state: _StreamState, stream: Reader, prefilter: Prefilter, counts: ScanCounts,
                     history: bytes, gathered: Callable[[tuple[object, ...]], None],
                     counted: Counted | None = None, seeded: bool = False) -> Iterator[Finding]:
        """`scan_stream`'s loop in the compiled core (`ddtriage_core.Stream`): each block's findings
        come back whole (with `counted`, they go there, and so does the core's tally of them). A
        line the core does not read (not printable ASCII, nor the lines before it) comes here with
        the stream's state (`_decline`); Python reads it, and the core takes the state back before it
        reads a line again. At the end, what
        the core gathered for the unit joins `state.observed`."""
        layout, year = state.layout, state.year
        hint = None if year is None else (
            (year, False, None, None, True) if isinstance(year, int)
            else (year.year, year.guessed, year.written_by, year.near, False))
        engine = new_core_stream(
            self._detector, state.name,
            (layout.node, layout.kind, layout.device, layout.pid, layout.anchored, layout.pod, layout.container),
            state.bundle, self.node, hint, state.clock.year_guessed, observations.MAX_RELATED,
            (self._core_rule, self.rules.recovery.find, partial(self._core_proof, state),
             partial(self._decline, state), state.to_core), Finding, None if counted is None else counted.range_part,
            cap=0 if counted is None else counted.fingerprint_cap, zone=None if self.tz is None else state.clock.zoned)
        if history or seeded:  # what `_seed` noted before the range
            engine.set_state(state.to_core())
        # A whole source's tally joins its unit's in the core (`Counted.core_unit`), and only the
        # unit's crosses to Python. Without one (a byte range), a stream's first findings wait: a
        # stream of few is tallied in Python (cheaper than handing a tally over), one of more by the
        # core's tally (`Tally.from_core`), with every one of them.
        unit = counted.core_unit() if counted is not None and not counted.range_part else None
        held: list[Finding] | None = [] if counted is not None and unit is None else None
        whole = False
        try:
            for found in scan_native(stream, prefilter, counts, engine, gathered, history=history):
                if counted is None:
                    yield from found
                elif held is not None:
                    held.extend(found)
                    if len(held) >= CORE_TALLY_MIN:
                        counted.keep_all(held)
                        held = None
                else:
                    counted.keep_all(found)
            whole = True
        finally:
            if unit is not None:
                engine.tally_into(unit)
            else:
                by_core = counted is not None and (held is None or not whole)
                tally = engine.tally(by_core)
                if counted is not None and tally is not None:
                    if held:
                        counted.keep_all(held)
                    counted.tallied(tally)
            node_facts, related, dropped = engine.finish()
            if node_facts is not None:
                gathered(node_facts)
            node = node_of(layout, None, layout.pod, self.node)
            for line, stamp, family, code, meaning, pid, text, link, guessed in related:
                state.observed.note_related(RelatedEvent(state.name, line, stamp, node, family, code, meaning, pid,
                                                         text, tuple(link), guessed))
            state.observed.related_dropped += dropped
        if held:  # a stream of few findings: the caller's sink tallies them
            yield from held

    def _core_rule(self, value: int, api: str | None, in_cluster: bool, nearby: str,
                   versions: list[tuple[str, str]]) -> tuple[str, str, bool | None, str | None, bool, bool, bool]:
        """`RuleSet.match` for the core's engine: (rule, action, recoverable, the code's name, known,
        generic, whether it read the nearby text: the core remembers the answer only where not)."""
        asked = False

        def text() -> str:
            nonlocal asked
            asked = True
            return nearby
        matched = self.rules.match(value, api, in_cluster, text, tuple(versions))
        code = matched.code
        return (matched.rule.id, matched.rule.action, matched.recoverable, code.name if code else None,
                code is not None, code.generic if code else False, asked)

    @staticmethod
    def _core_proof(state: _StreamState, line: int, stamp: str | None, node: str | None, proof: str,
                    pid: str | None, clusters: tuple[str, ...], addrs: tuple[str, ...], text: str,
                    guessed: bool) -> None:
        state.observed.note_proof(Proof(state.name, line, stamp, node, proof, pid, clusters, addrs, text, guessed))

    def _decline(self, state: _StreamState, row: tuple[object, ...] | None, cand: tuple[int, int, int, bytes, object],
                 buf: bytes, first_line_no: int) -> list[Finding]:
        """A line the core's engine leaves to Python, read with the stream's state (`row`: the
        core's, where it is newer than `state`; the core takes the state back, through
        `_StreamState.to_core`, before it reads a line again): its findings."""
        if row is not None:
            state.from_core(row)
        number, offset, start, raw, tier = cand
        found: list[Finding] = []
        if tier is False:
            found = self._candidate(state, Candidate(number, offset, raw, buf, start, first_line_no))
            if len(found) > 1:
                found.sort(key=_code_of)
        elif tier.__class__ is tuple:  # a fact-only line the core answered whole (its node's facts noted there)
            self.observer.fact_rows(state, self.node, (cast(Any, tier),))
        else:
            self._fact_line(state, number, raw, None if tier is True else cast(list[Fact], tier))
        return found

    def _fact_line(self, state: _StreamState, line_no: int, raw: bytes, found: list[Fact] | None) -> None:
        text = decode(raw)
        if "\x1b" in text:
            text = clean(text)
        self.observer.facts_only(state, self.node, line_no, text, raw, found)

    def _rule_for(self, value: int, api: str | None, in_cluster: bool, nearby_text: Callable[[], str],
                  versions: Versions = ()) -> RuleMatch:
        """`RuleSet.match`, remembered per (code, API, list, versions) when the match did not look at
        the nearby text (no `nearby:` rule was reached): then no other line's context can change it."""
        key = (value, api, in_cluster, versions)
        found = self._rule_memo.get(key)
        if found is not None:
            return found
        asked = False

        def watched() -> str:
            nonlocal asked
            asked = True
            return nearby_text()
        matched = self.rules.match(value, api, in_cluster, watched, versions)
        if not asked:
            self._rule_memo[key] = matched
        return matched

    def _records(self, state: _StreamState, cand: Candidate, unwrapper: Unwrapper) -> list[Finding]:
        """Findings of an enveloped line: every record it holds, every line a record holds
        (a collector may merge a traceback into one record), each its own context."""
        def around() -> tuple[str, str]:
            return decode(cand.raw_before(API_LOOKBACK_LINES * 4)), decode(cand.raw_after(HISTORY_BYTES))
        records = unwrapper.records(cand.text(), around)
        done: list[tuple[str | None, str]] = []  # (pod, text) of the lines before, on this line
        found: list[Finding] = []
        for record in records:
            for text in record.text.split("\n"):
                lookback = _memo(partial(unwrapped_lookback, cand, unwrapper, record.pod, tuple(done)))
                raw = text.encode("utf-8", "replace")
                link = self.observer.line(state, cand, text, raw, lookback, record, self.node)
                # once: on a long joined line it is the scan's main cost (none on a line of fact literals only)
                hits = self.matcher.find(text) if not cand.facts_only else []
                if hits:
                    found.extend(self._line(state, cand, text, lookback, record, link, hits))
                done.append((record.pod, text))
        return found

    def _line(self, state: _StreamState, cand: Candidate, text: str, lookback: Callable[[], Lines],
              record: Record | None, link: tuple[Fact, ...] = (), hits: list[CodeHit] | None = None
              ) -> Iterator[Finding]:
        """Findings of one line (or one record's line): its codes in their context (`hits`: the
        line's codes when the caller has already found them)."""
        hits = self.matcher.find(text) if hits is None else hits
        if not hits:
            return
        year, layout, generic = state.year, state.layout, state.generic
        headers = record_headers(text, year)
        pod = record.pod if record else None
        pod = pod or layout.pod
        if pod:
            headers = tuple(replace(h, pod=pod) for h in headers)
        # Neighbour-family errors (HCCL, runtime, ...) of this process since its previous
        # finding: the likely causes of what this line reports. Two pods are two processes.
        process = process_of(layout, record, headers[0].pid or layout.pid)
        events = state.cause_finder.events(cand, text, lookback, process)
        # A rule's version condition is judged on the versions this process logged before (and on) this line.
        versions: Versions = tuple(sorted((k, v) for k, (v, _) in state.recent.get(process, {}).items()
                                          if k in VERSION_KINDS)) if self.rules.uses_versions else ()

        def nearby_text(lookback: Callable[[], Lines] = lookback, text: str = text) -> str:
            # the burst a `nearby:` rule looks at
            return "\n".join(t for _, t in lookback()[-API_LOOKBACK_LINES:]) + "\n" + text

        for hit in hits:
            header = header_for(headers, hit.start)
            ctx = self.resolver.resolve(text, header, hit.start, lookback, year)
            if hit.form == "generic" and not generic.keeps(ctx, text, cand.line_no, cand.offset, header):
                continue  # the graph engine's own failure, not LLM-DataDist's
            if hit.value != GENERIC_FAILED:
                generic.note_specific(cand.line_no, cand.offset, header)
                state.cause_finder.note_finding(process, cand.line_no, cand.offset + len(cand.raw))
            matched = self._rule_for(hit.value, ctx.api, hit.in_cluster_results, nearby_text, versions)
            rule, code = matched.rule, matched.code
            before = causes(events, header, cand.line_no, hit.value)
            when = state.clock.time_of(header, lookback, record)
            clipped, code_text = _clip(text, hit.start), format_code(hit.value)
            # The node: what the envelope names (a host), else the Ascend layout's (or --node),
            # else the pod; a folder that only holds the log names a node only when no pod does.
            node = node_of(state.layout, record, pod, self.node)
            yield Finding(
                source=state.name, line=cand.line_no, timestamp=when.timestamp,
                code=code_text, name=code.name if code else None,
                api=ctx.api, api_evidence=ctx.evidence, api_line=ctx.line,
                recoverable=matched.recoverable, rule=rule.id, action=rule.action,
                text=clipped, form=hit.form, pid=header.pid or layout.pid, tid=header.tid,
                in_cluster_results=hit.in_cluster_results, known=code is not None,
                generic=code.generic if code else False,
                node=node, kind=layout.kind, device=layout.device,
                year_guessed=when.year_guessed, causes=before, time_hint=when.time_hint,
                fingerprint=finding_fingerprint(code_text, ctx.api, rule.id, clipped), bundle=state.bundle,
                pod=pod, container=(record.container if record else None) or layout.container,
                stream=record.stream if record else None, envelope=state.envelope if record else None,
                envelope_time=record.time if record else None, time_source=when.source, link=link,
            )

    def _seed(self, history: bytes, state: _StreamState, unwrapper: Unwrapper | None) -> None:
        """Specific codes in the bytes before a parallel range, so that echoes and causes right
        after the range start come out exactly as in a sequential scan. (Specific codes are
        always findings; only they bound causes and start echoes, so nothing here depends on
        where the range starts.)"""
        lines = history.count(b"\n")  # history ends at a line start: its last line is line 0
        for cand in scan_stream(io.BytesIO(history), self.prefilter, ScanCounts()):
            line_no, offset = cand.line_no - lines, cand.offset - len(history)
            for record, text in texts_of(cand, unwrapper):
                headers = record_headers(text, state.year)
                pod = (record.pod if record else None) or state.layout.pod
                if pod:
                    headers = tuple(replace(h, pod=pod) for h in headers)
                process = process_of(state.layout, record, headers[0].pid or state.layout.pid)
                if self.linkfacts.maybe_in(cand.raw):  # what findings right after the range start carry
                    # the line's bytes let the core answer (else a range's first worker builds the
                    # hyperscan screen, ~0.15 s, for its history alone)
                    raw = cand.raw if record is None else text.encode("utf-8", "replace")
                    for kind, value in self.linkfacts.find(text, raw):
                        state.recent.setdefault(process, {})[kind] = (value, line_no)
                for hit in self.matcher.find(text):
                    if hit.value != GENERIC_FAILED:
                        state.generic.note_specific(line_no, offset, header_for(headers, hit.start))
                        state.cause_finder.note_finding(process, line_no, offset + len(cand.raw))


def _code_of(f: Finding) -> str:
    return f.code


@dataclass
class _StreamState:
    """What the engine keeps per stream while scanning it."""

    name: str
    layout: Layout
    bundle: str | None
    generic: GenericPolicy
    cause_finder: CauseFinder
    clock: StreamClock
    year: YearHint | None
    envelope: str | None = None
    observed: Observed = field(default_factory=Observed)  # link facts and related errors of the stream
    # process (pod, container, pid) -> kind -> (value, line)
    recent: dict[str | None, dict[str, tuple[str, int]]] = field(default_factory=dict)
    related_noted: int = 0  # related errors noted in `observed` so far (before any trim)
    related_line: int = 0  # the line of the last of them
    counting: RelatedCount | None = None  # past the cap, the compiled core counts related-only lines
    line_no: int = 0  # the line whose codes `reported` holds (a line cut into fragments)
    reported: set[int] = field(default_factory=set)

    def to_core(self) -> tuple[object, ...]:
        """What the engine in the core reads and writes of this state (`ddtriage_core.Stream.set_state`)."""
        roll = self.clock.roll
        return ([(n, o, (h.fmt, h.timestamp, h.pid, h.tid, h.func, h.msg_start, h.start, h.yearless, h.pod))
                 for n, o, h in self.generic.recent],
                [(p, n, e) for p, (n, e) in self.cause_finder.last_seen.items()],
                None if roll is None else (roll.month, roll.years),
                [(p, [(k, v, n) for k, (v, n) in kinds.items()]) for p, kinds in self.recent.items()],
                self.related_noted, self.related_line, self.line_no, sorted(self.reported))

    def from_core(self, row: tuple[object, ...]) -> None:
        """The state as the engine in the core left it (`Stream.state`, `to_core`'s shape)."""
        generic, last_seen, roll, recent, noted, related_line, line_no, reported = cast(tuple[Any, ...], row)
        self.generic.recent.clear()
        self.generic.recent.extend((n, o, Header(*h)) for n, o, h in generic)
        self.cause_finder.last_seen = {p: (n, e) for p, n, e in last_seen}
        if self.clock.roll is not None and roll is not None:
            self.clock.roll.month, self.clock.roll.years = roll
        self.recent = {p: {k: (v, n) for k, v, n in kinds} for p, kinds in recent}
        self.related_noted, self.related_line = noted, related_line
        self.line_no, self.reported = line_no, set(reported)


def _memo(fn: Callable[[], Lines]) -> Callable[[], Lines]:
    """`fn`, called at most once: looking back is paid for only by hits that need it."""
    cache: list[Lines] = []

    def get() -> Lines:
        if not cache:
            cache.append(fn())
        return cache[0]
    return get


def _clip(text: str, at: int) -> str:
    if len(text) <= TEXT_WIDTH:
        return text
    begin = max(0, min(at - TEXT_WIDTH // 3, len(text) - TEXT_WIDTH))
    return ("…" if begin else "") + text[begin:begin + TEXT_WIDTH] + ("…" if begin + TEXT_WIDTH < len(text) else "")


class _ReportingReader(io.RawIOBase):
    """Tells the progress bar how many bytes of the input itself (compressed or not) were read."""

    def __init__(self, inner: IO[bytes], report: Callable[[int], None]) -> None:
        self.inner, self.report = inner, report
        # What a regular file has left: a read is asked no more (and at least SMALL_READ, so a file
        # that grows is still read), as a block-sized read allocated 8 MiB for every small file
        # (a tenth of a bundle of small logs).
        try:
            st = os.fstat(inner.fileno())
            self.left = st.st_size - inner.tell() if stat.S_ISREG(st.st_mode) else None
        except (AttributeError, OSError, ValueError, io.UnsupportedOperation):
            self.left = None

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        left = self.left
        if left is not None and size > SMALL_READ and size > left:
            size = max(left, SMALL_READ)
        data = self.inner.read(size)
        if left is not None:
            self.left = left - len(data)
        self.report(len(data))
        return data

    def close(self) -> None:
        self.inner.close()
        super().close()
