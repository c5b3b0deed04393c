"""The bundle dimension of the summary: counts per bundle, and each failure across bundles.

Stage: diagnose (fleet tables). A `FleetTally` is fed one finding at a time (no frame, no list of
findings held) and two tallies of disjoint findings merge into the tally of all of them, so it
serves a streamed scan, parallel parts and `ddtriage merge` alike. Its rows go into
`report.Summary.bundles` and `.fingerprints`:

    fingerprint       code             api          bundles nodes findings first seen
    3f0c9a1e55d2b7a4  LLM_NOT_YET_LINK PullKvBlocks      37    41      912 2025-11-12T03:40:01
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..core.records import Finding, report_key
from ..detect.fingerprint import message_template
from . import summary as _summary
from .summary import ROW_LIMIT, BundleRow, FingerprintRow, bounded


def _earlier(a: str | None, b: str | None) -> str | None:
    return b if a is None else a if b is None else min(a, b)


def _later(a: str | None, b: str | None) -> str | None:
    return b if a is None else a if b is None else max(a, b)


@dataclass
class _Bundle:
    findings: int = 0
    unrecoverable: int = 0
    first: str | None = None
    last: str | None = None
    nodes: set[str] = field(default_factory=set)
    # its distinct fingerprints; None once more than `bundle_failures_cap()` (a capped tally's: `capped`)
    prints: set[str] | None = field(default_factory=set)


@dataclass
class _Print:
    example: Finding  # its first finding in report order
    findings: int = 0
    first: str | None = None
    last: str | None = None
    bundles: set[str | None] = field(default_factory=set)
    nodes: set[str] = field(default_factory=set)


class FleetTally:
    """Per-bundle counts and per-fingerprint spread, built one finding at a time; mergeable.
    `capped` (a `Tally`'s): a bundle's distinct fingerprints are counted up to `bundle_failures_cap()`,
    then said to be more (its set would grow with a storm of distinct messages)."""

    def __init__(self, findings: Iterable[Finding] = (), capped: bool = False) -> None:
        self.bundles: dict[str | None, _Bundle] = {}
        self.prints: dict[str, _Print] = {}
        self.capped = capped
        self._bundle_cap = _summary.bundle_failures_cap() if capped else None
        for f in findings:
            self.add(f)

    def add(self, f: Finding, row: bool = True) -> None:
        """Count one finding (`row`: in its fingerprint's row too; the tally's cap says)."""
        b = self.bundles.get(f.bundle)
        if b is None:
            b = self.bundles[f.bundle] = _Bundle()
        b.findings += 1
        b.unrecoverable += f.recoverable is not True
        b.first, b.last = _earlier(b.first, f.timestamp), _later(b.last, f.timestamp)
        if b.prints is not None:
            b.prints.add(f.fingerprint)
            if self._bundle_cap is not None and len(b.prints) > self._bundle_cap:
                b.prints = None
        if f.node:
            b.nodes.add(f.node)
        if not row:
            return
        p = self.prints.get(f.fingerprint)
        if p is None:
            p = self.prints[f.fingerprint] = _Print(f)
        elif report_key(f) < report_key(p.example):
            p.example = f
        p.findings += 1
        p.first, p.last = _earlier(p.first, f.timestamp), _later(p.last, f.timestamp)
        p.bundles.add(f.bundle)
        if f.node:
            p.nodes.add(f.node)

    def keep_rows(self, largest: str) -> None:
        """Drop the rows of the fingerprints after `largest` (the tally's cap); per-bundle counts stay."""
        self.prints = {key: p for key, p in self.prints.items() if key <= largest}

    @classmethod
    def from_core(cls, bundles: list[Any], prints: list[Any]) -> FleetTally:
        """A source's per-bundle counts and fingerprints as the compiled core's tally counted them."""
        fleet = cls(capped=True)
        for key, findings, bad, first, last, nodes, seen in bundles:
            fleet.bundles[key] = _Bundle(findings, bad, first, last, set(nodes), None if seen is None else set(seen))
        for key, example, findings, first, last, where, nodes in prints:
            fleet.prints[key] = _Print(example, findings, first, last, set(where), set(nodes))
        return fleet

    def update(self, other: FleetTally) -> None:
        """Add the tally of other (disjoint) findings."""
        for key, ob in other.bundles.items():
            b = self.bundles.setdefault(key, _Bundle())
            b.findings += ob.findings
            b.unrecoverable += ob.unrecoverable
            b.first, b.last = _earlier(b.first, ob.first), _later(b.last, ob.last)
            b.nodes |= ob.nodes
            if b.prints is not None:
                b.prints = None if ob.prints is None else b.prints | ob.prints
                if self._bundle_cap is not None and b.prints is not None and len(b.prints) > self._bundle_cap:
                    b.prints = None
        for key, op in other.prints.items():
            p = self.prints.get(key)
            if p is None:
                p = self.prints[key] = _Print(op.example)
            elif report_key(op.example) < report_key(p.example):
                p.example = op.example
            p.findings += op.findings
            p.first, p.last = _earlier(p.first, op.first), _later(p.last, op.last)
            p.bundles |= op.bundles
            p.nodes |= op.nodes

    def bundle_rows(self, limit: int = ROW_LIMIT) -> tuple[tuple[BundleRow, ...], int]:
        """The `limit` worst bundles (most unrecoverable, then most findings, then by name), and
        how many more there are."""
        rows = []
        for key, b in self.bundles.items():
            nodes, more = bounded(b.nodes)
            failures = _summary.bundle_failures_cap() if b.prints is None else len(b.prints)
            rows.append(BundleRow(key, b.findings, b.unrecoverable, failures, b.first, b.last, nodes, more,
                                  more_failures=b.prints is None))
        rows.sort(key=lambda r: (-r.unrecoverable, -r.findings, r.bundle or ""))
        return tuple(rows[:limit]), max(0, len(rows) - limit)

    def fingerprint_rows(self, limit: int = ROW_LIMIT) -> tuple[tuple[FingerprintRow, ...], int]:
        """The `limit` most widespread failures (specific codes before the generic LLM_FAILED that
        echoes them; in most bundles, then nodes; not known to be recoverable before recoverable;
        then most findings), and how many more there are."""
        # A wrapper logs the generic failure after every specific one (domain.md §5): ranked by
        # spread alone, its echoes under each API would push the failures off the first screen.
        # Ranked first, built after: only the rows kept pay for a message template (a storm of
        # distinct failures has one per finding).
        ranked = sorted(self.prints.items(), key=lambda kp: (
            kp[1].example.generic, -len(kp[1].bundles), -len(kp[1].nodes), kp[1].example.recoverable is True,
            -kp[1].findings, kp[0]))
        rows = []
        for key, p in ranked[:limit]:
            f = p.example
            names, more = bounded(p.nodes)
            rows.append(FingerprintRow(
                fingerprint=key, code=f.code, name=f.name, api=f.api, rule=f.rule, action=f.action,
                recoverable=f.recoverable, template=message_template(f.text), findings=p.findings,
                bundles=len(p.bundles), nodes=len(p.nodes), first_seen=p.first, last_seen=p.last,
                first_at=f"{f.source}:{f.line}", node_names=names, more_nodes=more, generic=f.generic))
        return tuple(rows), max(0, len(ranked) - limit)
