"""ddtriage's own reports, told from their first bytes, so that a later scan of the folder they
were written into never reads them as logs (their `"code"`, `"text"` and `"name"` fields would
otherwise come back as findings, with APIs borrowed from neighbouring lines).

Each entry is what the writer puts at the head of its file (analyzer/writers/, diagnose/known_errors.py).
"""

from __future__ import annotations

import re

OWN_REPORT_HEAD = 4096  # the bytes looked at; every signature below sits well inside them

_SIGNATURES: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("baseline", re.compile(rb'\A\s*\{\s*"tool"\s*:\s*"ddtriage"\s*,\s*"baseline"\s*:')),
    ("JSON report", re.compile(rb'\A\s*\{\s*"tool"\s*:\s*"ddtriage"')),
    ("SARIF report", re.compile(rb'\A\s*\{\s*"\$schema"\s*:\s*"[^"]*sarif[^"]*".*?"driver"\s*:\s*\{\s*'
                                rb'"name"\s*:\s*"ddtriage"', re.S)),
    ("JUnit report", re.compile(rb'\A\s*(?:<\?xml[^>]*>\s*)?<testsuites name="ddtriage"')),
    ("HTML report", re.compile(rb'\A\s*<!DOCTYPE html>.*?<title>ddtriage report</title>', re.S | re.I)),
    ("Markdown report", re.compile(rb'\A(?:# ddtriage report|## ddtriage)\n')),
    ("text report", re.compile(rb'\Addtriage: \d+ findings? \(')),
    ("GitHub annotations", re.compile(rb'\A(?:::(?:error|warning|notice) [^\n]*title=ddtriage%3A'
                                      rb'|ddtriage: \d+ findings)')),
    ("GitLab Code Quality report", re.compile(rb'\A\[\s*\{"type": "issue", "description": ')),
    ("CSV report", re.compile(rb'\Abundle,node,pod,kind,device,pid,code,name,api,action,rule,'
                              rb'recoverable,fingerprint,')),
    ("JSONL report", re.compile(rb'\A\{"source": "(?:[^"\\\n]|\\.)*", "line": \d+, "timestamp": [^\n]*'
                                rb'"fingerprint": "[0-9a-f]{16}"')),
    ("watch event stream", re.compile(rb'\A\{"kind": "watch", "tool": "ddtriage"')),  # run/watch.py
    ("watch state file", re.compile(rb'\A\{"ddtriage_watch_state": \d+')),
)


def own_document(head: bytes) -> str | None:
    """What kind of ddtriage report (or baseline) `head` starts, or None for anything else."""
    head = head[:OWN_REPORT_HEAD].removeprefix(b"\xef\xbb\xbf")
    for kind, signature in _SIGNATURES:
        if signature.match(head):
            return kind
    return None


def left_out_reason(kind: str) -> str:
    """The note for a report found among the inputs."""
    return f"a ddtriage {kind} (its own output), not a log: left out"
