"""JSON report: everything, as data. Deterministic: stable key order, no wall-clock time.

    {"tool": "ddtriage", "version": 1, "inputs": {...}, "summary": {...}, "findings": [
    {"source": "plog-4811.log", "line": 12, "code": "0x5010B009", ...},
    ...]}

Findings are written one per line with the C JSON encoder: a million findings stay fast, and
the report still diffs line by line.
"""

from __future__ import annotations

import io
import json
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from .. import Analysis

name = "json"
suffix = ".json"

REPORT_VERSION = 1


def write(analysis: Analysis, out: TextIO) -> None:
    head = {
        "tool": "ddtriage",
        "version": REPORT_VERSION,
        "inputs": analysis.inputs.to_dict(),
        "summary": analysis.summary.to_dict(),
    }
    text = json.dumps(head, indent=2, ensure_ascii=False)
    out.write(text[:-2] + ',\n  "findings": [')
    for i, finding in enumerate(analysis.findings):
        out.write(("\n    " if i == 0 else ",\n    ") + json.dumps(finding.to_dict(), ensure_ascii=False))
    out.write("\n  ]\n}\n" if analysis.findings else "]\n}\n")


def render(analysis: Analysis) -> str:
    buf = io.StringIO()
    write(analysis, buf)
    return buf.getvalue()
