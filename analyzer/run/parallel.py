"""Running the engine over many inputs at once: work units, newline-aligned cuts, worker
processes, and merging the units' results back into one sequential-looking result.

Stage: run (work units in processes). A `WorkUnit` is a batch of small whole inputs (batched by bytes, so 10,000 small
logs do not cost 10,000 round trips to a worker), one big input, or one byte range of a big plain
file. Any back end that can call `run_unit(engine, unit)` somewhere and hand the results back in
unit order can run them (`run_units` does it here, in this process or in a local process pool);
`merge` then renumbers range lines and files the runs in a `FindingStore`, so the report is the
same for any number of jobs. A unit's findings come back as runs (`store.Run`): in memory when
few, else spilled by the worker to a temporary file in the store's folder, so neither the worker
nor this process holds a storm's findings.
"""

from __future__ import annotations

import gc
import heapq
import io
import os
import signal
from bisect import bisect_left
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, BinaryIO, cast

from ..core import observations
from ..core.observations import Observed, RelatedKey
from ..core.progress import Progress
from ..core.records import Finding, InputStats, report_key
from ..detect.engine import Counted, Engine
from ..detect.observer import LINK_LINES
from ..diagnose import summary
from ..diagnose.bursts import BurstKey, Bursts
from ..diagnose.summary import MAX_BURSTS
from ..diagnose.tally import Tally
from ..inputs import SafeStream, Source, sniff, unpack, year_hint
from ..inputs.formats import SNIFF_BYTES, lookalike, zip_after_prefix
from ..inputs.own import OWN_REPORT_HEAD, own_document
from ..knowledge.envelopes import HEAD_BYTES, EnvelopeTable
from ..scan import blocks
from ..scan.blocks import HISTORY_BYTES
from .store import FindingStore, Run, RunWriter

if TYPE_CHECKING:
    from concurrent.futures import ProcessPoolExecutor

SPLIT_MIN_BYTES = 32 << 20  # a lone plain file at least this big is split across workers
SEED_BYTES = 4 << 20  # how far before a range's history its link lines are looked for (watch: long lines)
# Below this much input, a scan whose jobs were not asked for runs in this process: starting
# workers (a fork, an engine each, the results pickled back) costs more than they would save.
POOL_MIN_BYTES = 16 << 20
BATCH_BYTES = 8 << 20  # small inputs are batched into units of up to this many bytes ...
BATCHES_PER_JOB = 8  # ... and smaller when that leaves fewer than this many units per job

# A unit's runs of findings, what it read, and (for whole inputs) the tally of its findings,
# made where they were found so that this process need not read them again for the summary.
UnitResult = tuple[list[Run], InputStats, Tally | None]
# Builds an engine; picklable (a module-level function or a functools.partial of `Engine`),
# because each worker process builds its own. Called with `progress=` in this process.
EngineFactory = Callable[..., Engine]


@dataclass(frozen=True)
class WorkUnit:
    """Whole inputs (`source` and `more`), or one newline-aligned byte range [start, end) of a
    big plain file (`source`)."""

    source: Source
    start: int = 0
    end: int | None = None
    more: tuple[Source, ...] = ()  # further whole inputs scanned in the same unit, in plan order

    @property
    def sources(self) -> tuple[Source, ...]:
        """The inputs this unit reads, in order."""
        return (self.source, *self.more)

    @property
    def size(self) -> int:
        """Bytes of input this unit covers (as far as known before reading it)."""
        if self.end is not None:
            return self.end - self.start
        return sum(s.size or 0 for s in self.sources)

    @property
    def ends_source(self) -> bool:
        """Whether this unit finishes its input (a whole input, or the last range of one)."""
        return self.end is None or self.end == self.source.size


def plan_units(sources: list[Source], jobs: int, split: bool = True,
               envelopes: EnvelopeTable | None = None) -> list[WorkUnit]:
    """Units in input order. A big plain-text file that holds at least 1/`jobs` of all the bytes
    (a lone big file, or one node's giant plog in a fleet) is cut into `jobs` line-aligned ranges
    (unless not `split`: `splits_files`; nor when its head shows one of `envelopes`: a record can
    span lines, as CRI and docker partials, pretty JSON and CSV cells do, and the zone a stream
    learns from its envelope stays with the stream); consecutive other inputs are batched up to a byte budget
    (small enough that every job gets several units), so many small files do not each cost a round
    trip to a worker."""
    total = sum(s.size or 0 for s in sources)
    budget = max(1, min(BATCH_BYTES, total // max(1, jobs * BATCHES_PER_JOB)))
    units: list[WorkUnit] = []
    batch: list[Source] = []
    size = 0

    def flush() -> None:
        nonlocal batch, size
        if batch:
            units.append(WorkUnit(batch[0], more=tuple(batch[1:])))
        batch, size = [], 0

    for src in sources:
        if (split and jobs > 1 and src.path is not None and src.size and src.size >= SPLIT_MIN_BYTES
                and src.size * jobs >= total and splittable(src.path, envelopes)):
            flush()
            cuts = aligned_cuts(src.path, src.size, jobs)
            units += [WorkUnit(src, a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
            continue
        if batch and (size + (src.size or 0) > budget or src.is_stdin):
            flush()
        if src.is_stdin:  # stdin is read in this process: a unit of its own
            units.append(WorkUnit(src))
            continue
        batch.append(src)
        size += src.size or 0
    flush()
    return units


def is_plain(path: str) -> bool:
    """Plain text to read in ranges; not a ddtriage report (one unit: the unpacker leaves it out)."""
    try:
        with open(path, "rb") as handle:
            if sniff(SafeStream(handle)) != "text":
                return False
            handle.seek(0)
            head = handle.read(max(OWN_REPORT_HEAD, SNIFF_BYTES))
            # a zip after other bytes is an archive (the unpacker walks it), not text to cut
            return own_document(head[:OWN_REPORT_HEAD]) is None and not zip_after_prefix(head[:SNIFF_BYTES], path, path)
    except OSError:
        return False


def splittable(path: str, envelopes: EnvelopeTable | None = None) -> bool:
    """Plain text to cut into ranges (`is_plain`), read alike whole or cut: not a stream in one of
    `envelopes`, nor one that starts like a compressed file (the unpacker notes that it is read as
    text; a cut file's ranges never pass through it)."""
    if not is_plain(path):
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return False
    return lookalike(head[:SNIFF_BYTES], path) is None and not (envelopes is not None and envelopes.match_head(head))


def splits_files(year: int | None, uses_versions: bool) -> bool:
    """Whether a big file may be cut into ranges: not when what a line means can depend on any
    line before it, for a range cannot know what came before its history. With a bare --year a
    year-less stamp's year counts the New Year crossings since the file's start; a rule's version
    condition is judged on every version its process logged before."""
    return year is None and not uses_versions


def aligned_cuts(path: str, size: int, parts: int) -> list[int]:
    """Byte offsets that split the file into `parts` ranges, each starting at a line start whose
    last LINK_LINES lines lie within the HISTORY_BYTES before it (the history `scan_range` gives a
    range: a finding's link facts come from that many lines of its process before it, however
    long the lines). The newlines are searched in small reads: a line of gigabytes (NUL padding)
    costs no memory; where no such line start falls before the next cut, the two ranges become one."""
    cuts = [0]
    with open(path, "rb") as handle:
        for i in range(1, parts):
            pos = max(cuts[-1], size * i // parts)
            cut = _cut_after(handle, pos, size * (i + 1) // parts)
            if cut is not None:
                cuts.append(cut)
    cuts.append(size)
    return sorted(set(cuts))


def _cut_after(handle: BinaryIO, pos: int, limit: int) -> int | None:
    """The first line start after `pos` (and at most `limit`) that `aligned_cuts` may cut at."""
    # the newlines of the HISTORY_BYTES before pos, then those after it, as they are read
    back = max(0, pos - HISTORY_BYTES)
    handle.seek(back)
    before = handle.read(pos - back)
    newlines = deque((back + i for i in _newlines(before)), maxlen=LINK_LINES + 1)
    while pos < limit:
        piece = handle.read(min(1 << 16, limit - pos))
        if not piece:
            return None
        for i in _newlines(piece):
            newlines.append(pos + i)
            cut = pos + i + 1
            # the range's history holds whole lines starting after cut - HISTORY_BYTES
            if cut <= HISTORY_BYTES or (len(newlines) > LINK_LINES and newlines[0] >= cut - HISTORY_BYTES):
                return cut
        pos += len(piece)
    return None


def _newlines(data: bytes) -> Iterator[int]:
    at = data.find(b"\n")
    while at != -1:
        yield at
        at = data.find(b"\n", at + 1)


class _Bounded(io.RawIOBase):
    """At most `remaining` bytes of an open file, from where it stands."""

    def __init__(self, handle: BinaryIO, remaining: int) -> None:
        self.handle, self.remaining = handle, remaining

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self.remaining <= 0:
            return b""
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self.handle.read(size)
        self.remaining -= len(data)
        return data


class BurstCut:
    """The MAX_BURSTS smallest keys of the bursts a process has sent back whole. The summary keeps
    the first MAX_BURSTS bursts of all units (`Bursts.trim`); once this process alone has sent
    that many with smaller keys, a later unit's burst with a larger key can never be among them,
    and need not travel (a storm's units would otherwise pickle a thousand bursts each). It is
    counted in its group all the same. Sound wherever the run's every unit is merged or the run
    fails, as in a local pool and on Dask: a unit's bursts are the same wherever it runs, and a
    key is remembered once, so a unit Dask runs twice does not count twice."""

    def __init__(self) -> None:
        self.keys: list[BurstKey] = []

    def bound(self) -> BurstKey | None:
        """The key a burst must come before to make the cut (None: any may)."""
        return self.keys[MAX_BURSTS - 1] if len(self.keys) >= MAX_BURSTS else None

    def apply(self, bursts: Bursts) -> None:
        """Drop the kept bursts that cannot make the cut, and remember the keys of the rest."""
        bursts.trim()
        if len(self.keys) >= MAX_BURSTS:
            bound = self.keys[MAX_BURSTS - 1]
            bursts.bursts = [kb for kb in bursts.bursts if kb[0] < bound]
        for key, _ in bursts.bursts:
            at = bisect_left(self.keys, key)
            if at == len(self.keys) or self.keys[at] != key:
                self.keys.insert(at, key)
        del self.keys[MAX_BURSTS:]


class RelatedCut:
    """The same for related errors: the report keeps the first MAX_RELATED of all units in report
    order (`Observed._trim`), so one ordered after MAX_RELATED distinct keys this process has
    already sent can never be among them. It is counted (`related_dropped`), not sent: in a fleet
    most related errors are past the cap, and they were most of what a unit's result pickled."""

    def __init__(self) -> None:
        self.keys: list[RelatedKey] = []  # sorted, distinct, at most MAX_RELATED

    def apply(self, observed: Observed) -> None:
        """Count the related errors of a unit that cannot make the cut, and remember the keys of the rest."""
        cap = observations.MAX_RELATED
        if len(self.keys) >= cap:
            observed.drop_related_after(self.keys[cap - 1])
        if observed.related:
            self.keys = heapq.nsmallest(cap, observed.related_keys().union(self.keys))


@dataclass
class ProcessCut:
    """What one process (a pool worker; a Dask worker thread, per run) has sent back of whole
    units, and so need not send again; None where a unit's result is not merged (watch)."""

    bursts: BurstCut = field(default_factory=BurstCut)
    related: RelatedCut = field(default_factory=RelatedCut)

    def apply(self, tally: Tally, observed: Observed) -> None:
        self.bursts.apply(tally.bursts)
        self.related.apply(observed)


def run_unit(engine: Engine, unit: WorkUnit, spill_dir: str | None = None, cut: ProcessCut | None = None
             ) -> UnitResult:
    """Scan one work unit into runs of findings (spilled to `spill_dir` when large; None: kept in
    memory). Line numbers of a range are local (1 = its first line). `cut`: this process's
    `ProcessCut`, when every result it returns is merged (a range's lines are renumbered at merge,
    so its related errors are never cut)."""
    stats = InputStats()
    writer = RunWriter(spill_dir)
    # A byte range's tally leaves its threads' first bursts to the merge (they may go on from the
    # range before).
    tally = Tally(range_part=unit.end is not None)
    sink = _Batched(writer, tally, leave_guessed=unit.end is None)
    if unit.end is None:
        for source in unit.sources:
            engine.scan_source(source, stats, sink.add, counted=sink)
        sink.finish(cut.bursts.bound() if cut is not None else None)
        sink.tally.bursts.close_all()  # what goes back to this process is closed bursts only
        if cut is not None:
            cut.apply(sink.tally, stats.observed)
        return writer.finish(), stats, sink.tally
    src = unit.source
    assert src.path is not None  # plan_units cuts files only
    with open(src.path, "rb") as handle:
        try:
            scan_range(engine, src, handle, unit.start, unit.end, stats, sink.add, counted=sink)
        finally:
            sink.flush()
    stats.files = 0  # merge counts the file once
    return writer.finish(), stats, sink.tally


class _Batched:
    """A unit's findings to its runs and its tally, a batch at a time: counting them between two
    lines' scans cost twice as much as counting a batch (each evicts the other's data from the
    caches).

    `leave_guessed`: a source with a finding whose year was only guessed is left out of the tally
    (`Tally.leave_out`; the parent counts it once its years are settled, and only it). A source's
    first `HOLD` findings wait until it ends or one of them is guessed; a guessed year after those
    makes the tally unfit, and the parent counts everything again, as without this."""

    SIZE = 2048
    HOLD = 4096

    def __init__(self, writer: RunWriter, tally: Tally, leave_guessed: bool = False) -> None:
        self.writer, self.tally = writer, tally
        self.batch: list[Finding] = []
        self.leave_guessed = leave_guessed
        self._source: str | None = None
        self._held: list[Finding] | None = []  # the current source's findings not yet counted; None: counted
        self._unit: Any = None  # the core's tally of the unit's whole sources it read (`core_unit`)

    def add(self, f: Finding) -> None:
        self.batch.append(f)
        if len(self.batch) >= self.SIZE:
            self.flush()

    @property
    def range_part(self) -> bool:
        """Whether the unit is a byte range (its tally leaves its threads' first bursts open)."""
        return self.tally.bursts.range_part

    @property
    def fingerprint_cap(self) -> int:
        """The tally's cap on rows kept per fingerprint (read late: a test may lower it)."""
        return summary.FINGERPRINT_CAP

    def core_unit(self) -> Any:
        """The compiled core's tally of this unit's whole sources (`ddtriage_core.UnitTally`), made
        on first use and merged into `tally` by `finish`; None without the core."""
        if self._unit is None:
            self._unit = blocks.new_core_unit(self.fingerprint_cap)
        return self._unit

    def keep_all(self, found: list[Finding]) -> None:
        """Findings the engine in the core tallies itself: to the runs only, in order."""
        if self.batch:
            self.flush()
        self.writer.add_all(found)

    def tallied(self, found: tuple[object, ...]) -> None:
        """The tally of one stream the engine in the core read (`Tally.from_core`): a byte range's is
        the unit's; a whole source's joins the unit's, or is left out where a year was guessed."""
        part = Tally.from_core(found)
        if part.bursts.range_part:
            assert not self.tally.count, "a byte range is one stream"
            self.tally = part
        elif part.count:
            source = next(iter(part.sources))
            if self.leave_guessed and part.guessed:
                self.tally.leave_out(source)
            else:
                self.tally.merge(part)

    def flush(self) -> None:
        batch, self.batch = self.batch, []
        self.writer.extend(batch)
        if not self.leave_guessed:
            for f in batch:
                self.tally.add(f)
            return
        tally = self.tally
        for f in batch:
            if f.source != self._source:
                self._release()
                self._source = f.source
            if f.source in tally.untallied:
                continue
            if f.year_guessed:
                tally.leave_out(f.source)
                self._held = []
            elif self._held is None:
                tally.add(f)
            else:
                self._held.append(f)
                if len(self._held) >= self.HOLD:
                    self._release()
                    self._held = None

    def finish(self, bound: BurstKey | None = None) -> None:
        """Count what is still held (the last source's findings), and take the core's tally, its
        kept bursts from `bound` on left out (`BurstCut`: they cannot make the cut)."""
        self.flush()
        self._release()
        if self._unit is not None:
            self.tally.merge(Tally.from_core_unit(self._unit.export(bound)))

    def _release(self) -> None:
        held, self._held = self._held, []
        for f in held or ():
            self.tally.add(f)


def scan_range(engine: Engine, src: Source, handle: BinaryIO, start: int, end: int, stats: InputStats,
               sink: Callable[[Finding], None], counted: Counted | None = None) -> None:
    """Scan the line-aligned byte range [start, end) of an open plain file as a sequential scan
    would see it: its envelope told from the file's head, its first lines looking back at the
    text before `start`. Line numbers are local (1 = the range's first line). Also what
    `ddtriage watch` scans each time a log grows."""
    handle.seek(0)
    head = handle.read(HEAD_BYTES) if start > 0 else None  # the file's envelope, if any
    lead = max(0, start - HISTORY_BYTES)
    handle.seek(lead)
    history = handle.read(start - lead)
    seed = b""
    if lead > 0:
        if history.count(b"\n") <= LINK_LINES:  # long lines: a finding's link lines go further back
            seed = _link_lines_before(handle, lead, history)
            handle.seek(start)
        # whole lines only (none when the line before the range is longer than that)
        history = history[history.find(b"\n") + 1:] if b"\n" in history else b""
    hint = year_hint(src.name, src.mtime, engine.year)
    bounded = cast(BinaryIO, _Bounded(handle, end - start))  # the scanner only calls read()
    engine.scan_leaf(src.name, bounded, hint, stats, history, hint.guessed, src.bundle, sink=sink, head=head,
                     counted=counted, seed=seed)


def _link_lines_before(handle: BinaryIO, lead: int, history: bytes) -> bytes:
    """The whole lines that end where `history` (the bytes from `lead` to a range's start) begins
    to hold whole lines, reaching back to the range's LINK_LINES lines before it: a finding's link
    facts come from that many lines back, however long they are. At most SEED_BYTES are read, and
    none before what `handle` keeps (`kept_from`: watch's window on standard input); b"" when no
    line starts within them."""
    first = history.find(b"\n") + 1 if b"\n" in history else len(history)
    need = LINK_LINES + 1 - history.count(b"\n")
    floor = getattr(handle, "kept_from", 0)
    pieces, pos = [], lead
    while need > 0 and pos > floor and lead - pos < SEED_BYTES:
        size = min(1 << 16, pos - floor)
        pos -= size
        handle.seek(pos)
        piece = handle.read(size)
        pieces.append(piece)
        need -= piece.count(b"\n")
    before = b"".join(reversed(pieces))
    if pos > 0:  # from a line start on
        at = before.find(b"\n")
        if at == -1:
            return b""
        before = before[at + 1:]
    return before + history[:first]


def run_units(units: list[WorkUnit], make_engine: EngineFactory, jobs: int, progress: Progress,
              spill_dir: str | None = None) -> Iterator[UnitResult]:
    """The result of every unit, in unit order, as each is ready: in `jobs` local worker
    processes when there is more than one job and unit (and no unit reads stdin), else one by
    one in this process."""
    if jobs > 1 and len(units) > 1 and not any(s.is_stdin for u in units for s in u.sources):
        from concurrent.futures import ProcessPoolExecutor  # ~15 ms with multiprocessing: only for a pool

        pool = ProcessPoolExecutor(max_workers=min(jobs, len(units)), initializer=_init_worker,
                                   initargs=(make_engine,))
        try:
            results = pool.map(partial(_run_in_worker, spill_dir=spill_dir), units)
            for unit, result in zip(units, results, strict=True):
                yield result
                progress.advance(unit.size)
                for _ in range(len(unit.sources) if unit.ends_source else 0):
                    progress.file_done()
        except BaseException:
            # Ctrl-C, SIGTERM (raised as an exception by the CLI) or a failed unit: stop the
            # workers now, whatever they are blocked on, instead of waiting for their units.
            stop_workers(pool)
            raise
        pool.shutdown()
    else:
        engine = make_engine(progress=progress)
        gc.freeze()  # see _init_worker
        cut = ProcessCut()
        # A compressed input is inflated ahead in a thread only where a CPU would be idle (more jobs
        # than units here); with --jobs 1, or in a pool's busy workers, the thread only competes.
        ahead, unpack.READ_AHEAD = unpack.READ_AHEAD, unpack.READ_AHEAD and jobs > 1
        # So may the compiled core read and scan the next block in a thread while this one's
        # candidates become findings (a lone stream: a .gz, stdin). That thread searches each block
        # alone (CORE_THREADS stays 1): splitting blocks among threads too only lengthened the
        # CPUs' queue (512 MiB .gz, paired: wall 0.965, CPU 0.94 of that).
        scan_ahead, blocks.SCAN_AHEAD = blocks.SCAN_AHEAD, min(jobs, cpu_count()) > 1
        try:
            for unit in units:
                yield run_unit(engine, unit, spill_dir, cut)
                for _ in unit.sources:
                    progress.file_done()
        finally:
            unpack.READ_AHEAD = ahead
            blocks.SCAN_AHEAD = scan_ahead


_WORKER: Engine | None = None  # the engine of this worker process
_CUT = ProcessCut()  # what this worker process sent back


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Kill a pool's worker processes and drop its queued work, without waiting."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # no public way to reach them
    for process in processes:
        with suppress(OSError, ValueError, AttributeError):
            process.kill()
    pool.shutdown(wait=False, cancel_futures=True)
    for process in processes:
        with suppress(OSError, ValueError, AttributeError, AssertionError):
            process.join(1)


def _init_worker(make_engine: EngineFactory) -> None:
    global _WORKER
    # Ctrl-C reaches the whole process group: the parent alone decides, and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the CLI's handler, inherited by fork
    _die_with_parent()
    unpack.READ_AHEAD = False  # each CPU runs a worker: no thread to inflate ahead (see run_units)
    _WORKER = make_engine()
    # The engine's tables (rules, patterns, the catalogue) live as long as the process: out of the
    # collector's generations, so its full collections during a scan no longer walk them.
    gc.freeze()
    _CUT.bursts.keys.clear()  # a fresh worker (forked from a process that may have scanned before)
    _CUT.related.keys.clear()


def _die_with_parent() -> None:
    """Linux: have the kernel send SIGTERM to this worker when its parent dies (even by SIGKILL)."""
    with suppress(OSError, AttributeError):
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _run_in_worker(unit: WorkUnit, spill_dir: str | None = None) -> UnitResult:
    assert _WORKER is not None, "worker not initialised"
    return run_unit(_WORKER, unit, spill_dir, _CUT)


def merge_results(units: list[WorkUnit], results: Iterable[UnitResult],
          store: FindingStore | None = None) -> tuple[FindingStore, InputStats, Tally | None]:
    """File the units' runs (in unit order, as they arrive) in `store`, add up their stats and
    merge their tallies; the runs of a later byte range are shifted by the lines of the ranges
    before it. The tally is None when some unit had none (a byte range) or two units (or two
    members of one) share a source name: then the summary needs the findings read again."""
    store = store if store is not None else FindingStore()
    stats = InputStats()
    tally: Tally | None = Tally()
    shift, previous = 0, None
    file_tally: Tally | None = None  # the ranges so far of the file being cut

    def file_done() -> None:
        nonlocal tally, file_tally
        if tally is not None and file_tally is not None:
            tally.merge(file_tally)
        else:
            tally = None
        file_tally = None

    for unit, (runs, unit_stats, unit_tally) in zip(units, results, strict=True):
        if unit.end is not None:
            if previous is not unit.source:
                if previous is not None:
                    file_done()
                shift, previous, file_tally = 0, unit.source, Tally()
                stats.files += 1
            for run in runs:
                run.shift = shift
            unit_stats.observed.shift(shift)
            # The range's tally goes on from the ranges before; its threads' first bursts are read
            # again from its runs (the findings of its first lines, usually).
            if file_tally is not None and (unit_tally is None or not file_tally.extend(
                    unit_tally, shift, heapq.merge(*runs, key=report_key))):
                file_tally = None
            shift += unit_stats.lines
        elif previous is not None:
            file_done()
            previous = None
        store.add(runs)
        stats.add(unit_stats)
        if unit.end is None:
            if tally is not None and unit_tally is not None:
                tally.merge(unit_tally)
            else:
                tally = None
    if previous is not None:
        file_done()
    return store, stats, (tally if tally is not None and tally.whole else None)


def jobs_for(sources: list[Source]) -> int:
    """The jobs of a scan that did not ask for a number: every CPU once the input pays for them."""
    return cpu_count() if sum(s.size or 0 for s in sources) >= POOL_MIN_BYTES else 1


def cpu_count() -> int:
    """CPUs this process may run on (its affinity where the platform tells it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
