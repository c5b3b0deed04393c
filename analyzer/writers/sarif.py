"""SARIF 2.1.0, for code-scanning views (GitHub code scanning, VS Code SARIF viewer, DefectDojo).

    {"version": "2.1.0", "runs": [{"tool": {"driver": {"name": "ddtriage", "rules": [
      {"id": "wait-timeout-transfer", "help": {"text": "Unlink the clusters and ..."}, ...}]}},
     "results": [{"ruleId": "wait-timeout-transfer", "level": "error",
       "locations": [{"physicalLocation": {"artifactLocation": {"uri": "node-2/plog/plog-1.log"},
                                           "region": {"startLine": 61}}}],
       "partialFingerprints": {"ddtriage/v1": "aa2cc802ab2229b2"}, ...}]}]}

A rule per rule id (its remedy as help, its action as a property); a result per finding, at its
file and line (an archive member as `ARCHIVE!MEMBER`), `error` when the code is not known to be
recoverable, else `warning`. GitHub keeps 5,000 results of a run, so the first 5,000 findings
(diagnosis leads first) are written and a notification counts the rest. Skipped inputs are
notifications too. Validated against the OASIS schema in tests/schemas/.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, TextIO
from urllib.parse import quote

from ..core.serial import indented
from ..detect.fingerprint import fingerprint, message_template
from .ci import (
    KEEP,
    TOOL_URI,
    RelatedGroup,
    groups,
    headline,
    level,
    related_fails,
    related_groups,
    related_message,
    related_rule,
)
from .common import finding_states
from .safe import json_text

if TYPE_CHECKING:
    from ..core.records import Finding, RuleTexts
    from ..knowledge.rules import Rule
    from ..run.analysis import Analysis

name = "sarif"
suffix = ".sarif"

SCHEMA = "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
MAX_RESULTS = 5000
FINGERPRINT_KEY = "ddtriage/v1"


def artifact_uri(source: str) -> str:
    """A URI reference for a report's source name: relative paths stay relative (resolved against
    the checkout), absolute ones become `file://` URIs; `!` (archive member) is kept as is."""
    if os.path.isabs(source):
        return "file://" + quote(source, safe="/!-._~@")
    return quote(source, safe="/!-._~@")


def _rule(rule_id: str, rule: Rule | None) -> dict[str, Any]:
    if rule is None:  # a finding's rule the set does not hold (cannot happen with a loaded set)
        return {"id": rule_id}
    help_text = rule.remedy + ("".join(f"\nReference: {r}" for r in rule.references))
    return {
        "id": rule.id,
        "shortDescription": {"text": rule.description or rule.remedy},
        "fullDescription": {"text": rule.remedy},
        "help": {"text": help_text},
        "defaultConfiguration": {"level": level(rule.recoverable)},
        "properties": {"action": rule.action, "recoverable": rule.recoverable, "origin":
                       "built-in" if rule.builtin else "user"},
    }


def _result(f: Finding, index: dict[str, int], texts: RuleTexts, state: str | None = None) -> dict[str, Any]:
    found: dict[str, Any] = {
        "ruleId": f.rule,
        "ruleIndex": index[f.rule],
        "level": level(f.recoverable),
        "message": {"text": f"{headline(f)}: {texts.remedy(f.rule)}"},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(f.source)},
            "region": {"startLine": max(1, f.line)}}}],
        "partialFingerprints": {FINGERPRINT_KEY: f.fingerprint},
        "properties": {"code": f.code, "name": f.name, "api": f.api, "action": f.action,
                       "recoverable": f.recoverable, "node": f.node, "kind": f.kind, "timestamp": f.timestamp},
    }
    if state is not None:  # ongoing | recovered: whether a later line shows its link healthy again
        found["properties"]["state"] = state
    return found


def _related_rule(rule_id: str) -> dict[str, Any]:
    family = rule_id.removeprefix("related-")
    text = (f"A {family} error near the LLM-DataDist calls: not an LLM-DataDist code, but often the cause of "
            "one. It fails the gate only with --fail-on related.")
    return {"id": rule_id, "shortDescription": {"text": f"related {family} error"},
            "fullDescription": {"text": text}, "help": {"text": text},
            "defaultConfiguration": {"level": "warning"}, "properties": {"origin": "built-in", "related": True}}


def _related_result(g: RelatedGroup, index: dict[str, int], failing: bool) -> dict[str, Any]:
    e = g.first
    rule = related_rule(e)
    return {
        "ruleId": rule,
        "ruleIndex": index[rule],
        "level": "error" if failing else "warning",
        "message": {"text": related_message(g)},
        "locations": [{"physicalLocation": {
            "artifactLocation": {"uri": artifact_uri(e.source)},
            "region": {"startLine": max(1, e.line)}}}],
        "partialFingerprints": {FINGERPRINT_KEY: fingerprint(e.code, None, rule, message_template(e.text))},
        "properties": {"code": e.code, "family": e.family, "meaning": e.meaning, "node": e.node,
                       "timestamp": e.timestamp, "related": True},
    }


def build(analysis: Analysis) -> dict[str, Any]:
    """The SARIF log as data. With --baseline, results are `baselineState: new`; with
    --suppressions, hidden findings are results carrying their suppression and its reason (viewers
    list them as dismissed)."""
    known = analysis.known_errors
    hidden = known.suppressed if known else []
    ids = sorted({r.id for r in analysis.rules.rules} | {f.rule for f in analysis.findings}
                 | {f.rule for f, _ in hidden})
    index = {rid: i for i, rid in enumerate(ids)}
    found = groups(analysis)
    total = sum(g.count for g in found)
    state_of = finding_states(analysis)
    results = [_result(f, index, analysis.rule_texts, state_of(f))
               for f in [f for g in found for f in g.kept][:MAX_RESULTS]]
    if known is not None and known.baseline is not None:
        for r in results:
            r["baselineState"] = "new"
    for f, s in hidden[:max(0, MAX_RESULTS - len(results))]:
        until = f" (until {s.expires.isoformat()})" if s.expires else ""
        results.append(_result(f, index, analysis.rule_texts) | {"suppressions": [
            {"kind": "external", "status": "accepted", "justification": f"{s.describe()}: {s.reason}{until}"}]})
    related = related_groups(analysis)  # after the findings, each under its family's rule (related-hccl, ...)
    families = sorted({related_rule(r.first) for r in related})
    index |= {rid: len(ids) + i for i, rid in enumerate(families)}
    results += [_related_result(r, index, related_fails(analysis))
                for r in related[:max(0, MAX_RESULTS - len(results))]]
    notes = [{"level": "warning", "message": {"text": f"skipped {s['source']}: {s['reason']}"}}
             for s in analysis.inputs.to_dict()["skipped"]]
    left = total + len(hidden) + len(related) - len(results)
    if left > 0:
        notes.append({"level": "note", "message": {
            "text": f"{left} more findings not written (SARIF viewers keep {MAX_RESULTS}; "
                    f"each file lists at most {KEEP} of one fingerprint); see the JSON report"}})
    run: dict[str, Any] = {
        "tool": {"driver": {"name": "ddtriage", "informationUri": TOOL_URI,
                            "rules": [_rule(rid, analysis.rules.by_id.get(rid)) for rid in ids]
                            + [_related_rule(rid) for rid in families]}},
        "invocations": [{"executionSuccessful": True, "toolExecutionNotifications": notes}],
        "results": results,
        "properties": {"incidents": [{"id": i.id, "state": i.state, "nodes": list(i.nodes),
                                      "lead": f"{i.lead.source}:{i.lead.line}",
                                      "recovery": i.recovery.to_dict() if i.recovery else None}
                                     for i in analysis.summary.incidents]},
    }
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}


def write(analysis: Analysis, out: TextIO) -> None:
    out.write(json_text("".join(indented(build(analysis)))) + "\n")  # json.dumps(..., indent=2)'s text
