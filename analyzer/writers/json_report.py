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
from collections.abc import Iterator
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
    known = analysis.known_errors
    if known is not None:  # what --baseline / --suppressions hid, and why
        head.update(known.to_dict())
    text = json.dumps(head, indent=2, ensure_ascii=False)
    out.write(text[:-2] + ',\n  "findings": [')
    written = 0
    for finding in _marked(analysis):
        out.write(("\n    " if written == 0 else ",\n    ") + json.dumps(finding, ensure_ascii=False))
        written += 1
    out.write("\n  ]\n}\n" if written else "]\n}\n")


def _marked(analysis: Analysis) -> Iterator[dict]:
    """Each finding's JSON; with a baseline, every finding of the run, marked `baseline: new|known`
    (the summary counts the new ones)."""
    from ..engine import sort_key  # here: engine imports the writers' helpers

    known = analysis.known_errors
    if known is None or known.baseline is None:
        yield from (f.to_dict() for f in analysis.findings)
        return
    marked = [(f, "new") for f in analysis.findings] + [(f, "known") for f in known.known]
    for f, mark in sorted(marked, key=lambda fm: sort_key(fm[0])):
        yield dict(f.to_dict(), baseline=mark)


def render(analysis: Analysis) -> str:
    buf = io.StringIO()
    write(analysis, buf)
    return buf.getvalue()
