"""Terminal report: the story first, details after. 80 columns by default; the real width (and
colour) on a terminal.

    ddtriage: 28 findings (2 not known recoverable) in 10 files, 96 lines, 14.2 KiB read

    Incidents: 2, most severe first
     1. decode-node-2 + prompt-node-1  2025-11-12 03:40:01.200-03:40:04, 26 findings
        At 03:40:01.200 prompt-node-1 (Prompt, cluster 2, 10.1.0.1:26000) logged device out of
        memory (runtime 207001); 90 ms later, decode-node-2 ... got LLM_LINK_FAILED ...
        lead  prompt-node-1/…/debug/plog/plog-3301_20251112033950112.log:2
              …rtMalloc:ErrCode=207001, desc=[out of memory], InnerCode=0x7020016
        ->    free-memory: The device ran out of HBM: ...

    Related errors (not LLM-DataDist): 11 (2 cann, 6 hccl, 2 runtime, 1 socket)
    ...
    Diagnosis: 2 bursts, most severe first
     1. LLM_WAIT_PROC_TIMEOUT (0x5010B001) from PullKvBlocks (Func field)
        decode-node-2  .../plog/plog-5569_20251112034002789.log:61
        2025-11-12T03:40:08.100000, NOT recoverable
        -> relink [wait-timeout-transfer]
           The transfer timed out and the link is now unrecoverable: ...
     … 30 more bursts (see --format json, or --full)
    ...
    Findings by fingerprint and node, not known recoverable first
    count  code                   api           action
    x3,000  LLM_WAIT_PROC_TIMEOUT  PullKvBlocks  relink
            [wait-timeout-transfer]  082733af5041ec9c
            …/plog-4811_20251112034000000.log:1

The first screen (24 lines) is the diagnosis: the incidents, the most severe told in full. Every
section is bounded (`BUDGET` lines: its first rows, most severe or biggest first, then one `… N
more` line), so a report is at most about 200 lines (`TOTAL`) whatever the input; `--full`
(`Analysis.full`) lifts every bound. No identifier is cut across lines (`layout`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from ..core.headers import parse_header
from ..diagnose.incidents import NO_NODE
from ..knowledge.messages import current, language, t
from . import safe
from .common import (
    Style,
    action_words,
    context_lines,
    describe_api,
    describe_burst_extras,
    describe_causes,
    describe_code,
    incidents_title,
    inputs_line,
    is_storm,
    known_errors_lines,
    log_name,
    node_label,
    plural,
    recoverable_word,
    recovery_sentence,
    short_source,
    span_of,
    state_word,
    version_rows,
)
from .layout import NBSP, bounded, ljust, table, wrap

if TYPE_CHECKING:
    from ..core.observations import RelatedEvent
    from ..diagnose.summary import Burst, Incident, Summary
    from ..run.analysis import Analysis

name = "text"
suffix = ".txt"

WIDTH = 80  # a pipe or a file; a terminal gets its own width
# Every section is bounded to a number of lines (its rows, most severe or most frequent first, then
# one `… N more (see --format json, or --full)` line), so that the report of any input fits in
# about 200 lines; `--full` (`Analysis.full`) prints every row.
TOTAL = 196  # what the short sections leave of it goes to the two tables at the end ...
MAX_TABLE = 60  # ... up to this many lines each
BUDGET = {"incidents": 48, "unexplained": 12, "recurring": 12, "related": 10, "diagnosis": 34, "inputs": 8, "nodes": 8,
          "bundles": 8, "codes": 16, "findings": 18}
GENERIC = "LLM_FAILED"  # the generic code wrappers echo after the specific one
MAX_NODES = 3  # nodes named in an incident's heading
MAX_ALSO = 4  # other codes of a burst named (the rest are counted)
LOG_KINDS = ("host", "device", "application")  # the kinds of log a node row counts (layout)
FULL_INCIDENTS = 3  # incidents told in full (story, lead, action) while they fit; the others in two lines


def _wrap(text: str, indent: str, width: int = WIDTH, rest: str | None = None) -> list[str]:
    return wrap(text, width, indent, rest)


def write(analysis: Analysis, out: TextIO, width: int | None = None, color: bool = False) -> None:
    out.write(render(analysis, width or WIDTH, Style(color)))


def render(analysis: Analysis, width: int = WIDTH, style: Style | None = None, full: bool | None = None) -> str:
    # Names and log text come from untrusted bundles: every line is made safe for a terminal; our
    # own colour is added after that, so no log text can carry an escape sequence through.
    full = bool(getattr(analysis, "full", False)) if full is None else full
    with language(analysis.rules.lang):
        lines = [safe.terminal(line) for line in _lines(analysis, width, full).split("\n")]
    if style is not None and style.color:
        lines = paint(lines, analysis.summary.incidents, style)
    return "\n".join(lines)


def _budget(section: str, full: bool) -> int | None:
    return None if full else BUDGET[section]


def _lines(analysis: Analysis, width: int = WIDTH, full: bool = False) -> str:
    """The diagnosis first (the incidents: what failed first, where, what to do), then the counts
    and tables."""
    s, st = analysis.summary, Style(False)
    out = _wrap("ddtriage: " + inputs_line(analysis), "", width)
    out += _recurring_lead(analysis, width)
    storm = is_storm(s)
    if s.incidents:
        out += incidents_section(analysis, width, st, full)
    elif s.findings:  # no incidents (a summary rebuilt after --baseline/--suppressions): the bursts first
        out += _diagnosis(s, storm, width, full)
    if not s.findings:
        out += ["", st.bold(t("no_findings"))]
    out += unexplained_section(analysis, width, st, full)
    out += _recurring(analysis, width, full)  # across bundles
    out += related_section(analysis, width, st, full)
    out += versions_section(analysis, width)
    out += _inputs(analysis, width, full)
    if not s.findings:
        return "\n".join(out) + "\n"
    if s.incidents:
        out += _diagnosis(s, storm, width, full)
    out += _by_node(s, width, full)
    out += _by_bundle(analysis, width, full)
    codes, findings = _budget("codes", full), _budget("findings", full)
    tables = _codes(s, width, codes) + _findings(s, width, findings)
    spare = TOTAL - len(out) - len(tables)
    if codes is not None and findings is not None and spare > 0:  # room left: longer tables
        more_codes = min(spare // 2, MAX_TABLE - codes)
        more_findings = min(spare - more_codes, MAX_TABLE - findings)
        while True:
            tables = _codes(s, width, codes + more_codes) + _findings(s, width, findings + more_findings)
            if len(out) + len(tables) <= TOTAL or not (more_codes or more_findings):
                break
            if more_findings >= more_codes:
                more_findings -= 1
            else:
                more_codes -= 1
    return "\n".join(out + tables) + "\n"


def _inputs(analysis: Analysis, width: int, full: bool) -> list[str]:
    """What was skipped or noted while reading, and what --baseline and --suppressions hid."""
    blocks = []
    for skipped in analysis.inputs.to_dict()["skipped"]:
        blocks.append(_wrap(f"skipped {skipped['source']}: {skipped['reason']}", "  ", width, rest="      "))
    for noted in analysis.inputs.to_dict().get("notes", []):  # read in full (or ddtriage's own report)
        blocks.append(_wrap(f"note {noted['source']}: {noted['note']}", "  ", width, rest="      "))
    for line in known_errors_lines(analysis, limit=10**9 if full else 20):
        blocks.append(_wrap(line.strip(), "    " if line.startswith(" ") else "  ", width, rest="      "))
    if not blocks:
        return []
    return ["", t("inputs_title")] + bounded(blocks, _budget("inputs", full), indent="  ")


def _by_node(s: Summary, width: int, full: bool) -> list[str]:
    """Nodes, most findings not known recoverable first, then most findings."""
    rows = sorted(s.nodes, key=lambda n: (-n.unrecoverable, -n.findings, n.node or ""))
    blocks = []
    for node in rows[:_budget("nodes", full)]:
        kinds = t("list_join").join(plural(n, "kind_" + k) if k in LOG_KINDS and current() != "en"
                                   else f"{n:,} {k}" for k, n in node.kinds)
        name = node.node or node_label(None, node.sources[0] if node.sources else None, node.more_sources)
        blocks.append(_wrap(t("by_node_row", name=name, findings=plural(node.findings, "finding"),
                              unrecoverable=f"{node.unrecoverable:,}", kinds=kinds), "  ", width, rest="      "))
    return ["", t("by_node_title")] + bounded(blocks, _budget("nodes", full), total=len(rows), what="more nodes",
                                                  indent="  ")


def _codes(s: Summary, width: int, budget: int | None) -> list[str]:
    """Codes by API: not recoverable first, then most frequent (the summary's order)."""
    codes = sorted(s.codes, key=lambda r: r.name == GENERIC)  # the generic echo after the specific codes
    cells = [[f"{r.count:,}", r.name or t("unknown_short", code=r.code), r.api or "-", r.action, f"[{r.rule}]"]
             for r in codes[:budget]]  # a row takes a line at least: no more can show
    head, rows = table(cells, width, header=[t(f"col_{c}") for c in ("count", "code", "api", "action", "rule")],
                       right=(0,))
    return ["", t("codes_title"), *head] + bounded(
        rows, budget, total=len(codes), what="more rows", indent="")


def _findings(s: Summary, width: int, budget: int | None) -> list[str]:
    """Findings folded by fingerprint and node: specific codes not known recoverable first, then the
    biggest; the generic LLM_FAILED echoes last."""
    folded = sorted(s.folded, key=lambda r: (r.name == GENERIC, r.recoverable is True, -r.count))
    cells = []
    for r in folded[:budget]:
        where = place(r.first_source, r.first_line, width - 8, r.node)
        cells.append([f"x{r.count:,}", r.name or r.code, r.api or "-", r.action, f"[{r.rule}]", r.fingerprint,
                      where])
    head, rows = table(cells, width, header=[t(f"col_{c}") for c in ("count", "code", "api", "action", "rule",
                                                                      "fingerprint", "first")], right=(0,))
    title = t("findings_title_folded" if len(s.folded) < s.findings else "findings_title")
    sampled = _wrap(t("sampled_rows", cap=f"{s.sampled_fingerprints:,}"), "", width) if s.sampled_fingerprints else []
    return ["", *_wrap(title, "", width), *sampled, *head] + bounded(rows, budget, total=len(folded),
                                                                   what="more rows")


def _diagnosis(s: Summary, storm: bool, width: int = WIDTH, full: bool = False) -> list[str]:
    """Bursts, most severe first (in a storm: one entry per group of bursts with the same lead)."""
    out = ["", t("diagnosis_title", bursts=plural(s.burst_count, "burst"),
                 groups=t("diagnosis_groups", n=plural(len(s.burst_groups), "group")) if storm else "")]
    if storm:
        out += _wrap(t("storm", findings=plural(s.findings, "finding"), rows=plural(len(s.folded), "row"),
                       bursts=plural(s.burst_count, "burst"), groups=plural(len(s.burst_groups), "group")), "", width)
    entries = [(g.first, g) for g in s.burst_groups] if storm else [(b, None) for b in s.bursts]
    blocks = []
    for n, (burst, group) in enumerate(entries[:_budget("diagnosis", full)], 1):
        lines = _burst(n, burst, width, full)
        if group is not None and group.bursts > 1:
            span = f", {group.first_seen} .. {group.last_seen}" if group.first_seen else ""
            lines += _wrap(t("like_this", bursts=plural(group.bursts - 1, "more burst"),
                             findings=plural(group.findings, "finding"), span=span), "    ", width, rest="      ")
        blocks.append(lines)
    total = len(entries) if storm else s.burst_count
    return out + bounded(blocks, _budget("diagnosis", full), total=total,
                         what="more groups of bursts" if storm else "more bursts")


def _burst(n: int, burst: Burst, width: int = WIDTH, full: bool = False) -> list[str]:
    lead = burst.lead
    first, last = burst.first_line, burst.last_line
    span = f":{first}" + (f"-{last}" if last != first else "")
    where = short_source(burst.source, width - 4 - len(span), burst.node) + span
    if len(where) > width - 4:
        where = f"…/{log_name(burst.source)}{span}"
    if burst.node and burst.node not in burst.source:
        where = f"{burst.node}: {where}"
    out = _wrap(f"{n:>2}. {describe_code(lead.code, lead.name)} {describe_api(lead.api, lead.api_evidence)}", "",
                width, rest="    ")
    out += _wrap(where, "    ", width)
    when = lead.timestamp or (t("from_lines_before", time=lead.inferred_time) if lead.inferred_time
                              else t("no_timestamp"))
    out += _wrap(t("burst_line", line=lead.line, when=when, recoverable=recoverable_word(lead.recoverable)), "    ",
                 width)
    if burst.causes:
        out += _wrap(t("likely_cause", causes=describe_causes(burst.causes)), "    ", width)
    out += _wrap(f"-> {action_words(lead.action)} [{lead.rule}]", "    ", width)
    out += _wrap(lead.remedy, "       ", width)
    extras = describe_burst_extras(burst, None if full else MAX_ALSO)
    if extras:
        out += _wrap("+ " + extras, "    ", width, rest="      ")
    return out


# A failure seen in this many bundles, more than the two sides of one link, recurs across a fleet:
# the report's header names it.
FLEET_BUNDLES = 3


def _recurring_lead(analysis: Analysis, width: int) -> list[str]:
    """Under the header of a fleet's scan: the failure seen in the most bundles, so the first
    screen says whether the fleet fails alike (the incidents, one node each, follow). Not for a
    failure of two bundles: the two sides of one link failing alike is what their incidents tell."""
    s = analysis.summary
    bundles = len(s.bundles) + s.more_bundles
    rows = [r for r in s.fingerprints if r.bundles > 1 and not r.generic]
    if not rows or rows[0].bundles < FLEET_BUNDLES:  # most widespread first (`FleetTally.fingerprint_rows`)
        return []
    top = rows[0]
    failure = describe_code(top.code, top.name) + (" " + t("recurring_from", api=top.api) if top.api else "")
    more = t("recurring_more", count=f"{len(rows) - 1:,}") if len(rows) > 1 else ""
    return _wrap(t("recurring_lead", bundles=plural(bundles, "bundle"), nodes=plural(len(s.nodes), "node"),
                   failure=failure, in_bundles=plural(top.bundles, "bundle"), more=more), "", width, rest="  ")


def _recurring(analysis: Analysis, width: int = WIDTH, full: bool = False) -> list[str]:
    """The failures seen in more than one bundle, most widespread first (a multi-bundle scan only)."""
    s = analysis.summary
    bundles = len(s.bundles) + s.more_bundles
    recurring = [r for r in s.fingerprints if r.bundles > 1]
    # a sample: the most widespread failure may be none of it (said here too, where it would be)
    sampled = _wrap(t("sampled_rows", cap=f"{s.sampled_fingerprints:,}"), "", width) if s.sampled_fingerprints else []
    if bundles < 2 or not recurring:
        return ["", *sampled] if bundles > 1 and sampled else []
    rows = [r for r in recurring if not r.generic]
    echoes = [r for r in recurring if r.generic]  # ranked last: folded into one line
    out = ["", *_wrap(t("recurring_title", bundles=plural(bundles, "bundle"), nodes=plural(len(s.nodes), "node"),
                        failures=plural(len(rows), "failure")), "", width), *sampled, t("recurring_columns")]
    blocks = []
    for r in rows[:_budget("recurring", full)]:
        source = t("recurring_from", api=r.api) if r.api else "(" + t("api_unknown") + ")"
        lines = _wrap(f"{r.bundles:>7} {r.nodes:>5} {r.findings:>6}  {describe_code(r.code, r.name)} "
                      f"{source} -> {r.action}", "", width, rest=" " * 22)
        if r.first_seen and r.last_seen:
            lines.append(" " * max(4, min(22, width - 42)) + f"{r.first_seen[:19]} .. {r.last_seen[:19]}")
        blocks.append(lines)
    out += bounded(blocks, _budget("recurring", full), total=len(rows),
                   what="more" + (" (at least)" if s.more_fingerprints else ""), indent="  ")
    if echoes:
        r = echoes[0]
        count = sum(e.findings for e in echoes)
        out += _wrap(
            f"  + {'at least ' if s.more_fingerprints else ''}{count} generic {describe_code(r.code, r.name)} echoes "
            f"of these from {plural(len({e.api for e in echoes}), 'API')}, in up to "
            f"{plural(max(e.bundles for e in echoes), 'bundle')}", "", width, rest="    ")
    return out


def _by_bundle(analysis: Analysis, width: int = WIDTH, full: bool = False) -> list[str]:
    s = analysis.summary
    total = len(s.bundles) + s.more_bundles
    if total < 2:
        return []
    blocks = []
    for b in s.bundles:
        nodes = ", ".join(b.nodes) + (f" and {b.more_nodes} more" if b.more_nodes else "")
        blocks.append(_wrap(t("by_bundle_row", bundle=short_source(b.bundle or "(none)", 40),
                              findings=plural(b.findings, "finding"), unrecoverable=b.unrecoverable,
                              failures=t("at_least", n=plural(b.failures, "failure")) if b.more_failures
                              else plural(b.failures, "failure"))
                            + (f"; {nodes}" if nodes else ""), "  ", width, rest="      "))
    return ["", t("by_bundle_title")] + bounded(blocks, _budget("bundles", full), total=total,
                                                    what="more bundles", indent="  ")


_TITLES = ("Incidents:", "Related errors", "Diagnosis:", "By node", "Codes by API", "Findings", "Recurring",
           "Storm:", "No LLM-DataDist", "By bundle", "Inputs")
_ZH_TITLES = ("incidents_title", "related_title", "diagnosis_title", "by_node_title", "codes_title",
              "findings_title_folded", "findings_title", "no_findings", "by_bundle_title", "inputs_title",
              "versions_title", "recurring_title")  # the same sections' titles in Chinese (their fixed start)
_HEAD = re.compile(r"^( ?\d+)\. ")


def paint(lines: list[str], incidents: Sequence[Incident], st: Style) -> list[str]:
    """Colour for a terminal, added to the finished (already safe) lines: section titles, each
    incident's heading in its action's colour, its lead line, and its action word."""
    actions = {str(i.id): i.action_word for i in incidents}
    titles = _TITLES + tuple(t(key, "zh").split("{")[0] for key in _ZH_TITLES)
    incidents_zh = t("incidents_title", "zh").split("{")[0]
    out, section, after_lead = [], "", False
    for line in lines:
        if line.startswith(titles):
            section = "Incidents" if line.startswith(incidents_zh) else line.split(":")[0]
            out.append(st.bold(line))
            continue
        head = _HEAD.match(line)
        if section == "Incidents" and head and head.group(1).strip() in actions:
            out.append(st.head(line, actions[head.group(1).strip()]))
        elif section == "Incidents" and (line.startswith("          >") or (after_lead and line.startswith(" " * 10)
                                                                            and not line.startswith(" " * 11))):
            out.append(st.lead(line))
        elif section == "Incidents" and line.startswith("    ->    "):
            word, _, action_id = line[10:].split(":", 1)[0].partition("（")  # Chinese: `检查网络（check-network）`
            out.append(line.replace(word, st.head(word, action_id.rstrip("）") or word), 1))
        else:
            out.append(line)
        after_lead = line.startswith("    lead  ")
    return out


def incidents_section(analysis: Analysis, width: int, st: Style, full: bool = False) -> list[str]:
    """The incidents, most severe first: nodes and time, story, lead (with its context), action.
    The first few are told in full while they fit; the others in a line or two each."""
    incidents = analysis.summary.incidents
    out = ["", st.bold(incidents_title(incidents))]
    budget = _budget("incidents", full)
    blocks = []
    used = 0
    for n, inc in enumerate(incidents[:budget]):
        lines = incident_lines(analysis, inc, width, st, full)
        if not full and n and (n >= FULL_INCIDENTS or budget is None or used + len(lines) > budget * 3 // 4):
            lines = incident_short(inc, width, st)
        used += len(lines)
        blocks.append(lines)
    return out + bounded(blocks, budget, total=len(incidents), what="more incidents")


def incident_nodes(inc: Incident, full: bool = False) -> str:
    """`decode-node-2 + prompt-node-1`; a side without a node name is named by its log; the
    first MAX_NODES of many, then how many more."""
    names = [node_label(None if n == NO_NODE else n, inc.lead.source) for n in inc.nodes]
    if not full and len(names) > MAX_NODES + 1:
        names = names[:MAX_NODES] + [plural(len(names) - MAX_NODES, "more node")]
    return " + ".join(names)


def incident_short(inc: Incident, width: int, st: Style) -> list[str]:
    """An incident in a line or two: nodes, time, size, action and lead."""
    lead = inc.lead
    head = f"{inc.id:>2}. {incident_nodes(inc)}"
    what = describe_code(lead.code, lead.meaning) if lead.family == "llm-datadist" else \
        f"{lead.meaning} ({lead.family}{NBSP}{lead.code})"
    out = _wrap(t("incident_short", head=head, state=state_word(inc.state), span=span_of(inc.start, inc.end),
                  findings=plural(inc.findings, "finding"), action=action_words(inc.action_word), what=what,
                  where=place(lead.source, lead.line, width - 4, lead.node)), "", width, rest="    ")
    if out[0].startswith(head):
        out[0] = st.head(head, inc.action_word) + out[0][len(head):]
    return out + _recovery_lines(inc, width)


def _recovery_lines(inc: Incident, width: int) -> list[str]:
    """A recovered incident's proof: when, how long after its first error, and where."""
    r = inc.recovery
    if r is None:
        return []
    return _wrap(f"{recovery_sentence(r)}: {place(r.source, r.line, width - 10, r.node)}", t("recovery_mark"), width,
                 rest="          ")


def incident_lines(analysis: Analysis, inc: Incident, width: int, st: Style, full: bool = False) -> list[str]:
    lead = inc.lead
    head = f"{inc.id:>2}. " + incident_nodes(inc, full)
    out = _wrap(t("incident_head", head=head, state=state_word(inc.state), span=span_of(inc.start, inc.end),
                  findings=plural(inc.findings, "finding")), "", width, rest="    ")
    if out[0].startswith(head):  # colour after wrapping, so colour codes never count as width
        out[0] = st.head(head, inc.action_word) + out[0][len(head):]
    out += _wrap(inc.story, "    ", width) + _recovery_lines(inc, width)
    where = f"{lead.node}: " if lead.node and lead.node not in lead.source else ""
    out += _wrap(where + place(lead.source, lead.line, width - 10 - len(where), lead.node),
                 "    " + ljust(t("lead_word"), 4) + "  ", width, rest="          ")
    shown = context_lines(analysis, lead.source, lead.line)
    if shown:
        for n, text in shown:
            mark = ">" if n == lead.line else " "
            line = f"{mark}{n:>6}  {compact(text)}"
            out.append("          " + (st.lead(_clip(line, width - 10)) if n == lead.line else _clip(line, width - 10)))
    else:
        out.append("          " + st.lead(around(lead.text.strip(), lead.code, width - 10)))
    said = _wrap(f"{action_words(inc.action_word)}: {inc.action}", "    ->    ", width, rest="          ")
    said[0] = said[0].replace(inc.action_word, st.action(inc.action_word), 1)
    return out + said


def place(source: str, line: int, width: int, node: str | None = None) -> str:
    """`source:line` in `width` columns: folders dropped from the middle, then all of them but
    the file name's (`…/plog-1.log:61`), which is cut with `…` only when it is wider on its own."""
    text = f"{short_source(source, width - len(str(line)) - 1, node)}:{line}"
    if len(text) > width:
        text = f"…/{log_name(source)}:{line}"
    return _clip(text, width)


def compact(text: str) -> str:
    """A log line without its header's noise: the time and the message (for context lines)."""
    header = parse_header(text, None)
    if header.fmt is None or not header.timestamp or header.msg_start <= 0:
        return text
    return f"{header.timestamp[11:23]} {text[header.msg_start:]}"


def around(text: str, code: str, width: int) -> str:
    """A log line cut to `width` so that its code stays in view (the header goes first)."""
    if len(text) <= width:
        return text
    needles = [code] + ([str(int(code, 16))] if code.lower().startswith("0x") else [])
    at = min((i for i in (text.find(n) for n in needles) if i != -1), default=-1)
    if at == -1 or at + len(code) < width - 1:
        return _clip(text, width)
    begin = max(0, min(at - width // 3, len(text) - width + 1))
    return "…" + _clip(text[begin:], width - 1)


def _clip(text: str, width: int) -> str:
    return text if len(text) <= width else text[:max(0, width - 1)] + "…"


def unexplained_section(analysis: Analysis, width: int, st: Style, full: bool = False) -> list[str]:
    """`scan --unexplained`: per incident, the templates of the ERROR/WARNING lines near it that
    no code, family or rule explains, folded to one line each (where one was seen first below it)."""
    rows = analysis.unexplained
    if not rows:
        return []
    out = ["", st.bold(f"Unexplained errors near the incidents: {len(rows)} templates "
                       "(ddtriage mine --draft-rules DIR makes rules of them)")]
    blocks = []
    for row in rows:
        nodes = f" on {len(row.nodes)} nodes" if len(row.nodes) > 1 else (f" on {row.nodes[0]}" if row.nodes else "")
        blocks.append(_wrap(f"#{row.incident}  {row.count:,}x{nodes}  {row.template}", "  ", width, rest="      ")[:2]
                      + [_clip(f"      {short_source(row.source, max(30, width - 16), None)}:{row.line}", width)])
    return out + bounded(blocks, _budget("unexplained", full), total=len(rows), what="more", indent="  ")


def related_section(analysis: Analysis, width: int, st: Style, full: bool = False) -> list[str]:
    """Neighbour-family errors on their own (they may be the whole story: a HIXL-only failure),
    one row per node, family and code, first seen first."""
    related = analysis.related
    if not related:
        return []
    rows: dict[tuple[str | None, str, str], list[RelatedEvent]] = {}
    for e in related:
        rows.setdefault((e.node, e.family, e.code), []).append(e)
    ordered = sorted(rows.values(), key=lambda es: (min(x.timestamp or "~" for x in es), es[0].source, es[0].line))
    out = [""] + [st.bold(line) for line in _wrap(t("related_title", n=f"{len(related):,}"), "", width)]
    blocks = []
    for events in ordered[:_budget("related", full)]:
        e = min(events, key=lambda x: (x.timestamp or "~", x.source, x.line))
        where = f"{e.node}: " if e.node and e.node not in e.source else ""
        loc = f"{where}{short_source(e.source, max(30, width - 44 - len(where)), e.node)}:{e.line}"
        more = f" x{len(events):,}" if len(events) > 1 else ""
        blocks.append(_wrap(f"{loc}  {e.family}{NBSP}{e.code} ({e.meaning}){more}"
                            + (t("related_row_at", time=e.timestamp[11:23]) if e.timestamp else ""), "  ", width,
                            rest="      "))
    return out + bounded(blocks, _budget("related", full), total=len(ordered), what="more", indent="  ")


def versions_section(analysis: Analysis, width: int) -> list[str]:
    """Each node's CANN, driver, llm_datadist, HIXL and framework versions, as its logs name them."""
    rows = version_rows(analysis)
    if not rows:
        return []
    out = ["", t("versions_title")]
    for node, versions in rows:
        out += _wrap(t("versions_row", node=node, versions=", ".join(f"{k} {v}" for k, v in versions)), "  ", width,
                     rest="      ")
    return out
