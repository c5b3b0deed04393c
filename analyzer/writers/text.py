"""Terminal report, readable in 80 columns: the diagnosis first, details after.

    ddtriage: 3 findings (1 not known recoverable) in 2 files, 120 lines, 9.1 KiB read

    Diagnosis (most severe first)
    1. decode/plog-5569.log:41  2025-11-12T03:40:05.001002
       LLM_WAIT_PROC_TIMEOUT (0x5010B001) from PullKvBlocks (plog Func field)
       action: relink [wait-timeout-transfer]
         The link is unrecoverable: unlink and link the clusters again ...
"""

from __future__ import annotations

import textwrap

from .common import describe_api, describe_code, inputs_line, recoverable_word

WIDTH = 80
MAX_BURSTS = 20
MAX_FINDINGS = 200


def _wrap(text: str, indent: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, initial_indent=indent, subsequent_indent=indent,
                         break_long_words=True, break_on_hyphens=False) or [indent]


def render(analysis) -> str:
    s = analysis.summary
    out = ["ddtriage: " + inputs_line(analysis)]
    for skipped in analysis.inputs.to_dict()["skipped"]:
        out += _wrap(f"skipped {skipped['source']}: {skipped['reason']}", "  ")
    if not analysis.findings:
        out += ["", "No LLM-DataDist status codes found."]
        return "\n".join(out) + "\n"

    out += ["", "Diagnosis (most severe first)"]
    for n, burst in enumerate(s["bursts"][:MAX_BURSTS], 1):
        lead = burst["lead"]
        lines = burst["lines"]
        span = f"{lines[0]}" if lines[0] == lines[1] else f"{lines[0]}-{lines[1]}"
        out += _wrap(f"{n}. {burst['source']}:{span}  {burst['first_seen'] or ''}".rstrip(), "")
        out += _wrap(f"{describe_code(lead['code'], lead['name'])} {describe_api(lead['api'], lead['api_evidence'])}, "
                     f"line {lead['line']}, {recoverable_word(lead['recoverable'])}", "   ")
        out += _wrap(f"action: {lead['action']} [{lead['rule']}]", "   ")
        out += _wrap(lead["remedy"], "     ")
        extra = []
        if burst["echoes"]:
            extra.append(f"{burst['echoes']} generic LLM_FAILED echo{'es' if burst['echoes'] != 1 else ''}")
        if burst["also"]:
            extra.append("also " + ", ".join(a["name"] + (f" from {a['api']}" if a["api"] else "") for a in burst["also"]))
        if extra:
            out += _wrap("; ".join(extra), "   ")
    if len(s["bursts"]) > MAX_BURSTS:
        out.append(f"... {len(s['bursts']) - MAX_BURSTS} more bursts (see --format json)")

    out += ["", "Codes by API"]
    out.append(f"{'count':>5}  {'code':<10}  {'name':<29}  {'api':<17}  action")
    for row in s["codes"]:
        name = (row["name"] or "unknown")[:29]
        out.append(f"{row['count']:>5}  {row['code']:<10}  {name:<29}  {(row['api'] or '-')[:17]:<17}  {row['action']}")

    out += ["", "Findings"]
    for f in analysis.findings[:MAX_FINDINGS]:
        head = f"{f.source}:{f.line}  {f.name or f.code}  {f.api or '-'}  {f.action}"
        out += _wrap(head, "")
    if len(analysis.findings) > MAX_FINDINGS:
        out.append(f"... {len(analysis.findings) - MAX_FINDINGS} more findings (see --format json)")
    return "\n".join(out) + "\n"
