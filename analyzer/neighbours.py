"""Neighbouring error families: classify HCCL, runtime, CANN, HIXL, torch_npu, MindIE and socket
errors as likely causes of the LLM-DataDist finding logged just after them (never as findings).

Stage: context (neighbours). Families are data (`rules/neighbours.yaml`): literals for the
prefilter, one pattern each, and what their codes mean. `CauseFinder` gathers, per stream, the
neighbour errors logged shortly before each finding: its likely causes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from .catalog import read_yaml
from .errors import RuleError
from .logline import Header, parse_header
from .timepolicy import parse_ts

if TYPE_CHECKING:
    from .inputs import YearHint
    from .scanner import Candidate

CAUSE_LINES = 15  # how far before a finding a neighbour error still counts as its likely cause
CAUSE_SECONDS = 30.0  # ... and how long before it
NEAR_BYTES = 4096  # a previous finding this close: test the bytes since it instead of walking lines

Cause = tuple[int, str, str, str]  # (line, family, code, meaning), as a Finding carries it


def _literal_db(literals: tuple[bytes, ...]) -> Any:
    """A hyperscan database of the literals (one call tests all of them), or None without it."""
    try:
        import hyperscan
    except ImportError:  # pragma: no cover - depends on the platform
        return None
    if not literals:
        return None
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=[b"".join(b"\\x%02x" % b for b in lit) for lit in literals],
               ids=list(range(len(literals))), flags=[hyperscan.HS_FLAG_SINGLEMATCH] * len(literals))
    return db


@dataclass(frozen=True, slots=True)
class Family:
    id: str
    name: str
    literals: tuple[str, ...]
    pattern: re.Pattern
    codes: dict
    level: int = 1  # 1: below LLM-DataDist (runtime, HCCL, sockets, ...); 2: beside it; 3: the application
    aliases: dict[str, str] = field(default_factory=dict)  # printed text (lower case) -> code
    action: str = "collect-logs"
    remedy: str = ""
    remedies: dict[str, tuple[str, str]] = field(default_factory=dict)  # code -> (action, remedy)

    def meaning(self, code: str) -> str:
        return self.codes.get(code) or self.codes.get(code.upper()) or self.name

    def remedy_for(self, code: str) -> tuple[str, str]:
        """(action, remedy) for one of this family's codes."""
        return self.remedies.get(code) or self.remedies.get(code.upper()) or (self.action, self.remedy)


class NeighbourMatcher:
    """Finds neighbour-family errors on a line: [(family id, code, meaning)]."""

    def __init__(self, families: list[Family]) -> None:
        self.families = families
        self.literals = tuple(dict.fromkeys(lit for f in families for lit in f.literals))
        self._raw_literals = tuple(lit.encode() for lit in self.literals)
        self._db = _literal_db(self._raw_literals)

    def __reduce__(self) -> tuple[type[NeighbourMatcher], tuple[list[Family]]]:
        # A hyperscan database does not pickle: a worker process (Dask) compiles its own.
        return (NeighbourMatcher, (self.families,))

    def families_in(self, raw: bytes) -> list[Family]:
        """The families whose literals occur in some undecoded text: a cheap test before `find`
        that also narrows what `find` tries."""
        if self._db is not None:
            ids: set[int] = set()
            self._db.scan(raw, match_event_handler=lambda i, *_: ids.add(i))
            present = {self.literals[i] for i in ids}
        else:
            present = {lit for lit, raw_lit in zip(self.literals, self._raw_literals, strict=False) if raw_lit in raw}
        return [f for f in self.families if present.intersection(f.literals)] if present else []

    def find(self, line: str, families: list[Family] | None = None) -> list[tuple[str, str, str]]:
        """[(family id, code, meaning)] on a line, the first error of each family."""
        out = []
        for family in self.families if families is None else families:
            if not any(lit in line for lit in family.literals):
                continue
            m = family.pattern.search(line)
            if m:
                code = next((g for g in m.groups() if g), m.group(0))
                code = family.aliases.get(code.lower(), code)
                out.append((family.id, code, family.meaning(code)))
        return out

    def family(self, family_id: str) -> Family | None:
        return next((f for f in self.families if f.id == family_id), None)

    @classmethod
    def load(cls, path: Path | None) -> NeighbourMatcher:
        if path is None:
            return cls([])
        data = read_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("families"), list):
            raise RuleError(f"{path}: expected a mapping with a `families` list")
        families = []
        for i, raw in enumerate(data["families"]):
            where = f"{path}: family {raw.get('id', '#' + str(i + 1)) if isinstance(raw, dict) else '#' + str(i + 1)}"
            if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
                raise RuleError(f"{where}: must be a mapping with an `id`")
            unknown = sorted(set(raw) - {"id", "name", "literals", "pattern", "codes", "level", "aliases", "action",
                                         "remedy", "remedies"})
            if unknown:
                raise RuleError(f"{where}: unknown field(s): {', '.join(unknown)}")
            literals = raw.get("literals")
            if not isinstance(literals, list) or not literals or not all(isinstance(x, str) and x for x in literals):
                raise RuleError(f"{where}: `literals` must be a non-empty list of strings")
            try:
                pattern = re.compile(str(raw.get("pattern", "")))
            except re.error as exc:
                raise RuleError(f"{where}: pattern: invalid regular expression: {exc}") from None
            codes = raw.get("codes") or {}
            if not isinstance(codes, dict):
                raise RuleError(f"{where}: `codes` must map codes to meanings")
            remedies = raw.get("remedies") or {}
            pairs = remedies.values() if isinstance(remedies, dict) else ()
            if not isinstance(remedies, dict) or not all(
                    isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v) for v in pairs):
                raise RuleError(f"{where}: `remedies` must map codes to [action, remedy]")
            aliases = raw.get("aliases") or {}
            if not isinstance(aliases, dict):
                raise RuleError(f"{where}: `aliases` must map printed text to codes")
            level = raw.get("level", 1)
            if level not in (1, 2, 3):
                raise RuleError(f"{where}: `level` must be 1 (below LLM-DataDist), 2 (beside it) or 3 (above it)")
            families.append(Family(raw["id"], str(raw.get("name") or raw["id"]), tuple(literals), pattern,
                                   {str(k): str(v) for k, v in codes.items()}, level,
                                   {str(k).lower(): str(v) for k, v in aliases.items()},
                                   str(raw.get("action") or "collect-logs"), str(raw.get("remedy") or ""),
                                   {str(k): (v[0], v[1]) for k, v in remedies.items()}))
        return cls(families)


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


def causes(events: list[Event], header: Header, line_no: int, value: int) -> tuple[Cause, ...]:
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
