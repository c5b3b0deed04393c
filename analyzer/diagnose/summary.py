"""The report contract: the typed summary that triage builds and every writer reads.

Stage: diagnose, read by the writers. The tally fills these records (`diagnose.tally`); writers read
their attributes, never dict keys, so a new format needs only this module to know what a report
holds. Each record's `to_dict()` is its JSON shape, with a stable key order (the `summary` block
of `--format json`).

Records are frozen and slotted; sequences inside them are tuples. To extend the contract, add a
record type here and a field with a default to the record that holds it (a field with a default
goes last, so existing constructor calls and writers keep working), then add it to `to_dict()`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

LIST_LIMIT = 10  # names (sources, nodes) listed in one summary row; the rest are counted ("and N more")
ROW_LIMIT = 50  # rows of the per-bundle and cross-bundle tables; the rest are counted


def bounded(names: Iterable[str], limit: int = LIST_LIMIT) -> tuple[tuple[str, ...], int]:
    """The first `limit` of the sorted `names`, and how many more there are."""
    ordered = sorted(names)
    return tuple(ordered[:limit]), max(0, len(ordered) - limit)

# Distinct fingerprints a tally keeps rows for (the folded rows, the failures across bundles): a storm
# of distinct messages (an unmasked id on every line) would otherwise keep one row and an example
# finding per line. Past it (or past twice as many folded rows: one per fingerprint and node), the
# rows are those of the smallest fingerprints, each counted whole: a choice by hash, so the same
# whatever the order, the --jobs or the engine. A bundle's distinct fingerprints (its `failures`)
# are counted up to BUNDLE_FAILURES_CAP, then said to be more: one set per bundle, in a fleet.
FINGERPRINT_CAP = 10_000


def bundle_failures_cap() -> int:
    """The count of a bundle's distinct fingerprints past which it says "at least" (read late: a
    test may lower FINGERPRINT_CAP)."""
    return max(1, FINGERPRINT_CAP // 10)

MAX_BURSTS = 1000  # bursts a summary keeps whole; a storm's others are only counted, in `burst_groups`


@dataclass(frozen=True, slots=True)
class CodeRow:
    """How often one code came from one API under one rule (a row of "Codes by API")."""

    code: str  # "0x5010B009"
    name: str | None  # C++ name; None for a code the catalog does not know
    api: str | None  # canonical API name; None when no API was found
    rule: str  # id of the remedy rule that applied
    action: str  # the rule's action word ("relink", "retry-later", ...)
    recoverable: bool | None  # None: unknown
    count: int  # findings in this row
    first_seen: str | None  # earliest ISO 8601 timestamp; None when no finding had one
    last_seen: str | None  # latest ISO 8601 timestamp
    first_at: str  # "source:line" of the first finding, for rows without timestamps
    sources: tuple[str, ...]  # the first LIST_LIMIT sources the row's findings came from, sorted
    more_sources: int = 0  # sources beyond those listed

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "name": self.name,
            "api": self.api,
            "rule": self.rule,
            "action": self.action,
            "recoverable": self.recoverable,
            "count": self.count,
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "first_at": self.first_at,
            "sources": list(self.sources),
            "more_sources": self.more_sources,
        }


@dataclass(frozen=True, slots=True)
class ActionRow:
    """How many findings call for one action."""

    action: str
    count: int

    def to_dict(self) -> dict[str, Any]:
        return {"action": self.action, "count": self.count}


@dataclass(frozen=True, slots=True)
class NodeRow:
    """The findings of one node (from the bundle or folder name): how many, how bad, from which logs."""

    node: str | None  # None: findings whose path names no node
    findings: int
    unrecoverable: int  # findings not known to be recoverable
    kinds: tuple[tuple[str, int], ...]  # (log kind: host | device | application, findings), by kind
    sources: tuple[str, ...]  # the first LIST_LIMIT, sorted
    more_sources: int = 0  # sources beyond those listed

    def to_dict(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "findings": self.findings,
            "unrecoverable": self.unrecoverable,
            "kinds": dict(self.kinds),
            "sources": list(self.sources),
            "more_sources": self.more_sources,
        }


@dataclass(frozen=True, slots=True)
class BundleRow:
    """The findings of one bundle (a top-level input: an archive, a node folder, a file)."""

    bundle: str | None
    findings: int
    unrecoverable: int  # findings not known to be recoverable
    failures: int  # distinct fingerprints
    first_seen: str | None
    last_seen: str | None
    nodes: tuple[str, ...]  # the first LIST_LIMIT node names, sorted
    more_nodes: int = 0
    more_failures: bool = False  # more distinct fingerprints than `failures` (bundle_failures_cap) were seen

    def to_dict(self) -> dict[str, Any]:
        return {"bundle": self.bundle, "findings": self.findings, "unrecoverable": self.unrecoverable,
                "failures": self.failures, **({"more_failures": True} if self.more_failures else {}),
                "first_seen": self.first_seen, "last_seen": self.last_seen,
                "nodes": list(self.nodes), "more_nodes": self.more_nodes}


@dataclass(frozen=True, slots=True)
class FingerprintRow:
    """One failure (one fingerprint: code + API + rule + message template) across all bundles:
    how many bundles and nodes show it, and when it was first and last seen."""

    fingerprint: str
    code: str
    name: str | None
    api: str | None
    rule: str
    action: str
    recoverable: bool | None
    template: str  # the message with times, ids, addresses and numbers masked
    findings: int
    bundles: int
    nodes: int
    first_seen: str | None
    last_seen: str | None
    first_at: str  # "source:line" of its first finding
    node_names: tuple[str, ...]  # the first LIST_LIMIT, sorted
    more_nodes: int = 0
    generic: bool = False  # the generic LLM_FAILED: the echo of a specific code, ranked after them

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "code": self.code, "name": self.name, "api": self.api,
                "rule": self.rule, "action": self.action, "recoverable": self.recoverable,
                "template": self.template, "findings": self.findings, "bundles": self.bundles,
                "nodes": self.nodes, "first_seen": self.first_seen, "last_seen": self.last_seen,
                "first_at": self.first_at, "node_names": list(self.node_names), "more_nodes": self.more_nodes,
                "generic": self.generic}


@dataclass(frozen=True, slots=True)
class Cause:
    """A lower-level error (HCCL, runtime, socket, ...) logged just before a lead: its likely cause."""

    line: int
    family: str  # neighbour family id, e.g. "hccl", "runtime"
    code: str  # that family's code, as logged ("507046")
    meaning: str  # what the code means ("stream sync timeout")

    def to_dict(self) -> dict[str, Any]:
        return {"line": self.line, "family": self.family, "code": self.code, "meaning": self.meaning}


@dataclass(frozen=True, slots=True)
class BurstLead:
    """The probable lead of a burst: its earliest specific code, with what to do about it."""

    line: int
    timestamp: str | None  # ISO 8601, None when the line has no stamp
    inferred_time: str | None  # for a stamp-less line: the time of the record before it
    code: str
    name: str | None
    api: str | None
    api_evidence: str | None  # where the API was read: func | tag | message | traceback | nearby
    recoverable: bool | None
    rule: str
    action: str
    text: str  # the log line (cut to the scanner's width)
    remedy: str = ""  # the rule's remedy, filled when the run concludes (`run.finish`): findings hold only rule ids

    def to_dict(self) -> dict[str, Any]:
        return {
            "line": self.line,
            "timestamp": self.timestamp,
            "inferred_time": self.inferred_time,
            "code": self.code,
            "name": self.name,
            "api": self.api,
            "api_evidence": self.api_evidence,
            "recoverable": self.recoverable,
            "rule": self.rule,
            "action": self.action,
            "remedy": self.remedy,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class AlsoCode:
    """Another specific code in a burst (besides its lead), with its own action."""

    code: str
    name: str | None
    api: str | None
    line: int  # its first line in the burst
    action: str
    recoverable: bool | None

    def to_dict(self) -> dict[str, Any]:
        return {"code": self.code, "name": self.name, "api": self.api, "line": self.line, "action": self.action,
                "recoverable": self.recoverable}


ONGOING, RECOVERED = "ongoing", "recovered"  # the states of a burst and of an incident (diagnose.recovery)


@dataclass(frozen=True, slots=True)
class Recovery:
    """The line that shows a failed link healthy again (a proof of `recovery.yaml`), and how long
    after the first failure it came."""

    source: str
    line: int
    timestamp: str | None
    node: str | None
    proof: str  # the proof's id ("link-success", "transfer-success", ...)
    text: str
    seconds: float | None = None  # time to recover: from the first failure to this line; None untimed

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "timestamp": self.timestamp, "node": self.node,
                "proof": self.proof, "text": self.text,
                "seconds": None if self.seconds is None else round(self.seconds, 3)}


@dataclass(frozen=True, slots=True)
class Burst:
    """A run of findings of one thread (or process) in one source: one operation's failure, its
    echoes and what it set off."""

    source: str
    node: str | None
    kind: str  # host | device | application
    pid: str | None
    first_line: int
    last_line: int
    first_seen: str | None  # earliest time in the burst (stamped or inferred), None without any
    last_seen: str | None
    findings: int  # findings in the burst, lead and echoes included
    severe: bool  # holds a specific code not known to be recoverable
    lead: BurstLead
    echoes: int  # generic LLM_FAILED findings attached to the lead
    causes: tuple[Cause, ...]  # the lead's likely causes (at most five)
    also: tuple[AlsoCode, ...]  # the other specific codes, one per (code, API, action)
    # What incidents are built from (not part of the burst's JSON): its findings' fingerprints,
    # the req_ids and peers (remote cluster, address) its lines name, and (code name, API, count).
    fingerprints: tuple[str, ...] = ()
    req_ids: tuple[str, ...] = ()
    peers: tuple[tuple[str | None, str | None], ...] = ()
    counts: tuple[tuple[str, str | None, int], ...] = ()
    repeats: int = 0  # the lead's failure again (same code, API and rule), not listed under `also`
    # Set after the tally (diagnose.recovery): `recovered` when a later line shows its link healthy again.
    state: str = field(default=ONGOING, compare=False)
    recovery: Recovery | None = field(default=None, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "node": self.node,
            "kind": self.kind,
            "pid": self.pid,
            "lines": [self.first_line, self.last_line],
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "findings": self.findings,
            "severe": self.severe,
            "lead": self.lead.to_dict(),
            "echoes": self.echoes,
            "repeats": self.repeats,
            "causes": [c.to_dict() for c in self.causes],
            "also": [a.to_dict() for a in self.also],
            "state": self.state,
            "recovery": self.recovery.to_dict() if self.recovery else None,
        }


@dataclass(frozen=True, slots=True)
class BurstGroup:
    """Bursts with the same lead (code, API, rule) on the same node and of the same severity: a
    storm's thousands of bursts as one entry, shown by its first burst in report order."""

    first: Burst  # the group's first burst (severe first, then in time order)
    bursts: int  # how many bursts the group holds
    findings: int  # findings in them
    first_seen: str | None
    last_seen: str | None


@dataclass(frozen=True, slots=True)
class FoldedRow:
    """Findings that share a fingerprint (code + API + rule + masked message) on one node: a
    storm's thousands of lines as one row. Rows are in report order of their first finding."""

    fingerprint: str
    node: str | None
    code: str
    name: str | None
    api: str | None
    rule: str
    action: str
    recoverable: bool | None
    count: int
    first_source: str
    first_line: int
    last_source: str
    last_line: int
    first_seen: str | None  # earliest time (stamped or inferred) of the row's findings
    last_seen: str | None
    text: str  # the first finding's line
    evidence: str | None = None  # where the first finding's API was read
    first_timestamp: str | None = None  # the first finding's own timestamp

    def to_dict(self) -> dict[str, Any]:
        return {
            "fingerprint": self.fingerprint,
            "node": self.node,
            "code": self.code,
            "name": self.name,
            "api": self.api,
            "rule": self.rule,
            "action": self.action,
            "recoverable": self.recoverable,
            "count": self.count,
            "first": f"{self.first_source}:{self.first_line}",
            "last": f"{self.last_source}:{self.last_line}",
            "first_seen": self.first_seen,
            "last_seen": self.last_seen,
            "text": self.text,
        }


@dataclass(frozen=True, slots=True)
class IncidentLead:
    """The first error of an incident: a lower-level (runtime, HCCL, socket, ...) error when one came
    first on either side, else its earliest specific LLM-DataDist code."""

    source: str
    line: int
    node: str | None
    family: str  # "llm-datadist" or a neighbour family id ("runtime", "hccl", "socket", ...)
    code: str  # "0x5010B009", "207001", "111", "EI0006"
    text: str
    timestamp: str | None = None
    meaning: str = ""  # the code's name or meaning ("LLM_LINK_FAILED", "device out of memory")
    api: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "node": self.node, "family": self.family,
                "code": self.code, "text": self.text}


@dataclass(frozen=True, slots=True)
class Incident:
    """The bursts of one failure across files and nodes, with its lead, what to do and its story."""

    id: int
    start: str | None
    end: str | None
    nodes: tuple[str, ...]  # sorted; a finding without a node counts as "(no node)"
    lead: IncidentLead
    action: str  # the lead's remedy, then the LLM-DataDist remedies that follow from it
    story: str  # one paragraph: what happened, in order, both sides and the evidence
    findings: int
    fingerprints: tuple[str, ...]  # sorted
    action_word: str = "collect-logs"  # the lead's action word (colours, grouping); not in the JSON
    severe: bool = False  # holds a finding not known to be recoverable
    bursts: tuple[int, ...] = ()  # indexes into Summary.bursts
    related: tuple[int, ...] = ()  # indexes into Analysis.related
    state: str = ONGOING  # `recovered` when every burst of it is (diagnose.recovery)
    recovery: Recovery | None = None  # the proof that healed its last burst to recover

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "start": self.start, "end": self.end, "nodes": list(self.nodes),
                "lead": self.lead.to_dict(), "action": self.action, "story": self.story,
                "findings": self.findings, "fingerprints": list(self.fingerprints), "state": self.state,
                "recovery": self.recovery.to_dict() if self.recovery else None}


@dataclass(frozen=True, slots=True)
class Summary:
    """The diagnosis every report shows, sorted so every writer renders it the same way.

    `Summary()` is the summary of no findings."""

    findings: int = 0
    unrecoverable: int = 0  # findings not known to be recoverable (unknown counts as not)
    unknown_codes: int = 0  # findings whose code the catalog does not know
    codes: tuple[CodeRow, ...] = ()  # not recoverable first, then most frequent
    actions: tuple[ActionRow, ...] = ()  # most frequent first
    nodes: tuple[NodeRow, ...] = ()  # by node name, no node first
    bursts: tuple[Burst, ...] = ()  # severe first, then in time order (untimed last); the first MAX_BURSTS
    # Most severe first (analyzer.diagnose.incidents). Built after the tally from its bursts, link facts and
    # related errors, so it takes no part in comparing two tallies' summaries.
    incidents: tuple[Incident, ...] = field(default=(), compare=False)
    bundles: tuple[BundleRow, ...] = ()  # the ROW_LIMIT worst bundles: most unrecoverable, then most findings
    more_bundles: int = 0  # bundles beyond those listed
    fingerprints: tuple[FingerprintRow, ...] = ()  # recurring failures: in most bundles, then nodes, first
    more_fingerprints: int = 0
    # Findings folded by (fingerprint, node), in report order. Text and Markdown list these
    # instead of every finding; JSON lists every finding (each with its fingerprint) instead.
    folded: tuple[FoldedRow, ...] = ()
    burst_count: int = 0  # bursts in all (`bursts` keeps the first MAX_BURSTS of them)
    burst_groups: tuple[BurstGroup, ...] = ()  # every burst, grouped by lead; in the order of `bursts`
    # 0: `folded` and `fingerprints` cover every fingerprint. N: there were too many (FINGERPRINT_CAP),
    # and they cover the N smallest, each counted whole.
    sampled_fingerprints: int = 0

    @property
    def ongoing(self) -> int:
        """Bursts that no later line shows recovered (`--fail-on ongoing`); bursts past MAX_BURSTS,
        whose state is not worked out, count as ongoing."""
        return sum(1 for b in self.bursts if b.state == ONGOING) + max(0, self.burst_count - len(self.bursts))

    def to_dict(self) -> dict[str, Any]:
        return {
            "findings": self.findings,
            "unrecoverable": self.unrecoverable,
            "unknown_codes": self.unknown_codes,
            "codes": [r.to_dict() for r in self.codes],
            "actions": [r.to_dict() for r in self.actions],
            "nodes": [r.to_dict() for r in self.nodes],
            "bursts": [b.to_dict() for b in self.bursts],
            "bundles": [b.to_dict() for b in self.bundles],
            "more_bundles": self.more_bundles,
            "fingerprints": [r.to_dict() for r in self.fingerprints],
            "more_fingerprints": self.more_fingerprints,
            **({"sampled_fingerprints": self.sampled_fingerprints} if self.sampled_fingerprints else {}),
            "incidents": [i.to_dict() for i in self.incidents],
        }
