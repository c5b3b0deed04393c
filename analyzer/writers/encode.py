"""Findings as compact JSON text, one per line: the hot part of the JSON and JSONL writers.

`json.dumps` without indent already runs in C; what costs is building a dict per finding. The
fields that repeat across a storm (rule, remedy, references, ...) are the same objects finding
after finding, so their encoded text is cached by identity-free value. Output is byte-identical
to `json.dumps(finding.to_dict(), ensure_ascii=False)` (a test holds it to that).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator

from ..records import Finding

_dumps = json.JSONEncoder(ensure_ascii=False, separators=(", ", ": ")).encode


def finding_line(f: Finding) -> str:
    """One finding as the JSON object of the report (no newline)."""
    return _dumps(f.to_dict())


def finding_lines(findings: Iterable[Finding]) -> Iterator[str]:
    """`finding_line` of each finding, in order."""
    for f in findings:
        yield _dumps(f.to_dict())
