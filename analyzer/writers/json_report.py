"""JSON report: everything, as data. Deterministic: stable key order, no wall-clock time.

    {"tool": "ddtriage", "version": 1, "inputs": {...}, "summary": {..., "incidents": [...]},
     "related": [{"source": ..., "line": 19, "family": "runtime", "code": "207001", ...}],
     "links": [{"node": "prompt-node-1", "role": "Prompt", "listen": ["10.0.1.11:26000"], ...}],
     "proofs": [{"source": ..., "line": 14, "proof": "link-success", "clusters": ["2"], ...}],
     "findings": [
    {"source": "plog-4811.log", "line": 12, "code": "0x5010B009", ...},
    ...]}

Written as it goes: the head, then the findings one per line, read back from the store as they
are written (never all in memory), each encoded by `serial.finding_line` (C JSON encoding), so a
million findings stay fast and the report still diffs line by line. The head is `serial.indented`:
`json.dumps(head, indent=2)`'s text, its flat containers encoded by the C encoder.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from ..core.records import report_key
from ..core.serial import REPORT_VERSION, finding_dict, indented
from .safe import json_text

if TYPE_CHECKING:
    from ..run.analysis import Analysis

name = "json"
suffix = ".json"



def write(analysis: Analysis, out: TextIO) -> None:
    head = {
        "tool": "ddtriage",
        "version": REPORT_VERSION,
        "inputs": analysis.inputs.to_dict(),
        "summary": analysis.summary.to_dict(),
        "related": [e.to_dict() for e in analysis.related],
        "links": [facts.to_dict(node) for node, facts in analysis.links.items()],
        "proofs": [p.to_dict() for p in analysis.proofs],  # lines that show a link healthy again
    }
    known = analysis.known_errors
    if known is not None:  # what --baseline / --suppressions hid, and why
        head.update(known.to_dict(analysis.rule_texts))
    if analysis.unexplained:  # scan --unexplained
        head["unexplained"] = [u.to_dict() for u in analysis.unexplained]
    # Escapes what a terminal could act on and names that are not UTF-8: still valid JSON (one
    # character at a time, so chunk by chunk). Streamed: a fleet's head (incidents, related errors,
    # 500 nodes' links) joined into one string was the largest allocation of the run (~40 MiB).
    tail = ""
    for chunk in indented(head):  # json.dumps(head, indent=2)'s text, chunk by chunk
        tail += chunk
        if len(tail) > 8192:
            out.write(json_text(tail[:-2]))
            tail = tail[-2:]
    out.write(json_text(tail[:-2]) + ',\n  "findings": [')  # the head without its closing "\n}"
    sep = "\n    "
    written = False
    for batch in _batches(analysis):  # json_text escapes a character at a time: a batch joined is alike
        out.write(sep)
        out.write(json_text(batch))
        sep, written = ",\n    ", True
    out.write("\n  ]\n}\n" if written else "]\n}\n")


def _batches(analysis: Analysis) -> Iterator[str]:
    """The findings' JSON lines, a batch at a time joined by the report's separator; with a
    baseline, every finding of the run, marked `baseline: new|known` (the summary counts the new ones)."""

    known = analysis.known_errors
    if known is None or known.baseline is None:
        yield from analysis.finding_json(",\n    ")  # streamed from the store
        return
    marked = [(f, "new") for f in analysis.findings] + [(f, "known") for f in known.known]
    for f, mark in sorted(marked, key=lambda fm: report_key(fm[0])):
        yield json.dumps(dict(finding_dict(f, analysis.rule_texts), baseline=mark), ensure_ascii=False)


def render(analysis: Analysis) -> str:
    buf = io.StringIO()
    write(analysis, buf)
    return buf.getvalue()
