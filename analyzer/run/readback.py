"""Reading lines back from a source named as in reports: `path:61-62`, also inside archives
(`bundle.tar.gz!node-2/plog.tar.gz!plog-1.log:61`). Used by `ddtriage show` and `-C N`.

Stage: run (after the scan, for reports). The archive is streamed again through the same unpacker, and only
the wanted member's lines in the wanted range are decoded.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from ..core.errors import InputError
from ..core.records import Skipped
from ..inputs import READ_ERRORS, Limits, Selection, Unpacker, iter_sources
from ..inputs.names import real_name
from ..inputs.streams import Reader
from ..scan.blocks import decode

MAX_SHOW = 2000  # lines one `show` prints at most


@dataclass(frozen=True, slots=True)
class Where:
    """A source name and an inclusive line range."""

    source: str
    first: int
    last: int


def parse_where(text: str) -> Where:
    """`NAME:61-62`, `NAME:61` or `NAME` (its first lines)."""
    m = re.fullmatch(r"(?s)(.+?):(\d+)(?:-(\d+))?", text)
    if not m:
        return Where(text, 1, 20)
    first, last = int(m.group(2)), int(m.group(3) or m.group(2))
    if first < 1 or last < first:
        raise InputError(f"{text}: the line range must be FIRST or FIRST-LAST with 1 <= FIRST <= LAST")
    if last - first >= MAX_SHOW:
        raise InputError(f"{text}: at most {MAX_SHOW} lines at a time")
    return Where(m.group(1), first, last)


def read_lines(source: str, first: int, last: int, limits: Limits | None = None,
               notes: list[str] | None = None) -> list[tuple[int, str]]:
    """Lines `first`..`last` of a source as reports name it; InputError when it cannot be read.
    A source that breaks part-way (a truncated .gz) gives the lines before the break, and the
    reason goes to `notes`."""
    wanted = _ranges_of([(source, first, last)], limits, notes)
    if source not in wanted:
        raise InputError(f"{source}: no such file or archive member")
    return wanted[source]


def context_of(places: Iterable[tuple[str, int]], around: int, limits: Limits | None = None
               ) -> dict[tuple[str, int], list[tuple[int, str]]]:
    """`around` lines before and after each (source, line), read back; unreadable places are left out."""
    places = sorted(set(places))
    asks = [(s, max(1, n - around), n + around) for s, n in places]
    try:
        got = _ranges_of(asks, limits)
    except InputError:
        return {}
    out = {}
    for source, n in places:
        lines = [(k, t) for k, t in got.get(source, []) if n - around <= k <= n + around]
        if lines:
            out[(source, n)] = lines
    return out


def _ranges_of(asks: list[tuple[str, int, int]], limits: Limits | None,
               notes: list[str] | None = None) -> dict[str, list[tuple[int, str]]]:
    """For each asked source, the lines in its asked ranges; every outer input is read once."""
    by_outer: dict[str, dict[str, list[tuple[int, int]]]] = {}
    for source, first, last in asks:
        by_outer.setdefault(source.split("!", 1)[0], {}).setdefault(source, []).append((first, last))
    found: dict[str, list[tuple[int, str]]] = {}
    for outer, members in by_outer.items():
        skipped: list[Skipped] = []
        sources = list(iter_sources([real_name(outer)], skipped))  # a name shown with `\xNN`: its file
        if not sources:
            reason = skipped[0].reason if skipped else "cannot be read"
            raise InputError(f"{outer}: {reason}")
        src = sources[0]
        try:
            handle = src.open()
        except OSError as exc:
            raise InputError(f"{outer}: {exc.strerror or exc}") from None
        try:
            unpacker = Unpacker(limits or Limits(), Selection(), skipped)
            for leaf in unpacker.leaves(src.name, handle, src.path, src.mtime):
                ranges = members.get(leaf.name)
                if ranges:
                    got = found[leaf.name] = []  # filled as read: what comes before a break is kept
                    got.extend(_lines_in(leaf.stream, ranges))
                if len(found) == len(members):
                    break
        except READ_ERRORS as exc:
            if notes is None or not any(found.values()):
                raise InputError(f"{outer}: {exc}") from None
            notes.append(f"{outer}: stopped after line {max(n for lines in found.values() for n, _ in lines)}: {exc}")
        finally:
            handle.close()
    return found


def _lines_in(stream: Reader, ranges: list[tuple[int, int]]) -> Iterator[tuple[int, str]]:
    """The lines of a binary stream inside any of the ranges (1-based, inclusive)."""
    end = max(last for _, last in ranges)
    n = 0
    pending = b""
    while n < end:
        try:
            chunk = stream.read(1 << 20)
        except READ_ERRORS:
            if pending and any(a <= n + 1 <= b for a, b in ranges):
                yield n + 1, decode(pending[:4000])  # the cut line, as far as it goes (as zcat prints it)
            raise
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for raw in lines:
            n += 1
            if any(a <= n <= b for a, b in ranges):
                yield n, decode(raw[:4000])
            if n >= end:
                return
    if pending and n < end:
        n += 1
        if any(a <= n <= b for a, b in ranges):
            yield n, decode(pending[:4000])
