"""JSON Lines: one finding per line, for pipelines (`jq`, log shippers, `ddtriage ... | wc -l`).

    {"source": "plog-4811.log", "line": 12, "timestamp": "2025-11-12T03:40:05.101002", ...}

Each line is the same object as a finding in the JSON report (fingerprint included), in report
order; nothing else is written (the summary is in the other formats). Streamed from the store.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO

from .safe import json_text

if TYPE_CHECKING:
    from ..run.analysis import Analysis

name = "jsonl"
suffix = ".jsonl"


def write(analysis: Analysis, out: TextIO) -> None:
    for batch in analysis.finding_json("\n"):
        # escaped as the JSON report is (a character at a time, so a joined batch alike): a line
        # printed by `cat` or `tail -f` acts on no terminal, and decodes to the same strings
        out.write(json_text(batch))
        out.write("\n")
