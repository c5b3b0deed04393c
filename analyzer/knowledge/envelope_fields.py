"""Envelope fields as collectors write them: times (RFC 3339, epoch, syslog, Kibana) and JSON
strings and objects, read leniently (a line cut short still gives its message).

Stage: knowledge (envelope fields); used by `knowledge.envelopes` and `scan.unwrap`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..core.errors import RuleError

if TYPE_CHECKING:
    from ..core.headers import Year

_MONTHS = {m: i for i, m in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                       "Nov", "Dec"), 1)}
_KIBANA = re.compile(r"([A-Z][a-z]{2}) (\d{1,2}), (\d{4}) @ (\d\d:\d\d:\d\d)(?:\.(\d+))?")
_SYSLOG_TIME = re.compile(r"([A-Z][a-z]{2}) +(\d{1,2}) (\d\d:\d\d:\d\d)")
_EPOCH = re.compile(r"\d{9,}(?:\.\d+)?")
_RFC3339 = re.compile(r"(\d{4}-\d\d-\d\d)[T ](\d\d:\d\d:\d\d)(?:[.,](\d+))?\s*(Z|[+-]\d\d:?\d\d)?$")

def envelope_time(raw: str, fmt: str, year: Year = None) -> str | None:
    """An envelope's time as ISO 8601: with its offset when it has one (`+00:00` for epoch
    values), without when it is written without (syslog, Kibana). None when it does not parse."""
    try:
        if fmt == "rfc3339" and _EPOCH.fullmatch(raw.strip()):
            # a number where a date was expected: seconds, milliseconds or microseconds since 1970
            digits = len(raw.strip().partition(".")[0])
            return envelope_time(raw, "epoch-us") if digits >= 15 else (
                envelope_time(raw, "epoch-ms") if digits >= 12 else envelope_time(raw, "epoch"))
        if fmt == "rfc3339":
            m = _RFC3339.match(raw.strip())
            if not m:
                return None
            frac = f".{m.group(3)[:6].ljust(6, '0')}" if m.group(3) else ""
            zone = m.group(4)
            zone = "+00:00" if zone == "Z" else (zone if not zone or ":" in zone else f"{zone[:3]}:{zone[3:]}")
            return datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}{frac}{zone or ''}").isoformat()
        if fmt in ("epoch", "epoch-ms", "epoch-us"):
            whole, _, frac = raw.strip().partition(".")
            if fmt == "epoch-us":
                seconds, micros = divmod(int(whole), 1_000_000)
            elif fmt == "epoch-ms":
                seconds, millis = divmod(int(whole), 1000)
                micros = millis * 1000 + (int(frac[:3].ljust(3, "0")) if frac else 0)
            else:
                seconds, micros = int(whole), int(frac[:6].ljust(6, "0")) if frac else 0
            return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(seconds=seconds, microseconds=micros)).isoformat()
        if fmt == "kibana":
            m = _KIBANA.match(raw.strip())
            if not m:
                return envelope_time(raw, "rfc3339")
            frac = f".{m.group(5)[:6].ljust(6, '0')}" if m.group(5) else ""
            return f"{m.group(3)}-{_MONTHS[m.group(1)]:02d}-{int(m.group(2)):02d}T{m.group(4)}{frac}"
        if fmt == "syslog":
            m = _SYSLOG_TIME.match(raw.strip())
            if not m or m.group(1) not in _MONTHS:
                return None
            month_day = f"{_MONTHS[m.group(1)]:02d}-{int(m.group(2)):02d}"
            y = year if year is None or isinstance(year, int) else year.for_stamp(month_day)
            return f"{y:04d}-{month_day}T{m.group(3)}" if y else None
    except (ValueError, OverflowError, KeyError):
        return None
    return None


def json_object(text: str, start: int | None = None) -> dict[str, Any] | None:
    """The JSON object starting at `start` (default: the first `{`), or None."""
    if start is None:
        start = text.find("{")
        if start == -1:
            return None
    try:
        obj, _ = _DECODER.raw_decode(text, start)
    except (ValueError, RecursionError):
        return None
    return obj if isinstance(obj, dict) else None


_DECODER = json.JSONDecoder(strict=False)


def json_string(quoted: str) -> str:
    try:
        value = _DECODER.decode(quoted)
    except ValueError:
        return quoted.strip('"')
    return value if isinstance(value, str) else str(value)


def loose_message(line: str, keys: Sequence[str]) -> str:
    """The message of a JSON line that does not parse (cut short): the string value of its
    message key, unescaped as far as it goes (the line itself when it has none)."""
    for key in keys:
        m = re.search(r'"' + re.escape(key) + r'"\s*:\s*"((?:[^"\\]|\\.)*)', line)
        if m:
            body = m.group(1)
            if body.endswith("\\") and not body.endswith("\\\\"):
                body = body[:-1]
            return json_string('"' + body + '"').removesuffix("\n")
    return line


def path_value(obj: Any, path: str) -> Any:
    """A dotted path into nested mappings; a key that itself holds dots is tried first."""
    if isinstance(obj, dict) and path in obj:
        return obj[path]
    head, dot, rest = path.partition(".")
    if dot and isinstance(obj, dict) and head in obj:
        return path_value(obj[head], rest)
    return None


def prefilter_patterns(raw: object, where: str) -> tuple[bytes, ...]:
    """An envelope's `prefilter` entry: regular expressions, as bytes."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(x, str) and x for x in raw):
        raise RuleError(f"{where}: prefilter must be a list of regular expressions")
    for x in raw:
        try:
            re.compile(x.encode())
        except re.error as exc:
            raise RuleError(f"{where}: prefilter: invalid regular expression: {exc}") from None
    return tuple(x.encode() for x in raw)


def key_values(obj: Any, prefix: str = "") -> list[str]:
    """`key=value` for every scalar in a JSON object, nested keys dotted, strings unescaped."""
    if isinstance(obj, dict):
        return [p for k, v in obj.items() for p in key_values(v, f"{prefix}{k}.")]
    if isinstance(obj, list):
        return [p for v in obj for p in key_values(v, prefix)]
    return [f"{prefix.rstrip('.')}={obj}"]
