"""The whole triage as library calls: paths -> sources -> candidates -> findings -> summary.

    from analyzer import analyze
    result = analyze(["sample_logs/"])
    result.findings, result.summary, result.inputs

The CLI is a thin layer over `analyze`.
"""

from __future__ import annotations

import io
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator

from .catalog import format_code
from .context import LOOKBACK_LINES, ApiResolver, same_thread
from .inputs import Source, iter_sources
from .logline import Header, header_for, record_headers
from .patterns import GENERIC_FAILED, CodeMatcher
from .records import Finding, InputStats, Skipped
from .rules import RuleSet
from .scanner import Prefilter, ScanCounts, scan_stream

TEXT_WIDTH = 600  # characters of a hit line kept in a finding


@dataclass
class Engine:
    """Everything compiled once per run: rules, patterns, prefilter, API resolver."""

    rules: RuleSet
    prefilter_engine: str = "auto"
    matcher: CodeMatcher = field(init=False)
    resolver: ApiResolver = field(init=False)
    prefilter: Prefilter = field(init=False)

    def __post_init__(self) -> None:
        self.matcher = CodeMatcher(self.rules.catalog)
        self.resolver = ApiResolver(self.rules.apis)
        self.prefilter = Prefilter(self.matcher.literals, self.prefilter_engine)

    def scan_source(self, source: Source, stats: InputStats) -> list[Finding]:
        """Findings of one source; lines and bytes read are added to `stats` even on error."""
        counts = ScanCounts()
        findings: list[Finding] = []
        try:
            stream = source.open()
        except OSError as exc:
            stats.skipped.append(Skipped(source.name, exc.strerror or str(exc)))
            return findings
        try:
            findings.extend(self.scan_stream(source, stream, counts))
        except (OSError, EOFError, ValueError) as exc:
            # Whatever was read before the break is kept and accounted for.
            stats.skipped.append(Skipped(source.name, f"read error after {counts.bytes} bytes: {_reason(exc)}"))
        finally:
            if stream is not None and getattr(stream, "name", None) != "<stdin>":
                stream.close()
            stats.files += 1
            stats.lines += counts.lines
            stats.bytes += counts.bytes
        return findings

    def scan_stream(self, source: Source, stream, counts: ScanCounts) -> Iterator[Finding]:
        recent: deque[tuple[int, Header]] = deque(maxlen=64)  # specific codes seen lately
        for cand in scan_stream(stream, self.prefilter, counts):
            text = cand.text()
            hits = self.matcher.find(text)
            if not hits:
                continue
            headers = record_headers(text, source.year)
            memo: dict[str, object] = {}

            def lookback():
                if "lb" not in memo:
                    memo["lb"] = cand.lookback()
                return memo["lb"]

            def nearby_text():
                return "\n".join(t for _, t in lookback()) + "\n" + text

            for hit in hits:
                header = header_for(headers, hit.start)
                ctx = self.resolver.resolve(text, header, hit.start, lookback, source.year)
                if hit.form == "generic" and not (
                    ctx.api or self.resolver.mentions_llm(text) or _echoes(recent, cand.line_no, header)
                ):
                    continue  # the graph engine's own failure, not LLM-DataDist's
                if hit.value != GENERIC_FAILED:
                    recent.append((cand.line_no, header))
                rule = self.rules.match(hit.value, ctx.api, hit.in_cluster_results, nearby_text)
                code = self.rules.catalog.get(hit.value)
                recoverable = rule.recoverable if rule.recoverable_set else (code.recoverable if code else None)
                yield Finding(
                    source=source.name, line=cand.line_no, timestamp=header.timestamp,
                    code=format_code(hit.value), name=code.name if code else None,
                    api=ctx.api, api_evidence=ctx.evidence, api_line=ctx.line,
                    recoverable=recoverable, rule=rule.id, action=rule.action, remedy=rule.remedy,
                    text=_clip(text, hit.start), form=hit.form, pid=header.pid, tid=header.tid,
                    in_cluster_results=hit.in_cluster_results, known=code is not None,
                    generic=code.generic if code else False, references=rule.references,
                )


def _echoes(recent: deque, line_no: int, header: Header) -> bool:
    """A generic failure right after a specific code in the same thread is its echo."""
    for seen_line, seen_header in reversed(recent):
        if line_no - seen_line > LOOKBACK_LINES:
            return False
        if same_thread(header, seen_header):
            return True
    return False


def _clip(text: str, at: int) -> str:
    if len(text) <= TEXT_WIDTH:
        return text
    begin = max(0, min(at - TEXT_WIDTH // 3, len(text) - TEXT_WIDTH))
    return ("…" if begin else "") + text[begin:begin + TEXT_WIDTH] + ("…" if begin + TEXT_WIDTH < len(text) else "")


def _reason(exc: BaseException) -> str:
    return getattr(exc, "strerror", None) or str(exc) or type(exc).__name__


def sort_key(f: Finding) -> tuple:
    return (f.source, f.line, f.code)


@dataclass
class Analysis:
    """What a triage run produced, as data."""

    findings: list[Finding]
    inputs: InputStats
    rules: RuleSet
    summary: dict = field(default_factory=dict)


def analyze(paths: Iterable[str], rules: RuleSet | None = None, rules_dirs: Iterable[str | Path] = (),
            prefilter: str = "auto", year: int | None = None) -> Analysis:
    """Scan `paths` (files, directories, `-`) and return findings, input stats and the summary."""
    from .triage import summarize  # pandas is imported only when a summary is built

    ruleset = rules or RuleSet.load([Path(d) for d in rules_dirs])
    engine = Engine(ruleset, prefilter)
    stats = InputStats()
    findings: list[Finding] = []
    for source in iter_sources(list(paths), stats.skipped, year):
        findings.extend(engine.scan_source(source, stats))
    findings.sort(key=sort_key)
    analysis = Analysis(findings, stats, ruleset)
    analysis.summary = summarize(findings, ruleset)
    return analysis


def analyze_text(text: str, rules: RuleSet | None = None, name: str = "<text>") -> list[Finding]:
    """Findings of a snippet of log text (rule examples, notebooks)."""
    return analyze_snippet(Engine(rules or RuleSet.load()), text, name)


def analyze_snippet(engine: Engine, text: str, name: str = "<text>") -> list[Finding]:
    """Findings of a snippet of log text with an already compiled engine."""
    data = text.encode("utf-8")
    source = Source(name, lambda: io.BytesIO(data), len(data), None)
    return sorted(engine.scan_source(source, InputStats()), key=sort_key)
