"""Terminal report, readable in 80 columns: the diagnosis first, details after.

    ddtriage: 3 findings (1 not known recoverable) in 2 files, 120 lines, 9.1 KiB read

    Diagnosis: 2 bursts, most severe first
     1. LLM_WAIT_PROC_TIMEOUT (0x5010B001) from PullKvBlocks (Func field)
        decode-node-2  .../plog/plog-5569_20251112034002789.log:61
        2025-11-12T03:40:08.100000, NOT recoverable
        -> relink [wait-timeout-transfer]
           The transfer timed out and the link is now unrecoverable: ...
"""

from __future__ import annotations

import textwrap
from typing import TYPE_CHECKING, TextIO

from . import safe
from .common import (
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
)

if TYPE_CHECKING:
    from .. import Analysis
    from ..report import Burst, Summary

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


def _wrap(text: str, indent: str, width: int = WIDTH) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=True, break_on_hyphens=False) or [indent]


def write(analysis: Analysis, out: TextIO) -> None:
    out.write(render(analysis))


def render(analysis: Analysis) -> str:
    # Names and reasons come from untrusted bundles: every line is made safe for a terminal.
    return "\n".join(safe.terminal(line) for line in _lines(analysis).split("\n"))


def _lines(analysis: Analysis) -> str:
    s = analysis.summary
    out = _wrap("ddtriage: " + inputs_line(analysis), "")
    for skipped in analysis.inputs.to_dict()["skipped"]:
        out += _wrap(f"skipped {skipped['source']}: {skipped['reason']}", "  ")
    for line in known_errors_lines(analysis):
        out += _wrap(line.strip(), "    " if line.startswith(" ") else "")
    if not s.findings:
        out += ["", "No LLM-DataDist status codes found."]
        return "\n".join(out) + "\n"
    storm = is_storm(s)
    out += _recurring(analysis)
    if storm:
        out += [""] + _wrap(f"Storm: {plural(s.findings, 'finding')} fold into {plural(len(s.folded), 'row')} "
                            f"(same code, API, rule, message shape and node), {plural(s.burst_count, 'burst')} "
                            f"into {plural(len(s.burst_groups), 'group')} (same lead and node).", "")
    out += _diagnosis(s, storm)

    out += ["", "By node"]
    for node in s.nodes[:STORM_ROWS if storm else None]:
        kinds = ", ".join(f"{n} {k}" for k, n in node.kinds)
        out += _wrap(f"{node.node or '(no node)'}: {plural(node.findings, 'finding')} "
                     f"({node.unrecoverable} not known recoverable; {kinds})", "  ")
    if storm and len(s.nodes) > STORM_ROWS:
        out.append(f"  ... {len(s.nodes) - STORM_ROWS} more nodes (see --format json)")

    out += _by_bundle(analysis)
    out += ["", "Codes by API"]
    out.append(f"{'count':>5}  {'code':<31}  {'api':<17}  action [rule]")
    for row in s.codes[:STORM_ROWS if storm else None]:
        code = row.name or f"unknown {row.code}"
        out += textwrap.wrap(f"{row.count:>5}  {code:<31}  {row.api or '-':<17}  {row.action} [{row.rule}]",
                             WIDTH, subsequent_indent=" " * 59, break_on_hyphens=False)
    if storm and len(s.codes) > STORM_ROWS:
        rest = sum(r.count for r in s.codes[STORM_ROWS:])
        out.append(f"... {len(s.codes) - STORM_ROWS} more rows, {plural(rest, 'finding')} (see --format json)")

    out += ["", "Findings" + (" (repeats folded: same code, API, rule, message shape and node)"
                              if len(s.folded) < s.findings else "")]
    shown = 0
    for fold in s.folded[:STORM_ROWS if storm else MAX_FINDINGS]:
        out += textwrap.wrap(f"{short_source(fold.first_source, 44)}:{fold.first_line}  {fold.name or fold.code}  "
                             f"{fold.api or '-'}  {fold.action}", WIDTH, subsequent_indent="    ",
                             break_on_hyphens=False)
        if fold.count > 1:
            out += _wrap(fold_span(fold), "    ")
        shown += fold.count
    if s.findings > shown:
        out.append(f"... {s.findings - shown} more findings (see --format json)")
    return "\n".join(out) + "\n"


def _diagnosis(s: Summary, storm: bool) -> list[str]:
    """Bursts, most severe first (in a storm: one entry per group of bursts with the same lead)."""
    out = ["", f"Diagnosis: {plural(s.burst_count, 'burst')}"
           + (f" in {plural(len(s.burst_groups), 'group')}" if storm else "") + ", most severe first"]
    entries = [(g.first, g) for g in s.burst_groups] if storm else [(b, None) for b in s.bursts]
    limit = STORM_GROUPS if storm else MAX_BURSTS
    for n, (burst, group) in enumerate(entries[:limit], 1):
        out += _burst(n, burst)
        if group is not None and group.bursts > 1:
            span = f", {group.first_seen} .. {group.last_seen}" if group.first_seen else ""
            out += textwrap.wrap(f"+ {plural(group.bursts - 1, 'more burst')} like this one, "
                                 f"{plural(group.findings, 'finding')} in all{span}", WIDTH,
                                 initial_indent="    ", subsequent_indent="      ", break_on_hyphens=False)
    total = len(entries) if storm else s.burst_count
    if total > limit:
        out.append(f"... {total - limit} more {'groups of bursts' if storm else 'bursts'} (see --format json)")
    return out


def _burst(n: int, burst: Burst) -> list[str]:
    lead = burst.lead
    first, last = burst.first_line, burst.last_line
    span = f":{first}" + (f"-{last}" if last != first else "")
    where = short_source(burst.source, WIDTH - 4 - len(span)) + span
    if burst.node and burst.node not in burst.source:
        where = f"{burst.node}: {where}"
    out = textwrap.wrap(f"{n:>2}. {describe_code(lead.code, lead.name)} "
                        f"{describe_api(lead.api, lead.api_evidence)}", WIDTH, subsequent_indent="    ",
                        break_on_hyphens=False)
    out += _wrap(where, "    ")
    when = lead.timestamp or (f"~{lead.inferred_time} (from the lines before)" if lead.inferred_time
                              else "no timestamp")
    out += _wrap(f"line {lead.line}, {when}, {recoverable_word(lead.recoverable)}", "    ")
    if burst.causes:
        out += _wrap("likely cause: " + describe_causes(burst.causes), "    ")
    out += _wrap(f"-> {lead.action} [{lead.rule}]", "    ")
    out += _wrap(lead.remedy, "       ")
    extras = describe_burst_extras(burst)
    if extras:
        out += textwrap.wrap("+ " + extras, WIDTH, initial_indent="    ", subsequent_indent="      ",
                             break_on_hyphens=False)
    return out


def _recurring(analysis: Analysis) -> list[str]:
    """The failures seen in more than one bundle, most widespread first (a multi-bundle scan only)."""
    s = analysis.summary
    bundles = len(s.bundles) + s.more_bundles
    rows = [r for r in s.fingerprints if r.bundles > 1]
    if bundles < 2 or not rows:
        return []
    out = ["", f"Recurring across {plural(bundles, 'bundle')} and {plural(len(s.nodes), 'node')}: "
               f"{plural(len(rows), 'failure')} in more than one bundle",
           f"{'bundles':>7} {'nodes':>5} {'count':>6}  failure"]
    for r in rows[:MAX_RECURRING]:
        out += textwrap.wrap(f"{r.bundles:>7} {r.nodes:>5} {r.findings:>6}  {describe_code(r.code, r.name)} "
                             f"{'from ' + r.api if r.api else '(API unknown)'} -> {r.action}", WIDTH,
                             subsequent_indent=" " * 22, break_on_hyphens=False)
        if r.first_seen and r.last_seen:
            out.append(" " * 22 + f"{r.first_seen[:19]} .. {r.last_seen[:19]}")
    if len(rows) > MAX_RECURRING:
        more = len(rows) - MAX_RECURRING
        out.append(f"  ... and {'at least ' if s.more_fingerprints else ''}{more} more (see --format json)")
    return out


def _by_bundle(analysis: Analysis) -> list[str]:
    s = analysis.summary
    total = len(s.bundles) + s.more_bundles
    if total < 2:
        return []
    out = ["", "By bundle, worst first"]
    for b in s.bundles[:MAX_BUNDLES]:
        nodes = ", ".join(b.nodes) + (f" and {b.more_nodes} more" if b.more_nodes else "")
        out += _wrap(f"{short_source(b.bundle or '(none)', 40)}: {plural(b.findings, 'finding')} "
                     f"({b.unrecoverable} not known recoverable, {plural(b.failures, 'failure')})"
                     + (f"; {nodes}" if nodes else ""), "  ")
    if total > MAX_BUNDLES:
        out.append(f"  ... and {total - MAX_BUNDLES} more bundles")
    return out
