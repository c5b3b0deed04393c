"""Triage: turn the findings into a diagnosis, from aggregates kept while they stream past.

Stage: triage. A `Tally` is fed every finding once, in report order (source, line, code), and
keeps only counts and bounded state: counts by code x API x rule with first/last seen and
sources; by node; by action; by (fingerprint, node) with first/last time and location (the
folded storm rows); and bursts of findings per thread, each with its probable lead (the earliest
specific code; generic LLM_FAILED echoes are counted, not kept), non-recoverable bursts first.
Memory grows with the input's shape (codes, nodes, sources, threads, message templates), never
with the number of findings. Two tallies over disjoint sources merge (`Tally.merge`) into the
tally of everything. Output is a `report.Summary` (frozen records, sorted), so every writer
renders the same diagnosis deterministically.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

from .fleet import FleetTally
from .records import Finding
from .report import (
    LIST_LIMIT,
    MAX_BURSTS,
    ActionRow,
    AlsoCode,
    Burst,
    BurstGroup,
    BurstLead,
    Cause,
    CodeRow,
    FoldedRow,
    NodeRow,
    Summary,
)

if TYPE_CHECKING:
    from .rules import RuleSet

BURST_LINES = 50  # a new burst starts after this many lines without a finding ...
BURST_SECONDS = 2.0  # ... or this long without one (when both ends have timestamps)

Key = tuple[str, int, str]  # a finding's place in the report: (source, line, code)
# Where a burst goes in the report: severe first, then in time order (untimed last); ties keep
# the order bursts were found in (the thread's first finding, then the burst's number in it).
BurstKey = tuple[bool, bool, str, str, int, Key, int]
GroupKey = tuple[bool, str, str | None, str, str | None]  # severe, lead code, API, rule, node


def _burst_key(b: Burst, found: tuple[Key, int]) -> BurstKey:
    return (not b.severe, b.first_seen is None, b.first_seen or "", b.source, b.first_line, *found)


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


def summarize(findings: Iterable[Finding], rules: RuleSet | None = None) -> Summary:
    """The summary block every report shows (`findings` in report order)."""
    tally = Tally()
    for f in findings:
        tally.add(f)
    return tally.summary()


def _seconds(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None


def _key(f: Finding) -> Key:
    return (f.source, f.line, f.code)


class _Names:
    """The distinct sources of a row, counted, with the first LIST_LIMIT (in report order, which
    is sorted by source, so a new source is one that differs from the last): a row of a scan of
    100,000 files keeps ten names, not a set of all of them."""

    __slots__ = ("first", "count", "last")

    def __init__(self) -> None:
        self.first: list[str] = []
        self.count = 0
        self.last: str | None = None

    def add(self, name: str) -> None:
        if name != self.last:
            self.last = name
            self.count += 1
            if len(self.first) < LIST_LIMIT:
                self.first.append(name)

    def merge(self, other: _Names) -> None:
        """Add the names of another tally (of other sources)."""
        self.first = sorted(set(self.first) | set(other.first))[:LIST_LIMIT]
        self.count += other.count

    def bounded(self) -> tuple[tuple[str, ...], int]:
        """(the first LIST_LIMIT names, how many more) as `report.bounded` gives them."""
        return tuple(self.first), self.count - len(self.first)


@dataclass(slots=True)
class _CodeAgg:
    first: Key
    action: str
    recoverable: bool | None
    count: int = 0
    first_seen: str | None = None
    last_seen: str | None = None
    sources: _Names = field(default_factory=_Names)

    def add(self, f: Finding) -> None:
        self.count += 1
        ts = f.timestamp
        if ts:
            if self.first_seen is None or ts < self.first_seen:
                self.first_seen = ts
            if self.last_seen is None or ts > self.last_seen:
                self.last_seen = ts
        self.sources.add(f.source)

    def merge(self, other: _CodeAgg) -> None:
        if other.first < self.first:
            self.first, self.action, self.recoverable = other.first, other.action, other.recoverable
        self.count += other.count
        stamps = [t for t in (self.first_seen, other.first_seen, self.last_seen, other.last_seen) if t]
        self.first_seen, self.last_seen = (min(stamps), max(stamps)) if stamps else (None, None)
        self.sources.merge(other.sources)


@dataclass(slots=True)
class _NodeAgg:
    findings: int = 0
    unrecoverable: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    sources: _Names = field(default_factory=_Names)

    def merge(self, other: _NodeAgg) -> None:
        self.findings += other.findings
        self.unrecoverable += other.unrecoverable
        self.kinds.update(other.kinds)
        self.sources.merge(other.sources)


@dataclass(slots=True)
class _FoldAgg:
    """One (fingerprint, node): the first finding whole, the last one's place and time."""

    first: Finding
    last: Finding
    count: int = 0
    first_seen: str | None = None
    last_seen: str | None = None

    def add(self, f: Finding) -> None:
        self.count += 1
        self.last = f
        ts = f.timestamp or f.time_hint
        if ts:
            if self.first_seen is None or ts < self.first_seen:
                self.first_seen = ts
            if self.last_seen is None or ts > self.last_seen:
                self.last_seen = ts

    def merge(self, other: _FoldAgg) -> None:
        if _key(other.first) < _key(self.first):
            self.first = other.first
        if _key(other.last) > _key(self.last):
            self.last = other.last
        self.count += other.count
        stamps = [t for t in (self.first_seen, other.first_seen, self.last_seen, other.last_seen) if t]
        self.first_seen, self.last_seen = (min(stamps), max(stamps)) if stamps else (None, None)

    def row(self) -> FoldedRow:
        f, last = self.first, self.last
        return FoldedRow(
            fingerprint=f.fingerprint, node=f.node, code=f.code, name=f.name, api=f.api, rule=f.rule,
            action=f.action, recoverable=f.recoverable, count=self.count,
            first_source=f.source, first_line=f.line, last_source=last.source, last_line=last.line,
            first_seen=self.first_seen, last_seen=self.last_seen, text=f.text,
            evidence=f.api_evidence, first_timestamp=f.timestamp)


class _OpenBurst:
    """A burst being built: the findings it needs to name (first, lead, one per other code) and
    counts, never the whole run."""

    __slots__ = ("first", "last_line", "last_seconds", "lead", "count", "echoes", "others", "min_stamp",
                 "max_stamp", "severe_specific", "severe_any", "lead_is_specific")

    def __init__(self, f: Finding, seconds: float | None) -> None:
        self.first = f
        self.lead = f
        self.lead_is_specific = not f.generic
        self.count = 0
        self.echoes = 0  # generic findings other than the lead
        self.others: dict[tuple[str, str, str], Finding] = {}
        self.min_stamp: str | None = None
        self.max_stamp: str | None = None
        self.severe_specific = False
        self.severe_any = False
        self.add(f, seconds)

    def add(self, f: Finding, seconds: float | None) -> None:
        self.count += 1
        self.last_line, self.last_seconds = f.line, seconds
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
                self.others.setdefault((f.code, f.api or "", f.action), f)
        # A traceback's last line has no stamp of its own: it takes its record's time.
        stamp = f.timestamp or f.time_hint
        if stamp:
            if self.min_stamp is None or stamp < self.min_stamp:
                self.min_stamp = stamp
            if self.max_stamp is None or stamp > self.max_stamp:
                self.max_stamp = stamp

    def close(self) -> Burst:
        lead, first = self.lead, self.first
        return Burst(
            source=lead.source, node=lead.node, kind=lead.kind, pid=lead.pid,
            first_line=first.line, last_line=self.last_line,
            first_seen=self.min_stamp, last_seen=self.max_stamp, findings=self.count,
            severe=self.severe_specific if self.lead_is_specific else self.severe_any,
            lead=BurstLead(
                line=lead.line, timestamp=lead.timestamp, inferred_time=lead.time_hint,
                code=lead.code, name=lead.name, api=lead.api, api_evidence=lead.api_evidence,
                recoverable=lead.recoverable, rule=lead.rule, action=lead.action, remedy=lead.remedy,
                text=lead.text),
            echoes=self.echoes,
            # Lower-level errors logged just before the lead: the likely root cause.
            causes=tuple(Cause(line, family, code, meaning) for line, family, code, meaning in lead.causes[:5]),
            also=tuple(AlsoCode(code=f.code, name=f.name, api=f.api, line=f.line, action=f.action,
                                recoverable=f.recoverable) for _, f in sorted(self.others.items())),
        )


class Tally:
    """Aggregates of a stream of findings (fed in report order), enough for the summary."""

    def __init__(self) -> None:
        self.count = 0
        self.unrecoverable = 0
        self.unknown = 0
        self.codes: dict[tuple[str, str, str, str], _CodeAgg] = {}
        self.actions: Counter[str] = Counter()
        self.nodes: dict[str, _NodeAgg] = {}
        self.folds: dict[tuple[str, str | None], _FoldAgg] = {}
        self.open: dict[tuple[str, str | None, str | None], _OpenBurst] = {}
        self.bursts: list[tuple[BurstKey, Burst]] = []  # the first MAX_BURSTS in report order (trimmed lazily)
        self.burst_count = 0
        self.groups: dict[GroupKey, _GroupAgg] = {}
        self._thread_start: dict[tuple[str, str | None, str | None], tuple[Key, int]] = {}
        self._source: str | None = None
        self.fleet = FleetTally()  # per bundle, and each failure across bundles

    def add(self, f: Finding) -> None:
        """Count one finding (each finding once, in report order)."""
        self.count += 1
        bad = f.recoverable is not True
        self.unrecoverable += bad
        self.unknown += f.name is None
        key = (f.code, f.name or "", f.api or "", f.rule)
        agg = self.codes.get(key)
        if agg is None:
            agg = self.codes[key] = _CodeAgg(_key(f), f.action, f.recoverable)
        agg.add(f)
        self.actions[f.action] += 1
        node = self.nodes.get(f.node or "")
        if node is None:
            node = self.nodes[f.node or ""] = _NodeAgg()
        node.findings += 1
        node.unrecoverable += bad
        node.kinds[f.kind] += 1
        node.sources.add(f.source)
        fold = self.folds.get((f.fingerprint, f.node))
        if fold is None:
            fold = self.folds[(f.fingerprint, f.node)] = _FoldAgg(f, f)
        fold.add(f)
        self.fleet.add(f)
        self._add_to_burst(f)

    def _add_to_burst(self, f: Finding) -> None:
        """Runs of findings of one thread (or process) in one source, cut where lines or time
        jump: one operation's failure, its echoes and what it set off in the same thread."""
        if f.source != self._source:  # report order: a source's threads are complete
            self._close_all()
            self._source = f.source
        # two pods never share a thread, whatever their pids (kubectl --prefix interleaves them)
        thread = (f.source, f"{f.pod}/{f.pid}" if f.pod else f.pid, f.tid)
        current = self.open.get(thread)
        seconds = _seconds(f.timestamp)
        if current is not None:
            t0 = current.last_seconds
            gap_time = t0 is not None and seconds is not None and abs(seconds - t0) > BURST_SECONDS
            if f.line - current.last_line > BURST_LINES or gap_time:
                self._close(thread)
                current = None
        if current is None:
            self.open[thread] = _OpenBurst(f, seconds)
            start = self._thread_start.get(thread)
            if start is None:
                self._thread_start[thread] = (_key(f), 0)
        else:
            current.add(f, seconds)

    def _close(self, thread: tuple[str, str | None, str | None]) -> None:
        first, n = self._thread_start[thread]
        self._keep(_burst_key(burst := self.open.pop(thread).close(), (first, n)), burst)
        self._thread_start[thread] = (first, n + 1)

    def _keep(self, key: BurstKey, burst: Burst, count: int = 1, findings: int | None = None,
              first: str | None = None, last: str | None = None) -> None:
        """Count a burst in its group and keep it if it is among the first MAX_BURSTS."""
        self.burst_count += count
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
                self._trim()

    def _trim(self) -> None:
        self.bursts.sort(key=lambda kb: kb[0])
        del self.bursts[MAX_BURSTS:]

    def _close_all(self) -> None:
        for thread in list(self.open):
            self._close(thread)
        self._thread_start.clear()

    def merge(self, other: Tally) -> None:
        """Add the tally of other findings (from other sources) to this one."""
        self._close_all()
        other._close_all()
        self.count += other.count
        self.unrecoverable += other.unrecoverable
        self.unknown += other.unknown
        for key, agg in other.codes.items():
            mine = self.codes.get(key)
            if mine is None:
                self.codes[key] = agg
            else:
                mine.merge(agg)
        self.actions.update(other.actions)
        self.fleet.update(other.fleet)
        for name, node in other.nodes.items():
            if name in self.nodes:
                self.nodes[name].merge(node)
            else:
                self.nodes[name] = node
        for fkey, fold in other.folds.items():
            if fkey in self.folds:
                self.folds[fkey].merge(fold)
            else:
                self.folds[fkey] = fold
        self.bursts += other.bursts
        self._trim()
        self.burst_count += other.burst_count
        for gkey, group in other.groups.items():
            if gkey in self.groups:
                self.groups[gkey].add(group.key, group.first, group.bursts, group.findings, group.first_seen,
                                      group.last_seen)
            else:
                self.groups[gkey] = group

    def summary(self) -> Summary:
        """The summary of everything added so far."""
        self._close_all()
        if not self.count:
            return Summary()
        codes = [CodeRow(code, name or None, api or None, rule, agg.action, agg.recoverable, agg.count,
                         agg.first_seen, agg.last_seen, f"{agg.first[0]}:{agg.first[1]}", *agg.sources.bounded())
                 for (code, name, api, rule), agg in self.codes.items()]
        # Non-recoverable first, then most frequent, then by code for a stable order.
        codes.sort(key=lambda r: (r.recoverable is True, -r.count, r.code, r.api or "", r.rule))
        actions = sorted((ActionRow(a, n) for a, n in self.actions.items()), key=lambda r: (-r.count, r.action))
        nodes = tuple(NodeRow(name or None, n.findings, n.unrecoverable, tuple(sorted(n.kinds.items())),
                              *n.sources.bounded())
                      for name, n in sorted(self.nodes.items()))
        # Bursts holding something not known to be recoverable first; then in time order (untimed
        # last), so the story reads forward.
        self._trim()
        bursts = [b for _, b in self.bursts]
        groups = tuple(BurstGroup(g.first, g.bursts, g.findings, g.first_seen, g.last_seen)
                       for g in sorted(self.groups.values(), key=lambda g: g.key))
        folded = sorted((fold.row() for fold in self.folds.values()),
                        key=lambda r: (r.first_source, r.first_line, r.code, r.node or ""))
        bundles, more_bundles = self.fleet.bundle_rows()
        prints, more_prints = self.fleet.fingerprint_rows()
        return Summary(findings=self.count, unrecoverable=self.unrecoverable, unknown_codes=self.unknown,
                       codes=tuple(codes), actions=tuple(actions), nodes=nodes, bursts=tuple(bursts),
                       bundles=bundles, more_bundles=more_bundles, fingerprints=prints, more_fingerprints=more_prints,
                       folded=tuple(folded), burst_count=self.burst_count, burst_groups=groups)
