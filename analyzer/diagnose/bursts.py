"""Bursts: runs of findings of one thread, cut where lines or time jump, each with its lead.

Stage: diagnose (bursts). One operation's failure, its echoes and what it set off in the same
thread make a burst. A `Bursts` tracker is fed findings in report order and keeps, per open
thread, only what a burst names (its first finding, its lead, one finding per other code) and
counts; of the closed bursts it keeps the first MAX_BURSTS in report order whole and counts
every burst in its group (same lead code, API, rule, node and severity), so a storm's 100,000
bursts cost a thousand records and a few dozen groups. Trackers of disjoint sources merge, and
so do the trackers of a file's byte ranges, in order (`extend`): a range's tracker leaves each
thread's first burst open-ended (it may go on from the range before) and the merge feeds that
burst's findings again, so a split file needs no second pass over its findings.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from ..core.records import Finding, FindingKey, process_key, report_key, shifted
from ..core.times import seconds
from .incidents import BurstLinks
from .summary import MAX_BURSTS, AlsoCode, Burst, BurstGroup, BurstLead, Cause

BURST_LINES = 50  # a new burst starts after this many lines without a finding ...
BURST_SECONDS = 2.0  # ... or this long without one (when both ends have timestamps)

# Where a burst goes in the report: severe first, then in time order (untimed last); ties keep
# the order bursts were found in (the thread's first finding, then the burst's number in it).
BurstKey = tuple[bool, bool, str, str, int, FindingKey, int]
GroupKey = tuple[bool, str, str | None, str, str | None]  # severe, lead code, API, rule, node
Thread = tuple[str, str | None, str | None]  # source, process, tid


def thread_of(f: Finding) -> Thread:
    """The thread a finding's burst belongs to: two pods never share one, whatever their pids
    (kubectl --prefix interleaves them)."""
    return (f.source, process_key(f.pod, f.container, f.pid), f.tid)


def _burst_key(b: Burst, found: tuple[FindingKey, int]) -> BurstKey:
    return (not b.severe, b.first_seen is None, b.first_seen or "", b.source, b.first_line, *found)


def _open_key(b: _OpenBurst, found: tuple[FindingKey, int]) -> BurstKey:
    """`_burst_key` of the burst `b.close()` would build."""
    return (not b.severe, b.min_stamp is None, b.min_stamp or "", b.lead.source, b.first.line, *found)


@dataclass(slots=True)
class _GroupAgg:
    key: BurstKey
    first: Burst
    bursts: int = 0
    findings: int = 0
    first_seen: str | None = None
    last_seen: str | None = None

    def add(self, key: BurstKey, b: Burst, count: int, findings: int, first: str | None, last: str | None) -> None:
        if key < self.key:
            self.key, self.first = key, b
        self.bursts += count
        self.findings += findings
        if first and (self.first_seen is None or first < self.first_seen):
            self.first_seen = first
        if last and (self.last_seen is None or last > self.last_seen):
            self.last_seen = last



class _OpenBurst:
    """A burst being built: the findings it needs to name (first, lead, one per other code) and
    counts, never the whole run."""

    __slots__ = ("first", "last_line", "last_code", "last_seconds", "lead", "count", "echoes", "repeats", "others",
                 "min_stamp", "max_stamp", "severe_specific", "severe_any", "lead_is_specific", "links")

    def __init__(self, f: Finding, seconds: float | None) -> None:
        self.first = f
        self.lead = f
        self.lead_is_specific = not f.generic
        self.count = 0
        self.echoes = 0  # generic findings other than the lead
        self.repeats = 0  # the lead's failure again (same code, API and rule): counted, not listed as "also"
        self.others: dict[tuple[str, str, str], Finding] = {}
        self.min_stamp: str | None = None
        self.max_stamp: str | None = None
        self.severe_specific = False
        self.severe_any = False
        self.links = BurstLinks()  # what incidents need of the whole run, bounded
        self.add(f, seconds)

    def add(self, f: Finding, seconds: float | None) -> None:
        self.count += 1
        self.last_line, self.last_code, self.last_seconds = f.line, f.code, seconds
        self.links.add(f)
        bad = f.recoverable is not True
        self.severe_any |= bad
        if f.generic:
            if f is not self.lead:
                self.echoes += 1
        else:
            self.severe_specific |= bad
            if not self.lead_is_specific:  # the first specific code becomes the lead
                if self.lead is not f and self.lead.generic:
                    self.echoes += 1  # the generic first finding is now an echo
                self.lead, self.lead_is_specific = f, True
            elif f is not self.lead:
                lead = self.lead
                if (f.code, f.api, f.rule) == (lead.code, lead.api, lead.rule):
                    self.repeats += 1
                else:
                    self.others.setdefault((f.code, f.api or "", f.action), f)
        # A traceback's last line has no stamp of its own: it takes its record's time.
        stamp = f.timestamp or f.time_hint
        if stamp:
            if self.min_stamp is None or stamp < self.min_stamp:
                self.min_stamp = stamp
            if self.max_stamp is None or stamp > self.max_stamp:
                self.max_stamp = stamp

    @property
    def severe(self) -> bool:
        return self.severe_specific if self.lead_is_specific else self.severe_any

    def close(self) -> Burst:
        lead, first = self.lead, self.first
        return Burst(
            source=lead.source, node=lead.node, kind=lead.kind, pid=lead.pid,
            first_line=first.line, last_line=self.last_line,
            first_seen=self.min_stamp, last_seen=self.max_stamp, findings=self.count,
            severe=self.severe,
            lead=BurstLead(
                line=lead.line, timestamp=lead.timestamp, inferred_time=lead.time_hint,
                code=lead.code, name=lead.name, api=lead.api, api_evidence=lead.api_evidence,
                recoverable=lead.recoverable, rule=lead.rule, action=lead.action,
                text=lead.text),
            echoes=self.echoes,
            repeats=self.repeats,
            # Lower-level errors logged just before the lead: the likely root cause.
            causes=tuple(Cause(line, family, code, meaning) for line, family, code, meaning in lead.causes[:5]),
            also=tuple(AlsoCode(code=f.code, name=f.name, api=f.api, line=f.line, action=f.action,
                                recoverable=f.recoverable) for _, f in sorted(self.others.items())),
            **self.links.fields(),
        )


class Bursts:
    """The bursts of a stream of findings (fed in report order)."""

    def __init__(self, range_part: bool = False) -> None:
        self.open: dict[Thread, _OpenBurst] = {}
        self.bursts: list[tuple[BurstKey, Burst]] = []  # the first MAX_BURSTS in report order (trimmed lazily)
        self.count = 0
        self.groups: dict[GroupKey, _GroupAgg] = {}
        # per thread: its first finding's key and the number of its burst now open
        self._thread_start: dict[Thread, tuple[FindingKey, int]] = {}
        self._source: str | None = None
        # A byte range of a file (`range_part`, lines local): each thread's first burst is neither
        # kept nor counted, only where it ends (`first_ends`: its last finding's line and code (the
        # thread's next burst may begin on that line, a flattened block's later record), None while it is
        # open); `extend` feeds its findings to the tracker of the ranges before. `ambiguous`:
        # bursts of two threads began on one line, where the order of the renumbered bursts could
        # differ from a sequential tally's (then the findings are tallied again).
        self.range_part = range_part
        self.first_ends: dict[Thread, tuple[int, str] | None] = {}
        self.ambiguous = False
        self._started: tuple[int, Thread | None] = (0, None)  # line and thread of the last burst begun
        # Once trimmed: the largest key kept. A later burst past it is never among the first
        # MAX_BURSTS (at least that many have smaller keys), so it is counted but never built.
        self._cutoff: BurstKey | None = None

    def add(self, f: Finding) -> None:
        """Runs of findings of one thread (or process) in one source, cut where lines or time
        jump: one operation's failure, its echoes and what it set off in the same thread."""
        if f.source != self._source:  # report order: a source's threads are complete
            self.close_all()
            self._source = f.source
        thread = thread_of(f)
        current = self.open.get(thread)
        when = seconds(f.timestamp)
        if current is not None:
            t0 = current.last_seconds
            gap_time = t0 is not None and when is not None and abs(when - t0) > BURST_SECONDS
            if f.line - current.last_line > BURST_LINES or gap_time:
                self._close(thread)
                current = None
        if current is None:
            self.open[thread] = _OpenBurst(f, when)
            start = self._thread_start.get(thread)
            if start is None:
                self._thread_start[thread] = (report_key(f), 0)
            if self.range_part:
                if start is None:
                    self.first_ends[thread] = None
                line, other = self._started
                self.ambiguous |= line == f.line and other != thread
                self._started = (f.line, thread)
        else:
            current.add(f, when)

    def _close(self, thread: Thread) -> None:
        first, n = self._thread_start[thread]
        if self.range_part and n == 0:  # may go on from the range before: `extend` feeds it again
            b = self.open.pop(thread)
            self.first_ends[thread] = (b.last_line, b.last_code)
        else:
            self._keep_open(_open_key(b := self.open.pop(thread), (first, n)), b)
        self._thread_start[thread] = (first, n + 1)

    def _keep_open(self, key: BurstKey, b: _OpenBurst) -> None:
        """`keep` of the burst `b` closes to, built only where it is kept or leads its group."""
        lead = b.lead
        group = self.groups.get((b.severe, lead.code, lead.api, lead.rule, lead.node))
        if group is not None and key >= group.key and self._cutoff is not None and key > self._cutoff:
            self.count += 1
            group.add(key, group.first, 1, b.count, b.min_stamp, b.max_stamp)
            return
        burst = b.close()
        self.keep(key, burst)

    def keep(self, key: BurstKey, burst: Burst, count: int = 1, findings: int | None = None,
              first: str | None = None, last: str | None = None) -> None:
        """Count a burst in its group and keep it if it is among the first MAX_BURSTS."""
        self.count += count
        lead = burst.lead
        gkey = (burst.severe, lead.code, lead.api, lead.rule, burst.node)
        group = self.groups.get(gkey)
        if group is None:
            group = self.groups[gkey] = _GroupAgg(key, burst)
        group.add(key, burst, count, burst.findings if findings is None else findings,
                  burst.first_seen if count == 1 else first, burst.last_seen if count == 1 else last)
        if count == 1:
            self.bursts.append((key, burst))
            if len(self.bursts) >= 2 * MAX_BURSTS:
                self.trim()

    def trim(self) -> None:
        self.bursts.sort(key=lambda kb: kb[0])
        del self.bursts[MAX_BURSTS:]
        if len(self.bursts) == MAX_BURSTS:
            self._cutoff = self.bursts[-1][0]

    def close_all(self) -> None:
        for thread in list(self.open):
            self._close(thread)
        self._thread_start.clear()

    def merge(self, other: Bursts) -> None:
        """Add the bursts of other findings (from other sources)."""
        self.close_all()
        other.close_all()
        self.bursts += other.bursts
        # Trimmed lazily, as `keep` does: a sort at every merge cost the merges of many small tallies dearly.
        if len(self.bursts) >= 2 * MAX_BURSTS:
            self.trim()
        self.count += other.count
        for gkey, group in other.groups.items():
            if gkey in self.groups:
                self.groups[gkey].add(group.key, group.first, group.bursts, group.findings, group.first_seen,
                                      group.last_seen)
            else:
                self.groups[gkey] = group

    def extend(self, part: Bursts, shift: int, findings: Iterable[Finding]) -> bool:
        """Go on with the next byte range of the same source: `part` is that range's tracker
        (`range_part`, its lines local; consumed), `findings` its findings renumbered by the
        `shift` lines before it, in report order. The result is what feeding this tracker every
        finding of the range would give. False (nothing changed): `part` is ambiguous."""
        if part.ambiguous:
            return False
        starts = part._thread_start
        if len({first for first, _ in starts.values()}) < len(starts):
            return False  # two threads' first findings share a key (one line, one code)
        ends = part.first_ends
        if ends:  # each thread's first burst, in report order with the others'
            last = None if None in ends.values() else max(e for e in ends.values() if e is not None)
            for f in findings:
                local = (f.line - shift, f.code)
                if last is not None and local > last:
                    break
                end = ends.get(thread_of(f), (-1, ""))
                if end is None or local <= end:
                    self.add(f)
        # Later bursts: renumbered after this tracker's bursts of the same thread.
        base: dict[FindingKey, tuple[FindingKey, int]] = {}  # local first key -> (first key, number of burst 1)
        for thread, (local_first, n) in starts.items():
            if n == 0:
                continue  # only its first burst, fed above
            self._close(thread)  # the first burst ended inside the range
            first, number = self._thread_start[thread]
            base[local_first] = (first, number - 1)
            self.open[thread] = _shift_open(part.open[thread], shift)
            self._thread_start[thread] = (first, number - 1 + n)

        def rekey(key: BurstKey) -> BurstKey:
            first, offset = base[key[5]]
            return (key[0], key[1], key[2], key[3], key[4] + shift, first, offset + key[6])
        for key, burst in part.bursts:
            self.bursts.append((rekey(key), shift_burst(burst, shift)))
            if len(self.bursts) >= 2 * MAX_BURSTS:
                self.trim()
        self.count += part.count
        for gkey, group in part.groups.items():
            key, first_burst = rekey(group.key), shift_burst(group.first, shift)
            mine = self.groups.get(gkey)
            if mine is None:
                self.groups[gkey] = _GroupAgg(key, first_burst, group.bursts, group.findings, group.first_seen,
                                              group.last_seen)
            else:
                mine.add(key, first_burst, group.bursts, group.findings, group.first_seen, group.last_seen)
        return True

    def result(self) -> tuple[tuple[Burst, ...], tuple[BurstGroup, ...]]:
        """The bursts kept (most severe first, then in time order, so the story reads forward)
        and every burst's group, in the same order."""
        self.close_all()
        self.trim()
        groups = tuple(BurstGroup(_named(g.first), g.bursts, g.findings, g.first_seen, g.last_seen)
                       for g in sorted(self.groups.values(), key=lambda g: g.key))
        return tuple(_named(b) for _, b in self.bursts), groups


def from_core(found: tuple[Any, ...], source: str | None) -> Bursts:
    """The bursts of one source as the compiled core's tally counted them (`Stream.tally`): what
    feeding these findings to `Bursts.add` gives (`core/src/tally.rs` is its twin)."""
    range_part, count, ambiguous, started, kept, groups, starts, ends, open_ = found
    b = from_core_unit(count, kept, groups, built=True)
    b.range_part, b.ambiguous, b._started = range_part, ambiguous, (started[0], started[1])
    b._thread_start = dict(starts)
    b.first_ends = {thread: None if end is None else (end[0], end[1]) for thread, end in ends}
    b.open = {thread: _open_burst(fields) for thread, fields in open_}
    b._source = source  # the source its findings came from (None: none came)
    return b


def from_core_unit(count: int, kept: list[Any], groups: list[Any], built: bool = False) -> Bursts:
    """The closed bursts of a work unit's sources as the compiled core merged them
    (`ddtriage_core.UnitTally`): what `merge` of their trackers gives. A burst stays the core's
    tuple of fields until `result` names it (most of a unit's never make the cut), unless `built`."""
    b = Bursts()
    b.count = count
    make: Any = _burst if built else tuple
    b.bursts = [(key, make(fields)) for key, fields in kept]
    for key, fields, bursts, findings, first_seen, last_seen in groups:
        lead = fields[10]  # _burst's order: severe, lead (code, API, rule), node
        gkey = (fields[9], lead[3], lead[5], lead[8], fields[1])
        b.groups[gkey] = _GroupAgg(key, make(fields), bursts, findings, first_seen, last_seen)
    return b


def _named(b: Burst | tuple[Any, ...]) -> Burst:
    """A kept burst as the summary names it (`from_core_unit` leaves some as the core's fields)."""
    return _burst(b) if isinstance(b, tuple) else b


def _links(prints: list[str], req_ids: list[str], peers: list[tuple[str | None, str | None]],
           by_code: list[tuple[tuple[str, str | None], int]]) -> BurstLinks:
    links = BurstLinks()
    links.prints = dict.fromkeys(prints)
    links.req_ids = dict.fromkeys(req_ids)
    links.peers = dict.fromkeys(peers)
    links.by_code.update(dict(by_code))
    return links


def _burst(fields: tuple[Any, ...]) -> Burst:
    (source, node, kind, pid, first_line, last_line, first_seen, last_seen, findings, severe, lead, echoes, causes,
     also, links, repeats) = fields
    return Burst(source=source, node=node, kind=kind, pid=pid, first_line=first_line, last_line=last_line,
                 first_seen=first_seen, last_seen=last_seen, findings=findings, severe=severe, lead=BurstLead(*lead),
                 echoes=echoes, repeats=repeats, causes=tuple(Cause(*c) for c in causes),
                 also=tuple(AlsoCode(*a) for a in also), **_links(*links).fields())


def _open_burst(fields: tuple[Any, ...]) -> _OpenBurst:
    b = _OpenBurst.__new__(_OpenBurst)
    (b.first, b.last_line, b.last_code, b.last_seconds, b.lead, b.count, b.echoes, b.repeats, others, b.min_stamp,
     b.max_stamp, b.severe_specific, b.severe_any, b.lead_is_specific, links) = fields
    b.others = {tuple(k): f for k, f in others}
    b.links = _links(*links)
    return b


def shift_burst(b: Burst, lines: int) -> Burst:
    """A burst of a later byte range, renumbered by the `lines` before it."""
    if not lines:
        return b
    return replace(b, first_line=b.first_line + lines, last_line=b.last_line + lines,
                   lead=replace(b.lead, line=b.lead.line + lines),
                   causes=tuple(replace(c, line=c.line + lines) for c in b.causes),
                   also=tuple(replace(a, line=a.line + lines) for a in b.also))


def _shift_open(b: _OpenBurst, lines: int) -> _OpenBurst:
    """An open burst of a later byte range, renumbered in place."""
    if lines:
        lead_is_first = b.lead is b.first
        b.first = shifted(b.first, lines)
        b.lead = b.first if lead_is_first else shifted(b.lead, lines)
        b.others = {k: shifted(f, lines) for k, f in b.others.items()}
        b.last_line += lines
    return b
