"""The envelope table: what collectors (Docker, CRI, kubelet, syslog, Fluent Bit, Loki, ...) wrap
around each log line, one validated row per entry of `analyzer/data/envelopes.yaml`.

Layer: knowledge. A row (`Envelope`) holds its shape, detection and line patterns, field roles,
time format, partial-line marks, prefilter patterns and the examples `ddtriage rules check`
proves. `EnvelopeTable.match_head` picks the row of a stream from its first bytes; unwrapping the
lines is `scan.unwrap`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import RuleError
from ..core.records import Record
from ..knowledge.catalog import read_yaml
from . import compiled
from .compiled import LazyPattern
from .envelope_fields import prefilter_patterns

SHAPES = ("line", "json", "prefix-json", "search", "csv", "terminal")
TIME_FORMATS = ("rfc3339", "epoch", "epoch-ms", "epoch-us", "syslog", "kibana")
PARTIALS = ("cri", "docker", "journald", "csv")
ROLES = ("message", "time", "stream", "pod", "container", "node", "namespace", "partial")
DETECT_LINES = 8  # non-empty lines of a stream's head that detection looks at
HEAD_BYTES = 64 << 10  # read before scanning: the CSV header row, the Rejoined check need no more
DETECT_BYTES = 8 << 10

@dataclass(frozen=True)
class Envelope:
    """One row of the table."""

    name: str
    shape: str
    detect: LazyPattern  # `re` patterns, compiled on first use (`compiled`)
    detect_head: bool = False
    pattern: LazyPattern | None = None
    fields: dict[str, tuple[str, ...]] = field(default_factory=dict)
    time: str = "rfc3339"
    partial: str | None = None
    escapes: str | None = None
    prefilter: tuple[bytes, ...] = ()  # regular expressions (bytes) that make a line a candidate
    examples: tuple[dict[str, str], ...] = ()

class EnvelopeTable:
    """The envelopes, in table order (earlier rows win ties)."""

    def __init__(self, envelopes: list[Envelope], origin: str = "") -> None:
        self.envelopes = envelopes
        self.origin = origin
        self._any_row: re.Pattern[str] | None | bool = False  # built on first use (False: not yet)

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_any_row": False}  # a worker builds its own

    def any_row(self) -> re.Pattern[str] | None:
        """One pattern that matches at a line's start where some row envelope's `detect` does (the
        alternation of them all): a plain log's head is then refused in one call a line. None
        where they cannot be joined alike (a back-reference, a named group met twice, a flag)."""
        if self._any_row is False:
            texts = [e.detect.pattern for e in self.envelopes if not e.detect_head]
            joinable = texts and not any(re.search(r"\\[1-9]|\(\?P=|\(\?[aiLmsux-]+[):]", t) for t in texts)
            try:
                self._any_row = re.compile("|".join(f"(?:{t})" for t in texts)) if joinable else None
            except re.error:
                self._any_row = None
        return self._any_row if isinstance(self._any_row, re.Pattern) else None

    @classmethod
    def load(cls, path: Path) -> EnvelopeTable:
        """Read and validate envelopes.yaml; every problem is a RuleError naming file and entry."""
        data = read_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("envelopes"), list):
            raise RuleError(f"{path}: expected a mapping with an `envelopes` list")
        out, seen = [], set()
        texts = [str(raw[key]) for raw in data["envelopes"] if isinstance(raw, dict)
                 for key in ("detect", "pattern") if raw.get(key) is not None]
        lazy = compiled.proven(texts, "re")
        for i, raw in enumerate(data["envelopes"]):
            env = parse_envelope(raw, f"{path}: envelope #{i + 1}", lazy)
            if env.name in seen:
                raise RuleError(f"{path}: envelope {env.name}: defined twice")
            seen.add(env.name)
            out.append(env)
        if not lazy:
            compiled.remember(texts, "re")
        return cls(out, str(path))

    def get(self, name: str) -> Envelope | None:
        return next((e for e in self.envelopes if e.name == name), None)

    def match_head(self, head: bytes) -> tuple[Envelope, str] | None:
        """The envelope of a stream from its first bytes (content only, never its name), with the
        stream's first non-empty line (a CSV's header row)."""
        # The starts of the first lines are enough (a line is matched from its start): decode
        # only DETECT_BYTES, so a folder of small plain logs pays next to nothing here.
        text = head[:DETECT_BYTES].decode("utf-8", errors="replace").lstrip("\ufeff\x00")
        lines = [ln for ln in text.split("\n", DETECT_LINES * 4)[:DETECT_LINES * 4] if ln.strip()][:DETECT_LINES]
        if not lines:
            return None
        best: tuple[int, Envelope] | None = None
        # A row counts when it matches at least half the lines: it cannot if these all miss
        # (a plain log's head, the usual case, is then done in fewer calls).
        first = lines[:len(lines) - (len(lines) + 1) // 2 + 1]
        any_row = self.any_row()
        rows = any_row is None or any(map(any_row.match, first))  # False: no row envelope can count
        for env in self.envelopes:
            if env.detect_head:
                if env.detect.match(text.lstrip()):
                    return env, lines[0]
                continue
            if not rows:
                continue
            count = sum(1 for ln in lines if env.detect.match(ln)) if any(map(env.detect.match, first)) else 0
            if count and count * 2 >= len(lines) and (best is None or count > best[0]):
                best = (count, env)
        return (best[1], lines[0]) if best else None


# --- one entry of envelopes.yaml, checked ------------------------------------------------------

def parse_envelope(raw: object, where: str, lazy: bool = False) -> Envelope:
    """One entry of envelopes.yaml, validated; every problem is a RuleError naming it (its
    patterns compiled on first use when `lazy`: the table's are proven to compile)."""
    if not isinstance(raw, dict) or not isinstance(raw.get("name"), str):
        raise RuleError(f"{where}: must be a mapping with a `name`")
    where = f"{where.rsplit(':', 1)[0]}: envelope {raw['name']}"
    known = {"name", "shape", "detect", "detect_head", "pattern", "fields", "time", "partial", "escapes",
             "prefilter", "examples"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise RuleError(f"{where}: unknown field(s): {', '.join(unknown)}")
    shape = raw.get("shape")
    for key, allowed in (("shape", SHAPES), ("time", TIME_FORMATS), ("partial", PARTIALS), ("escapes", ("rsyslog",))):
        value = raw.get(key, "rfc3339" if key == "time" else None)
        if value not in allowed and not (value is None and key in ("partial", "escapes")):
            raise RuleError(f"{where}: {key} must be one of {', '.join(allowed)}, got {value!r}")

    def regex(key: str) -> LazyPattern | None:
        if raw.get(key) is None:
            return None
        try:
            return compiled.pattern(str(raw[key]), "re", lazy)
        except re.error as exc:
            raise RuleError(f"{where}: {key}: invalid regular expression: {exc}") from None
    detect, pattern = regex("detect"), regex("pattern")
    if detect is None:
        raise RuleError(f"{where}: `detect` is required")
    if shape in ("line", "prefix-json") and pattern is None:
        raise RuleError(f"{where}: shape {shape} needs a `pattern`")
    fields = raw.get("fields") or {}
    if not isinstance(fields, dict) or set(fields) - set(ROLES):
        raise RuleError(f"{where}: fields: roles are {', '.join(ROLES)}")
    if shape in ("json", "prefix-json", "search", "csv") and "message" not in fields:
        raise RuleError(f"{where}: shape {shape} needs fields.message")
    examples = _examples(raw.get("examples"), where)
    return Envelope(
        name=raw["name"], shape=str(shape), detect=detect, detect_head=bool(raw.get("detect_head")), pattern=pattern,
        fields={k: tuple(str(v).split("|")) for k, v in fields.items()}, time=raw.get("time", "rfc3339"),
        partial=raw.get("partial"), escapes=raw.get("escapes"),
        prefilter=prefilter_patterns(raw.get("prefilter"), where),
        examples=tuple({k: str(v) for k, v in e.items()} for e in examples),
    )


def _examples(examples: object, where: str) -> list[dict[str, Any]]:
    if not isinstance(examples, list) or not examples or not all(
            isinstance(e, dict) and isinstance(e.get("wrapped"), str) and isinstance(e.get("inner"), str)
            for e in examples):
        raise RuleError(f"{where}: needs `examples`, each with `wrapped` and `inner`")
    for e in examples:
        extra = sorted(set(e) - {"wrapped", "inner"} - set(Record.__slots__))
        if extra:
            raise RuleError(f"{where}: examples: unknown field(s) {', '.join(extra)}")
    return examples
