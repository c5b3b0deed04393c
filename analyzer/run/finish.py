"""The end of a run, in one place: what a scan, a merge and the known-errors path all do once the
findings are in a store.

Layer: run. `finish_run` applies the time policy (settled years, the one `TimeWindow` for findings
and related errors alike), counts the findings when the units' own tallies do not fit, and hands
over to `conclude`, which builds the summary's incidents and the `Analysis`. `apply_known_errors`
hides what a baseline or suppressions know and concludes again over what is left, so its report
keeps its incidents.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import date

from ..core.observations import NodeFacts, Proof, RelatedEvent
from ..core.records import Finding, InputStats, RuleTexts
from ..core.times import EVERY_TIME, TimeWindow, settle_related_years, time_policy
from ..diagnose.known_errors import KnownErrors, read_baseline, read_suppressions
from ..diagnose.recovery import mark_bursts
from ..diagnose.story import build_incidents
from ..diagnose.summary import Burst, Summary
from ..diagnose.tally import Tally, summarize
from ..knowledge.rules import RuleSet
from .analysis import Analysis
from .memory import give_back_freed
from .store import FindingStore

TRIM_AFTER = 10_000  # findings from which the freed heap is given back before the incidents (a small run's is small)


def finish_run(store: FindingStore, stats: InputStats, tally: Tally | None, rules: RuleSet,
               window: TimeWindow = EVERY_TIME, texts: RuleTexts | None = None) -> Analysis:
    """The analysis of the findings in `store` (in report order) and what the units observed
    (`stats.observed`). `tally`: the units' own aggregates, when they fit the store as it is."""
    store.transform = time_policy(store.raw, store.guessed > 0, window)
    tally = _fitted(tally, store, bool(window))
    if tally is None:
        # The units' own tallies do not fit (a name met twice, a split file's ranges whose bursts
        # cannot be renumbered exactly, or the time policy changes findings they counted): count
        # the findings again, read back in report order.
        tally = Tally()
        for finding in store:
            tally.add(finding)
    store.count = tally.count
    stats.outside_window += store.raw_count - tally.count
    sure = {node: [stamp] for node, (_, stamp) in tally.sure.items()}  # a stamp with a sure year per node
    related = [e for e in settle_related_years(stats.observed.sorted_related(), sure) if window.holds(e.timestamp)]
    # A proof outside --since/--until still proves a link healthy: the window bounds what is reported.
    proofs = sorted(settle_related_years(stats.observed.sorted_proofs(), sure), key=Proof.sort_key)
    summary = tally.summary()
    del tally  # its folds and bursts hold findings: gone before the incidents are built
    if store.count >= TRIM_AFTER:
        give_back_freed()
    return conclude(store, stats, rules, summary, related, stats.observed.settle(), proofs, texts)


def _fitted(tally: Tally | None, store: FindingStore, windowed: bool) -> Tally | None:
    """The units' tally completed with the sources it left out (`Tally.untallied`: their years
    were guessed), counted from the store as the time policy leaves them; None where the tally
    does not fit: a window drops findings it counted, or it counted a guessed year."""
    if tally is None or windowed or (tally.guessed and store.transform is not None):
        return None
    if tally.untallied:
        left_out, rest = tally.untallied, Tally()
        for finding in store:
            if finding.source in left_out:
                rest.add(finding)
        tally.untallied = set()
        tally.merge(rest)
    return tally if tally.whole else None


def conclude(findings: FindingStore, stats: InputStats, rules: RuleSet, summary: Summary,
             related: list[RelatedEvent], links: dict[str | None, NodeFacts], proofs: list[Proof] | None = None,
             texts: RuleTexts | None = None) -> Analysis:
    """The `Analysis` of a summary: its bursts' remedies (`texts`: the rules' texts, default those
    of `rules`) and their state from the proofs of recovery, its incidents from the bursts, related
    errors and link facts."""
    texts = texts or rules.texts
    proofs = proofs or []
    summary = with_remedies(summary, texts)
    bursts = mark_bursts(summary.bursts, proofs, rules.recovery)
    incidents = build_incidents(bursts, related, links, rules)
    return Analysis(findings, stats, rules, replace(summary, bursts=bursts, incidents=incidents), related=related,
                    links=dict(sorted(links.items(), key=lambda kv: kv[0] or "")), proofs=proofs, texts=texts)


def with_remedies(summary: Summary, texts: RuleTexts) -> Summary:
    """The summary with each burst's remedy, looked up by its lead's rule (a tally counts, it does
    not hold the texts; a summary keeps at most `MAX_BURSTS` bursts, so this is cheap)."""
    def filled(b: Burst) -> Burst:
        return replace(b, lead=replace(b.lead, remedy=texts.remedy(b.lead.rule)))
    return replace(summary, bursts=tuple(filled(b) for b in summary.bursts),
                   burst_groups=tuple(replace(g, first=filled(g.first)) for g in summary.burst_groups))


def apply_known_errors(analysis: Analysis, baseline: str | None = None, suppressions: str | None = None,
                       today: date | None = None) -> Analysis:
    """The analysis of what a baseline and suppressions leave (new findings), concluded as a scan
    is; `known_errors` says what was hidden and why."""
    if baseline is None and suppressions is None:
        return analysis
    today = today or date.today()
    known = KnownErrors(baseline=baseline, suppressions=suppressions)
    findings: list[Finding] = list(analysis.findings)
    if suppressions is not None:
        entries = read_suppressions(suppressions, analysis.rules.catalog, analysis.rules.by_id)
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
    left = conclude(FindingStore.of(findings), analysis.inputs, analysis.rules, summarize(findings),
                    analysis.related, analysis.links, analysis.proofs, analysis.texts)  # what is left: few, in memory
    return replace(left, known_errors=known, context=analysis.context, fail_on=analysis.fail_on)
