"""Neighbouring error families: classify HCCL, runtime, CANN, HIXL, torch_npu, MindIE and socket
errors as likely causes of the LLM-DataDist finding logged just after them (never as findings).

Stage: context. Families are data (`rules/neighbours.yaml`): literals for the prefilter, one
pattern each, and what their codes mean.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from .catalog import read_yaml
from .errors import RuleError


def _literal_db(literals: tuple[bytes, ...]):
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


class NeighbourMatcher:
    """Finds neighbour-family errors on a line: [(family id, code, meaning)]."""

    def __init__(self, families: list[Family]):
        self.families = families
        self.literals = tuple(dict.fromkeys(lit for f in families for lit in f.literals))
        self._raw_literals = tuple(lit.encode() for lit in self.literals)
        self._db = _literal_db(self._raw_literals)

    def families_in(self, raw: bytes) -> list[Family]:
        """The families whose literals occur in some undecoded text: a cheap test before `find`
        that also narrows what `find` tries."""
        if self._db is not None:
            ids: set[int] = set()
            self._db.scan(raw, match_event_handler=lambda i, *_: ids.add(i))
            present = {self.literals[i] for i in ids}
        else:
            present = {lit for lit, raw_lit in zip(self.literals, self._raw_literals) if raw_lit in raw}
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
                meaning = family.codes.get(code) or family.codes.get(code.upper()) or family.name
                out.append((family.id, code, meaning))
        return out

    @classmethod
    def load(cls, path: Path | None) -> "NeighbourMatcher":
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
            unknown = sorted(set(raw) - {"id", "name", "literals", "pattern", "codes"})
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
            families.append(Family(raw["id"], str(raw.get("name") or raw["id"]), tuple(literals), pattern,
                                   {str(k): str(v) for k, v in codes.items()}))
        return cls(families)
