"""Proofs of recovery: which lines show a link healthy again, and which failures they heal.

Stage: knowledge. The table is data (`analyzer/data/recovery.yaml`): failure kinds (told by a
burst lead's API or code) and proofs (literals for the scanner's prefilter, patterns, the kinds
they heal, example lines that `ddtriage rules check` proves). The scan notes proof lines
(`detect.observer`); `diagnose.recovery` decides what each proves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import RuleError
from ..core.observations import Fact
from . import compiled
from .catalog import ApiTable, Catalog, read_yaml
from .compiled import LazyPattern
from .linkfacts import compile_patterns, pattern_texts


@dataclass(frozen=True, slots=True)
class FailureKind:
    """A kind of failure a proof can heal: bursts whose lead has one of these APIs or codes."""

    id: str
    apis: frozenset[str]
    codes: frozenset[int]


@dataclass(frozen=True, slots=True)
class ProofKind:
    """One kind of proof line, with its example lines."""

    id: str
    description: str
    heals: frozenset[str]
    literals: tuple[str, ...]
    patterns: tuple[LazyPattern, ...]  # compiled on first use (`compiled`)
    match: tuple[tuple[str, str], ...] = ()  # (line, the peer its own link facts name)
    no_match: tuple[str, ...] = ()
    scan: tuple[str, ...] | None = None  # literals that make a line a scan candidate (None: `literals`)

    def holds(self, line: str) -> bool:
        return any(map(line.__contains__, self.literals)) and any(p.search(line) for p in self.patterns)


def peer_text(facts: list[Fact] | tuple[Fact, ...]) -> str:
    """`cluster 2 at 10.1.0.1:26000`: the peer link facts name ("" for none)."""
    clusters = sorted({v for k, v in facts if k == "remote_cluster"})
    addrs = sorted({v for k, v in facts if k in ("remote_addr", "remote_ip")})
    text = ("cluster " + ", ".join(clusters)) if clusters else ""
    if addrs:
        text += (" at " if text else "") + ", ".join(addrs)
    return text


class RecoveryTable:
    """The failure kinds and proofs of `recovery.yaml`, ready to test lines."""

    def __init__(self, failures: list[FailureKind], proofs: list[ProofKind]) -> None:
        self.failures, self.proofs = failures, proofs
        self.by_id = {p.id: p for p in proofs}
        # What the scanner's prefilter looks for (second tier: read cheaply, like link facts); a
        # proof printed on every request is looked for only on lines read anyway.
        self.raw_literals = tuple(dict.fromkeys(
            lit.encode() for p in proofs for lit in (p.literals if p.scan is None else p.scan)))
        every = sorted({lit.encode() for p in proofs for lit in p.literals}, key=len, reverse=True)
        self._raw_present = re.compile(b"|".join(map(re.escape, every))) if every else None

    def core_table(self) -> tuple[tuple[str, list[str], list[str]], ...]:
        """The proofs as the compiled core takes them (`ddtriage_core.Facts(proofs=...)`): per proof
        its id, literals and pattern texts. The core only tells a line that cannot be a proof."""
        return tuple((p.id, list(p.literals), [x.pattern for x in p.patterns]) for p in self.proofs)

    def maybe_in(self, raw: bytes) -> bool:
        """Whether undecoded bytes hold any proof literal."""
        return self._raw_present is not None and self._raw_present.search(raw) is not None

    def find(self, line: str) -> str | None:
        """The id of the first proof the line is, else None."""
        for proof in self.proofs:
            if proof.holds(line):
                return proof.id
        return None

    def kinds_of(self, code: str, api: str | None) -> frozenset[str]:
        """The failure kinds of a burst lead (code as reports print it, `0x5010B009`)."""
        try:
            value = int(code, 16) & 0xFFFFFFFF
        except ValueError:
            value = -1
        return frozenset(k.id for k in self.failures if (api is not None and api in k.apis) or value in k.codes)

    def check_examples(self, facts_of: Callable[[str], list[Fact]], origin: str = "recovery.yaml") -> list[str]:
        """Every failing example line, as `origin: proof id: reason` (`facts_of`: a line's link facts)."""
        problems = []
        for proof in self.proofs:
            if not proof.match:
                problems.append(f"{origin}: proof {proof.id}: needs at least one `match` example")
            for line, peer in proof.match:
                got = self.find(line)
                if got != proof.id:
                    problems.append(f"{origin}: proof {proof.id}: example is {'proof ' + got if got else 'no proof'}: "
                                    f"{line[:120]!r}")
                elif peer_text(facts_of(line)) != peer:
                    problems.append(f"{origin}: proof {proof.id}: example should name peer {peer!r} but names "
                                    f"{peer_text(facts_of(line))!r}: {line[:120]!r}")
            for line in proof.no_match:
                if proof.holds(line):
                    problems.append(f"{origin}: proof {proof.id}: example should be no proof: {line[:120]!r}")
        return problems

    @classmethod
    def load(cls, path: Path | None, catalog: Catalog, apis: ApiTable) -> RecoveryTable:
        if path is None:
            return cls([], [])
        data = read_yaml(path)
        if not isinstance(data, dict) or set(data) - {"failures", "proofs"}:
            raise RuleError(f"{path}: expected a mapping with `failures` and `proofs` only")
        raw_failures = data.get("failures") or {}
        if not isinstance(raw_failures, dict):
            raise RuleError(f"{path}: `failures` must map kind names to `apis` and `codes`")
        failures = [_failure(path, str(name), raw, catalog, apis) for name, raw in raw_failures.items()]
        raw_proofs = data.get("proofs") or []
        if not isinstance(raw_proofs, list):
            raise RuleError(f"{path}: `proofs` must be a list")
        kinds = {f.id for f in failures}
        texts = pattern_texts(raw_proofs)
        lazy = compiled.proven(texts)
        proofs = [_proof(path, i, raw, kinds, lazy) for i, raw in enumerate(raw_proofs)]
        if not lazy:
            compiled.remember(texts)
        ids = [p.id for p in proofs]
        dup = sorted({i for i in ids if ids.count(i) > 1})
        if dup:
            raise RuleError(f"{path}: proof {dup[0]}: id is defined twice")
        return cls(failures, proofs)


def _failure(path: Path, name: str, raw: Any, catalog: Catalog, apis: ApiTable) -> FailureKind:
    where = f"{path}: failure {name}"
    if not isinstance(raw, dict) or set(raw) - {"apis", "codes"} or not raw:
        raise RuleError(f"{where}: must be a mapping with `apis` and/or `codes`")
    api_names, code_names = raw.get("apis") or [], raw.get("codes") or []
    if not isinstance(api_names, list) or not isinstance(code_names, list):
        raise RuleError(f"{where}: `apis` and `codes` must be lists")
    codes = set()
    for entry in code_names:
        resolved = catalog.lookup(str(entry))
        if resolved is None:
            raise RuleError(f"{where}: codes: unknown code {entry!r}")
        codes.add(resolved[0] & 0xFFFFFFFF)
    return FailureKind(name, apis.expand(api_names, f"{where}: apis"), frozenset(codes))


def _proof(path: Path, index: int, raw: Any, kinds: set[str], lazy: bool = False) -> ProofKind:
    ident = raw.get("id") if isinstance(raw, dict) else None
    where = f"{path}: proof {ident or '#' + str(index + 1)}"
    if not isinstance(raw, dict) or not isinstance(ident, str) or not re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", ident):
        raise RuleError(f"{where}: must be a mapping whose `id` is lower-case words joined by '-'")
    unknown = sorted(set(raw) - {"id", "description", "heals", "literals", "scan", "patterns", "examples"})
    if unknown:
        raise RuleError(f"{where}: unknown field(s): {', '.join(unknown)}")
    heals = raw.get("heals")
    if not isinstance(heals, list) or not heals or not set(heals) <= kinds:
        raise RuleError(f"{where}: `heals` must list failure kinds ({', '.join(sorted(kinds))})")
    literals = raw.get("literals")
    if not isinstance(literals, list) or not literals or not all(isinstance(x, str) and len(x) >= 3 for x in literals):
        raise RuleError(f"{where}: `literals` must be a non-empty list of strings of at least 3 characters")
    patterns = compile_patterns(raw.get("patterns"), where, lazy)
    examples = raw.get("examples") or {}
    match, no_match = examples.get("match") or [], examples.get("no_match") or []
    if not all(isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m) for m in match):
        raise RuleError(f"{where}: examples.match entries must be [line, peer]")
    if not all(isinstance(x, str) for x in no_match):
        raise RuleError(f"{where}: examples.no_match must be a list of lines")
    scan = raw.get("scan")
    if scan is not None and not (isinstance(scan, list) and all(isinstance(x, str) and len(x) >= 3 for x in scan)):
        raise RuleError(f"{where}: `scan` must be a list of strings of at least 3 characters (may be empty)")
    return ProofKind(ident, str(raw.get("description") or ""), frozenset(heals), tuple(literals), tuple(patterns),
                     tuple((m[0], m[1]) for m in match), tuple(no_match), None if scan is None else tuple(scan))
