"""Timestamps of findings: which time a finding has, which year a year-less stamp is in, and
whether it falls inside --since/--until.

Stage: time policy. Per stream (`StreamClock`): a line without a timestamp (a traceback's last
line) takes the time of the record before it, and with a known starting year a year-less stamp
that jumps back from December to January has crossed into the next year. Per run
(`settle_years`, `apply_window`): years only guessed from an mtime follow the node's other logs,
then the time window is applied.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from .logline import Header, parse_header
from .records import Finding

if TYPE_CHECKING:
    from .inputs import YearHint

Earlier = Sequence[tuple[int, str]]  # (line number, text) of the lines before a hit, oldest first


def parse_ts(ts: str | None) -> datetime | None:
    """An ISO timestamp as a datetime; None when there is none or it does not parse."""
    if not ts:
        return None
    try:
        return datetime.fromisoformat(ts)
    except ValueError:
        return None


@dataclass(frozen=True, slots=True)
class FindingTime:
    """The time fields of one finding."""

    timestamp: str | None  # the record's own stamp (its year supplied when it printed none)
    time_hint: str | None  # a stamp-less line's time, from the record before it
    year_guessed: bool  # the year of either came from an mtime guess


class Rollover:
    """Counts year crossings in a log whose year-less stamps run forward in time."""

    def __init__(self) -> None:
        self.month: int | None = None
        self.years = 0

    def adjust(self, stamp: str) -> str:
        month = int(stamp[5:7])
        if self.month is not None and self.month - month >= 6:  # December, then January
            self.years += 1
        self.month = month
        return f"{int(stamp[:4]) + self.years:04d}{stamp[4:]}" if self.years else stamp


class StreamClock:
    """The times of one stream's findings, in the order they are found."""

    def __init__(self, year: YearHint | None, year_guessed: bool = False) -> None:
        self.year = year
        self.year_guessed = year_guessed
        # A known year (file name, --year) is the year the log starts in: a year-less stamp that
        # jumps back from December to January has crossed into the next one. (A year guessed
        # from an mtime is the year it ends in; YearHint handles that side.)
        self.roll = Rollover() if year is not None and year.rolls else None

    def time_of(self, header: Header, earlier: Callable[[], Earlier]) -> FindingTime:
        """The time of a hit in the record `header`; `earlier` gives the lines before it (called
        only when the record has no timestamp of its own)."""
        hint, hint_guessed = (None, False) if header.timestamp else time_before(earlier(), header, self.year)
        stamp = header.timestamp
        if self.roll is not None and header.yearless and stamp:
            stamp = self.roll.adjust(stamp)
        elif self.roll is not None and hint_guessed and hint:
            hint = self.roll.adjust(hint)
        guessed = self.year_guessed and bool((header.yearless and stamp) or (hint and hint_guessed))
        return FindingTime(stamp, hint, guessed)


def time_before(earlier: Earlier, header: Header, year: YearHint | None) -> tuple[str | None, bool]:
    """(timestamp, from a year-less vLLM stamp) of the nearest earlier record of the same
    process: the time of a traceback's last line is the time its traceback was logged."""
    for _, text in reversed(earlier):
        other = parse_header(text, year)
        if other.timestamp and (not header.pid or not other.pid or other.pid == header.pid):
            return other.timestamp, other.yearless
    return None, False


def settle_years(findings: list[Finding]) -> list[Finding]:
    """Year-less timestamps whose year was only guessed from an mtime (a copy's time, not the
    incident's) take the year that puts them nearest the node's other logs (else the whole
    run's): the report must not depend on when the bundle was unpacked. Stamp by stamp, so a
    log that crosses New Year keeps December and January in the right years."""
    known: dict[str | None, list[str]] = {}
    for f in findings:
        if f.timestamp and not f.year_guessed:
            known.setdefault(f.node, []).append(f.timestamp)
    everything = sorted(t for stamps in known.values() for t in stamps)

    def middle(stamps: list[str]) -> datetime | None:
        return parse_ts(sorted(stamps)[len(stamps) // 2]) if stamps else None

    refs = {node: middle(stamps) for node, stamps in known.items()}
    overall = middle(everything)

    def nearest(stamp: str | None, ref: datetime) -> str | None:
        if not stamp:
            return stamp
        options = []
        for year in (ref.year - 1, ref.year, ref.year + 1):
            when = parse_ts(f"{year:04d}{stamp[4:]}")  # None on February 29th of a common year
            if when is not None:
                options.append((abs((when - ref).total_seconds()), year))
        return f"{min(options)[1]:04d}{stamp[4:]}" if options else stamp

    out = []
    for f in findings:
        ref = (refs.get(f.node) or overall) if f.year_guessed else None
        if ref is not None:
            f = f._replace(timestamp=nearest(f.timestamp, ref), time_hint=nearest(f.time_hint, ref))
        out.append(f)
    return out


def apply_window(findings: list[Finding], since: datetime | None, until: datetime | None) -> list[Finding]:
    """Findings inside [since, until]. A line without a timestamp (a traceback's last line) takes
    the time of the record before it; with none in reach, it is kept rather than lost."""
    if not since and not until:
        return findings
    kept = []
    for f in findings:
        when = parse_ts(f.timestamp) or parse_ts(f.time_hint)
        if when is None or ((not since or when >= since) and (not until or when <= until)):
            kept.append(f)
    return kept
