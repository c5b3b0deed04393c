"""Link facts: what a line says about its node's side of a P/D link (role, cluster ids, addresses,
req_ids, device, versions), and what a whole node's logs say, gathered during the scan.

Stage: context (link facts). The spellings are data (`analyzer/data/linkfacts.yaml`): per kind, literals
for a cheap pre-test, patterns whose `value` group (or `ip` and `port` groups) is the fact, a map
that normalises printed values, and example lines that `ddtriage rules check` proves. `NodeFacts`
keeps a bounded summary per node: sets of small values and at most `MAX_REQ_IDS` request ids.
"""

from __future__ import annotations

import functools
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import RuleError
from ..core.observations import KINDS, Fact
from . import compiled
from .catalog import read_yaml
from .compiled import LazyPattern


@dataclass(frozen=True, slots=True)
class FactPattern:
    """One kind of fact: its literals, patterns and value map, with its example lines."""

    id: str
    literals: tuple[str, ...]
    patterns: tuple[LazyPattern, ...]  # compiled on first use (`compiled`)
    values: dict[str, str]
    match: tuple[tuple[str, str], ...] = ()  # (line, expected value)
    no_match: tuple[str, ...] = ()
    scan: tuple[str, ...] | None = None  # literals that make a line a scan candidate (None: `literals`)

    def find(self, line: str) -> str | None:
        """The fact on a line (its first spelling that matches), normalised; None without one."""
        for pattern in self.patterns:
            m = pattern.search(line)
            if not m:
                continue
            groups = m.groupdict()
            value = groups.get("value")
            if value is None and groups.get("ip") and groups.get("port"):
                value = f"{groups['ip']}:{groups['port']}"
            if value:
                return self.values.get(value.lower(), value)
        return None


class LinkFactMatcher:
    """Finds every kind of link fact on a line."""

    def __init__(self, kinds: list[FactPattern]) -> None:
        self.kinds = kinds
        self.literals = tuple(dict.fromkeys(lit for k in kinds for lit in k.literals))
        # What the scanner's prefilter looks for: facts printed on every request are not among them.
        self.raw_literals = tuple(dict.fromkeys(
            lit.encode() for k in kinds for lit in (k.literals if k.scan is None else k.scan)))
        self._raw_present: re.Pattern[bytes] | None = None  # built on first use
        self._screen: _Screen | None | bool = False  # built on first use (False: not yet)
        self._core: Any = None  # the compiled core's table (`ddtriage_core.Facts`), under the core
        self._core_proofs = False  # whether that table holds the proofs of recovery too

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_core"] = None  # the core's table does not pickle: a worker's engine hands over its own
        state["_core_proofs"] = False
        return state

    def use_core(self, table: Any, judges_proofs: bool = False) -> None:
        """Answer lines with the compiled core's table (equal to `find_plainly`; it leaves lines that
        are not plain ASCII to this module). `judges_proofs`: the table also holds the proofs of
        recovery (`RecoveryTable.core_table()`), so it tells a line that cannot be one."""
        self._core = table
        self._core_proofs = judges_proofs and table is not None

    def screen(self, line: str, raw: bytes) -> tuple[list[Fact], bool | None]:
        """The facts of a candidate line (`find` where its bytes hold a literal, else none) and,
        under the core, whether it may be a proof of recovery (False only where
        `RecoveryTable.find` says None); None: not judged, ask `RecoveryTable.maybe_in`. Where the
        core answers, the line is plain ASCII and its text its bytes (no NUL, colour or CR dropped),
        so a line without a literal gets no facts there either: the pre-test is the core's own."""
        core = self._core
        if core is not None and line.isascii() and len(line) == len(raw.rstrip(b"\r")):
            found: list[Fact] | None = core.find(raw)
            if found is not None:
                return found, (core.maybe_proof(raw) if self._core_proofs else None)
        return (self.find(line, raw) if self.maybe_in(raw) else []), None

    def find(self, line: str, raw: bytes | None = None) -> list[Fact]:
        """[(kind, value)] on one line, in the order of the kinds (`raw`: the line's bytes, when
        the caller has them)."""
        if self._core is not None and raw is not None and line.isascii() and len(line) == len(raw.rstrip(b"\r")):
            found: list[Fact] | None = self._core.find(raw)
            if found is not None:
                return found
        if self._screen is False:
            self._screen = _Screen.build(self.kinds)  # ~0.1 s: not paid by a scan that reads no fact line
        if isinstance(self._screen, _Screen) and line.isascii():
            # the bytes must be the text's own (decoding drops NUL padding and a CR)
            return self._screen.find(line, raw if raw is not None and len(raw) == len(line) else line.encode())
        return self.find_plainly(line)

    def find_plainly(self, line: str) -> list[Fact]:
        """`find` with nothing but the patterns (the reference the screened path must equal)."""
        out = []
        holds = line.__contains__
        for kind in self.kinds:
            # `in` per literal (a C search each) beats one alternation regex over the line.
            if any(map(holds, kind.literals)):
                value = kind.find(line)
                if value is not None:
                    out.append((kind.id, value))
        return out

    def core_table(self) -> tuple[tuple[str, list[str], list[str], list[tuple[str, str]]], ...]:
        """The table as the compiled core takes it (`ddtriage_core.Facts`): per kind its id,
        literals, pattern texts and value map. The core answers exactly as `find_plainly`."""
        return tuple((k.id, list(k.literals), [p.pattern for p in k.patterns], sorted(k.values.items()))
                     for k in self.kinds)

    def maybe_in(self, raw: bytes) -> bool:
        """Whether undecoded bytes hold any literal (the cheap test before decoding)."""
        if not self.literals:
            return False
        if self._raw_present is None:
            every = sorted((lit.encode() for lit in self.literals), key=len, reverse=True)
            self._raw_present = re.compile(b"|".join(map(re.escape, every)))
        return self._raw_present.search(raw) is not None

    def check_examples(self, origin: str = "linkfacts.yaml") -> list[str]:
        """Every failing example line, as `origin: fact kind: reason`."""
        problems = []
        for kind in self.kinds:
            if not kind.match:
                problems.append(f"{origin}: fact {kind.id}: needs at least one `match` example")
            for line, expected in kind.match:
                got = dict(self.find(line)).get(kind.id)
                if got != expected:
                    problems.append(f"{origin}: fact {kind.id}: example should give {expected!r} but gave "
                                    f"{got!r}: {line[:120]!r}")
            for line in kind.no_match:
                got = dict(self.find(line)).get(kind.id)
                if got is not None:
                    problems.append(f"{origin}: fact {kind.id}: example should give nothing but gave {got!r}: "
                                    f"{line[:120]!r}")
        return problems

    @classmethod
    def load(cls, path: Path | None) -> LinkFactMatcher:
        if path is None:
            return cls([])
        data = read_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("facts"), list):
            raise RuleError(f"{path}: expected a mapping with a `facts` list")
        texts = pattern_texts(data["facts"])
        lazy = compiled.proven(texts)
        kinds = [_load_kind(path, i, raw, lazy) for i, raw in enumerate(data["facts"])]
        if not lazy:
            compiled.remember(texts)
        return cls(kinds)


def _load_kind(path: Path, index: int, raw: Any, lazy: bool = False) -> FactPattern:
    where = f"{path}: fact {raw.get('id', '#' + str(index + 1)) if isinstance(raw, dict) else '#' + str(index + 1)}"
    if not isinstance(raw, dict) or raw.get("id") not in KINDS:
        raise RuleError(f"{where}: must be a mapping whose `id` is one of {', '.join(KINDS)}")
    unknown = sorted(set(raw) - {"id", "literals", "scan", "patterns", "values", "examples"})
    if unknown:
        raise RuleError(f"{where}: unknown field(s): {', '.join(unknown)}")
    literals = raw.get("literals")
    if not isinstance(literals, list) or not literals or not all(isinstance(x, str) and x for x in literals):
        raise RuleError(f"{where}: `literals` must be a non-empty list of strings")
    patterns = compile_patterns(raw.get("patterns"), where, lazy)
    values = raw.get("values") or {}
    if not isinstance(values, dict):
        raise RuleError(f"{where}: `values` must map printed values to normal ones")
    examples = raw.get("examples") or {}
    match, no_match = examples.get("match") or [], examples.get("no_match") or []
    if not all(isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m) for m in match):
        raise RuleError(f"{where}: examples.match entries must be [line, expected value]")
    if not all(isinstance(x, str) for x in no_match):
        raise RuleError(f"{where}: examples.no_match must be a list of lines")
    scan = raw.get("scan")
    if scan is not None and not (isinstance(scan, list) and all(isinstance(x, str) and x for x in scan)):
        raise RuleError(f"{where}: `scan` must be a list of strings (may be empty)")
    return FactPattern(raw["id"], tuple(literals), tuple(patterns),
                       {str(k).lower(): str(v) for k, v in values.items()},
                       tuple((m[0], m[1]) for m in match), tuple(no_match), None if scan is None else tuple(scan))


class _Screen:
    """One hyperscan pass over a line tells which kinds' literals and which patterns are on it,
    so that only patterns known to match are run in Python (5 to 10 times fewer searches on a
    busy connector log's lines). For ASCII lines only: there, a pattern matches under hyperscan
    exactly when it matches under `regex` (a test holds this on every corpus line)."""

    def __init__(self, db: Any, kinds: list[FactPattern], literal_ids: list[frozenset[int]],
                 pattern_ids: list[tuple[int | None, ...]]) -> None:
        self.db, self.kinds, self.pattern_ids = db, kinds, pattern_ids
        self.kind_of = {i: k for k, ids in enumerate(literal_ids) for i in ids}  # literal id -> kind

    @classmethod
    def build(cls, kinds: list[FactPattern]) -> _Screen | None:
        try:
            import hyperscan
        except ImportError:  # pragma: no cover - depends on the platform
            return None
        expressions: list[bytes] = []
        literal_ids, pattern_ids = [], []
        for kind in kinds:
            ids = set()
            for lit in kind.literals:
                ids.add(len(expressions))
                expressions.append(b"".join(b"\\x%02x" % b for b in lit.encode()))
            literal_ids.append(frozenset(ids))
            pids: list[int | None] = []
            for pattern in kind.patterns:
                translated = re.sub(r"\(\?P<\w+>", "(", pattern.pattern).encode()
                if _compiles(hyperscan, translated):
                    pids.append(len(expressions))
                    expressions.append(translated)
                else:
                    pids.append(None)  # always run in Python
            pattern_ids.append(tuple(pids))
        return cls(_database(hyperscan, tuple(expressions)), kinds, literal_ids, pattern_ids)

    def find(self, line: str, raw: bytes) -> list[Fact]:
        found: set[int] = set()
        self.db.scan(raw, match_event_handler=lambda i, _f, _t, _fl, _c: found.add(i))
        out = []
        for k in sorted({self.kind_of[i] for i in found if i in self.kind_of}):  # kinds whose literal is there
            kind = self.kinds[k]
            for pattern, pid in zip(kind.patterns, self.pattern_ids[k], strict=True):
                if pid is not None and pid not in found:
                    continue
                m = pattern.search(line)
                value = _value_of(m.groupdict()) if m else None
                if value:
                    out.append((kind.id, kind.values.get(value.lower(), value)))
                    break
        return out


# Compiled screens by their expressions, per thread (a hyperscan database scans with its own
# scratch space, which two threads may not share): the compile costs ~0.13 s of CPU, paid once per
# process rather than by every scan that meets a fact line (a test run, a watch, a merge).
_DATABASES: dict[tuple[tuple[bytes, ...], int], Any] = {}


def _database(hyperscan: Any, expressions: tuple[bytes, ...]) -> Any:
    key = (expressions, threading.get_ident())
    db = _DATABASES.get(key)
    if db is None:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=list(expressions), ids=list(range(len(expressions))),
                   flags=[hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY] * len(expressions))
        if len(_DATABASES) >= 16:
            _DATABASES.clear()
        _DATABASES[key] = db
    return db


@functools.lru_cache(maxsize=1024)
def _compiles(hyperscan: Any, expression: bytes) -> bool:
    """Whether hyperscan takes `expression` (a construct it lacks sends that pattern to Python).
    Remembered per process: the answer is a fact of the expression, and a process that loads the
    rules again (the tests, a library user) need not pay ~3 ms a pattern again."""
    try:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[expression], ids=[0], flags=[hyperscan.HS_FLAG_SINGLEMATCH])
    except Exception:  # noqa: BLE001 - hyperscan's own error: a construct it lacks
        return False
    return True


def _value_of(groups: dict[str, str | None]) -> str | None:
    """A match's fact as `FactPattern.find` takes it: `value`, else `ip:port`."""
    value, ip, port = groups.get("value"), groups.get("ip"), groups.get("port")
    if value is None and ip and port:
        return f"{ip}:{port}"
    return value


def pattern_texts(rows: object) -> list[str]:
    """The texts of every row's `patterns` (link facts, proofs of recovery), as `compile_patterns`
    compiles them: what `compiled.proven` is asked about."""
    return [str(text) for row in (rows if isinstance(rows, list) else []) if isinstance(row, dict)
            and isinstance(row.get("patterns"), list) for text in row["patterns"]]


def compile_patterns(texts: object, where: str, lazy: bool = False) -> list[LazyPattern]:
    """The `patterns` of a table row (link facts, proofs of recovery), compiled (on first use
    when `lazy`: the table's texts are proven to compile); at least one.
    `regex`, not `re`: it finds a case-free literal prefix (`(?i)\\bremote ...`) by searching for
    it, where `re` tries every position (10x slower on these lines)."""
    invalid: Any = ()  # a lazy pattern raises nothing here
    if not lazy:
        import regex

        invalid = regex.error
    patterns = []
    for text in texts if isinstance(texts, list) else []:
        try:
            patterns.append(compiled.pattern(str(text), "regex", lazy))
        except invalid as exc:
            raise RuleError(f"{where}: pattern {text!r}: invalid regular expression: {exc}") from None
    if not patterns:
        raise RuleError(f"{where}: needs at least one pattern")
    return patterns
