"""JSON report: everything, as data. Deterministic: stable key order, no wall-clock time.

    {"tool": "ddtriage", "version": 1, "inputs": {...}, "summary": {...}, "findings": [...]}
"""

from __future__ import annotations

import json

REPORT_VERSION = 1


def as_dict(analysis) -> dict:
    return {
        "tool": "ddtriage",
        "version": REPORT_VERSION,
        "inputs": analysis.inputs.to_dict(),
        "summary": analysis.summary,
        "findings": [f.to_dict() for f in analysis.findings],
    }


def render(analysis) -> str:
    return json.dumps(as_dict(analysis), indent=2, ensure_ascii=False) + "\n"
