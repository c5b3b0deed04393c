"""The hot loop: read big binary blocks, find candidate lines with literals, yield only those.

Stage: scan. Nothing here decodes or parses a line that holds no candidate literal. Memory is
bounded by the block size plus the longest line kept (`MAX_LINE`); longer lines are cut into
fragments that keep their line number, so a hit after megabytes of junk is still found.

Two engines give the same candidates (issue #17): the compiled core (`ddtriage_core`, the
`ddtriage-core` distribution built from `core/`) reads the blocks, finds the candidate lines in
one Aho-Corasick pass and numbers them, so Python never loops over the other lines; this module's
own loop is its twin and the fallback. `DDTRIAGE_ENGINE=python|rust|auto` chooses (auto: the core
when it imports).
"""

from __future__ import annotations

import importlib.util
import io
import os
import re
import stat
import sys
from bisect import bisect_right
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, cast

from ..core.observations import VERSION_KINDS
from ..inputs.streams import Reader, SafeStream

# Blocks of a MiB: read into a buffer that stays in cache while it is scanned, and a storm's
# findings handed on a MiB at a time. With 8 MiB blocks a 200,000-finding storm peaked at 170 MiB
# against 83 MiB under the core, and a sparse scan took ~10% more CPU under either engine.
BLOCK_SIZE = 1 << 20
MAX_LINE = 4 << 20  # a line longer than this is scanned in fragments
HISTORY_BYTES = 64 << 10  # what is kept from the previous block for looking back
LOOKBACK_LINES = 40
TEXT_LIMIT = 2000  # characters of a hit line kept in memory (the hit stays inside the window)

# The multi-literal engine that pays on big inputs without the core (perf.md); same results
# without it. Imported when a Python prefilter first scans (~13 ms, a one-line scan's whole
# budget's twentieth), not when the core scans.
HAVE_HYPERSCAN = importlib.util.find_spec("hyperscan") is not None
_hyperscan: ModuleType | None = None


def _load_hyperscan() -> ModuleType:
    global _hyperscan
    if _hyperscan is None:
        import hyperscan

        _hyperscan = hyperscan
    return _hyperscan

ENGINES = ("python", "rust", "auto")
# Threads the compiled core may search and answer one big block in (a library caller's choice;
# the candidates are the same either way). The runner keeps 1 and scans ahead instead.
CORE_THREADS = 1
# Whether the compiled core reads and scans the next block in a thread while Python handles this
# one's candidates: only where a CPU would be idle (the runner sets it: one stream, --jobs N).
SCAN_AHEAD = False


def _resolve_engine() -> tuple[str, ModuleType | None]:
    """The scan engine of this process, from DDTRIAGE_ENGINE; `rust` without the core ends the
    program with one line (no traceback)."""
    choice = (os.environ.get("DDTRIAGE_ENGINE") or "auto").strip().lower()
    if choice not in ENGINES:
        sys.stderr.write(f"ddtriage: error: DDTRIAGE_ENGINE={choice} is not one of python, rust, auto\n")
        raise SystemExit(2)
    if choice == "python":
        return "python", None
    # The core's allocator (mimalloc) reads these once, as it loads: no transparent huge pages for
    # its arenas and freed pages given back at once. Its defaults held a 10,000-file scan's parent
    # at 174 MiB, not 123 (a dense scan's time: +3%). A user's own setting wins.
    for name, value in (("MIMALLOC_ALLOW_THP", "0"), ("MIMALLOC_PURGE_DELAY", "0")):
        os.environ.setdefault(name, value)
    try:
        import ddtriage_core as core
    except ImportError as exc:
        if choice == "rust":
            sys.stderr.write("ddtriage: error: DDTRIAGE_ENGINE=rust, but the compiled core is not installed "
                             f"({exc}); install it with `pip install ./core` (or `make install`)\n")
            raise SystemExit(2) from None
        return "python", None
    return "rust", core


ENGINE, _core = _resolve_engine()


def engine_name() -> str:
    """Which engine scans in this process, for `ddtriage --version`: `rust (ddtriage-core X)` or `python`."""
    return f"rust (ddtriage-core {_core.__version__})" if _core is not None else "python"


# malloc's thresholds under the core (`tune_allocator`): blocks up to 16 MiB come from the heap, and
# up to 32 MiB of freed heap is kept for the next block instead of being faulted in again.
HEAP_BLOCKS = 16 << 20
HEAP_KEPT = 32 << 20
_tuned = False


def tune_allocator() -> None:
    """Once per process where the core scans: let malloc reuse the megabyte blocks a scan frees
    (`ddtriage_core.tune_allocator`; a sparse scan spent a sixth of its time faulting them in).
    Not when the environment sets malloc's thresholds itself (GLIBC_TUNABLES, MALLOC_*_)."""
    global _tuned
    if _tuned or ENGINE != "rust" or _core is None or not hasattr(_core, "tune_allocator"):
        return
    _tuned = True
    env = os.environ
    if "glibc.malloc." in env.get("GLIBC_TUNABLES", "") or any(k.startswith("MALLOC_") for k in env):
        return
    _core.tune_allocator(HEAP_BLOCKS, HEAP_KEPT)


def core_nearby() -> Callable[[str], object] | None:
    """The compiled core's `nearby` regex compiler (`ddtriage_core.Nearby`: a ValueError for a
    pattern it cannot run alike) when the core scans in this process, else None."""
    return _core.Nearby if ENGINE == "rust" and _core is not None else None


def core_finding_lines() -> Callable[..., Any] | None:
    """The compiled core's finding encoder (`ddtriage_core.finding_lines`, the twin of
    `core.serial._fast`) when the core runs in this process, else None."""
    if ENGINE != "rust" or _core is None:
        return None
    return getattr(_core, "finding_lines", None)


def core_chunk_lines() -> Callable[[dict[str, tuple[str, str]]], Callable[..., Any]] | None:
    """What builds the compiled core's renderer of the store's spilled chunks from the rules' texts
    (`ddtriage_core.ChunkLines(rules).render`) when the core runs in this process, else None."""
    if ENGINE != "rust" or _core is None or not hasattr(_core, "ChunkLines"):
        return None
    chunk_lines = _core.ChunkLines
    return lambda rules: chunk_lines(rules).render


def core_codes(spec: Sequence[object]) -> object | None:
    """The compiled core's code forms (`ddtriage_core.Codes`, from `CodeMatcher.core_spec()`) when
    the core scans in this process and reads the patterns alike, else None."""
    if ENGINE != "rust" or _core is None or not hasattr(_core, "Codes"):
        return None
    try:
        return _core.Codes(*spec)
    except ValueError:  # a catalog text or context pattern Rust's regex cannot read: Python's forms
        return None


def core_plog_headers(head: str, tails: Sequence[str]) -> object | None:
    """The compiled core's plog header reader (`ddtriage_core.PlogHeaders`, from
    `core.headers.PLOG_PID_PATTERN` and `CORE_TAILS`) when the core scans in this process and reads
    the grammar alike, else None."""
    if ENGINE != "rust" or _core is None or not hasattr(_core, "PlogHeaders"):
        return None
    key = (head, tuple(tails))
    if key not in _PLOG_READERS:  # compiled once per process
        try:
            _PLOG_READERS[key] = _core.PlogHeaders(head, list(tails))
        except ValueError:  # a grammar Rust's regex cannot read: Python's
            _PLOG_READERS[key] = None
    return _PLOG_READERS[key]


_PLOG_READERS: dict[tuple[str, tuple[str, ...]], object | None] = {}


def core_families(rows: Sequence[object]) -> object | None:
    """The compiled core's neighbour families (`ddtriage_core.Families`, from
    `NeighbourMatcher.core_rows()`) when the core scans in this process, else None."""
    if ENGINE != "rust" or _core is None or not hasattr(_core, "Families"):
        return None
    try:
        return _core.Families(list(rows))
    except ValueError:  # an empty literal or too many families: Python's
        return None


def core_detector(*spec: object) -> object | None:
    """The compiled core's engine tables (`ddtriage_core.Detector`, from `Engine.core_spec()`) when
    the core scans in this process and reads every table alike, else None (Python's engine)."""
    if ENGINE != "rust" or _core is None or not hasattr(_core, "Detector"):
        return None
    try:
        return _core.Detector(*spec)
    except ValueError:  # a pattern or table the core does not read as Python does
        return None


def new_core_stream(*args: object, **kwargs: object) -> Any:
    """A stream's engine in the compiled core (`ddtriage_core.Stream`; see `Engine._scan_native`)."""
    assert _core is not None
    return _core.Stream(*args, **kwargs)


def new_core_unit(cap: int) -> Any:
    """A work unit's tally in the compiled core (`ddtriage_core.UnitTally`, rows kept for at most
    `cap` fingerprints), or None where the core does not run here or has none."""
    if ENGINE != "rust" or _core is None or not hasattr(_core, "UnitTally"):
        return None
    return _core.UnitTally(cap)


def decode(raw: bytes) -> str:
    """Bytes of one line to text: invalid UTF-8 replaced, NUL padding and CR dropped."""
    text = raw.decode("utf-8", errors="replace")
    if "\x00" in text:
        text = text.replace("\x00", "")
    return text.rstrip("\r\n")


@dataclass(slots=True)
class Candidate:
    """A line holding at least one prefilter literal, with lazy access to the lines before it."""

    line_no: int
    offset: int  # byte offset of the line's start in the stream
    raw: bytes
    _buf: bytes
    _start: int  # where this line starts in _buf
    _first_line_no: int  # line number of the first complete line in _buf
    facts_only: bool = False  # holds fact literals only (the prefilter's second tier)

    def text(self) -> str:
        return decode(self.raw)

    def raw_after(self, limit: int) -> bytes:
        """Up to `limit` undecoded bytes after this line, as far as the block read so far holds
        them (a record that spans lines, such as a pretty-printed JSON object)."""
        begin = self._start + len(self.raw) + 1
        return self._buf[begin:begin + limit]

    def raw_since(self, offset: int) -> bytes | None:
        """The undecoded bytes from stream offset `offset` up to this line, when still held."""
        begin = self._start - (self.offset - offset)
        if begin < max(0, self._start - HISTORY_BYTES) or begin > self._start:
            return None
        return self._buf[begin:self._start]

    def raw_before(self, limit: int) -> bytes:
        """The undecoded bytes of up to `limit` lines before this one (same bounds as lookback):
        cheap to test for literals before anything is decoded."""
        floor = max(0, self._start - HISTORY_BYTES)
        limit = min(limit, self.line_no - self._first_line_no)
        if _core is not None and limit > 0:  # the same walk in the core (`lines::begin_back`)
            return self._buf[_core.begin_back(self._buf, self._start, floor, limit):self._start]
        begin = self._start
        while begin > floor and limit > 0:
            begin = self._buf.rfind(b"\n", floor, begin - 1) + 1
            if begin == 0 and floor > 0:
                begin = floor
            limit -= 1
        return self._buf[begin:self._start]

    def lookback(self, limit: int = LOOKBACK_LINES) -> Sequence[tuple[int, str]]:
        """Up to `limit` earlier lines (line number, text), oldest first, from this block and
        the history carried over from the previous one."""
        # Never further back than HISTORY_BYTES, so the answer does not depend on where blocks
        # or parallel byte ranges happen to start.
        floor = max(0, self._start - HISTORY_BYTES)
        limit = min(limit, self.line_no - self._first_line_no)
        buf, line_no = self._buf, self.line_no - 1
        out: list[tuple[int, str]] = []
        if _core is not None and limit > 0:  # the same walk in the core, ASCII lines decoded there
            lines, odd = _core.lines_back(buf, self._start, floor, limit, TEXT_LIMIT * 2, line_no)
            if odd:  # a line that is not ASCII: (begin, end) for `decode`
                lines = [(n, t if t.__class__ is str else decode(buf[t[0]:t[1]][:TEXT_LIMIT * 2])) for n, t in lines]
            return cast(list[tuple[int, str]], lines)
        end = self._start - 1  # the newline that ends the previous line
        while end >= floor and len(out) < limit:
            begin = buf.rfind(b"\n", 0, end) + 1
            if begin < floor:
                break
            out.append((line_no, decode(buf[begin:end][:TEXT_LIMIT * 2])))
            end = begin - 1
            line_no -= 1
        out.reverse()
        return out


class Prefilter:
    """Finds the start offsets of lines that hold any of the literals (or match any of the few
    extra `patterns`, regular expressions for what a literal cannot say, such as JSON's free
    whitespace in `"MESSAGE" : [`).

    `fact_literals` make a line a candidate of the second tier: one read only for the link facts
    it states. Such lines are frequent in a busy connector log, so the engine gives them a path of
    their own, far cheaper than a line that may hold a code; a line holding both is a full one."""

    def __init__(self, literals: Sequence[bytes], engine: str = "auto", patterns: Sequence[bytes] = (),
                 fact_literals: Sequence[bytes] = (), fact_table: Sequence[object] = (),
                 proof_table: Sequence[object] | None = None, header: str | None = None):
        self.literals = tuple(dict.fromkeys(literals))
        self.patterns = tuple(dict.fromkeys(patterns))
        self.fact_literals = tuple(lit for lit in dict.fromkeys(fact_literals) if lit not in self.literals)
        self._regexes = [re.compile(p) for p in self.patterns]
        self.engine = "hyperscan" if engine in ("auto", "hyperscan") and HAVE_HYPERSCAN else "find"
        if engine == "hyperscan" and not HAVE_HYPERSCAN:
            raise RuntimeError("hyperscan is not installed")
        self._db: Any = None  # the hyperscan database, compiled when `tiers` first needs it
        self._full_ids = len(self.literals) + len(self.patterns)  # ids below this: full candidates
        self._matcher: object = None  # the core's compiled prefilter, built on first use (False: not portable)
        # The link-fact table (`LinkFactMatcher.core_table()`): under the core, fact-only lines are
        # matched there and only their facts come back.
        self.fact_table = tuple(fact_table)
        # With the proofs of recovery and the plog header pattern, the core answers a fact-only
        # line whole (a row: line, pid, facts) when it cannot be a proof.
        self.proof_table = None if proof_table is None else tuple(proof_table)
        self.header = header
        self._facts: object = None  # the core's compiled table, built on first use (False: none)
        self.facts_judge_proofs = False  # whether that table holds the proofs (`Facts.maybe_proof`)

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        # the core's objects and hyperscan's database do not pickle: a worker builds its own
        state["_matcher"] = state["_facts"] = state["_db"] = None
        return state

    def core(self) -> object | None:
        """The compiled core's matcher of these literals and patterns, or None where the core is
        missing or cannot say the same (a pattern whose meaning differs in Rust's regex)."""
        if self._matcher is None:
            try:
                self._matcher = _core.Matcher(list(self.literals), list(self.fact_literals),
                                              list(self.patterns)) if _core is not None else False
            except ValueError:
                self._matcher = False
        return self._matcher or None

    def core_facts(self) -> object | None:
        """The compiled core's link-fact table, or None without the core or a table."""
        if self._facts is None:
            self._facts = False
            if _core is not None and self.fact_table:
                proofs = None if self.proof_table is None else list(self.proof_table)
                try:
                    self._facts = _core.Facts(list(self.fact_table), proofs, self.header)
                    self.facts_judge_proofs = proofs is not None
                except ValueError:  # a proof or header the core cannot read: facts only, no rows
                    self._facts = _core.Facts(list(self.fact_table))
        return self._facts or None

    def line_starts(self, buf: bytes, begin: int, end: int) -> list[int]:
        """Sorted, unique start offsets of candidate lines within buf[begin:end] (either tier)."""
        return self.tiers(buf, begin, end)[0]

    def tiers(self, buf: bytes, begin: int, end: int) -> tuple[list[int], set[int]]:
        """(sorted start offsets of every candidate line in buf[begin:end], the starts of those
        that hold fact literals only)."""
        full, facts = self._literal_tiers(buf, begin, end)
        if buf.find(b"\x00", begin, end) != -1:
            self._nul_lines(buf, begin, end, full, facts)
        facts -= full
        return sorted(full | facts), facts

    def _literal_tiers(self, buf: bytes, begin: int, end: int) -> tuple[set[int], set[int]]:
        """The starts of the lines of buf[begin:end] that hold a full-tier literal or pattern, and
        of those that hold a fact literal (a line may be in both)."""
        full: set[int] = set()
        facts: set[int] = set()
        if self._db is None and self.engine == "hyperscan":
            hs = _load_hyperscan()
            db = hs.Database(mode=hs.HS_MODE_BLOCK)
            expressions = ([_hs_escape(lit) for lit in self.literals] + list(self.patterns)
                           + [_hs_escape(lit) for lit in self.fact_literals])
            db.compile(expressions=expressions, ids=list(range(len(expressions))), flags=[0] * len(expressions))
            self._db = db
        if self._db is not None:
            hits: list[tuple[int, int]] = []
            full_ids = self._full_ids

            def on_match(id_: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
                hits.append((to, id_))
                return None

            # Scanning the whole buffer avoids copying the region; matches in the history part
            # (before `begin`) or past `end` are dropped below.
            self._db.scan(buf, match_event_handler=on_match)
            for tier, wanted in ((full, True), (facts, False)):
                seen_until = -1
                for to in sorted(to for to, id_ in hits if (id_ < full_ids) is wanted):
                    pos = to - 1
                    if pos < begin or to > end or pos <= seen_until:
                        continue
                    start = max(buf.rfind(b"\n", begin, pos) + 1, begin)
                    tier.add(start)
                    nl = buf.find(b"\n", pos, end)
                    seen_until = end if nl == -1 else nl
        else:
            for tier, literals in ((full, self.literals), (facts, self.fact_literals)):
                for lit in literals:
                    pos = buf.find(lit, begin, end)
                    while pos != -1:
                        start = buf.rfind(b"\n", begin, pos) + 1
                        tier.add(max(start, begin))
                        nl = buf.find(b"\n", pos, end)
                        if nl == -1:
                            break
                        pos = buf.find(lit, nl + 1, end)
            for regex in self._regexes:
                for m in regex.finditer(buf, begin, end):
                    full.add(max(buf.rfind(b"\n", begin, m.start()) + 1, begin))
        return full, facts

    def _nul_lines(self, buf: bytes, begin: int, end: int, full: set[int], facts: set[int]) -> None:
        """Lines of buf[begin:end] that hold a NUL are searched again without their NULs: text
        read as a line drops them (`decode`), and UTF-16 or UTF-32 text after UTF-8 (a tool
        appended to the log) is ASCII with NULs between its letters. Those lines, NULs dropped,
        are searched as one buffer (a line at a time was 20 us each: minutes for NUL padding)."""
        starts: list[int] = []  # of each such line in `buf`
        at: list[int] = []  # where it begins in `joined`
        parts: list[bytes] = []
        pos, size = begin, 0
        for line in buf[begin:end].split(b"\n"):
            if b"\x00" in line and pos not in full:
                text = line.replace(b"\x00", b"")
                if text:
                    starts.append(pos)
                    at.append(size)
                    parts.append(text)
                    size += len(text) + 1
            pos += len(line) + 1
        if not parts:
            return
        joined = b"\n".join(parts)
        found_full, found_facts = self._literal_tiers(joined, 0, len(joined))
        full.update(starts[bisect_right(at, s) - 1] for s in found_full)
        facts.update(starts[bisect_right(at, s) - 1] for s in found_facts)


def _hs_escape(literal: bytes) -> bytes:
    return b"".join(b"\\x%02x" % b for b in literal)


@dataclass(slots=True)
class ScanCounts:
    lines: int = 0
    bytes: int = 0


# (line number, raw line, its facts when the core found them, else None) of a line with fact
# literals only; under the core a line without facts never reaches it.
FactSink = Callable[[int, bytes, "list[tuple[str, str]] | None"], None]
# A run of fact-only lines the core answered whole (no proof of recovery, some facts, a plog
# header), as what later lines look back at: per pid, ((kind, value, line), ...), the last of each
# kind. Their node's facts the core gathers itself, handed over once at the stream's end.
RowSink = Callable[[tuple[tuple[str, tuple[tuple[str, str, int], ...]], ...]], None]
NodeFactsSink = Callable[[tuple[object, ...]], None]  # `NodeFacts.from_core` reads it


@dataclass(slots=True)
class RelatedCount:
    """A stream whose related errors may go past their cap (`detect.observer`): once the observer
    sets `after` (the line of the last related error it kept), the compiled core answers each
    later line that holds neighbour errors and no code itself, as Python would: its facts as a
    fact-only row, its errors only counted, into `add` (`Observed.related_dropped`). `codes` and
    `families`: the core's tables that the engine's matchers use."""

    codes: object
    families: object
    add: Callable[[int], None]
    after: int | None = None
    # Before the cap: where the core hands each such line it read whole, with its errors (line
    # number, raw line, {pid, at, facts, errors}; `LineObserver.related_row`). None: Python reads them.
    built: Callable[[int, bytes, dict[str, Any]], None] | None = None


def scan_stream(stream: Reader, prefilter: Prefilter, counts: ScanCounts, block_size: int = BLOCK_SIZE,
                max_line: int | None = None, history: bytes = b"", facts: FactSink | None = None,
                engine: str | None = None, fact_rows: RowSink | None = None,
                node_facts: NodeFactsSink | None = None, related: RelatedCount | None = None) -> Iterator[Candidate]:
    """Yield candidate lines of a binary stream with exact 1-based line numbers.

    `history` is text just before the stream (complete lines) that lookback may see: a parallel
    byte range gets the bytes before its start. With `facts`, lines holding fact literals only go
    there (in line order with the candidates yielded, no `Candidate` built) instead of being yielded;
    with `fact_rows` and `node_facts` too, the compiled core hands those it answered whole there:
    what later lines look back at in runs, their node's facts once at the end; and with `related`,
    the lines whose neighbour errors are only counted past their cap (the Python loop yields them).
    `counts` is updated as bytes and lines are consumed, so a caller that stops early (or a read
    error mid-stream) still knows what was read. `engine`: `python` or `rust` (default: this
    process's `ENGINE`); both give the same candidates, counts and errors. `max_line`: MAX_LINE.
    """
    max_line = MAX_LINE if max_line is None else max_line
    if (engine or ENGINE) == "rust":
        if _core is None:
            raise RuntimeError("the compiled core (ddtriage_core) is not installed")
        matcher = prefilter.core()
        if matcher is not None:
            table = prefilter.core_facts() if facts is not None else None
            rows = (fact_rows, node_facts) if facts is not None and fact_rows and node_facts else None
            yield from _scan_core(stream, matcher, counts, block_size, max_line, history, facts, table, rows,
                                  related if rows is not None else None)
            return
    pending = b""  # the incomplete last line of the previous block
    line_no = 1  # number of the first line in `pending`
    offset = 0  # stream offset of the first byte of `pending`
    failure: BaseException | None = None
    while True:
        try:
            chunk = stream.read(block_size)
        except Exception as exc:  # noqa: BLE001 - re-raised below, after the partial line
            failure = exc
            break
        if not chunk:
            break
        counts.bytes += len(chunk)
        # One copy per block: history (for lookback) + the carried partial line + the new bytes.
        buf = b"".join((history, pending, chunk)) if (history or pending) else chunk
        begin = len(history)
        cut = buf.rfind(b"\n", begin)
        if cut == -1:
            if len(buf) - begin < max_line:
                pending = buf[begin:]
                continue
            # One line longer than we keep: scan what we have and carry the tail, cut where no
            # code (with the words before it) can straddle the cut, so each is seen once, whole.
            cut = _fragment_cut(buf, begin, prefilter)
            fragment = buf[begin:cut]
            yield from _candidates(fragment, 0, len(fragment), prefilter, line_no, line_no, offset, facts)
            offset += len(fragment)
            pending, history = buf[cut:], b""
            continue
        end = cut + 1
        first_line_no = line_no - history.count(b"\n")
        yield from _candidates(buf, begin, end, prefilter, line_no, first_line_no, offset, facts)
        lines = buf.count(b"\n", begin, end)  # a C pass; numbering candidates needs no index
        counts.lines += lines
        line_no += lines
        offset += end - begin
        pending = buf[end:]
        history = _tail_lines(buf, begin, end)
    if pending:
        buf = history + pending
        yield from _candidates(buf, len(history), len(buf), prefilter, line_no,
                               line_no - history.count(b"\n"), offset, facts)
        counts.lines += 1  # a final line without a newline (or cut by a break) still counts
    if failure is not None:
        raise failure


def scan_native(stream: Reader, prefilter: Prefilter, counts: ScanCounts, engine: Any,
                node_facts: NodeFactsSink, history: bytes = b"", block_size: int = BLOCK_SIZE,
                max_line: int | None = None) -> Iterator[list[Any]]:
    """`scan_stream` with the engine in the core (`ddtriage_core.Stream`, `engine`): each block's
    findings, in order. The core reads the blocks (a plain file itself), finds the candidates and
    answers fact-only lines as `scan_stream` does, and hands each block over whole; `engine.block`
    reads its lines. The counts move at the same points; the rows' node facts go to `node_facts`
    at the end (or when the scan stops early)."""
    assert _core is not None
    matcher = prefilter.core()
    table = prefilter.core_facts()
    assert matcher is not None and table is not None, "the engine in the core needs the core's prefilter"
    scan = _core.Scan(matcher, block_size, MAX_LINE if max_line is None else max_line, history, facts=table,
                      rows=True, version_kinds=list(VERSION_KINDS), threads=CORE_THREADS)
    scan.native()
    blocks = _scanned_ahead(_core_blocks(scan, stream, block_size))
    try:
        for block, report in blocks:
            nbytes, read, lines_before, handle, _first, _none, lines_after, _done = block
            if read and report is not None:
                report(read)
            counts.bytes += nbytes
            counts.lines += lines_before
            if handle is not None:
                found = engine.block(handle)
                if found:
                    yield found
            counts.lines += lines_after
    finally:
        blocks.close()
        gathered = scan.node_facts()
        if gathered is not None:
            node_facts(gathered)


def _scan_core(stream: Reader, matcher: object, counts: ScanCounts, block_size: int, max_line: int,
               history: bytes, facts: FactSink | None, table: object | None = None,
               rows: tuple[RowSink, NodeFactsSink] | None = None, related: RelatedCount | None = None
               ) -> Iterator[Candidate]:
    """`scan_stream` on the compiled core: the rest of a plain file is read by the core itself,
    any other stream is read here and handed over in blocks. Per block the core returns the
    buffer and the candidate lines only; the counts move at the same points as in the loop above.
    With the link-fact `table` (and a `facts` sink), the core matches fact-only lines itself:
    only those with facts come back, with their facts; with `rows` (a run sink, a node-facts
    sink), those it answered whole come back as runs, and their node's facts at the end (or when
    the scan stops early: what was noted is never lost)."""
    assert _core is not None
    scan = _core.Scan(matcher, block_size, max_line, history, facts=table, rows=rows is not None,
                      version_kinds=list(VERSION_KINDS), threads=CORE_THREADS)
    try:
        yield from _pull_core(scan, stream, counts, block_size, facts, rows[0] if rows else None, related)
    finally:
        gathered = scan.node_facts() if rows is not None else None
        if gathered is not None and rows is not None:
            rows[1](gathered)
        counted = scan.related_counted() if related is not None else 0
        if counted and related is not None:
            related.add(counted)


def _pull_core(core_scan: object, stream: Reader, counts: ScanCounts, block_size: int, facts: FactSink | None,
               fact_rows: RowSink | None, related: RelatedCount | None = None) -> Iterator[Candidate]:
    """`_scan_core`'s loop: the core's blocks to candidates, counts moved as in the Python loop.
    With SCAN_AHEAD, the blocks are read and scanned one ahead in a thread (`scan.ahead`)."""
    blocks = _scanned_ahead(_core_blocks(core_scan, stream, block_size, related))
    try:
        for block, report in blocks:
            nbytes, read, lines_before, buf, first_line_no, cands, lines_after, _done = block
            if read and report is not None:
                report(read)
            counts.bytes += nbytes
            counts.lines += lines_before
            for number, offset, start, raw, facts_only in cands:
                if facts_only is not False:  # True: a fact-only line; a list: its facts; a tuple: rows
                    if facts is not None:  # ... a dict: a line of neighbour errors read whole
                        if facts_only.__class__ is tuple:
                            fact_rows(facts_only)  # type: ignore[misc]  # rows come only with a row sink
                        elif facts_only.__class__ is dict:
                            related.built(number, raw, facts_only)  # type: ignore[union-attr,misc]  # only then
                        else:
                            facts(number, raw, None if facts_only is True else facts_only)
                        continue
                    yield Candidate(number, offset, raw, buf, start, first_line_no, True)
                else:
                    yield Candidate(number, offset, raw, buf, start, first_line_no)
            counts.lines += lines_after
    finally:
        blocks.close()


_Blocks = Generator[tuple[tuple[Any, ...], Callable[[int], None] | None], None, None]


def _scanned_ahead(blocks: _Blocks) -> _Blocks:
    """The core's blocks, the next one read and scanned in a thread (`SCAN_AHEAD`) once two blocks
    were not the stream's end: a small file or an archive's member (one block of lines, then the
    end) starts no thread. 20,000 zip members each started one and waited on it, 6 times slower
    at --jobs 2 than at 1."""
    for _ in range(2):
        block = next(blocks, None)
        if block is None:
            return
        yield block
        if not SCAN_AHEAD or block[0][-1]:  # done: what is left is the stream's end and errors
            yield from blocks
            return
    from .ahead import Ahead

    ahead = Ahead(blocks)
    try:
        yield from ahead
    finally:
        ahead.close()


def _core_blocks(core_scan: object, stream: Reader, block_size: int, related: RelatedCount | None = None
                 ) -> _Blocks:
    """Each block the core hands back (with the progress callback of a plain file it reads), to
    the end of the stream; then the error that ended it, if any (a read error after the blocks
    before it, as the Python loop raises it). Once `related` says the cap is reached, the blocks
    after are scanned counting (when is a matter of timing only: either way, the same answers)."""
    scan = cast(Any, core_scan)
    counting = related is None
    if related is not None and related.built is not None:
        scan.read_related(related.codes, related.families)
    plain: bool | None = None  # True: the rest is read by the core; False: the core could not open it
    report: Callable[[int], None] | None = None
    failure: BaseException | None = None
    while True:
        if not counting and related is not None and related.after is not None:
            scan.count_related(related.codes, related.families, related.after)
            counting = True
        if plain is None:  # a few attribute checks a block, until the peeked head is handed out
            rest = _plain_rest(stream)
            if rest is not None:
                path, dev, ino, offset, limit, report = rest
                plain = bool(scan.open(path, dev, ino, offset, limit))
        if plain:
            block = scan.pull()
        else:
            try:
                chunk = stream.read(block_size)
            except Exception as exc:  # noqa: BLE001 - re-raised below, after the partial line
                failure, chunk = exc, b""
            block = scan.feed(chunk or b"")
        yield block, report
        if block[-1]:
            break
    error = scan.error()
    if error is not None:
        raise error
    if failure is not None:
        raise failure


def _plain_rest(stream: Reader) -> tuple[str, int, int, int, int | None, Callable[[int], None] | None] | None:
    """(path, device, inode, offset, at most how many bytes, progress callback) when every byte
    `stream` has still to give is the rest of a regular file read as it is: the engine's peeked
    head (already handed out) before a plain file's top `SafeStream`, or before a parallel byte
    range of one. Anything else (a decompressed layer, a rejoined stream, a pipe): None, and the
    blocks are read in Python. Only a shortcut: the candidates are the same either way."""
    if getattr(stream, "head", None) != b"" or getattr(stream, "failure", None) is not None:
        return None
    rest = getattr(stream, "rest", None)
    report, limit = None, None
    handle: object
    if isinstance(rest, SafeStream):
        if (rest.budget is not None or rest.compressed is not None or rest._head or rest._error is not None
                or rest._eof):
            return None
        handle = rest.inner
        if not isinstance(handle, io.BufferedReader):  # the engine's progress-reporting reader
            report = getattr(handle, "report", None)
            handle = getattr(handle, "inner", None)
    elif isinstance(getattr(rest, "remaining", None), int) and hasattr(rest, "handle"):  # a byte range
        handle, limit = getattr(rest, "handle", None), getattr(rest, "remaining", None)
    else:
        return None
    if not isinstance(handle, io.BufferedReader) or not isinstance(handle.name, str):
        return None
    if report is not None and not callable(report):
        return None
    try:
        st = os.fstat(handle.fileno())
        offset = handle.tell()
    except (OSError, ValueError):
        return None
    if not stat.S_ISREG(st.st_mode) or st.st_size == 0:  # a pseudo file (/proc) says size 0: read it here
        return None
    return handle.name, st.st_dev, st.st_ino, offset, limit, report


FRAGMENT_TAIL = 256  # bytes carried from one fragment of a long line to the next, at least
CODE_CONTEXT = 128  # how far before a literal the words that make it a code may start


def _fragment_cut(buf: bytes, begin: int, prefilter: Prefilter) -> int:
    """Where to cut a fragment off a line too long to keep: FRAGMENT_TAIL bytes before its end, or
    earlier, CODE_CONTEXT bytes before the first literal near the end (a literal cut in two shows
    whole in the next fragment, with its context; nothing is scanned twice)."""
    cut = len(buf) - FRAGMENT_TAIL
    window = max(begin, cut - FRAGMENT_TAIL)
    for literal in (*prefilter.literals, *prefilter.fact_literals):
        at = buf.find(literal, window)
        if at != -1:
            cut = min(cut, at - CODE_CONTEXT)
    return max(cut, begin + 1)


def _tail_lines(buf: bytes, begin: int, end: int) -> bytes:
    """The complete lines in the last HISTORY_BYTES of buf[begin:end]."""
    if end - begin <= HISTORY_BYTES:
        return buf[begin:end]
    start = end - HISTORY_BYTES
    return buf[buf.find(b"\n", start, end) + 1:end]


def _candidates(buf: bytes, begin: int, end: int, prefilter: Prefilter, line_no: int, first_line_no: int,
                offset: int, facts: FactSink | None) -> Iterator[Candidate]:
    """Candidates in buf[begin:end] (buf[:begin] is history). `offset` is the stream offset of
    buf[begin]; `line_no` the number of its first line."""
    starts, facts_only = prefilter.tiers(buf, begin, end)
    if not starts:
        return
    numbers = []
    counted_to = begin
    for start in starts:  # newlines counted from one candidate to the next: one C pass in all
        line_no += buf.count(b"\n", counted_to, start)
        counted_to = start
        numbers.append(line_no)
    for start, number in zip(starts, numbers, strict=True):
        nl = buf.find(b"\n", start, end)
        raw = buf[start:end if nl == -1 else nl]
        if start in facts_only:
            if facts is not None:
                facts(number, raw, None)
                continue
            yield Candidate(number, offset + start - begin, raw, buf, start, first_line_no, True)
        else:
            yield Candidate(number, offset + start - begin, raw, buf, start, first_line_no)
