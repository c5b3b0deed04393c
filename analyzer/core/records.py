"""Records that cross stages. Immutable, so stages cannot change each other's data."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from operator import itemgetter
from typing import Any, NamedTuple

from .observations import Observed

FindingCause = tuple[int, str, str, str]  # (line, family, code, meaning): a lower-level error before a finding


@dataclass(frozen=True, slots=True)
class CodeHit:
    """One status code found in one line (scanner/patterns stage)."""

    value: int  # the 32-bit code (0x5010B009) or a Python-only value
    start: int  # character offsets in the decoded line
    end: int
    form: str  # hex | decimal | name | repr | text | generic
    in_cluster_results: bool = False


class Finding(NamedTuple):
    """One code on one line, with its API context and the remedy rule that applied.

    A NamedTuple rather than a dataclass: a dense log yields hundreds of thousands of these, and
    tuples are the cheapest to build, to pickle back from worker processes and to re-number."""

    source: str
    line: int
    timestamp: str | None
    code: str  # "0x5010B009"
    name: str | None
    api: str | None
    api_evidence: str | None  # func | tag | message | traceback | nearby | None
    api_line: int | None  # the line the API was read from
    recoverable: bool | None
    rule: str  # the remedy rule's id: its text is looked up by it when a report is written (`RuleTexts`)
    action: str
    text: str
    form: str
    pid: str | None = None
    tid: str | None = None
    in_cluster_results: bool = False
    known: bool = True
    generic: bool = False  # internal: the code is a generic one (LLM_FAILED, ...); not in a report
    node: str | None = None  # from the bundle or folder name
    kind: str = "application"  # host | device | application
    device: str | None = None
    year_guessed: bool = False  # internal: a year-less stamp whose year was only guessed (mtime)
    causes: tuple[FindingCause, ...] = ()  # (line, family, code, meaning) just before
    time_hint: str | None = None  # internal: a timestamp-less line's time, from the record before it
    fingerprint: str = ""  # code + API + rule + masked message template (analyzer.detect.fingerprint)
    bundle: str | None = None  # the top-level input (archive, node folder, file) it came from
    pod: str | None = None  # from the envelope, a `kubectl --prefix` or the /var/log/pods/ path
    container: str | None = None
    stream: str | None = None  # stdout | stderr, from the envelope
    envelope: str | None = None  # the envelope the line came in (analyzer/data/envelopes.yaml)
    envelope_time: str | None = None  # the envelope's own time (ISO 8601, its offset kept)
    time_source: str | None = None  # where `timestamp` came from: line | envelope (None: no time)
    link: tuple[tuple[str, str], ...] = ()  # link facts of its line and process: (kind, value), by kind


class RuleText(NamedTuple):
    """What a report says for a remedy rule: the remedy and its references."""

    remedy: str
    references: tuple[str, ...] = ()


NO_TEXT = RuleText("")


class RuleTexts:
    """The text of each remedy rule, by rule id.

    A finding holds only its rule's id: a storm of 100,000 findings carries one remedy per rule,
    not one per finding, and the text a report prints is chosen when it is written. A run knows
    the texts of the rules it loaded; a merge also learns those of rules only a part knew."""

    __slots__ = ("_texts",)

    def __init__(self, texts: dict[str, RuleText] | None = None) -> None:
        self._texts = dict(texts or {})

    def of(self, rule: str) -> RuleText:
        return self._texts.get(rule, NO_TEXT)

    def remedy(self, rule: str) -> str:
        return self._texts.get(rule, NO_TEXT).remedy

    def learn(self, rule: str, text: RuleText) -> None:
        """A part's text for a rule this run does not know (this run's own texts win)."""
        self._texts.setdefault(rule, text)

    def items(self) -> Iterable[tuple[str, RuleText]]:
        """Every rule id known, with its text."""
        return self._texts.items()

    def copy(self) -> RuleTexts:
        return RuleTexts(self._texts)

    def __contains__(self, rule: object) -> bool:
        return rule in self._texts


@dataclass(frozen=True, slots=True)
class Skipped:
    """An input, or part of one, that was not (fully) read, and why."""

    source: str
    reason: str


@dataclass(slots=True)
class InputStats:
    """What was read: every line and byte is accounted for here."""

    files: int = 0
    lines: int = 0
    bytes: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    excluded: int = 0  # streams left out by --include/--exclude
    # Inputs read in full with a caveat (a bad CRC kept, a BZh file read as text), or left out on
    # purpose (ddtriage's own reports): told to the user, but no data was lost (--strict ignores them).
    notes: list[Skipped] = field(default_factory=list)
    outside_window: int = 0  # findings outside --since/--until
    observed: Observed = field(default_factory=Observed)  # link facts and related errors (not counts)

    def add(self, other: InputStats) -> None:
        self.observed.add(other.observed)
        self.files += other.files
        self.lines += other.lines
        self.bytes += other.bytes
        self.skipped.extend(other.skipped)
        self.notes.extend(other.notes)
        self.excluded += other.excluded
        self.outside_window += other.outside_window

    def to_dict(self) -> dict:
        return {
            "files": self.files,
            "lines": self.lines,
            "bytes": self.bytes,
            "excluded": self.excluded,
            "outside_window": self.outside_window,
            "skipped": [
                {"source": s.source, "reason": s.reason}
                for s in sorted(self.skipped, key=lambda s: (s.source, s.reason))
            ],
        } | ({"notes": [{"source": s.source, "note": s.reason}  # only when there are any: reports stay as they were
                        for s in sorted(set(self.notes), key=lambda s: (s.source, s.reason))]} if self.notes else {})


@dataclass(frozen=True, slots=True)
class Record:
    """One record taken out of its envelope."""

    text: str  # the line the program wrote (several lines when a collector merged them), clean
    time: str | None = None  # the envelope's own time, ISO 8601, with its offset when it has one
    stream: str | None = None  # stdout | stderr
    pod: str | None = None
    container: str | None = None
    node: str | None = None
    namespace: str | None = None
    partial: bool = False  # a part of a line the runtime cut (CRI `P`, Docker without `\n`)
    yearless: bool = False  # the envelope's time printed no year (traditional syslog): it was supplied


FindingKey = tuple[str, int, str]  # a finding's place in every report: (source, line, code)
# The one order of findings (by source, line, then code), as a C getter of Finding's fields 0, 1
# and 3: it runs once or more per finding of a storm. tests/core/test_records.py holds it to the
# fields it names.
report_key: Callable[[Finding], FindingKey] = itemgetter(0, 1, 3)


_LINE, _API_LINE, _CAUSES = (Finding._fields.index(name) for name in ("line", "api_line", "causes"))
_make_finding = Finding._make


def shifted(f: Finding, lines: int) -> Finding:
    """A finding of a later byte range of a file, renumbered by the `lines` before that range (its
    line, its API's line and its causes' lines): the one rule for it (the store, the range tallies).
    By position, not `_replace` (its keywords cost ~6 us a finding; every finding of a split file's
    later ranges passes here as the report is written)."""
    values: list[Any] = list(f)
    values[_LINE] = f.line + lines
    if f.api_line is not None:
        values[_API_LINE] = f.api_line + lines
    if f.causes:
        values[_CAUSES] = tuple((c[0] + lines, *c[1:]) for c in f.causes)
    return _make_finding(values)


def process_key(pod: str | None, container: str | None, pid: str | None) -> str | None:
    """The process a line belongs to (for causes, link facts and threads of bursts): its pod,
    container and pid. Two pods, or two containers of one pod, in one file (`kubectl logs
    --prefix`) are two processes even when both print pid 1."""
    return f"{pod}\x00{container}\x00{pid}" if pod or container else pid
