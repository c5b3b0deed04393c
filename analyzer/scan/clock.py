"""The clock of one stream: which time a line has.

Stage: scan. A line without a timestamp (a traceback's last line) takes the time of the record
before it; with a known starting year a year-less stamp that jumps back from December to January
has crossed into the next year; an envelope's own time tells the zone of a line printed without
one. What a run does with times afterwards (settling guessed years, the --since/--until window)
is `core.times`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING

from ..core.headers import Header, parse_header
from ..core.times import nearest_year, parse_ts, utc_text

if TYPE_CHECKING:
    from ..core.records import Record
    from ..inputs import YearHint


Earlier = Sequence[tuple[int, str]]  # (line number, text) of the lines before a hit, oldest first
_OFFSET = re.compile(r"(?:Z|[+-]\d\d:?\d\d)$")
ZONE_STEP = 900  # zone offsets are whole quarter hours
ZONE_SLACK = 300  # how far a line's own stamp may be from its envelope's and still tell its zone

@dataclass(frozen=True, slots=True)
class FindingTime:
    """The time fields of one finding."""

    timestamp: str | None  # the record's own stamp (its year supplied when it printed none), else
    # its envelope's; in UTC (`...Z`) whenever its zone is known
    time_hint: str | None  # a stamp-less line's time, from the record before it
    year_guessed: bool  # the year of either came from an mtime guess
    source: str | None = None  # line | envelope: where `timestamp` came from

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

    def __init__(self, year: YearHint | None, year_guessed: bool = False, tz: tzinfo | None = None) -> None:
        self.year = year
        self.year_guessed = year_guessed
        self.tz = tz  # --tz: the zone of zone-less stamps
        self.offsets: dict[str | None, timedelta] = {}  # per pod: the zone its envelope told
        # A known year (file name, --year) is the year the log starts in: a year-less stamp that
        # jumps back from December to January has crossed into the next one. (A year guessed
        # from an mtime is the year it ends in; YearHint handles that side.)
        self.roll = Rollover() if year is not None and year.rolls else None

    def time_of(self, header: Header, earlier: Callable[[], Earlier], record: Record | None = None) -> FindingTime:
        """The time of a hit in the record `header`; `earlier` gives the lines before it (called
        only when the record has no timestamp of its own); `record` is the envelope it came in.

        The line's own stamp comes first, else its envelope's. A zone-less stamp takes the zone
        its envelope tells (an envelope time with an offset that is the same moment give or take
        ZONE_SLACK), else --tz; with neither it stays as printed."""
        envelope = _envelope_time(record.time if record else None, self.tz)
        key = record.pod if record else None
        stamp = header.timestamp
        # a year-less stamp takes its year from an envelope time that prints one
        from_envelope = envelope is not None and header.yearless and stamp is not None and not (
            record and record.yearless)
        if from_envelope and stamp and envelope is not None:
            stamp = nearest_year(stamp, envelope[0]) or stamp
        hint, hint_guessed = (None, False) if stamp or envelope else time_before(earlier(), header, self.year)
        if self.roll is not None and header.yearless and stamp and not from_envelope:
            stamp = self.roll.adjust(stamp)
        elif self.roll is not None and hint_guessed and hint:
            hint = self.roll.adjust(hint)
        guessed = self.year_guessed and bool((header.yearless and stamp and not from_envelope) or
                                             (hint and hint_guessed))
        if stamp:
            return FindingTime(self._zoned(stamp, envelope, key), None, guessed, "line")
        if envelope is not None:
            when, aware, fraction = envelope
            return FindingTime(utc_text(when, fraction) if aware else _naive_text(when, fraction), None, False,
                               "envelope")
        return FindingTime(None, self._zoned(hint, None, key) if hint else None, guessed)

    def zoned(self, stamp: str) -> str:
        """`_zoned` of a stamp of a stream without an envelope (what the core's engine asks under --tz)."""
        return self._zoned(stamp, None, None)

    def _zoned(self, stamp: str, envelope: tuple[datetime, bool, bool] | None, key: str | None) -> str:
        """A line's stamp in UTC when its zone is known (its own offset, its envelope, --tz)."""
        fraction = "." in stamp[19:]
        if _OFFSET.search(stamp):
            when = parse_ts(stamp)
            return utc_text(when, fraction) if when else stamp
        local = parse_ts(stamp)
        if local is None:
            return stamp
        if envelope is not None and envelope[1]:
            drift = (local - envelope[0]).total_seconds()
            step = round(drift / ZONE_STEP) * ZONE_STEP
            if abs(drift - step) <= ZONE_SLACK and abs(step) <= 14 * 3600:
                self.offsets[key] = timedelta(seconds=step)
        offset = self.offsets.get(key)
        try:
            if offset is not None:
                return utc_text(local - offset, fraction)
            if self.tz is not None:
                return utc_text(local.replace(tzinfo=self.tz).astimezone(UTC).replace(tzinfo=None), fraction)
        except OverflowError:  # year 1 or 9999 moved past the calendar: keep it as printed
            pass
        return stamp

def _envelope_time(text: str | None, tz: tzinfo | None) -> tuple[datetime, bool, bool] | None:
    """(naive time, whether it is UTC, whether it printed a fraction) of an envelope's time."""
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text)
        if when.tzinfo is None and tz is not None:
            when = when.replace(tzinfo=tz)
        if when.tzinfo is None:
            return when, False, "." in text
        return when.astimezone(UTC).replace(tzinfo=None), True, "." in text
    except (ValueError, OverflowError):
        return None

def _naive_text(when: datetime, fraction: bool) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S" + (".%f" if fraction else ""))

def time_before(earlier: Earlier, header: Header, year: YearHint | None) -> tuple[str | None, bool]:
    """(timestamp, from a year-less vLLM stamp) of the nearest earlier record of the same
    process: the time of a traceback's last line is the time its traceback was logged."""
    for _, text in reversed(earlier):
        other = parse_header(text, year)
        if other.timestamp and (not header.pid or not other.pid or other.pid == header.pid):
            return other.timestamp, other.yearless
    return None, False
