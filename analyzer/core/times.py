"""Times of a run: stamps parsed, the years of year-less stamps settled, and the one time window.

Stage: core. Per run: years only guessed from an mtime follow the node's other logs (`YearRefs`,
`settle_related_years`, both through `nearest_year`), then `TimeWindow` (--since/--until) keeps
findings and related errors alike. The clock of one stream (the time of a stamp-less line, New
Year crossings) is `scan.clock`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from functools import lru_cache
from typing import TYPE_CHECKING, TypeVar

from .observations import Proof, RelatedEvent
from .records import Finding

if TYPE_CHECKING:
    pass





def parse_ts(ts: str | None) -> datetime | None:
    """An ISO timestamp as a naive datetime, converted to UTC when it carries an offset or `Z`;
    None when there is none or it does not parse."""
    if not ts:
        return None
    try:
        when = datetime.fromisoformat(ts)
        return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when
    except (ValueError, OverflowError):  # not a time, or year 1 / 9999 pushed past the calendar
        return None


def seconds(ts: str | None) -> float | None:
    """An ISO timestamp as seconds since the epoch (zone-less stamps read as UTC, so gaps and
    order never depend on the machine's zone); None when there is none or it does not parse."""
    when = parse_ts(ts)
    return when.replace(tzinfo=UTC).timestamp() if when is not None else None


# For the incidents, which ask for the same few thousand stamps again and again (each burst's and
# related error's, in grouping, linking and leads; ~2.5 us a parse: ~60 ms of the report's tail on
# 10,000 files). Not for a stamp per finding: a storm's would fill it for nothing.
stamp_seconds = lru_cache(maxsize=1 << 13)(seconds)


def parse_tz(text: str) -> tzinfo:
    """A zone for --tz: `UTC`, `Z`, `+08:00`, `-0530`, or an IANA name (`Asia/Shanghai`)."""
    value = text.strip()
    if value.upper() in ("Z", "UTC", "GMT"):
        return UTC
    m = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d\d?):?(\d\d)?", value, re.IGNORECASE)
    if m:
        minutes = int(m.group(2)) * 60 + int(m.group(3) or 0)
        if minutes > 14 * 60:
            raise ValueError(f"{text!r}: offset beyond 14 hours")
        return timezone(timedelta(minutes=minutes if m.group(1) == "+" else -minutes))
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError
    try:
        return ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ValueError(f"{text!r} is not a zone like UTC, +08:00 or Asia/Shanghai") from None


def window_bound(when: datetime | None, tz: tzinfo | None) -> datetime | None:
    """A --since/--until bound as findings are compared: a bound with an offset, or in --tz,
    becomes naive UTC; one without either is compared as written."""
    if when is None:
        return None
    if when.tzinfo is None and tz is not None:
        when = when.replace(tzinfo=tz)
    try:
        return when.astimezone(UTC).replace(tzinfo=None) if when.tzinfo else when
    except OverflowError:
        return when.replace(tzinfo=None)


def utc_text(when: datetime, fraction: bool) -> str:
    """`2025-11-11T19:40:05.101002Z`: naive UTC as printed in reports, the precision kept."""
    # isoformat, not strftime: %Y prints year 1 as `1`, not `0001`
    return when.replace(tzinfo=None).isoformat(timespec="microseconds" if fraction else "seconds") + "Z"
















def year_refs(replay: Callable[[], Iterable[Finding]]) -> YearRefs:
    """Per node (and for the whole run), the median of the timestamps whose year is known:
    where a guessed year should land. `replay` gives the findings again on each call; this takes
    two passes and holds one minute's stamps at most, never all of them."""
    buckets: dict[str | None, Counter[str]] = {}
    for f in replay():  # pass 1: how many stamps per minute, per node
        if f.timestamp and not f.year_guessed:
            buckets.setdefault(f.node, Counter())[f.timestamp[:16]] += 1
    overall: Counter[str] = Counter()
    for counts in buckets.values():
        overall.update(counts)
    # Which minute holds each median, and its rank inside that minute.
    wanted = {node: _median_bucket(counts) for node, counts in buckets.items()}
    every = _median_bucket(overall) if overall else None
    stamps: dict[str | None, list[str]] = {node: [] for node in wanted}
    stamps_all: list[str] = []
    for f in replay():  # pass 2: the stamps of those minutes only
        if f.timestamp and not f.year_guessed:
            minute = f.timestamp[:16]
            if minute == wanted[f.node][0]:
                stamps[f.node].append(f.timestamp)
            if every is not None and minute == every[0]:
                stamps_all.append(f.timestamp)
    refs = {node: parse_ts(sorted(stamps[node])[rank]) for node, (_, rank) in wanted.items()}
    middle = parse_ts(sorted(stamps_all)[every[1]]) if every is not None else None
    return YearRefs(refs, middle)


def _median_bucket(counts: Counter[str]) -> tuple[str, int]:
    """(minute, rank within it) of the middle stamp (`sorted(stamps)[len // 2]`)."""
    rank = sum(counts.values()) // 2
    for minute in sorted(counts):
        if rank < counts[minute]:
            return minute, rank
        rank -= counts[minute]
    raise ValueError("no stamps")  # pragma: no cover - counts are never empty here


@dataclass(frozen=True)
class YearRefs:
    """Where guessed years should land: the median known stamp per node, and overall."""

    nodes: dict[str | None, datetime | None]
    overall: datetime | None

    def settle(self, f: Finding) -> Finding:
        """`f` with a year only guessed from an mtime (a copy's time, not the incident's) moved
        to the year that puts it nearest the node's other logs (else the whole run's). Stamp by
        stamp, so a log that crosses New Year keeps December and January in the right years."""
        if not f.year_guessed:
            return f
        ref = self.nodes.get(f.node) or self.overall
        if ref is None:
            return f
        return f._replace(timestamp=nearest_year(f.timestamp, ref), time_hint=nearest_year(f.time_hint, ref))


def nearest_year(stamp: str | None, ref: datetime) -> str | None:
    """A stamp whose year is unsure (guessed, or supplied for a year-less print) moved to the year
    (ref's, the one before or after) that puts it nearest `ref`; an earlier year on a tie. February
    29th only lands in a leap year; a stamp that parses in none of the three is left as it is."""
    if not stamp:
        return stamp
    options = []
    for year in (ref.year - 1, ref.year, ref.year + 1):
        when = parse_ts(f"{year:04d}{stamp[4:]}")  # None on February 29th of a common year
        if when is not None:
            options.append((abs((when - ref).total_seconds()), year))
    return f"{min(options)[1]:04d}{stamp[4:]}" if options else stamp


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """--since/--until, as findings and related errors alike are compared with them: a bound with an
    offset, or given with --tz, is naive UTC (as stamps are once parsed); one with neither is
    compared as written. An empty window holds everything."""

    since: datetime | None = None
    until: datetime | None = None

    @classmethod
    def of(cls, since: datetime | None, until: datetime | None, tz: tzinfo | None = None) -> TimeWindow:
        return cls(window_bound(since, tz), window_bound(until, tz))

    def __bool__(self) -> bool:
        return self.since is not None or self.until is not None

    def holds(self, *stamps: str | None) -> bool:
        """Whether the first of `stamps` that parses is inside; with none that parses (a line
        without a time and no record before it in reach) it is kept rather than lost."""
        for stamp in stamps:
            when = parse_ts(stamp)
            if when is not None:
                return (self.since is None or when >= self.since) and (self.until is None or when <= self.until)
        return True


EVERY_TIME = TimeWindow()  # no --since, no --until


def time_policy(replay: Callable[[], Iterable[Finding]], guessed: bool,
                window: TimeWindow) -> Callable[[Finding], Finding | None] | None:
    """What the run's time policy does to each finding (settle guessed years, then drop what
    falls outside the window; None when it leaves every finding alone)."""
    refs = year_refs(replay) if guessed else None
    if refs is None and not window:
        return None

    def apply(f: Finding) -> Finding | None:
        if refs is not None:
            f = refs.settle(f)
        return f if window.holds(f.timestamp, f.time_hint) else None
    return apply


def settle_years(findings: list[Finding]) -> list[Finding]:
    """`YearRefs.settle` over a list of findings."""
    refs = year_refs(lambda: findings)
    return [refs.settle(f) for f in findings]


Dated = TypeVar("Dated", RelatedEvent, Proof)


def settle_related_years(events: list[Dated], known: dict[str | None, list[str]]) -> list[Dated]:
    """Related errors (and proofs of recovery) whose year was only guessed take the year nearest the
    median stamp with a sure year of their node (else of the whole run), as findings do
    (`YearRefs.settle`). `known`: node -> stamps with a sure year."""
    everything = sorted(t for stamps in known.values() for t in stamps)
    out = []
    for e in events:
        stamps = sorted(known.get(e.node) or everything)
        ref = parse_ts(stamps[len(stamps) // 2]) if stamps else None
        if e.year_guessed and e.timestamp and ref is not None:
            e = e._replace(timestamp=nearest_year(e.timestamp, ref), year_guessed=False)
        out.append(e)
    return out
