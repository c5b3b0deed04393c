"""Neighbouring error families: classify HCCL, runtime, CANN, HIXL, torch_npu, MindIE and socket
errors as likely causes of the LLM-DataDist finding logged just after them (never as findings).

Stage: knowledge (neighbour families). Families are data (`analyzer/data/neighbours.yaml`): literals for the
prefilter, one pattern each, and what their codes mean. `CauseFinder` gathers, per stream, the
neighbour errors logged shortly before each finding: its likely causes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import RuleError
from . import compiled
from .catalog import localized, read_yaml
from .compiled import LazyPattern

CHOSEN_SETS = 4096  # sets of present families remembered (`families_in`)
SHIPPED = Path(__file__).parent.parent / "data" / "neighbours.yaml"

# Rewrites that make a family's pattern one Rust's regex reads as Python's `re` does, on a line of
# printable ASCII (the only lines the core answers): a look-behind/-ahead for "no word character"
# next to a word character is a word boundary there; "no digit" at the end of an alternative may
# consume the character instead (the groups are the same, only the whole match grows).
_NOT_WORD_BEFORE = re.compile(r"\(\?<!\[0-9A-Za-z_\]\)(?=\(\?P<\w+>[0-9A-Za-z_])")
_NOT_WORD_AFTER = re.compile(r"(\[(?:[0-9A-Za-z_](?:-[0-9A-Za-z_])?)+\]\{\d{1,3}\}\))\(\?!\[0-9A-Za-z_\]\)")
_NOT_DIGIT = "(?![0-9])"
_POSSESSIVE = re.compile(r"(?<=[*+?}])\+")


def core_pattern(pattern: str, shipped: bool) -> str | None:
    """The family pattern for the compiled core (`families.rs`), or None when it stays Python's.
    A possessive repeat is read as a greedy one only in the `shipped` patterns: each is followed
    there by what it cannot match, so giving characters back never makes another match (checked
    by hand, proven by tests/knowledge/test_families_core.py); a user's own stays Python's."""
    out = _NOT_WORD_AFTER.sub(r"\1\\b", _NOT_WORD_BEFORE.sub(r"\\b", pattern))
    depth, i, parts = 0, 0, []
    while (at := out.find(_NOT_DIGIT, i)) != -1:
        depth += _depth(out[i:at])
        after = out[at + len(_NOT_DIGIT):]
        if depth != 0 or not (after == "" or after.startswith("|")):
            return None  # not at the end of a top-level alternative: consuming would take a character
        parts.append(out[i:at] + "(?:[^0-9]|$)")
        i = at + len(_NOT_DIGIT)
    out = "".join(parts) + out[i:]
    marks = [m.start() for m in _POSSESSIVE.finditer(_unescaped(out))]  # not an escaped `\+`
    if marks and not shipped:
        return None
    for at in reversed(marks):
        out = out[:at] + out[at + 1:]
    return out


def _unescaped(text: str) -> str:
    return re.sub(r"\\.", "__", text)


def _depth(text: str) -> int:
    """How many more groups `text` opens than closes (escapes and classes skipped)."""
    text = re.sub(r"\[(?:\\.|[^\]\\])*\]", "", _unescaped(text))
    return text.count("(") - text.count(")")


_shipped: set[str] | None = None


def shipped_patterns() -> set[str]:
    """The patterns of the families this package ships."""
    global _shipped
    if _shipped is None:
        data = read_yaml(SHIPPED)
        entries = data.get("families", []) if isinstance(data, dict) else []
        _shipped = {str(e.get("pattern", "")) for e in entries if isinstance(e, dict)}
    return _shipped


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
    pattern: LazyPattern  # an `re` pattern, compiled on first use (`compiled`)
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
        self._db: Any = False  # built on first use (False: not yet); None without hyperscan
        self._core: Any = None  # the compiled core's families (`ddtriage_core.Families`), under the core
        self._chosen: dict[int, list[Family]] = {}  # the core's bits of present families -> them (few sets)

    def core_rows(self) -> list[tuple[list[str], str | None]]:
        """The families as the compiled core takes them: literals, and the pattern it reads alike."""
        shipped = shipped_patterns()
        return [(list(f.literals), core_pattern(f.pattern.pattern, f.pattern.pattern in shipped))
                for f in self.families]

    def core_info(self) -> list[tuple[str, str, list[tuple[str, str]], list[tuple[str, str]]]]:
        """What `_found` reads of each family, for the compiled core's engine: id, name, aliases and
        meanings."""
        return [(f.id, f.name, sorted(f.aliases.items()), sorted((str(k), str(v)) for k, v in f.codes.items()))
                for f in self.families]

    def use_core(self, table: Any) -> None:
        """Answer plain ASCII lines with the compiled core's families (`core_rows`)."""
        self._core = table

    @property
    def core(self) -> Any:
        """The compiled core's `Families` that answers plain ASCII lines, or None."""
        return self._core

    def __reduce__(self) -> tuple[type[NeighbourMatcher], tuple[list[Family]]]:
        # A hyperscan database does not pickle: a worker process (Dask) compiles its own.
        return (NeighbourMatcher, (self.families,))

    def families_in(self, raw: bytes) -> list[Family]:
        """The families whose literals occur in some undecoded text: a cheap test before `find`
        that also narrows what `find` tries."""
        if self._core is not None:
            bits = self._core.present(raw)
            if not bits:
                return []
            chosen = self._chosen.get(bits)
            if chosen is None:  # logs name a few sets of families: each listed once (read only), a bounded few
                chosen = [f for i, f in enumerate(self.families) if bits >> i & 1]
                if len(self._chosen) < CHOSEN_SETS:
                    self._chosen[bits] = chosen
            return chosen
        if self._db is False:
            self._db = _literal_db(self._raw_literals)
        if self._db is not None:
            ids: set[int] = set()
            self._db.scan(raw, match_event_handler=lambda i, *_: ids.add(i))
            present = {self.literals[i] for i in ids}
        else:
            present = {lit for lit, raw_lit in zip(self.literals, self._raw_literals, strict=False) if raw_lit in raw}
        return [f for f in self.families if present.intersection(f.literals)] if present else []

    def find(self, line: str, families: list[Family] | None = None) -> list[tuple[str, str, str]]:
        """[(family id, code, meaning)] on a line, the first error of each family (of `families`
        only, when given)."""
        core = self._core
        # the core reads printable ASCII without the CRs that end it: such a line is Python's
        if core is not None and line.isascii() and not line.endswith("\r"):
            hits = core.find(line.encode())
            if hits is not None:
                chosen = self.families
                return [self._found(chosen[i], code) for i, code in hits
                        if families is None or chosen[i] in families]
        out = []
        for family in self.families if families is None else families:
            if not any(lit in line for lit in family.literals):
                continue
            m = family.pattern.search(line)
            if m:
                out.append(self._found(family, next((g for g in m.groups() if g), m.group(0))))
        return out

    def core_found(self, hits: Sequence[tuple[int, str]]) -> list[tuple[str, str, str]]:
        """`find`'s answer from the compiled core's (family index, code text) hits of a line."""
        chosen = self.families
        return [self._found(chosen[i], code) for i, code in hits]

    @staticmethod
    def _found(family: Family, code: str) -> tuple[str, str, str]:
        code = family.aliases.get(code.lower(), code)
        return (family.id, code, family.meaning(code))

    def family(self, family_id: str) -> Family | None:
        return next((f for f in self.families if f.id == family_id), None)

    @classmethod
    def load(cls, path: Path | None, lang: str = "en", missing: list[str] | None = None) -> NeighbourMatcher:
        """Read and validate neighbours.yaml; names, meanings and remedies in `lang` (an entry
        without one of its languages is noted in `missing`)."""
        if path is None:
            return cls([])
        data = read_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("families"), list):
            raise RuleError(f"{path}: expected a mapping with a `families` list")
        return cls.load_families(data["families"], path, lang, missing)

    @classmethod
    def load_families(cls, entries: list[Any], path: Path | str = "<families>", lang: str = "en",
                      missing: list[str] | None = None) -> NeighbourMatcher:
        """A matcher of family entries as a neighbours file lists them (validated, errors located;
        their text in `lang`, an entry without one of its languages noted in `missing`)."""
        families = []
        pattern_texts = [str(raw.get("pattern", "")) for raw in entries if isinstance(raw, dict)]
        lazy = compiled.proven(pattern_texts, "re")
        for i, raw in enumerate(entries):
            where = f"{path}: family {raw.get('id', '#' + str(i + 1)) if isinstance(raw, dict) else '#' + str(i + 1)}"
            if not isinstance(raw, dict) or not isinstance(raw.get("id"), str):
                raise RuleError(f"{where}: must be a mapping with an `id`")
            unknown = sorted(set(raw) - {"id", "name", "literals", "pattern", "codes", "level", "aliases", "action",
                                         "remedy", "remedies", "name_zh", "codes_zh", "remedy_zh", "remedies_zh"})
            if unknown:
                raise RuleError(f"{where}: unknown field(s): {', '.join(unknown)}")
            literals = raw.get("literals")
            if not isinstance(literals, list) or not literals or not all(isinstance(x, str) and x for x in literals):
                raise RuleError(f"{where}: `literals` must be a non-empty list of strings")
            try:
                pattern = compiled.pattern(str(raw.get("pattern", "")), "re", lazy)
            except re.error as exc:
                raise RuleError(f"{where}: pattern: invalid regular expression: {exc}") from None
            codes = raw.get("codes") or {}
            if not isinstance(codes, dict) or not isinstance(raw.get("codes_zh") or {}, dict):
                raise RuleError(f"{where}: `codes` (and `codes_zh`) must map codes to meanings")
            remedies = raw.get("remedies") or {}
            pairs = remedies.values() if isinstance(remedies, dict) else ()
            if not isinstance(remedies, dict) or not all(
                    isinstance(v, list) and len(v) == 2 and all(isinstance(x, str) for x in v) for v in pairs):
                raise RuleError(f"{where}: `remedies` must map codes to [action, remedy]")
            remedies_zh = raw.get("remedies_zh") or {}
            if not isinstance(remedies_zh, dict) or not all(isinstance(v, str) for v in remedies_zh.values()):
                raise RuleError(f"{where}: `remedies_zh` must map codes to remedy text")
            aliases = raw.get("aliases") or {}
            if not isinstance(aliases, dict):
                raise RuleError(f"{where}: `aliases` must map printed text to codes")
            level = raw.get("level", 1)
            if level not in (1, 2, 3):
                raise RuleError(f"{where}: `level` must be 1 (below LLM-DataDist), 2 (beside it) or 3 (above it)")
            name, remedy, meanings, texts = _texts(raw, where, lang, missing)
            families.append(Family(raw["id"], name, tuple(literals), pattern, meanings, level,
                                   {str(k).lower(): str(v) for k, v in aliases.items()},
                                   str(raw.get("action") or "collect-logs"), remedy,
                                   {str(k): (v[0], texts.get(str(k), v[1])) for k, v in remedies.items()}))
        if not lazy:
            compiled.remember(pattern_texts, "re")
        return cls(families)


def _texts(raw: dict[str, Any], where: str, lang: str,
           missing: list[str] | None) -> tuple[str, str, dict[str, str], dict[str, str]]:
    """A family's name, remedy, code meanings and per-code remedy texts in `lang`; each code's
    meaning and remedy must be there in both languages (noted in `missing` when not)."""
    name = str(localized(raw, "name", lang, missing, where) or raw["id"])
    remedy = str(localized(raw, "remedy", lang, missing, where) or "")
    codes, codes_zh = raw.get("codes") or {}, raw.get("codes_zh") or {}
    remedies, remedies_zh = raw.get("remedies") or {}, raw.get("remedies_zh") or {}
    if missing is not None:
        missing.extend(f"{where}: code {k}: lacks `codes_zh`" for k in codes if k not in codes_zh)
        missing.extend(f"{where}: code {k}: lacks `remedies_zh`" for k in remedies if k not in remedies_zh)
        missing.extend(f"{where}: code {k}: `{key}_zh` has no English `{key}`"
                       for key, en, zh in (("codes", codes, codes_zh), ("remedies", remedies, remedies_zh))
                       for k in zh if k not in en)
    chinese = lang == "zh"
    meanings = {str(k): str(codes_zh.get(k, v) if chinese else v) for k, v in codes.items()}
    texts = {str(k): str(v) for k, v in remedies_zh.items()} if chinese else {}
    return name, remedy, meanings, texts
