"""Records that cross stages. Immutable, so stages cannot change each other's data."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

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
    rule: str
    action: str
    remedy: str
    text: str
    form: str
    pid: str | None = None
    tid: str | None = None
    in_cluster_results: bool = False
    known: bool = True
    generic: bool = False
    references: tuple[str, ...] = ()
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
