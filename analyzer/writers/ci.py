"""What the CI formats (SARIF, JUnit, GitHub, GitLab) share: levels, finding groups, headlines.

A storm logs one failure thousands of times; a CI view wants it once per file. A `Group` is the
findings of one fingerprint in one source (file or `ARCHIVE!MEMBER`), shown at its first line.
Groups come in report order, diagnosis leads first, generic LLM_FAILED echoes last, so a view that
only shows the first few (GitHub shows 10 annotations per level) shows the ones that matter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..records import Finding

if TYPE_CHECKING:
    from .. import Analysis

TOOL_URI = "https://pypi.org/project/ddtriage/"


def level(recoverable: bool | None) -> str:
    """`error` for a code not known to be recoverable (what `--fail-on unrecoverable` counts), else
    `warning`."""
    return "warning" if recoverable is True else "error"


def code_label(f: Finding) -> str:
    """`LLM_WAIT_PROC_TIMEOUT (0x5010B001)`, or `unknown LLM-DataDist code 0x5010B0FF`."""
    return f"{f.name} ({f.code})" if f.name else f"unknown LLM-DataDist code {f.code}"


def headline(f: Finding) -> str:
    """One line: code, API and action: `LLM_LINK_FAILED (0x5010B009) from LinkLlmClusters -> relink`."""
    api = f" from {f.api}" if f.api else ""
    return f"{code_label(f)}{api} -> {f.action}"


@dataclass(frozen=True)
class Group:
    """The findings of one fingerprint in one source."""

    findings: tuple[Finding, ...]
    lead: bool  # holds a diagnosis lead (a burst's lead line)

    @property
    def first(self) -> Finding:
        return self.findings[0]

    @property
    def lines(self) -> list[int]:
        return [f.line for f in self.findings]

    def where(self, limit: int = 10) -> str:
        """`line 12` or `lines 12, 40, 41 and 3 more`."""
        lines = self.lines
        text = ", ".join(str(n) for n in lines[:limit])
        more = f" and {len(lines) - limit} more" if len(lines) > limit else ""
        return f"line{'s' if len(lines) > 1 else ''} {text}{more}"


def groups(analysis: Analysis) -> list[Group]:
    """Findings grouped by (fingerprint, source): leads first, then report order, echoes last."""
    leads = {(b.source, b.lead.line, b.lead.code) for b in analysis.summary.bursts}
    by_key: dict[tuple[str, str], list[Finding]] = {}
    for f in analysis.findings:
        by_key.setdefault((f.fingerprint, f.source), []).append(f)
    made = [Group(tuple(fs), any((f.source, f.line, f.code) in leads for f in fs)) for fs in by_key.values()]
    order = {id(g): i for i, g in enumerate(made)}
    return sorted(made, key=lambda g: (not g.lead, g.first.generic, order[id(g)]))


def stable_ids(items: Iterable[tuple[str, str | None]]) -> list[str]:
    """A unique, run-stable id per (fingerprint, node) occurrence: the k-th group of a fingerprint
    on a node gets hash(fingerprint, node, k). Names no file or line, so a shifted log keeps it."""
    seen: dict[tuple[str, str | None], int] = {}
    out = []
    for fp, node in items:
        k = seen.get((fp, node), 0)
        seen[(fp, node)] = k + 1
        key = f"{fp}\x1f{node or ''}\x1f{k}"
        out.append(hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=16).hexdigest())
    return out


def rules_in_use(analysis: Analysis) -> Sequence[str]:
    """Every rule id of the rule set, plus any a finding names that the set lacks; sorted."""
    ids = {r.id for r in analysis.rules.rules} | {f.rule for f in analysis.findings}
    return sorted(ids)
