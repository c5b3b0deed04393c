"""Causes of a finding: the lower-level errors (HCCL, runtime, HIXL, ...) logged just before it.

Stage: detect. `CauseFinder` looks back at most `CAUSE_LINES` lines and `CAUSE_SECONDS` seconds
from a finding, within the same process, for lines of a neighbour family
(`knowledge.families.NeighbourMatcher`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, NamedTuple

from ..core.headers import Header, parse_header
from ..core.records import FindingCause
from ..core.times import parse_ts
from ..knowledge.families import NeighbourMatcher

if TYPE_CHECKING:
    from ..inputs import YearHint
    from ..scan.blocks import Candidate

CAUSE_LINES = 15  # how far before a finding a neighbour error still counts as its likely cause
CAUSE_SECONDS = 30.0  # ... and how long before it
NEAR_BYTES = 4096  # a previous finding this close: test the bytes since it instead of walking lines

class Event(NamedTuple):
    """A neighbour error on one line."""

    line: int
    family: str
    code: str
    meaning: str
    pid: str | None
    timestamp: str | None

class CauseFinder:
    """The neighbour errors that may have caused each finding of one stream.

    Per process it remembers the line (and end offset) of its previous specific finding: a
    lower-level error before that line was that finding's cause, not a cause of what follows."""

    def __init__(self, matcher: NeighbourMatcher, year: YearHint | None) -> None:
        self.matcher = matcher
        self.year = year
        self.last_seen: dict[str | None, tuple[int, int]] = {}

    def note_finding(self, pid: str | None, line_no: int, end_offset: int) -> None:
        """A specific finding of process `pid` on this line, which ends at `end_offset`."""
        self.last_seen[pid] = (line_no, end_offset)

    def events(self, cand: Candidate, text: str, lookback: Callable[[], Sequence[tuple[int, str]]],
               pid: str | None) -> list[Event]:
        """Neighbour errors on this line and on the lines before it that come after process
        `pid`'s previous finding, at most CAUSE_LINES back."""
        after_line, after_offset = self.last_seen.get(pid, (-(1 << 62), -(1 << 62)))
        span = min(CAUSE_LINES, cand.line_no - after_line - 1)
        # The bytes since the previous finding when that is close (no line walking needed); a
        # longer stretch than CAUSE_LINES only widens this pre-test, not the result.
        since = cand.raw_since(after_offset) if 0 <= cand.offset - after_offset <= NEAR_BYTES else None
        families = self.matcher.families_in((cand.raw_before(span) if since is None else since) + cand.raw)
        if not families:
            return []  # the usual case: nothing to decode
        lines = [(n, t) for n, t in lookback()[-CAUSE_LINES:] if n > after_line] + [(cand.line_no, text)]
        events: list[Event] = []
        for n, t in lines:
            found = self.matcher.find(t, families)
            if found:
                other = parse_header(t, self.year)
                events.extend(Event(n, family, code, meaning, other.pid, other.timestamp)
                              for family, code, meaning in found)
        return events

def causes(events: list[Event], header: Header, line_no: int, value: int) -> tuple[FindingCause, ...]:
    """The events that may have caused a finding: same process, not long before, and not the
    finding's own number printed on its own line (`LLM_SUSPECT_REMOTE_ERROR: 507057`)."""
    out = []
    for n, family, code, meaning, pid, stamp in events:
        if header.pid and pid and pid != header.pid:
            continue
        if n == line_no and code == str(value):
            continue
        if header.timestamp and stamp:
            t0, t1 = parse_ts(stamp), parse_ts(header.timestamp)
            if t0 and t1 and not 0 <= (t1 - t0).total_seconds() <= CAUSE_SECONDS:
                continue
        out.append((n, family, code, meaning))
    return tuple(out)
