"""The end of a run, in one place: what scan, merge and the baseline path all do once the findings
are in a store (the time policy and window, the tally, related errors, incidents, the summary),
and the known errors (baseline, suppressions) applied after it.
"""

from __future__ import annotations

from datetime import date
from typing import TYPE_CHECKING

from ..core.records import Finding
from ..diagnose.known_errors import KnownErrors, read_baseline, read_suppressions
from ..run.store import FindingStore

if TYPE_CHECKING:
    from ..run.api import Analysis


def apply_known_errors(analysis: Analysis, baseline: str | None = None, suppressions: str | None = None,
                       today: date | None = None) -> Analysis:
    """Hide suppressed and baselined findings: `analysis.findings` and its summary then hold what is
    left (new), and `analysis.known_errors` says what was hidden and why."""
    from ..diagnose.tally import summarize

    if baseline is None and suppressions is None:
        return analysis
    today = today or date.today()
    known = KnownErrors(baseline=baseline, suppressions=suppressions)
    findings: list[Finding] = list(analysis.findings)
    if suppressions is not None:
        entries = read_suppressions(suppressions, analysis.rules.catalog)
        active = [s for s in entries if s.expires is None or s.expires >= today]
        known.expired = [s for s in entries if s not in active]
        kept = []
        for f in findings:
            by = next((s for s in active if s.matches(f)), None)
            if by is None:
                kept.append(f)
            else:
                known.suppressed.append((f, by))
        findings = kept
    if baseline is not None:
        recorded = read_baseline(baseline)
        prints = {e.fingerprint for e in recorded}
        seen = {f.fingerprint for f in analysis.findings}
        known.known = [f for f in findings if f.fingerprint in prints]
        findings = [f for f in findings if f.fingerprint not in prints]
        known.gone = [e for e in recorded if e.fingerprint not in seen]
        known.new = len(findings)
    analysis.findings.close()
    analysis.findings = FindingStore.of(findings)  # what is left: few, in memory
    analysis.summary = summarize(findings, analysis.rules)
    analysis.known_errors = known
    return analysis
