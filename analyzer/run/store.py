"""Findings kept out of memory: sorted runs, spilled to temporary files, replayed in report order.

Stage: run (between the engine and the writers). A storm yields millions of findings; holding them as
objects would cost ~1 KiB each. Instead each work unit's findings become *runs* (sequences
already in report order: source, line, code); a run past `CHUNK` findings is written to a
temporary file in marshalled chunks. `FindingStore` holds the runs (a few small ones in memory,
the rest on disk) and iterates them merged back into report order, one chunk per open run, as
often as asked (the summary pass, then the writer). Its files are deleted by `close()` (or when
the store is garbage collected, or at exit).

    store = FindingStore(spill_dir)
    store.add(runs)            # from `RunWriter.finish()`, in plan order
    for finding in store: ...  # report order, re-iterable
    store.close()
"""

from __future__ import annotations

import heapq
import marshal
import os
import shutil
import tempfile
import weakref
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from operator import attrgetter, gt

from ..core.records import Finding, FindingKey, report_key, shifted

CHUNK = 4096  # findings per marshalled chunk (a few MiB in memory while a run is read back)
MEMORY_BUDGET = 16384  # findings a store keeps in memory before it spills in-memory runs

Transform = Callable[[Finding], "Finding | None"]
# Findings as a run holds them: `Finding`s in memory, plain tuples read back, or a spilled chunk's
# marshalled bytes (a list of such tuples).
Stored = list[Finding] | list[tuple[object, ...]] | bytes
_make = Finding._make
_guessed = attrgetter("year_guessed")


@dataclass(slots=True)
class Run:
    """Findings in report order: in memory (`items`) or in chunks of a spill file."""

    first: FindingKey
    count: int = 0
    guessed: int = 0  # findings whose year was guessed (the time policy settles those)
    items: list[Finding] | None = None
    path: str | None = None
    chunks: list[tuple[int, int]] = field(default_factory=list)  # (offset, length) in `path`
    shift: int = 0  # added to line numbers on reading (later byte ranges of a split file)
    last: FindingKey | None = None  # the last finding's key, unshifted, once the run is complete

    def stored(self, size: int, spilled: bool = False) -> Iterator[Stored]:
        """Its findings as held, lists of at most `size`: not yet shifted, and the read-back ones
        plain tuples (`Finding`'s fields). `spilled`: a chunk on disk comes as its bytes, not read
        (`marshal.loads` of them is a list of those tuples)."""
        if self.items is not None:
            for i in range(0, len(self.items), size):
                yield self.items[i:i + size]
            return
        assert self.path is not None
        with open(self.path, "rb") as handle:
            for offset, length in self.chunks:
                handle.seek(offset)
                data = handle.read(length)
                if spilled:
                    yield data
                    continue
                chunk = marshal.loads(data)
                for i in range(0, len(chunk), size):
                    yield chunk[i:i + size]

    def __iter__(self) -> Iterator[Finding]:
        if self.items is not None:
            found: Iterable[Finding] = self.items
            yield from self._shifted(found)
            return
        assert self.path is not None
        with open(self.path, "rb") as handle:
            for offset, length in self.chunks:
                handle.seek(offset)
                yield from self._shifted(map(_make, marshal.loads(handle.read(length))))

    def _shifted(self, found: Iterable[Finding]) -> Iterator[Finding]:
        if not self.shift:
            yield from found
            return
        shift = self.shift
        for f in found:
            yield shifted(f, shift)

    @property
    def start(self) -> FindingKey:
        """The first finding's key, shifted."""
        return (self.first[0], self.first[1] + self.shift, self.first[2])

    @property
    def end(self) -> FindingKey | None:
        """The last finding's key, shifted; None when not known."""
        return None if self.last is None else (self.last[0], self.last[1] + self.shift, self.last[2])


class RunWriter:
    """Collects one work unit's findings (in scan order) into runs; spills big runs to a file in
    `spill_dir` (None: never spill, e.g. when results travel to another machine)."""

    def __init__(self, spill_dir: str | None = None, chunk: int | None = None) -> None:
        self.spill_dir, self.chunk = spill_dir, chunk or CHUNK
        self.runs: list[Run] = []
        self._buf: list[Finding] = []
        self._run: Run | None = None
        self._last: FindingKey | None = None
        self._file: int | None = None
        self._path: str | None = None
        self._size = 0

    def add(self, f: Finding) -> None:
        key = report_key(f)
        if self._run is None or (self._last is not None and key < self._last):
            self._end_run()  # out of order (an archive's members): a new run
            self._run = Run(first=key)
        self._last = key
        self._buf.append(f)
        self._run.count += 1
        self._run.guessed += f.year_guessed
        if len(self._buf) >= self.chunk and self.spill_dir is not None:
            self._spill()

    def extend(self, found: Iterable[Finding]) -> None:
        for f in found:
            self.add(f)

    def add_all(self, found: list[Finding]) -> None:
        """`add` of each finding, a list at a time: where the list is in report order and goes on
        from the run (the core's findings of a block always are), without Python work per finding."""
        if not found:
            return
        keys = list(map(report_key, found))
        run = self._run
        if run is None or (self._last is not None and keys[0] < self._last) or any(map(gt, keys, keys[1:])):
            self.extend(found)
            return
        self._last = keys[-1]
        run.count += len(found)
        run.guessed += sum(map(_guessed, found))
        buf, chunk = self._buf, self.chunk
        if self.spill_dir is None or len(buf) + len(found) < chunk:
            buf += found
            return
        for f in found:  # across a chunk's end: spilled where `add` would spill
            buf.append(f)
            if len(buf) >= chunk:
                self._spill()
                buf = self._buf

    def _spill(self) -> None:
        assert self._run is not None and self.spill_dir is not None
        if self._file is None:
            self._file, self._path = tempfile.mkstemp(prefix="run-", suffix=".bin", dir=self.spill_dir)
        data = marshal.dumps([tuple(f) for f in self._buf])
        os.write(self._file, data)
        self._run.path = self._path
        self._run.chunks.append((self._size, len(data)))
        self._size += len(data)
        self._buf = []

    def write_run(self, run: Run) -> Run:
        """An in-memory run written to this writer's spill file (the same findings, on disk)."""
        assert run.items is not None
        self._end_run()
        items, self._run = run.items, Run(first=run.first, count=run.count, guessed=run.guessed, shift=run.shift,
                                          last=run.last)
        for i in range(0, len(items), self.chunk):
            self._buf = items[i:i + self.chunk]
            self._spill()
        spilled, self._run = self._run, None
        return spilled

    def _end_run(self) -> None:
        run = self._run
        if run is None:
            return
        run.last = self._last
        if run.chunks:
            if self._buf:
                self._spill()
        else:
            run.items = self._buf
        self._buf = []
        self.runs.append(run)
        self._run = None

    def finish(self) -> list[Run]:
        """The runs, in the order they were written; the spill file is closed (not deleted)."""
        self._end_run()
        if self._file is not None:
            os.close(self._file)
            self._file = None
        return self.runs


class FindingStore:
    """Every finding of a run of the analyzer, re-iterable in report order, held mostly on disk.

    `len()` is the number of findings iteration yields (after the transform, once `count` is
    set). A `transform` (the time policy: settled years, the --since/--until window) is applied
    to each finding as it is read; it returns None to leave a finding out."""

    def __init__(self, spill_dir: str | None = None, budget: int | None = None) -> None:
        self.spill_dir = spill_dir
        self.budget = MEMORY_BUDGET if budget is None else budget
        self.runs: list[Run] = []
        self.raw_count = 0  # findings stored, before the transform
        self.guessed = 0
        self.transform: Transform | None = None
        self.count: int | None = None  # findings after the transform, once known
        self._in_memory = 0
        self._writer: RunWriter | None = None
        self._finalizer = weakref.finalize(self, _remove, spill_dir) if spill_dir else None

    @classmethod
    def of(cls, findings: Iterable[Finding]) -> FindingStore:
        """A store of `findings` (any order), in memory: for tests and small results."""
        store = cls()
        writer = RunWriter()
        writer.extend(sorted(findings, key=report_key))
        store.add(writer.finish())
        return store

    def add(self, runs: Iterable[Run]) -> None:
        """Take runs (in plan order); in-memory runs past the memory budget go to a spill file."""
        for run in runs:
            self.raw_count += run.count
            self.guessed += run.guessed
            if run.items is not None:
                self._in_memory += run.count
                if self._in_memory > self.budget and self.spill_dir is not None:
                    run = self._spill(run)
            self.runs.append(run)

    def _spill(self, run: Run) -> Run:
        if self._writer is None:
            self._writer = RunWriter(self.spill_dir)
        self._in_memory -= run.count
        return self._writer.write_run(run)

    def __len__(self) -> int:
        return self.raw_count if self.count is None else self.count

    def __bool__(self) -> bool:
        return len(self) > 0

    def __iter__(self) -> Iterator[Finding]:
        merged = self.raw()
        if self.transform is None:
            yield from merged
            return
        transform = self.transform
        for f in merged:
            out = transform(f)
            if out is not None:
                yield out

    def raw(self) -> Iterator[Finding]:
        """Every stored finding in report order, without the transform.

        Runs are merged lazily: a run is opened only when its first finding is due, so with runs
        that do not overlap (the usual case: one per source) one chunk is in memory at a time."""
        order = sorted(range(len(self.runs)), key=lambda i: (self.runs[i].start, i))
        pending = [(self.runs[i].start, i) for i in order]
        pending.reverse()  # pop() takes the next run due
        heap: list[tuple[FindingKey, int, Finding, Iterator[Finding]]] = []

        def push(seq: int, it: Iterator[Finding]) -> None:
            for f in it:
                heapq.heappush(heap, (report_key(f), seq, f, it))
                return

        while heap or pending:
            while pending and (not heap or pending[-1] <= heap[0][:2]):
                _, i = pending.pop()
                push(i, iter(self.runs[i]))
            key, seq, f, it = heapq.heappop(heap)
            yield f
            # Stream this run while it stays ahead of every other (no heap work per finding).
            bounds = ([heap[0][:2]] if heap else []) + (pending[-1:])
            bound = min(bounds) if bounds else None
            for f in it:
                k = report_key(f)
                if bound is not None and (k, seq) > bound:
                    heapq.heappush(heap, (k, seq, f, it))
                    break
                yield f

    def stored(self, size: int, spilled: bool = False) -> Iterator[tuple[Stored, int]] | None:
        """Every stored finding in report order, without the transform, as (findings, shift): lists
        of at most `size` as `Run.stored` holds them, whose lines `shift` has still to move
        (`records.shifted`). No work per finding: a writer that encodes a list at a time reads this
        instead of `raw()`. Only where the runs follow one another (each ends before the next
        starts, the usual case: a source or a byte range a run); else None. `spilled`: chunks on
        disk come as their bytes (`Run.stored`)."""
        runs = sorted(self.runs, key=attrgetter("start"))
        for run, after in zip(runs, runs[1:], strict=False):
            end = run.end
            if end is None or end >= after.start:
                return None
        return ((found, run.shift) for run in runs for found in run.stored(size, spilled))

    def close(self) -> None:
        """Delete the spill files."""
        if self._writer is not None:
            self._writer.finish()
        if self._finalizer is not None:
            self._finalizer()


def _remove(path: str | None) -> None:
    if path:
        shutil.rmtree(path, ignore_errors=True)


SPILL_PREFIX = "ddtriage-spill-"


def spill_dir(root: str | None = None) -> str:
    """A new private folder for spill files (the store that gets it deletes it), named after this
    process. Folders that a killed run left behind (their process is gone) are removed first:
    SIGKILL skips every clean-up, and a storm's spill is gigabytes."""
    root = root or tempfile.gettempdir()
    sweep_spills(root)
    return tempfile.mkdtemp(prefix=f"{SPILL_PREFIX}{os.getpid()}-", dir=root)


def sweep_spills(root: str) -> list[str]:
    """Remove the spill folders in `root` whose process no longer runs; return their paths."""
    removed: list[str] = []
    try:
        names = os.listdir(root)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(SPILL_PREFIX):
            continue
        pid = name[len(SPILL_PREFIX):].partition("-")[0]
        if not pid.isdigit() or _alive(int(pid)):
            continue
        path = os.path.join(root, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _alive(pid: int) -> bool:
    """Whether a process runs (or may: one of another user's that we may not signal)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists
        return True
    return True
