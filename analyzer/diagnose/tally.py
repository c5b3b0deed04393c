"""Triage: turn the findings into a diagnosis, from aggregates kept while they stream past.

Stage: diagnose (the tally). A `Tally` is fed every finding once, in report order (source, line, code), and
keeps only counts and bounded state: counts by code x API x rule with first/last seen and
sources; by node; by action; by (fingerprint, node) with first/last time and location (the
folded storm rows); and bursts of findings per thread (`bursts.Bursts`), each with its probable lead (the earliest
specific code; generic LLM_FAILED echoes are counted, not kept), non-recoverable bursts first.
Memory grows with the input's shape (codes, nodes, sources, threads), never with the number of
findings; rows per fingerprint are kept for at most `summary.FINGERPRINT_CAP` fingerprints (the
smallest: a bottom-k sample, the same however the findings are split and merged). Two tallies
over disjoint sources merge (`Tally.merge`) into the tally of everything, and the tallies of a
file's byte ranges, in order, into the file's (`Tally.extend`). Output is a `report.Summary`
(frozen records, sorted), so every writer renders the same diagnosis deterministically.
"""

from __future__ import annotations

from bisect import insort
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.records import Finding, FindingKey, report_key, shifted
from . import summary as _summary
from .bursts import Bursts
from .bursts import from_core as bursts_from_core
from .bursts import from_core_unit as bursts_from_core_unit
from .fleet import FleetTally
from .summary import LIST_LIMIT, ActionRow, CodeRow, FoldedRow, NodeRow, Summary

if TYPE_CHECKING:
    pass


def _rows_before_cut() -> int:
    """Rows kept before they are cut back to FINGERPRINT_CAP (cutting at each new row would sort
    them each time)."""
    return _summary.FINGERPRINT_CAP + _summary.FINGERPRINT_CAP // 4


def summarize(findings: Iterable[Finding]) -> Summary:
    """The summary block every report shows (`findings` in report order)."""
    tally = Tally()
    for f in findings:
        tally.add(f)
    return tally.summary()


class _Names:
    """The distinct sources of a row, counted, with the LIST_LIMIT smallest: a row of a scan of
    100,000 files keeps ten names, not a set of all of them. A source's findings come together
    (a new source is one that differs from the last), in any order of sources."""

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
                insort(self.first, name)
            elif name < self.first[-1]:  # sources of a work unit can come in any order
                insort(self.first, name)
                self.first.pop()

    def merge(self, other: _Names) -> None:
        """Add the names of another tally (of other sources)."""
        self.first = sorted(set(self.first) | set(other.first))[:LIST_LIMIT]
        self.count += other.count

    def bounded(self) -> tuple[tuple[str, ...], int]:
        """(the first LIST_LIMIT names, how many more) as `report.bounded` gives them."""
        return tuple(self.first), self.count - len(self.first)


@dataclass(slots=True)
class _CodeAgg:
    first: FindingKey
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
        if f.source != self.sources.last:  # a source's first finding may come before the row's first
            key = report_key(f)
            if key < self.first:
                self.first, self.action, self.recoverable = key, f.action, f.recoverable
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
        last = self.last
        if f.source == last.source or f.source > last.source:  # within a source, in report order
            self.last = f
        if f.source < self.first.source:
            self.first = f
        ts = f.timestamp or f.time_hint
        if ts:
            if self.first_seen is None or ts < self.first_seen:
                self.first_seen = ts
            if self.last_seen is None or ts > self.last_seen:
                self.last_seen = ts

    def merge(self, other: _FoldAgg) -> None:
        if report_key(other.first) < report_key(self.first):
            self.first = other.first
        if report_key(other.last) > report_key(self.last):
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


class Tally:
    """Aggregates of a stream of findings (fed in report order), enough for the summary."""

    def __init__(self, range_part: bool = False) -> None:
        self.count = 0
        self.unrecoverable = 0
        self.unknown = 0
        self.codes: dict[tuple[str, str, str, str], _CodeAgg] = {}
        self.actions: Counter[str] = Counter()
        self.nodes: dict[str, _NodeAgg] = {}
        self.folds: dict[tuple[str, str | None], _FoldAgg] = {}
        self.bursts = Bursts(range_part)  # range_part: a byte range of a file, for `extend`
        self.fleet = FleetTally(capped=True)  # per bundle, and each failure across bundles
        # The sources seen, and whether each came in one piece (a name met again after another
        # source, e.g. two archive members of one name, makes the tally unfit to merge).
        self.sources: set[str] = set()
        self.whole = True
        self._source: str | None = None
        self._at: tuple[int, str] = (0, "")
        # Per node, the first finding (in report order) whose timestamp has a sure year, and that
        # stamp: where the related errors' guessed years should land.
        self.sure: dict[str | None, tuple[FindingKey, str]] = {}
        self.guessed = 0  # findings counted whose year was only guessed (the time policy may move them)
        # Sources whose findings this tally leaves out (`leave_out`): they are counted once their
        # guessed years are settled, by whoever holds them all (`run.finish`).
        self.untallied: set[str] = set()
        # The rows kept per fingerprint (`folds`, `fleet.prints`) are capped (`summary.FINGERPRINT_CAP`):
        # once more were seen, those of the smallest fingerprints are kept, and `largest` is the
        # largest of them (None: never capped): a finding of a larger one is counted everywhere
        # but in a row. A row kept is whole: a fingerprint dropped once had `cap` smaller ones
        # before it, so it can never be among the smallest again. Merges keep the smallest of
        # both (a bottom-k sample): the rows are the same whatever the order, --jobs or engine.
        self.largest: str | None = None
        self._lazy_cap = _rows_before_cut()  # read late: a test may lower the cap

    def add(self, f: Finding) -> None:
        """Count one finding (each finding once; a source's findings together and in report order,
        sources in any order)."""
        at = (f.line, f.code)
        if f.source != self._source:
            self.whole &= f.source not in self.sources
            self.sources.add(f.source)
            self._source = f.source
        elif at < self._at:  # back to an earlier line: two inputs of one name
            self.whole = False
        self._at = at
        self.guessed += f.year_guessed
        if f.timestamp and not f.year_guessed:
            sure = self.sure.get(f.node)
            if sure is None or f.source < sure[0][0]:
                self.sure[f.node] = (report_key(f), f.timestamp)
        self.count += 1
        bad = f.recoverable is not True
        self.unrecoverable += bad
        self.unknown += f.name is None
        key = (f.code, f.name or "", f.api or "", f.rule)
        agg = self.codes.get(key)
        if agg is None:
            agg = self.codes[key] = _CodeAgg(report_key(f), f.action, f.recoverable)
        agg.add(f)
        self.actions[f.action] += 1
        node = self.nodes.get(f.node or "")
        if node is None:
            node = self.nodes[f.node or ""] = _NodeAgg()
        node.findings += 1
        node.unrecoverable += bad
        node.kinds[f.kind] += 1
        node.sources.add(f.source)
        row = self.largest is None or f.fingerprint <= self.largest
        if row:
            fold = self.folds.get((f.fingerprint, f.node))
            if fold is None:
                fold = self.folds[(f.fingerprint, f.node)] = _FoldAgg(f, f)
            fold.add(f)
        self.fleet.add(f, row)
        if row and self._over():
            self.cap_rows()
        self.bursts.add(f)

    def _over(self) -> bool:
        """Whether the rows kept passed what is kept before a cut (`_rows_before_cut`)."""
        return len(self.fleet.prints) > self._lazy_cap or len(self.folds) > 2 * self._lazy_cap

    def cap_rows(self) -> None:
        """Keep the rows of the smallest fingerprints, as many as keep within FINGERPRINT_CAP
        fingerprints and twice that many folded rows (a fingerprint has one per node): the same
        fingerprints whatever the order, as each bound only falls as rows come in (`largest` set:
        there were more)."""
        cap = _summary.FINGERPRINT_CAP
        rows: Counter[str] = Counter(key for key, _ in self.folds)
        for key in self.fleet.prints:
            rows.setdefault(key, 0)
        if len(rows) <= cap and len(self.folds) <= 2 * cap:
            return
        kept, folded, largest = 0, 0, ""
        for key in sorted(rows):
            if kept + 1 > cap or folded + rows[key] > 2 * cap:
                break
            kept, folded, largest = kept + 1, folded + rows[key], key
        self.largest = largest
        self._keep_rows()

    def _keep_rows(self) -> None:
        """Drop the rows of the fingerprints after `largest`."""
        largest = self.largest
        if largest is not None:
            self.fleet.keep_rows(largest)
            self.folds = {key: fold for key, fold in self.folds.items() if key[0] <= largest}

    @classmethod
    def from_core(cls, found: tuple[Any, ...]) -> Tally:
        """The tally of one source as the compiled core counted it (`ddtriage_core.Stream.tally`,
        `core/src/tally.rs`): what feeding its findings to `add` gives (a whole source's bursts
        closed, a byte range's left open for `extend`)."""
        (source, count, unrecoverable, unknown, whole, at, guessed, codes, actions, nodes, folds, bundles, prints,
         sure, bursts, largest) = found
        tally = cls()
        tally.largest = largest
        tally.bursts = bursts_from_core(bursts, source)
        tally.count, tally.unrecoverable, tally.unknown, tally.whole, tally.guessed = (
            count, unrecoverable, unknown, whole, guessed)
        if source is None:
            return tally
        tally.sources, tally._source, tally._at = {source}, source, (at[0], at[1])

        def one() -> _Names:
            names = _Names()
            names.add(source)
            return names
        for key, (first, action, recoverable, n, first_seen, last_seen) in codes:
            tally.codes[key] = _CodeAgg(first, action, recoverable, n, first_seen, last_seen, one())
        tally.actions = Counter(dict(actions))
        for name, findings, bad, kinds in nodes:
            tally.nodes[name] = _NodeAgg(findings, bad, Counter(dict(kinds)), one())
        for key, first, last, n, first_seen, last_seen in folds:
            tally.folds[key] = _FoldAgg(first, last, n, first_seen, last_seen)
        tally.fleet = FleetTally.from_core(bundles, prints)
        tally.sure = {node: (key, stamp) for node, (key, stamp) in sure}
        return tally

    @classmethod
    def from_core_unit(cls, found: tuple[Any, ...]) -> Tally:
        """The tally of a work unit's whole sources as the compiled core merged them
        (`ddtriage_core.UnitTally`, `core/src/tally.rs`'s `Unit`): what `merge` of their tallies
        and `leave_out` of those with a guessed year give."""
        (sources, untallied, whole, guessed, count, unrecoverable, unknown, codes, actions, nodes, folds, bundles,
         prints, sure, bursts, largest) = found
        tally = cls()
        tally.largest = largest
        tally.sources, tally.untallied, tally.whole, tally.guessed = set(sources), set(untallied), whole, guessed
        tally.count, tally.unrecoverable, tally.unknown = count, unrecoverable, unknown

        def names(first: list[str], n: int) -> _Names:
            out = _Names()
            out.first, out.count = first, n
            return out
        for key, (first, action, recoverable, n, first_seen, last_seen, listed, counted) in codes:
            tally.codes[key] = _CodeAgg(first, action, recoverable, n, first_seen, last_seen, names(listed, counted))
        tally.actions = Counter(dict(actions))
        for name, findings, bad, kinds, listed, counted in nodes:
            tally.nodes[name] = _NodeAgg(findings, bad, Counter(dict(kinds)), names(listed, counted))
        for key, first, last, n, first_seen, last_seen in folds:
            tally.folds[key] = _FoldAgg(first, last, n, first_seen, last_seen)
        tally.fleet = FleetTally.from_core(bundles, prints)
        tally.sure = {node: (key, stamp) for node, (key, stamp) in sure}
        tally.bursts = bursts_from_core_unit(*bursts)
        return tally

    def leave_out(self, source: str) -> None:
        """Count no finding of `source` (its years are still to be settled): the tally is then of
        every other source. One already counted in part makes the tally unfit (`whole`)."""
        self.whole &= source not in self.sources
        self.untallied.add(source)

    def merge(self, other: Tally) -> None:
        """Add the tally of other findings (from other sources) to this one."""
        self.whole &= other.whole and (self.sources | self.untallied).isdisjoint(other.sources | other.untallied)
        self.sources |= other.sources
        self.untallied |= other.untallied
        self.guessed += other.guessed
        self._source = None
        for where, sure in other.sure.items():
            if where not in self.sure or sure[0] < self.sure[where][0]:
                self.sure[where] = sure
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
        self._merged_cap(other)
        self.bursts.merge(other.bursts)

    def _merged_cap(self, other: Tally) -> None:
        """After folding in `other`'s rows: capped if either was, the smallest fingerprints kept
        (neither's rows past the smaller bound can be among the smallest)."""
        if other.largest is not None and (self.largest is None or other.largest < self.largest):
            self.largest = other.largest
            self._keep_rows()
        elif self.largest is not None:  # only the other's rows can be past it
            largest = self.largest
            for key in [k for k in other.fleet.prints if k > largest]:
                self.fleet.prints.pop(key, None)
            for fkey in [k for k in other.folds if k[0] > largest]:
                self.folds.pop(fkey, None)
        if self._over():
            self.cap_rows()

    def extend(self, part: Tally, shift: int, findings: Iterable[Finding]) -> bool:
        """Go on with the next byte range of the source this tally counts: `part` is the range's
        tally (`Tally(range_part=True)`, lines local; consumed), `findings` the range's findings
        renumbered by the `shift` lines before it, in report order (only the first bursts of its
        threads are read). The result equals feeding this tally every finding of the range.
        False: the range's bursts cannot be renumbered exactly (nothing changed; count again)."""
        if not self.bursts.extend(part.bursts, shift, findings):
            return False
        self.whole &= part.whole
        self.sources |= part.sources
        self.guessed += part.guessed
        for where, (key, stamp) in part.sure.items():
            key = (key[0], key[1] + shift, key[2])
            if where not in self.sure or key < self.sure[where][0]:
                self.sure[where] = (key, stamp)
        self.count += part.count
        self.unrecoverable += part.unrecoverable
        self.unknown += part.unknown
        for ckey, agg in part.codes.items():
            agg.first = (agg.first[0], agg.first[1] + shift, agg.first[2])
            mine = self.codes.get(ckey)
            if mine is None:
                self.codes[ckey] = agg
                continue
            agg.sources = _Names()  # the same source: counted once
            mine.merge(agg)
        self.actions.update(part.actions)
        for name, node in part.nodes.items():
            mine_node = self.nodes.get(name)
            if mine_node is None:
                self.nodes[name] = node
                continue
            mine_node.findings += node.findings
            mine_node.unrecoverable += node.unrecoverable
            mine_node.kinds.update(node.kinds)
        for fkey, fold in part.folds.items():
            fold.first, fold.last = shifted(fold.first, shift), shifted(fold.last, shift)
            if fkey in self.folds:
                self.folds[fkey].merge(fold)
            else:
                self.folds[fkey] = fold
        for p in part.fleet.prints.values():
            p.example = shifted(p.example, shift)
        self.fleet.update(part.fleet)
        self._merged_cap(part)
        return True

    def summary(self) -> Summary:
        """The summary of everything added so far."""
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
        bursts, groups = self.bursts.result()
        self.cap_rows()
        folded = sorted((fold.row() for fold in self.folds.values()),
                        key=lambda r: (r.first_source, r.first_line, r.code, r.node or ""))
        bundles, more_bundles = self.fleet.bundle_rows()
        prints, more_prints = self.fleet.fingerprint_rows()
        return Summary(findings=self.count, unrecoverable=self.unrecoverable, unknown_codes=self.unknown,
                       codes=tuple(codes), actions=tuple(actions), nodes=nodes, bursts=bursts,
                       bundles=bundles, more_bundles=more_bundles, fingerprints=prints, more_fingerprints=more_prints,
                       folded=tuple(folded), burst_count=self.bursts.count, burst_groups=groups,
                       sampled_fingerprints=0 if self.largest is None else len(self.fleet.prints))
