"""TODO docstring."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import RuleError
from ..knowledge.catalog import read_yaml

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
    detect: re.Pattern[str]
    detect_head: bool = False
    pattern: re.Pattern[str] | None = None
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

    @classmethod
    def load(cls, path: Path) -> EnvelopeTable:
        """Read and validate envelopes.yaml; every problem is a RuleError naming file and entry."""
        data = read_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("envelopes"), list):
            raise RuleError(f"{path}: expected a mapping with an `envelopes` list")
        from ..knowledge.envelope_schema import parse_envelope  # here: it builds this module's Envelope

        out, seen = [], set()
        for i, raw in enumerate(data["envelopes"]):
            env = parse_envelope(raw, f"{path}: envelope #{i + 1}")
            if env.name in seen:
                raise RuleError(f"{path}: envelope {env.name}: defined twice")
            seen.add(env.name)
            out.append(env)
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
        for env in self.envelopes:
            if env.detect_head:
                if env.detect.match(text.lstrip()):
                    return env, lines[0]
                continue
            count = sum(1 for ln in lines if env.detect.match(ln)) if any(map(env.detect.match, first)) else 0
            if count and count * 2 >= len(lines) and (best is None or count > best[0]):
                best = (count, env)
        return (best[1], lines[0]) if best else None
