"""Markdown report, for tickets and CI job summaries.

    # ddtriage report
    **3 findings** (1 not known recoverable) in 2 files, ...
    ## Diagnosis
    | # | where | code | API | action | remedy |
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, TextIO

from ..diagnose.incidents import NO_NODE
from ..knowledge.messages import current, language, t
from . import safe
from .common import (
    context_lines,
    describe_api,
    describe_burst_extras,
    describe_causes,
    describe_code,
    fold_span,
    incident_states,
    inputs_line,
    is_storm,
    known_errors_lines,
    node_label,
    plural,
    recoverable_word,
    recovery_sentence,
    row_time,
    span_of,
    state_word,
    version_rows,
)
from .layout import _WHAT, MORE_HINT

if TYPE_CHECKING:
    from ..diagnose.summary import Summary
    from ..run.analysis import Analysis

name = "markdown"
suffix = ".md"

# Every section is bounded: its first rows (most severe or most frequent first), then one line
# `… N more (see --format json, or --full)`; `--full` (`Analysis.full`) lists every row.
LIMITS = {"incidents": 5, "unexplained": 15, "related": 20, "recurring": 15, "diagnosis": 10, "nodes": 20, "codes": 30,
          "findings": 50, "inputs": 20}


def _limit(analysis: Analysis, section: str) -> int | None:
    return None if getattr(analysis, "full", False) else LIMITS[section]


def _more(left: int, what: str = "more") -> list[str]:
    """The line that counts the rows a section leaves out (none when it leaves none out)."""
    if left <= 0:
        return []
    if current() == "en":
        if left == 1 and what.endswith("s"):  # `1 more incident`, `1 more row`
            what = what[:-1]
        return ["", f"… {left:,} {what} {MORE_HINT}"]
    return ["", t("md_more", n=f"{left:,}", what=t(_WHAT.get(what, "more_items")))]


_cell = safe.markdown  # untrusted names and text: no HTML, link, row or line can come out of them
_code = safe.markdown_code  # the same inside a `code span`


def _code_block(lines: list[str]) -> list[str]:
    """Log lines as a fenced block that no log text can close (its fence is longer than any run of
    backticks in them), each line made safe for a terminal."""
    safe_lines = [safe.terminal(line) for line in lines]
    longest = max((len(run) for line in safe_lines for run in re.findall("`+", line)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence + "text", *safe_lines, fence]


def incidents_md(analysis: Analysis) -> list[str]:
    """Incidents first: the story, the lead (with context lines when asked for) and the action."""
    incidents = analysis.summary.incidents
    if not incidents:
        return []
    out = [t("md_incidents"), "", t("md_incidents_note", states=incident_states(incidents)), ""]
    limit = _limit(analysis, "incidents")
    for inc in incidents[:limit]:
        lead = inc.lead
        nodes = " + ".join(node_label(None if n == NO_NODE else n, lead.source) for n in inc.nodes)
        out += [f"### {inc.id}. {_cell(nodes)} ({state_word(inc.state)}, {_cell(span_of(inc.start, inc.end))}, "
                f"{plural(inc.findings, 'finding')})", "", _cell(inc.story), ""]
        if inc.recovery:
            out.append(f"- **{_cell(recovery_sentence(inc.recovery)).capitalize()}:** "
                       f"`{_code(inc.recovery.source)}:{inc.recovery.line}`")
        out += [t("md_lead", family=_cell(lead.family), code=_cell(lead.code), meaning=_cell(lead.meaning),
                  node=_cell(node_label(lead.node, lead.source)), where=f"`{_code(lead.source)}:{lead.line}`"),
                t("md_action", action=inc.action_word, text=_cell(inc.action)), ""]
        shown = context_lines(analysis, lead.source, lead.line)
        lines = [f"{'>' if n == lead.line else ' '}{n:>6}  {text}" for n, text in shown] or [lead.text]
        out += _code_block(lines) + [""]
    if limit is not None and len(incidents) > limit:
        out += _more(len(incidents) - limit, "more incidents")[1:] + [""]
    return out


def unexplained_md(analysis: Analysis) -> list[str]:
    """`scan --unexplained`: the unexplained templates near each incident, folded."""
    rows = analysis.unexplained
    if not rows:
        return []
    out = ["## Unexplained errors near the incidents", "", "<details><summary>"
           f"{len(rows)} templates of ERROR/WARNING lines no code, family or rule explains "
           "(<code>ddtriage mine --draft-rules DIR</code> drafts rules of them)</summary>", "",
           "| incident | lines | nodes | template | first seen |", "|---|---|---|---|---|"]
    limit = _limit(analysis, "unexplained")
    for row in rows[:limit]:
        out.append(f"| {row.incident} | {row.count} | {_cell(', '.join(row.nodes))} | `{_code(row.template)}` | "
                   f"`{_code(row.source)}:{row.line}` |")
    out += _more(len(rows) - len(rows[:limit]), "more templates")
    return out + ["", "</details>", ""]


def related_md(analysis: Analysis) -> list[str]:
    """Neighbour-family errors on their own, whether or not an LLM-DataDist code is present."""
    if not analysis.related:
        return []
    out = [t("md_related"), "", t("md_related_note"), "", t("md_related_head"), "|---|---|---|---|---|---|"]
    limit = _limit(analysis, "related")
    for e in analysis.related[:limit]:
        out.append(f"| `{_code(e.source)}:{e.line}` | {_cell(e.node or '')} | {_cell(e.timestamp or '')} | "
                   f"{_cell(e.family)} | {_cell(e.code)} | {_cell(e.meaning)} |")
    out += _more(len(analysis.related) - len(analysis.related[:limit]), "more related errors")
    return out + [""]


def write(analysis: Analysis, out: TextIO) -> None:
    out.write(render(analysis))


def render(analysis: Analysis) -> str:
    with language(analysis.rules.lang):
        return _render(analysis)


def versions_md(analysis: Analysis) -> list[str]:
    """Each node's CANN, driver, llm_datadist, HIXL and framework versions, as its logs name them."""
    rows = version_rows(analysis)
    if not rows:
        return []
    return ["", t("md_versions"), "", t("md_versions_head"), "|---|---|"] + [
        f"| {_cell(node)} | {_cell(', '.join(f'{k} {v}' for k, v in versions))} |" for node, versions in rows]


def _render(analysis: Analysis) -> str:
    s = analysis.summary
    out = [t("md_title"), "", inputs_line(analysis), ""]
    skipped = analysis.inputs.to_dict()["skipped"]
    if skipped:
        out += [t("md_skipped"), "", t("md_skipped_head"), "|---|---|"]
        out += [f"| {_cell(x['source'])} | {_cell(x['reason'])} |" for x in skipped[:_limit(analysis, "inputs")]]
        out += _more(len(skipped) - len(skipped[:_limit(analysis, "inputs")]), "more skipped")
        out.append("")
    notes = analysis.inputs.to_dict().get("notes", [])
    if notes:  # read in full with a caveat, or ddtriage's own report left out: no data lost
        out += [t("md_notes"), "", t("md_notes_head"), "|---|---|"]
        out += [f"| {_cell(x['source'])} | {_cell(x['note'])} |" for x in notes[:_limit(analysis, "inputs")]]
        out += _more(len(notes) - len(notes[:_limit(analysis, "inputs")]), "more notes")
        out.append("")
    known = known_errors_lines(analysis)
    if known:
        out += [t("md_known"), ""] + [("  - " if ln.startswith(" ") else "- ") + _cell(ln.strip()) for ln in known]
        out.append("")
    out += incidents_md(analysis)
    if not s.findings:
        out += [t("no_findings"), ""]
    out += unexplained_md(analysis)
    out += related_md(analysis)
    if not s.findings:
        return "\n".join(out).rstrip("\n") + "\n"
    out += _recurring(analysis)
    out += _diagnosis(s, _limit(analysis, "diagnosis"))
    out += versions_md(analysis)
    out += ["", t("md_by_node"), "", t("md_by_node_head"), "|---|---:|---:|---|"]
    nodes = sorted(s.nodes, key=lambda n: (-n.unrecoverable, -n.findings, n.node or ""))
    limit = _limit(analysis, "nodes")
    for node in nodes[:limit]:
        kinds = t("list_join").join(f"{n} {k}" if current() == "en" else plural(n, "kind_" + k) for k, n in node.kinds)
        name = node_label(node.node, node.sources[0] if node.sources else None, node.more_sources)
        out.append(f"| {_cell(name)} | {node.findings} | {node.unrecoverable} | {_cell(kinds)} |")
    out += _more(len(nodes) - len(nodes[:limit]), "more nodes")
    out += ["", t("md_codes"), "", t("md_codes_head"),
            "|---:|---|---|---|---|---|---|---|"]
    limit = _limit(analysis, "codes")
    codes = sorted(s.codes, key=lambda r: r.name == "LLM_FAILED")  # the generic echo after the specific codes
    for r in codes[:limit]:
        unknown = t("unknown_short", code="").strip()
        out.append(f"| {r.count} | {r.code} | {_cell(r.name or unknown)} | {_cell(r.api or '-')} | "
                   f"{r.action} | {_cell(r.rule)} | {_cell(r.first_seen or '-')} | "  # a time, never a place
                   f"{_cell(', '.join(r.sources))}{f' and {r.more_sources} more' if r.more_sources else ''} |")
    out += _more(len(s.codes) - len(s.codes[:limit]), "more rows")
    out += ["", t("md_findings"), ""]
    if len(s.folded) < s.findings:
        out += [t("md_folded_note"), ""]
    if s.sampled_fingerprints:
        out += [t("sampled_rows", cap=f"{s.sampled_fingerprints:,}"), ""]
    out += [t("md_order_note"), "", t("md_findings_head"),
            "|---|---|---|---|---|---|---|---|"]
    folded = sorted(s.folded, key=lambda r: (r.name == "LLM_FAILED", r.recoverable is True, -r.count))
    limit = _limit(analysis, "findings")
    for row in folded[:limit]:
        api = f"{row.api} ({row.evidence})" if row.api else "-"
        where = f"`{_code(row.first_source)}:{row.first_line}`"
        when = fold_span(row) if row.count > 1 else row_time(row)
        out.append(f"| {where} | {_cell(row.node or '')} | {_cell(when)} | "
                   f"{_cell(row.name or row.code)} | {_cell(api)} | {row.action} | {_cell(row.rule)} | "
                   f"`{row.fingerprint}` |")
    out += _more(len(folded) - len(folded[:limit]), "more rows")
    return "\n".join(out) + "\n"


def _recurring(analysis: Analysis) -> list[str]:
    """Failures across bundles, most widespread first (only with more than one bundle)."""
    s = analysis.summary
    bundles = len(s.bundles) + s.more_bundles
    rows = [r for r in s.fingerprints if r.bundles > 1]
    # a sample: the most widespread failure may be none of it (said here too, where it would be)
    sampled = [t("sampled_rows", cap=f"{s.sampled_fingerprints:,}"), ""] if s.sampled_fingerprints else []
    if bundles < 2 or not rows:
        return [*sampled] if bundles > 1 else []
    out = [t("md_recurring", bundles=plural(bundles, "bundle"), nodes=plural(len(s.nodes), "node")), "", *sampled,
           t("md_recurring_head"), "|---:|---:|---:|---|---|---|---|---|---|"]
    limit = _limit(analysis, "recurring")
    for r in rows[:limit]:
        out.append(f"| {r.bundles} | {r.nodes} | {r.findings} | {_cell(describe_code(r.code, r.name))} | "
                   f"{_cell(r.api or '-')} | {r.action} | {_cell(r.first_seen or '')} | {_cell(r.last_seen or '')} | "
                   f"`{_code(r.first_at)}` |")
    out += _more(len(rows) - len(rows[:limit]), "more")
    if s.more_fingerprints and len(rows) == len(s.fingerprints):
        out.append(f"\nand up to {s.more_fingerprints} more: see the JSON report.")
    return out + [""]


def _diagnosis(s: Summary, limit: int | None = None) -> list[str]:
    """Bursts, most severe first (in a storm: one entry per group of bursts with the same lead)."""
    out = [t("md_diagnosis"), "", t("md_diagnosis_note"), ""]
    storm = is_storm(s)
    if storm:
        out += [f"Storm: {s.findings:,} findings fold into {len(s.folded):,} rows (same code, API, rule, message shape "
                f"and node); {s.burst_count:,} bursts into {len(s.burst_groups):,} groups (same lead and node), "
                "one entry per group.", ""]
    entries = [(g.first, g) for g in s.burst_groups] if storm else [(b, None) for b in s.bursts]
    for n, (b, group) in enumerate(entries[:limit], 1):
        lead = b.lead
        when = lead.timestamp or ("~" + lead.inferred_time if lead.inferred_time else None)
        out.append(f"{n}. **{_cell(describe_code(lead.code, lead.name))}** "
                   f"{_cell(describe_api(lead.api, lead.api_evidence))}, "
                   + (t("md_node", node=_cell(b.node)) if b.node else "")
                   + f"`{_code(b.source)}:{lead.line}`"
                   + (t("md_at", when=when) if when else "")
                   + t("list_join") + recoverable_word(lead.recoverable) + t("story_end"))
        if b.causes:
            out.append(t("md_likely", causes=_cell(describe_causes(b.causes))))
        out.append(t("md_burst_action", action=lead.action, rule=_cell(lead.rule), remedy=_cell(lead.remedy)))
        extras = describe_burst_extras(b)
        if extras:
            out.append(f"   {_cell(extras)}.")
        if group is not None and group.bursts > 1:
            span = f", {group.first_seen} .. {group.last_seen}" if group.first_seen else ""
            out.append(f"   And {group.bursts - 1:,} more bursts like this one, "
                       f"{group.findings:,} findings in all{span}.")
    total = len(entries) if storm else s.burst_count
    out += _more(total - len(entries[:limit]), "more groups of bursts" if storm else "more bursts")
    return out
