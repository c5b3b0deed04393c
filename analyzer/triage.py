"""Triage: turn the findings into a diagnosis (pandas, built once from the findings).

Stage: triage. Counts by code x API with first/last seen and sources; bursts of findings per
source, each with its probable lead (the earliest specific code; generic LLM_FAILED echoes are
attached to it), non-recoverable bursts first. Output is a `report.Summary` (frozen records,
sorted), so every writer renders the same diagnosis deterministically.
"""

from __future__ import annotations

from datetime import datetime

import pandas as pd

from .fleet import FleetTally
from .records import Finding
from .report import ActionRow, AlsoCode, Burst, BurstLead, Cause, CodeRow, NodeRow, Summary, bounded
from .rules import RuleSet

BURST_LINES = 50  # a new burst starts after this many lines without a finding ...
BURST_SECONDS = 2.0  # ... or this long without one (when both ends have timestamps)

_COLUMNS = ["source", "line", "timestamp", "code", "name", "api", "action", "rule", "recoverable", "generic",
            "node", "kind"]


def summarize(findings: list[Finding], rules: RuleSet) -> Summary:
    """The summary block every report shows."""
    if not findings:
        return Summary()
    # Columnar and categorical: building the frame is what costs on big inputs (perf.md).
    index = {name: i for i, name in enumerate(Finding._fields)}
    frame = pd.DataFrame({c: [f[index[c]] for f in findings] for c in _COLUMNS})
    for column in ("source", "code", "name", "api", "action", "rule", "node", "kind"):
        frame[column] = frame[column].astype("category")
    unrecoverable = int((frame["recoverable"] != True).sum())  # noqa: E712 - None counts too
    fleet = FleetTally(findings)
    bundles, more_bundles = fleet.bundle_rows()
    prints, more_prints = fleet.fingerprint_rows()
    return Summary(
        findings=len(findings),
        unrecoverable=unrecoverable,
        unknown_codes=int(frame["name"].isna().sum()),
        codes=_by_code_api(frame),
        actions=_by_action(frame),
        nodes=_by_node(frame),
        bursts=_bursts(findings),
        bundles=bundles,
        more_bundles=more_bundles,
        fingerprints=prints,
        more_fingerprints=more_prints,
    )


def _by_code_api(frame: pd.DataFrame) -> tuple[CodeRow, ...]:
    """Count per (code, API, rule), with first/last seen and the sources it came from."""
    keyed = frame.assign(api_key=frame["api"].astype("object").fillna(""),
                         name_key=frame["name"].astype("object").fillna(""),
                         ts=frame["timestamp"].fillna(""))
    rows = []
    by = ["code", "name_key", "api_key", "rule"]
    for (code, name, api, rule), group in keyed.groupby(by, observed=True, sort=True):
        stamped = group[group["ts"] != ""]
        first = group.iloc[0]
        sources, more = bounded({str(s) for s in group["source"]})
        rows.append(CodeRow(
            code=str(code),
            name=str(name) or None,
            api=str(api) or None,
            rule=str(rule),
            action=str(first["action"]),
            recoverable=None if pd.isna(first["recoverable"]) else bool(first["recoverable"]),
            count=int(len(group)),
            first_seen=str(stamped["ts"].min()) if len(stamped) else None,
            last_seen=str(stamped["ts"].max()) if len(stamped) else None,
            first_at=f"{first['source']}:{int(first['line'])}",
            sources=sources,
            more_sources=more,
        ))
    # Non-recoverable first, then most frequent, then by code for a stable order.
    rows.sort(key=lambda r: (r.recoverable is True, -r.count, r.code, r.api or "", r.rule))
    return tuple(rows)


def _by_action(frame: pd.DataFrame) -> tuple[ActionRow, ...]:
    counts = frame.groupby("action", observed=True).size()
    return tuple(sorted((ActionRow(str(a), int(n)) for a, n in counts.items()), key=lambda r: (-r.count, r.action)))


def _by_node(frame: pd.DataFrame) -> tuple[NodeRow, ...]:
    """Per node (from the bundle or folder name): how many findings, how bad, from which logs."""
    keyed = frame.assign(node_key=frame["node"].astype("object").fillna(""),
                         bad=frame["recoverable"] != True)  # noqa: E712
    rows = []
    for node, group in keyed.groupby("node_key", sort=True):
        sources, more = bounded({str(s) for s in group["source"]})
        rows.append(NodeRow(
            node=str(node) or None,
            findings=int(len(group)),
            unrecoverable=int(group["bad"].sum()),
            kinds=tuple((str(k), int(n)) for k, n in sorted(group["kind"].value_counts().items()) if n),
            sources=sources,
            more_sources=more,
        ))
    return tuple(rows)


def _seconds(ts: str | None) -> float | None:
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts).timestamp()
    except ValueError:
        return None


def _split_bursts(findings: list[Finding]) -> list[list[Finding]]:
    """Runs of findings of one thread (or process) in one source, cut where lines or time jump:
    one operation's failure, its echoes and what it set off in the same thread."""
    streams: dict[tuple[str, str | None, str | None], list[Finding]] = {}
    for f in findings:  # sorted by source, line
        streams.setdefault((f.source, f.pid, f.tid), []).append(f)
    bursts: list[list[Finding]] = []
    for run in streams.values():
        current: list[Finding] = []
        for f in run:
            if current:
                last = current[-1]
                t0, t1 = _seconds(last.timestamp), _seconds(f.timestamp)
                gap_time = t0 is not None and t1 is not None and abs(t1 - t0) > BURST_SECONDS
                if f.line - last.line > BURST_LINES or gap_time:
                    bursts.append(current)
                    current = []
            current.append(f)
        bursts.append(current)
    return bursts


def _bursts(findings: list[Finding]) -> tuple[Burst, ...]:
    """Group findings into bursts and name the probable lead of each: the earliest specific
    code, with the generic LLM_FAILED echoes attached. The most severe bursts come first."""
    out = []
    for group in _split_bursts(findings):
        specific = [f for f in group if not f.generic]
        lead = specific[0] if specific else group[0]
        echoes = [f for f in group if f.generic and f is not lead]
        others: dict[tuple[str, str, str], Finding] = {}
        for f in specific:
            if f is not lead:
                others.setdefault((f.code, f.api or "", f.action), f)
        # A traceback's last line has no stamp of its own: it takes its record's time.
        stamps = [t for t in (f.timestamp or f.time_hint for f in group) if t]
        # Lower-level errors logged just before the lead: the likely root cause.
        causes = tuple(Cause(line, family, code, meaning) for line, family, code, meaning in lead.causes[:5])
        out.append(Burst(
            source=lead.source,
            node=lead.node,
            kind=lead.kind,
            pid=lead.pid,
            first_line=group[0].line,
            last_line=group[-1].line,
            first_seen=min(stamps) if stamps else None,
            last_seen=max(stamps) if stamps else None,
            findings=len(group),
            severe=any(f.recoverable is not True for f in specific or group),
            lead=BurstLead(
                line=lead.line, timestamp=lead.timestamp, inferred_time=lead.time_hint,
                code=lead.code, name=lead.name,
                api=lead.api, api_evidence=lead.api_evidence, recoverable=lead.recoverable,
                rule=lead.rule, action=lead.action, remedy=lead.remedy, text=lead.text,
            ),
            echoes=len(echoes),
            causes=causes,
            also=tuple(AlsoCode(code=f.code, name=f.name, api=f.api, line=f.line, action=f.action,
                                recoverable=f.recoverable)
                       for _, f in sorted(others.items())),
        ))
    # Bursts holding something not known to be recoverable first; then in time order (untimed
    # last), so the story reads forward.
    out.sort(key=lambda b: (not b.severe, b.first_seen is None, b.first_seen or "", b.source, b.first_line))
    return tuple(out)
