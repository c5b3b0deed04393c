"""Timestamps of findings: which time a finding has, which year a year-less stamp is in, and
whether it falls inside --since/--until.

Stage: time policy. Per stream (`StreamClock`): a line without a timestamp (a traceback's last
line) takes the time of the record before it, and with a known starting year a year-less stamp
that jumps back from December to January has crossed into the next year. Per run
(`settle_years`, `apply_window`): years only guessed from an mtime follow the node's other logs,
then the time window is applied.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING

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
    return when.strftime("%Y-%m-%dT%H:%M:%S" + (".%f" if fraction else "")) + "Z"
















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
        return f._replace(timestamp=_nearest(f.timestamp, ref), time_hint=_nearest(f.time_hint, ref))


def _nearest(stamp: str | None, ref: datetime) -> str | None:
    if not stamp:
        return stamp
    options = []
    for year in (ref.year - 1, ref.year, ref.year + 1):
        when = parse_ts(f"{year:04d}{stamp[4:]}")  # None on February 29th of a common year
        if when is not None:
            options.append((abs((when - ref).total_seconds()), year))
    return f"{min(options)[1]:04d}{stamp[4:]}" if options else stamp


def in_window(f: Finding, since: datetime | None, until: datetime | None) -> bool:
    """Whether `f` is inside [since, until]. A line without a timestamp (a traceback's last
    line) takes the time of the record before it; with none in reach, it is kept rather than lost."""
    when = parse_ts(f.timestamp) or parse_ts(f.time_hint)
    return when is None or ((not since or when >= since) and (not until or when <= until))


def time_policy(replay: Callable[[], Iterable[Finding]], guessed: bool, since: datetime | None,
                until: datetime | None) -> Callable[[Finding], Finding | None] | None:
    """What the run's time policy does to each finding (settle guessed years, then drop what
    falls outside the window; None when it leaves every finding alone)."""
    refs = year_refs(replay) if guessed else None
    if refs is None and not since and not until:
        return None

    def apply(f: Finding) -> Finding | None:
        if refs is not None:
            f = refs.settle(f)
        return f if (not since and not until) or in_window(f, since, until) else None
    return apply


def settle_years(findings: list[Finding]) -> list[Finding]:
    """`YearRefs.settle` over a list of findings."""
    refs = year_refs(lambda: findings)
    return [refs.settle(f) for f in findings]


def apply_window(findings: list[Finding], since: datetime | None, until: datetime | None) -> list[Finding]:
    """Findings inside [since, until] (see `in_window`)."""
    if not since and not until:
        return findings
    return [f for f in findings if in_window(f, since, until)]
