"""What the CI formats (SARIF, JUnit, GitHub, GitLab) share: levels, finding groups, headlines.

A storm logs one failure thousands of times; a CI view wants it once per file. A `Group` is the
findings of one fingerprint in one source (file or `ARCHIVE!MEMBER`), shown at its first line.
Groups come in report order, diagnosis leads first, generic LLM_FAILED echoes last, so a view that
only shows the first few (GitHub shows 10 annotations per level) shows the ones that matter.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.records import Finding

if TYPE_CHECKING:
    from ..core.observations import RelatedEvent
    from ..run.api import Analysis

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


KEEP = 100  # findings a group keeps for listing; the rest are counted (a storm's store stays on disk)


@dataclass
class Group:
    """The findings of one fingerprint in one source: the first `KEEP` of them, and how many."""

    first: Finding
    lead: bool = False  # holds a diagnosis lead (a burst's lead line)
    count: int = 0
    kept: list[Finding] = field(default_factory=list)

    def add(self, f: Finding, lead: bool) -> None:
        self.count += 1
        self.lead |= lead
        if len(self.kept) < KEEP:
            self.kept.append(f)

    def where(self, limit: int = 10) -> str:
        """`line 12` or `lines 12, 40, 41 and 3 more`."""
        lines = [f.line for f in self.kept[:limit]]
        more = f" and {self.count - len(lines)} more" if self.count > len(lines) else ""
        return f"line{'s' if self.count > 1 else ''} {', '.join(map(str, lines))}{more}"


def groups(analysis: Analysis) -> list[Group]:
    """Findings grouped by (fingerprint, source) in one pass over the findings: leads first, then
    report order, generic echoes last."""
    leads = {(b.source, b.lead.line, b.lead.code) for b in analysis.summary.bursts}
    by_key: dict[tuple[str, str], Group] = {}
    for f in analysis.findings:
        g = by_key.get((f.fingerprint, f.source))
        if g is None:
            g = by_key[(f.fingerprint, f.source)] = Group(f)
        g.add(f, (f.source, f.line, f.code) in leads)
    made = list(by_key.values())  # dicts keep insertion (report) order; sorted() is stable
    return sorted(made, key=lambda g: (not g.lead, g.first.generic))


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


# -- related errors (neighbour families: runtime, HCCL, HIXL, MindIE, ...; no LLM-DataDist code) ----
# They are shown in every CI format, as their own entries after the findings: a warning (GitHub,
# SARIF), a minor issue (GitLab) or a passing JUnit case with the line in system-out; under
# `--fail-on related`, where they fail the gate, an error, a major issue and a JUnit failure.


@dataclass
class RelatedGroup:
    """The related errors of one family and code in one source, shown at the first."""

    first: RelatedEvent
    count: int = 0
    lines: list[int] = field(default_factory=list)

    def where(self, limit: int = 10) -> str:
        shown = self.lines[:limit]
        more = f" and {self.count - len(shown)} more" if self.count > len(shown) else ""
        return f"line{'s' if self.count > 1 else ''} {', '.join(map(str, shown))}{more}"


def related_groups(analysis: Analysis) -> list[RelatedGroup]:
    """Related errors grouped by (family, code, source), in report order. None against a baseline:
    a baseline records findings only, so a gate that reports what is new leaves them to the JSON report."""
    if analysis.known_errors is not None and analysis.known_errors.baseline is not None:
        return []
    by_key: dict[tuple[str, str, str], RelatedGroup] = {}
    for e in analysis.related:
        g = by_key.setdefault((e.family, e.code, e.source), RelatedGroup(e))
        g.count += 1
        if len(g.lines) < KEEP:
            g.lines.append(e.line)
    return list(by_key.values())


def related_fails(analysis: Analysis) -> bool:
    """Whether related errors fail this run's gate (`--fail-on related`)."""
    return analysis.fail_on == "related"


def related_rule(e: RelatedEvent) -> str:
    """The rule id a CI view files a related error under: `related-hccl`."""
    return f"related-{e.family}"


def related_headline(e: RelatedEvent) -> str:
    """`related hccl error 9 (HCCL timeout)`."""
    return f"related {e.family} error {e.code}" + (f" ({e.meaning})" if e.meaning else "")


def related_message(g: RelatedGroup) -> str:
    """What a CI view says of a related group: not a finding, why it is shown, and where."""
    times = f" ({g.count} times, {g.where()})" if g.count > 1 else ""
    return (f"{related_headline(g.first)}: not an LLM-DataDist code, but often the cause of one "
            f"(fails the gate only with --fail-on related){times}: {g.first.text}")
