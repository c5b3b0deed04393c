"""The data side of envelopes: one entry of `rules/envelopes.yaml` checked and turned into an
`Envelope` (shape, detection and line patterns, field roles, time format, partial-line marks,
prefilter patterns and the examples `ddtriage rules check` proves).

Stage: rules (loading). `EnvelopeTable.load` calls `parse_envelope` per entry.
"""

from __future__ import annotations

import re
from typing import Any

from ..core.errors import RuleError
from ..core.records import Record
from .envelope_fields import prefilter_patterns
from .envelopes import PARTIALS, ROLES, SHAPES, TIME_FORMATS, Envelope


def parse_envelope(raw: object, where: str) -> Envelope:
    """One entry of envelopes.yaml, validated; every problem is a RuleError naming it."""
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

    def regex(key: str) -> re.Pattern[str] | None:
        if raw.get(key) is None:
            return None
        try:
            return re.compile(str(raw[key]))
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
