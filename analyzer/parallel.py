"""Running the engine over many inputs at once: work units, newline-aligned cuts, worker
processes, and merging the units' results back into one sequential-looking result.

Stage: parallel. A `WorkUnit` is a whole input or one byte range of a big plain file; any back
end that can call `run_unit(engine, unit)` somewhere and hand the results back in unit order can
run them (`run_units` does it here, in this process or in a local process pool); `merge` then
renumbers range lines, so the report is the same for any number of jobs.
"""

from __future__ import annotations

import io
import os
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import BinaryIO, cast

from .engine import Engine
from .inputs import SafeStream, Source, sniff, year_hint
from .progress import Progress
from .records import Finding, InputStats
from .scanner import HISTORY_BYTES

SPLIT_MIN_BYTES = 64 << 20  # a lone plain file at least this big is split across workers

UnitResult = tuple[list[Finding], InputStats]
# Builds an engine; picklable (a module-level function or a functools.partial of `Engine`),
# because each worker process builds its own. Called with `progress=` in this process.
EngineFactory = Callable[..., Engine]


@dataclass(frozen=True)
class WorkUnit:
    """A whole input, or one newline-aligned byte range [start, end) of a big plain file."""

    source: Source
    start: int = 0
    end: int | None = None

    @property
    def size(self) -> int:
        """Bytes of input this unit covers (as far as known before reading it)."""
        return (self.end - self.start) if self.end is not None else (self.source.size or 0)

    @property
    def ends_source(self) -> bool:
        """Whether this unit finishes its input (a whole input, or the last range of one)."""
        return self.end is None or self.end == self.source.size


def plan_units(sources: list[Source], jobs: int) -> list[WorkUnit]:
    """One unit per input; a big plain-text file that holds at least 1/`jobs` of all the bytes
    (a lone big file, or one node's giant plog in a fleet) is cut into `jobs` line-aligned ranges."""
    if jobs <= 1:
        return [WorkUnit(s) for s in sources]
    total = sum(s.size or 0 for s in sources)
    units = []
    for src in sources:
        if (src.path is not None and src.size and src.size >= SPLIT_MIN_BYTES and src.size * jobs >= total
                and _is_plain(src.path)):
            cuts = aligned_cuts(src.path, src.size, jobs)
            units += [WorkUnit(src, a, b) for a, b in zip(cuts, cuts[1:], strict=False) if b > a]
        else:
            units.append(WorkUnit(src))
    return units


def _is_plain(path: str) -> bool:
    try:
        with open(path, "rb") as handle:
            return sniff(SafeStream(handle)) == "text"
    except OSError:
        return False


def aligned_cuts(path: str, size: int, parts: int) -> list[int]:
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


def run_unit(engine: Engine, unit: WorkUnit) -> UnitResult:
    """Scan one work unit; line numbers of a range are local (1 = its first line)."""
    stats = InputStats()
    if unit.end is None:
        return engine.scan_source(unit.source, stats), stats
    src = unit.source
    assert src.path is not None  # plan_units cuts files only
    with open(src.path, "rb") as handle:
        lead = max(0, unit.start - HISTORY_BYTES)
        handle.seek(lead)
        history = handle.read(unit.start - lead)
        if lead > 0:
            history = history[history.find(b"\n") + 1:]
        hint = year_hint(src.name, src.mtime, engine.year)
        bounded = cast(BinaryIO, _Bounded(handle, unit.end - unit.start))  # the scanner only calls read()
        findings = engine.scan_leaf(src.name, bounded, hint, stats, history, hint.guessed, src.bundle)
    stats.files = 0  # merge counts the file once
    return findings, stats


def run_units(units: list[WorkUnit], make_engine: EngineFactory, jobs: int, progress: Progress) -> list[UnitResult]:
    """The result of every unit, in unit order: in `jobs` local worker processes when there is
    more than one job and unit (and no unit reads stdin), else one by one in this process."""
    results: list[UnitResult] = []
    if jobs > 1 and len(units) > 1 and not any(u.source.path is None for u in units):
        with ProcessPoolExecutor(max_workers=min(jobs, len(units)), initializer=_init_worker,
                                 initargs=(make_engine,)) as pool:
            for unit, result in zip(units, pool.map(_run_in_worker, units), strict=False):
                results.append(result)
                progress.advance(unit.size)
                if unit.ends_source:
                    progress.file_done()
    else:
        engine = make_engine(progress=progress)
        for unit in units:
            results.append(run_unit(engine, unit))
            progress.file_done()
    return results


_WORKER: Engine | None = None  # the engine of this worker process


def _init_worker(make_engine: EngineFactory) -> None:
    global _WORKER
    _WORKER = make_engine()


def _run_in_worker(unit: WorkUnit) -> UnitResult:
    assert _WORKER is not None, "worker not initialised"
    return run_unit(_WORKER, unit)


def merge(units: list[WorkUnit], results: list[UnitResult]) -> UnitResult:
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


def cpu_count() -> int:
    """CPUs this process may run on (its affinity where the platform tells it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
