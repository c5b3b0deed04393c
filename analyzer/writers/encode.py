"""Findings as compact JSON text, one per line: the hot part of the JSON and JSONL writers.

`json.dumps(finding.to_dict(), ensure_ascii=False)` costs ~12 us a finding, most of it building
the dict and walking it. Here each field is encoded straight from the record with the C string
encoder, and the long fields a storm repeats (remedy, references, causes) are encoded once per
distinct value. The bytes are the same as `json.dumps` gives (a test holds every finding of the
answer keys to that); and if `Finding.to_dict()` gains a field this module does not know, it
falls back to `json.dumps` rather than write something else.

orjson was measured and not used: it cannot print `json.dumps`'s `", "`/`": "` separators, so its
output would differ from every golden report, and re-spacing its output costs what it saves.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..core.records import Finding

_dumps = json.JSONEncoder(ensure_ascii=False).encode
_string: Callable[[str], str] = json.encoder.encode_basestring  # C, when built (ensure_ascii=False)


def _str(value: str | None) -> str:
    return "null" if value is None else _string(value)


def _int(value: int | None) -> str:
    return "null" if value is None else int.__repr__(value)


def _bool(value: bool | None) -> str:
    return "null" if value is None else ("true" if value else "false")


_CACHE: dict[Any, str] = {}
CACHE_SIZE = 4096


def _cached(value: Any) -> str:
    """`json.dumps` of a value a storm repeats (a remedy, a tuple of references or causes)."""
    found = _CACHE.get(value)
    if found is None:
        if len(_CACHE) >= CACHE_SIZE:
            _CACHE.clear()
        found = _CACHE[value] = _dumps(value if isinstance(value, str) else _plain(value))
    return found


def _plain(value: tuple) -> list:
    if value and isinstance(value[0], tuple):  # causes
        return [{"line": c[0], "family": c[1], "code": c[2], "meaning": c[3]} for c in value]
    return list(value)


def _fast(f: Finding) -> str:
    return (f'{{"source": {_string(f.source)}, "line": {int.__repr__(f.line)}, "timestamp": {_str(f.timestamp)}, '
            f'"time_source": {_str(f.time_source)}, "inferred_time": {_str(f.time_hint)}, '
            f'"code": {_string(f.code)}, "name": {_str(f.name)}, '
            f'"known": {_bool(f.known)}, "api": {_str(f.api)}, "api_evidence": {_str(f.api_evidence)}, '
            f'"api_line": {_int(f.api_line)}, "recoverable": {_bool(f.recoverable)}, "rule": {_string(f.rule)}, '
            f'"fingerprint": {_string(f.fingerprint)}, "action": {_string(f.action)}, '
            f'"remedy": {_cached(f.remedy)}, "references": {_cached(f.references)}, "form": {_string(f.form)}, '
            f'"in_cluster_results": {_bool(f.in_cluster_results)}, "bundle": {_str(f.bundle)}, '
            f'"node": {_str(f.node)}, "pod": {_str(f.pod)}, "container": {_str(f.container)}, '
            f'"stream": {_str(f.stream)}, "envelope": {_str(f.envelope)}, "envelope_time": {_str(f.envelope_time)}, '
            f'"kind": {_string(f.kind)}, "device": {_str(f.device)}, '
            f'"pid": {_str(f.pid)}, "tid": {_str(f.tid)}, "causes": {_cached(f.causes)}, "link": {_link(f.link)}, '
            f'"text": {_string(f.text)}}}')


def _link(link: tuple[tuple[str, str], ...]) -> str:
    """A finding's link facts as a JSON object (kinds are unique and sorted)."""
    return "{" + ", ".join(f"{_string(k)}: {_string(v)}" for k, v in link) + "}"


_FAST_KEYS = ["source", "line", "timestamp", "time_source", "inferred_time", "code", "name", "known", "api",
              "api_evidence", "api_line", "recoverable", "rule", "fingerprint", "action", "remedy", "references",
              "form", "in_cluster_results", "bundle", "node", "pod", "container", "stream", "envelope",
              "envelope_time", "kind", "device", "pid", "tid", "causes", "link", "text"]


def _slow(f: Finding) -> str:
    return _dumps(f.to_dict())


def _pick() -> Callable[[Finding], str]:
    """The fast encoder while it writes what `to_dict` holds, key for key; else `json.dumps`."""
    probe = Finding(source="s", line=1, timestamp=None, code="0x5010B001", name=None, api=None, api_evidence=None,
                    api_line=None, recoverable=None, rule="r", action="a", remedy="m", text="t", form="hex")
    return _fast if list(probe.to_dict()) == _FAST_KEYS and _fast(probe) == _slow(probe) else _slow


finding_line = _pick()


def finding_lines(findings: Iterable[Finding]) -> Iterator[str]:
    """`finding_line` of each finding, in order."""
    encode = finding_line
    for f in findings:
        yield encode(f)
