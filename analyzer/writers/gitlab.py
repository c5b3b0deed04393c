"""GitLab Code Quality JSON (`artifacts:reports:codequality`), a subset of the Code Climate spec.

    [{"description": "LLM_WAIT_PROC_TIMEOUT (0x5010B001) from PullKvBlocks -> relink: Unlink ...",
      "check_name": "wait-timeout-transfer", "fingerprint": "5c0d...", "severity": "critical",
      "location": {"path": "node-2/plog/plog-1.log", "lines": {"begin": 61}}}, ...]

One issue per finding group (one fingerprint in one file) at its first line. GitLab shows only
the first issue of a fingerprint, and compares fingerprints between the merge request's pipelines
to tell new from fixed, so each issue's fingerprint is unique and stable across runs: a hash of
the finding's fingerprint, its node and its rank among that fingerprint's groups on that node (no
file name, line or time). Severity from recoverability: `critical` not recoverable, `major`
unknown, `minor` recoverable. Related errors (runtime, HCCL, HIXL, MindIE, ...; no LLM-DataDist
code) are an issue each per family, code and file, after the findings: `minor`, or `major` under
`--fail-on related`, with a fingerprint of family, code, node and rank (unique like the others).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, TextIO

from .ci import groups, headline, related_fails, related_groups, related_message, related_rule, stable_ids
from .safe import json_text

if TYPE_CHECKING:
    from ..run.analysis import Analysis

name = "gitlab"
suffix = ".gitlab.json"

SEVERITY = {False: "critical", None: "major", True: "minor"}


def build(analysis: Analysis) -> list[dict[str, Any]]:
    """The Code Quality issues as data."""
    found = sorted(groups(analysis), key=lambda g: (g.first.source, g.first.line))
    ids = stable_ids((g.first.fingerprint, g.first.node) for g in found)
    issues = []
    texts = analysis.rule_texts
    for g, uid in zip(found, ids, strict=True):
        f = g.first
        times = f" ({g.count} times, {g.where()})" if g.count > 1 else ""
        issues.append({
            "type": "issue",
            "description": f"{headline(f)}: {texts.remedy(f.rule)}{times}",
            "check_name": f.rule,
            "fingerprint": uid,
            "severity": SEVERITY[f.recoverable],
            "categories": ["Bug Risk"],
            "location": {"path": f.source, "lines": {"begin": max(1, f.line)}},
        })
    related = related_groups(analysis)
    related_ids = stable_ids((f"related\x1f{r.first.family}\x1f{r.first.code}", r.first.node) for r in related)
    for r, uid in zip(related, related_ids, strict=True):
        issues.append({
            "type": "issue",
            "description": related_message(r),
            "check_name": related_rule(r.first),
            "fingerprint": uid,
            "severity": "major" if related_fails(analysis) else "minor",
            "categories": ["Bug Risk"],
            "location": {"path": r.first.source, "lines": {"begin": max(1, r.first.line)}},
        })
    return issues


def write(analysis: Analysis, out: TextIO) -> None:
    issues = build(analysis)
    if not issues:
        out.write("[]\n")
        return
    out.write("[\n" + ",\n".join("  " + json_text(json.dumps(i, ensure_ascii=False)) for i in issues) + "\n]\n")
