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
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from ..core.headers import parse_header
from . import safe
from .common import (
    Style,
    context_lines,
    describe_api,
    describe_burst_extras,
    describe_causes,
    describe_code,
    fold_span,
    inputs_line,
    is_storm,
    known_errors_lines,
    plural,
    recoverable_word,
    short_source,
    span_of,
)

if TYPE_CHECKING:
    from ..core.observations import RelatedEvent
    from ..diagnose.summary import Burst, Incident, Summary
    from ..run.api import Analysis

name = "text"
suffix = ".txt"

WIDTH = 80
MAX_BURSTS = 25
MAX_FINDINGS = 200
MAX_RECURRING = 8  # failures shown across bundles, on the first screen
MAX_BUNDLES = 10
# A storm (`common.is_storm`) gets a short report: STORM_GROUPS groups of bursts in full, then at
# most STORM_ROWS rows per table (~200 lines whatever the number of findings).
STORM_GROUPS = 6
STORM_ROWS = 15
MAX_INCIDENTS = 10
MAX_RELATED = 40


def _wrap(text: str, indent: str, width: int = WIDTH, rest: str | None = None) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent if rest is None else rest,
                         break_long_words=True, break_on_hyphens=False) or [indent]


def write(analysis: Analysis, out: TextIO, width: int | None = None, color: bool = False) -> None:
    out.write(render(analysis, width or WIDTH, Style(color)))


def render(analysis: Analysis, width: int = WIDTH, style: Style | None = None) -> str:
    # Names and log text come from untrusted bundles: every line is made safe for a terminal; our
    # own colour is added after that, so no log text can carry an escape sequence through.
    lines = [safe.terminal(line) for line in _lines(analysis, width).split("\n")]
    if style is not None and style.color:
        lines = paint(lines, analysis.summary.incidents, style)
    return "\n".join(lines)


def _lines(analysis: Analysis, width: int = WIDTH) -> str:
    s, st = analysis.summary, Style(False)
    out = _wrap("ddtriage: " + inputs_line(analysis), "", width)
    for skipped in analysis.inputs.to_dict()["skipped"]:
        out += _wrap(f"skipped {skipped['source']}: {skipped['reason']}", "  ", width)
    for noted in analysis.inputs.to_dict().get("notes", []):  # read in full (or ddtriage's own report)
        out += _wrap(f"note {noted['source']}: {noted['note']}", "  ", width)
    for line in known_errors_lines(analysis):
        out += _wrap(line.strip(), "    " if line.startswith(" ") else "", width)
    out += _recurring(analysis, width)  # across bundles: a few lines, then the incidents
    if is_storm(s):
        out += [""] + _wrap(f"Storm: {plural(s.findings, 'finding')} fold into {plural(len(s.folded), 'row')} "
                            f"(same code, API, rule, message shape and node), {plural(s.burst_count, 'burst')} "
                            f"into {plural(len(s.burst_groups), 'group')} (same lead and node).", "", width)
    if s.incidents:
        out += incidents_section(analysis, width, st)
    if not s.findings:
        out += ["", st.bold("No LLM-DataDist status codes found.")]
    out += related_section(analysis, width, st)
    if not s.findings:
        return "\n".join(out) + "\n"
    storm = is_storm(s)
    out += _diagnosis(s, storm, width)

    out += ["", st.bold("By node")]
    for node in s.nodes[:STORM_ROWS if storm else None]:
        kinds = ", ".join(f"{n} {k}" for k, n in node.kinds)
        out += _wrap(f"{node.node or '(no node)'}: {plural(node.findings, 'finding')} "
                     f"({node.unrecoverable} not known recoverable; {kinds})", "  ", width)
    if storm and len(s.nodes) > STORM_ROWS:
        out.append(f"  ... {len(s.nodes) - STORM_ROWS} more nodes (see --format json)")

    out += _by_bundle(analysis, width)
    out += ["", st.bold("Codes by API")]
    out.append(f"{'count':>5}  {'code':<31}  {'api':<17}  action [rule]")
    for row in s.codes[:STORM_ROWS if storm else None]:
        code = row.name or f"unknown {row.code}"
        out += textwrap.wrap(f"{row.count:>5}  {code:<31}  {row.api or '-':<17}  {row.action} [{row.rule}]",
                             width, subsequent_indent=" " * 59, break_on_hyphens=False)
    if storm and len(s.codes) > STORM_ROWS:
        rest = sum(r.count for r in s.codes[STORM_ROWS:])
        out.append(f"... {len(s.codes) - STORM_ROWS} more rows, {plural(rest, 'finding')} (see --format json)")

    out += ["", "Findings" + (" (repeats folded: same code, API, rule, message shape and node)"
                              if len(s.folded) < s.findings else "")]
    shown = 0
    for fold in s.folded[:STORM_ROWS if storm else MAX_FINDINGS]:
        where = short_source(fold.first_source, max(44, width - 36), fold.node)
        out += textwrap.wrap(f"{where}:{fold.first_line}  {fold.name or fold.code}  {fold.api or '-'}  {fold.action}",
                             width, subsequent_indent="    ", break_on_hyphens=False)
        if fold.count > 1:
            out += _wrap(fold_span(fold), "    ", width)
        shown += fold.count
    if s.findings > shown:
        out.append(f"... {s.findings - shown} more findings (see --format json)")
    return "\n".join(out) + "\n"


def _diagnosis(s: Summary, storm: bool, width: int = WIDTH) -> list[str]:
    """Bursts, most severe first (in a storm: one entry per group of bursts with the same lead)."""
    out = ["", f"Diagnosis: {plural(s.burst_count, 'burst')}"
           + (f" in {plural(len(s.burst_groups), 'group')}" if storm else "") + ", most severe first"]
    entries = [(g.first, g) for g in s.burst_groups] if storm else [(b, None) for b in s.bursts]
    limit = STORM_GROUPS if storm else MAX_BURSTS
    for n, (burst, group) in enumerate(entries[:limit], 1):
        out += _burst(n, burst, width)
        if group is not None and group.bursts > 1:
            span = f", {group.first_seen} .. {group.last_seen}" if group.first_seen else ""
            out += textwrap.wrap(f"+ {plural(group.bursts - 1, 'more burst')} like this one, "
                                 f"{plural(group.findings, 'finding')} in all{span}", width,
                                 initial_indent="    ", subsequent_indent="      ", break_on_hyphens=False)
    total = len(entries) if storm else s.burst_count
    if total > limit:
        out.append(f"... {total - limit} more {'groups of bursts' if storm else 'bursts'} (see --format json)")
    return out


def _burst(n: int, burst: Burst, width: int = WIDTH) -> list[str]:
    lead = burst.lead
    first, last = burst.first_line, burst.last_line
    span = f":{first}" + (f"-{last}" if last != first else "")
    where = short_source(burst.source, width - 4 - len(span), burst.node) + span
    if burst.node and burst.node not in burst.source:
        where = f"{burst.node}: {where}"
    out = textwrap.wrap(f"{n:>2}. {describe_code(lead.code, lead.name)} "
                        f"{describe_api(lead.api, lead.api_evidence)}", width, subsequent_indent="    ",
                        break_on_hyphens=False)
    out += _wrap(where, "    ", width)
    when = lead.timestamp or (f"~{lead.inferred_time} (from the lines before)" if lead.inferred_time
                              else "no timestamp")
    out += _wrap(f"line {lead.line}, {when}, {recoverable_word(lead.recoverable)}", "    ", width)
    if burst.causes:
        out += _wrap("likely cause: " + describe_causes(burst.causes), "    ", width)
    out += _wrap(f"-> {lead.action} [{lead.rule}]", "    ", width)
    out += _wrap(lead.remedy, "       ", width)
    extras = describe_burst_extras(burst)
    if extras:
        out += textwrap.wrap("+ " + extras, width, initial_indent="    ", subsequent_indent="      ",
                             break_on_hyphens=False)
    return out


def _recurring(analysis: Analysis, width: int = WIDTH) -> list[str]:
    """The failures seen in more than one bundle, most widespread first (a multi-bundle scan only)."""
    s = analysis.summary
    bundles = len(s.bundles) + s.more_bundles
    recurring = [r for r in s.fingerprints if r.bundles > 1]
    if bundles < 2 or not recurring:
        return []
    rows = [r for r in recurring if not r.generic]
    echoes = [r for r in recurring if r.generic]  # ranked last: folded into one line
    out = ["", f"Recurring across {plural(bundles, 'bundle')} and {plural(len(s.nodes), 'node')}: "
               f"{plural(len(rows), 'failure')} in more than one bundle",
           f"{'bundles':>7} {'nodes':>5} {'count':>6}  failure"]
    for r in rows[:MAX_RECURRING]:
        out += textwrap.wrap(f"{r.bundles:>7} {r.nodes:>5} {r.findings:>6}  {describe_code(r.code, r.name)} "
                             f"{'from ' + r.api if r.api else '(API unknown)'} -> {r.action}", width,
                             subsequent_indent=" " * 22, break_on_hyphens=False)
        if r.first_seen and r.last_seen:
            out.append(" " * 22 + f"{r.first_seen[:19]} .. {r.last_seen[:19]}")
    if len(rows) > MAX_RECURRING:
        more = len(rows) - MAX_RECURRING
        out.append(f"  ... and {'at least ' if s.more_fingerprints else ''}{more} more (see --format json)")
    if echoes:
        r = echoes[0]
        count = sum(e.findings for e in echoes)
        out += textwrap.wrap(
            f"  + {'at least ' if s.more_fingerprints else ''}{count} generic {describe_code(r.code, r.name)} echoes "
            f"of these from {plural(len({e.api for e in echoes}), 'API')}, in up to "
            f"{plural(max(e.bundles for e in echoes), 'bundle')}", width, subsequent_indent="    ",
            break_on_hyphens=False)
    return out


def _by_bundle(analysis: Analysis, width: int = WIDTH) -> list[str]:
    s = analysis.summary
    total = len(s.bundles) + s.more_bundles
    if total < 2:
        return []
    out = ["", "By bundle, worst first"]
    for b in s.bundles[:MAX_BUNDLES]:
        nodes = ", ".join(b.nodes) + (f" and {b.more_nodes} more" if b.more_nodes else "")
        out += _wrap(f"{short_source(b.bundle or '(none)', 40)}: {plural(b.findings, 'finding')} "
                     f"({b.unrecoverable} not known recoverable, {plural(b.failures, 'failure')})"
                     + (f"; {nodes}" if nodes else ""), "  ", width)
    if total > MAX_BUNDLES:
        out.append(f"  ... and {total - MAX_BUNDLES} more bundles")
    return out


_TITLES = ("Incidents:", "Related errors", "Diagnosis:", "By node", "Codes by API", "Findings", "Recurring",
           "Storm:", "No LLM-DataDist", "By bundle")
_HEAD = re.compile(r"^( ?\d+)\. ")


def paint(lines: list[str], incidents: Sequence[Incident], st: Style) -> list[str]:
    """Colour for a terminal, added to the finished (already safe) lines: section titles, each
    incident's heading in its action's colour, its lead line, and its action word."""
    actions = {str(i.id): i.action_word for i in incidents}
    out, section, after_lead = [], "", False
    for line in lines:
        if line.startswith(_TITLES):
            section = line.split(":")[0]
            out.append(st.bold(line))
            continue
        head = _HEAD.match(line)
        if section == "Incidents" and head and head.group(1).strip() in actions:
            out.append(st.head(line, actions[head.group(1).strip()]))
        elif section == "Incidents" and (line.startswith("          >") or (after_lead and line.startswith(" " * 10)
                                                                            and not line.startswith(" " * 11))):
            out.append(st.lead(line))
        elif section == "Incidents" and line.startswith("    ->    "):
            word = line[10:].split(":", 1)[0]
            out.append(line.replace(word, st.action(word), 1))
        else:
            out.append(line)
        after_lead = line.startswith("    lead  ")
    return out


def incidents_section(analysis: Analysis, width: int, st: Style) -> list[str]:
    """The incidents, most severe first: nodes and time, story, lead (with its context), action."""
    incidents = analysis.summary.incidents
    out = ["", st.bold(f"Incidents: {len(incidents)}, most severe first")]
    for inc in incidents[:MAX_INCIDENTS]:
        out += incident_lines(analysis, inc, width, st)
    if len(incidents) > MAX_INCIDENTS:
        out.append(f"... {len(incidents) - MAX_INCIDENTS} more incidents (see --format json)")
    return out


def incident_lines(analysis: Analysis, inc: Incident, width: int, st: Style) -> list[str]:
    lead = inc.lead
    head = f"{inc.id:>2}. " + " + ".join(inc.nodes)
    out = textwrap.wrap(f"{head}  {span_of(inc.start, inc.end)}, {plural(inc.findings, 'finding')}", width,
                        subsequent_indent="    ", break_on_hyphens=False)
    if out[0].startswith(head):  # colour after wrapping, so colour codes never count as width
        out[0] = st.head(head, inc.action_word) + out[0][len(head):]
    out += _wrap(inc.story, "    ", width)
    where = f"{lead.node}: " if lead.node and lead.node not in lead.source else ""
    out += _wrap(f"{where}{short_source(lead.source, width - 12 - len(where), lead.node)}:{lead.line}",
                 "    lead  ", width, rest="          ")
    shown = context_lines(analysis, lead.source, lead.line)
    if shown:
        for n, text in shown:
            mark = ">" if n == lead.line else " "
            line = f"{mark}{n:>6}  {compact(text)}"
            out.append("          " + (st.lead(_clip(line, width - 10)) if n == lead.line else _clip(line, width - 10)))
    else:
        out.append("          " + st.lead(around(lead.text.strip(), lead.code, width - 10)))
    said = _wrap(f"{inc.action_word}: {inc.action}", "    ->    ", width, rest="          ")
    said[0] = said[0].replace(inc.action_word, st.action(inc.action_word), 1)
    return out + said


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


def related_section(analysis: Analysis, width: int, st: Style) -> list[str]:
    """Neighbour-family errors on their own (they may be the whole story: a HIXL-only failure),
    one row per node, family and code, first seen first."""
    related = analysis.related
    if not related:
        return []
    rows: dict[tuple[str | None, str, str], list[RelatedEvent]] = {}
    for e in related:
        rows.setdefault((e.node, e.family, e.code), []).append(e)
    ordered = sorted(rows.values(), key=lambda es: (min(x.timestamp or "~" for x in es), es[0].source, es[0].line))
    out = [""] + [st.bold(line) for line in _wrap(
        f"Related errors (not LLM-DataDist): {len(related)}, by node, family and code, first seen first", "", width)]
    for events in ordered[:MAX_RELATED]:
        e = min(events, key=lambda x: (x.timestamp or "~", x.source, x.line))
        where = f"{e.node}: " if e.node and e.node not in e.source else ""
        loc = f"{where}{short_source(e.source, max(30, width - 44 - len(where)), e.node)}:{e.line}"
        more = f" x{len(events)}" if len(events) > 1 else ""
        out += _wrap(f"{loc}  {e.family} {e.code} ({e.meaning}){more}"
                     + (f" at {e.timestamp[11:23]}" if e.timestamp else ""), "  ", width, rest="      ")
    if len(ordered) > MAX_RELATED:
        out.append(f"  ... {len(ordered) - MAX_RELATED} more (see --format json)")
    return out
