"""Markdown report, for tickets and CI job summaries.

    # ddtriage report
    **3 findings** (1 not known recoverable) in 2 files, ...
    ## Diagnosis
    | # | where | code | API | action | remedy |
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from .common import (
    describe_api,
    describe_burst_extras,
    describe_causes,
    describe_code,
    inputs_line,
    known_errors_lines,
    recoverable_word,
)

if TYPE_CHECKING:
    from .. import Analysis

name = "markdown"
suffix = ".md"

MAX_FINDINGS = 1000


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ").replace("`", "'")


def write(analysis: Analysis, out: TextIO) -> None:
    out.write(render(analysis))


def render(analysis: Analysis) -> str:
    s = analysis.summary
    out = ["# ddtriage report", "", inputs_line(analysis), ""]
    skipped = analysis.inputs.to_dict()["skipped"]
    if skipped:
        out += ["## Skipped inputs", "", "| input | reason |", "|---|---|"]
        out += [f"| {_cell(x['source'])} | {_cell(x['reason'])} |" for x in skipped]
        out.append("")
    known = known_errors_lines(analysis)
    if known:
        out += ["## Known errors", ""] + [("  - " if ln.startswith(" ") else "- ") + _cell(ln.strip()) for ln in known]
        out.append("")
    if not analysis.findings:
        out.append("No LLM-DataDist status codes found.")
        return "\n".join(out) + "\n"
    out += _recurring(analysis)
    out += ["## Diagnosis", "", "Bursts of findings, most severe first; the lead is the earliest specific code.", ""]
    for n, b in enumerate(s.bursts, 1):
        lead = b.lead
        when = lead.timestamp or ("~" + lead.inferred_time if lead.inferred_time else None)
        out.append(f"{n}. **{_cell(describe_code(lead.code, lead.name))}** "
                   f"{_cell(describe_api(lead.api, lead.api_evidence))}, "
                   + (f"node {_cell(b.node)}, " if b.node else "")
                   + f"`{_cell(b.source)}:{lead.line}`"
                   + (f" at {when}" if when else "")
                   + f", {recoverable_word(lead.recoverable)}.")
        if b.causes:
            out.append("   Likely cause: " + _cell(describe_causes(b.causes)) + ".")
        out.append(f"   **Action: `{lead.action}`** ({_cell(lead.rule)}): {_cell(lead.remedy)}")
        extras = describe_burst_extras(b)
        if extras:
            out.append(f"   {_cell(extras)}.")
    out += ["", "## By node", "", "| node | findings | not known recoverable | logs |", "|---|---:|---:|---|"]
    for node in s.nodes:
        kinds = ", ".join(f"{n} {k}" for k, n in node.kinds)
        out.append(f"| {_cell(node.node or '(no node)')} | {node.findings} | {node.unrecoverable} | {_cell(kinds)} |")
    out += ["", "## Codes by API", "", "| count | code | name | API | action | rule | first seen | sources |",
            "|---:|---|---|---|---|---|---|---|"]
    for r in s.codes:
        out.append(f"| {r.count} | {r.code} | {_cell(r.name or 'unknown')} | {_cell(r.api or '-')} | "
                   f"{r.action} | {_cell(r.rule)} | {_cell(r.first_seen or r.first_at)} | "
                   f"{_cell(', '.join(r.sources))}{f' and {r.more_sources} more' if r.more_sources else ''} |")
    out += ["", "## Findings", "", "| where | node | time | code | API (evidence) | action |",
            "|---|---|---|---|---|---|"]
    for f in analysis.findings[:MAX_FINDINGS]:
        api = f"{f.api} ({f.api_evidence})" if f.api else "-"
        out.append(f"| `{_cell(f.source)}:{f.line}` | {_cell(f.node or '')} | {_cell(f.timestamp or '')} | "
                   f"{_cell(f.name or f.code)} | {_cell(api)} | {f.action} |")
    if len(analysis.findings) > MAX_FINDINGS:
        out.append(f"\n{len(analysis.findings) - MAX_FINDINGS} more findings: see the JSON report.")
    return "\n".join(out) + "\n"


def _recurring(analysis: Analysis) -> list[str]:
    """Failures across bundles, most widespread first (only with more than one bundle)."""
    s = analysis.summary
    bundles = len(s.bundles) + s.more_bundles
    rows = [r for r in s.fingerprints if r.bundles > 1]
    if bundles < 2 or not rows:
        return []
    out = [f"## Recurring across {bundles} bundles and {len(s.nodes)} nodes", "",
           "| bundles | nodes | findings | code | API | action | first seen | last seen | first at |",
           "|---:|---:|---:|---|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| {r.bundles} | {r.nodes} | {r.findings} | {_cell(describe_code(r.code, r.name))} | "
                   f"{_cell(r.api or '-')} | {r.action} | {_cell(r.first_seen or '')} | {_cell(r.last_seen or '')} | "
                   f"`{_cell(r.first_at)}` |")
    if s.more_fingerprints and len(rows) == len(s.fingerprints):
        out.append(f"\nand up to {s.more_fingerprints} more: see the JSON report.")
    return out + [""]
