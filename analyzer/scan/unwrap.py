"""Envelopes: what a log collector wrapped around each line, recognised and taken off.

Stage: scan (unwrapping). Kubernetes, Docker, syslog, journald and log pipelines hand over lines
wrapped in their own envelope (`analyzer/data/envelopes.yaml`, one entry per collector). `scan.unwrap.detect`
looks at the first lines of a stream, once; `Unwrapper.records` then turns one physical line (a
candidate of the scanner, or a line looked back at) into the records it holds, each with its
inner, clean text (no envelope, escapes or colour) and the envelope's own time, stream and
pod/container/node. Plain logs never get here: only `clean` (colour) touches them.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from ..core.headers import Year
from ..core.records import Record
from ..knowledge.envelope_fields import envelope_time, json_object, json_string, key_values, loose_message, path_value
from ..knowledge.envelopes import Envelope, EnvelopeTable
from .blocks import Candidate

# ANSI: CSI sequences (colour, cursor), OSC titles, and lone two-byte escapes.
_ANSI = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[@-Z\\-_])")
_RSYSLOG = re.compile(r"#([0-3][0-7]{2})")
_SOURCE = re.compile(r'"_source"\s*:\s*\{')
_PRETTY_FIELD = re.compile(r'\s*"(?P<key>[^"\\]+)"\s*:\s*(?P<value>"(?:[^"\\]|\\.)*")\s*,?\s*$')


def clean(text: str, escapes: str | None = None) -> str:
    """The text without colour and control escapes: rsyslog `#ooo` escapes decoded first (when the
    envelope uses them), then ANSI sequences and carriage returns removed."""
    if escapes == "rsyslog" and "#" in text:
        text = _RSYSLOG.sub(lambda m: chr(int(m.group(1), 8)), text)
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "")
    return text








def detect(table: EnvelopeTable, head: bytes, year: Year = None) -> Unwrapper | None:
    """The unwrapper of a stream whose first bytes show one of `table`'s envelopes."""
    found = table.match_head(head)
    return Unwrapper(found[0], found[1], year) if found else None


class Unwrapper:
    """One stream's envelope, with what it learnt from the head (a CSV's columns, the year)."""

    def __init__(self, envelope: Envelope, first_line: str, year: Year = None) -> None:
        self.envelope = envelope
        self.year = year
        self.columns: dict[str, int] = {}
        self.header_row = ""
        if envelope.shape == "csv":
            self.header_row = first_line.rstrip("\r")
            names = _csv_row(self.header_row)
            self.columns = {n.strip(): i for i, n in enumerate(names)}
        self.prefilter = envelope.prefilter
        self._times: dict[str, tuple[str | None]] = {}  # raw time -> its ISO form
        self._lookback: dict[str, list[Record]] = {}  # a line looked back at -> its records
        self._timed = True  # False while a line looked back at is unwrapped (`_untimed`)

    @property
    def name(self) -> str:
        return self.envelope.name

    def records(self, line: str, around: Callable[[], tuple[str, str]] | None = None) -> list[Record]:
        """The records one physical line holds (none for a line of pure envelope structure, such
        as a pretty `_search` response's braces). `around` gives the text just before and after
        the line, for shapes whose record spans lines (pretty JSON)."""
        env = self.envelope
        shape = env.shape
        if shape == "terminal":
            return [Record(clean(line))]
        if shape == "line":
            return [self._line(line)]
        if shape == "json":
            obj = json_object(line)
            if obj is None:
                return [Record(clean(loose_message(line, env.fields.get("message", ()))))]
            return [self._from_object(obj, line)]
        if shape == "prefix-json":
            return [self._prefix_json(line)]
        if shape == "search":
            return self._search(line, around)
        return [self._csv(line)]

    # -- shapes ------------------------------------------------------------------------------
    def _line(self, line: str) -> Record:
        env = self.envelope
        assert env.pattern is not None
        m = env.pattern.match(line)
        if m is None:  # a stray line (kubectl's own warning, a banner): the line itself
            return Record(clean(line, env.escapes))
        groups = m.groupdict()
        return Record(clean(line[m.end():], env.escapes), self._time(groups.get("time")), groups.get("stream"),
                      groups.get("pod"), groups.get("container"), groups.get("node"), groups.get("namespace"),
                      groups.get("partial") == "P", env.time == "syslog")

    def _prefix_json(self, line: str) -> Record:
        env = self.envelope
        assert env.pattern is not None
        m = env.pattern.match(line)
        obj = json_object(line, m.end()) if m else None
        if m is None or obj is None:
            return Record(clean(loose_message(line, env.fields.get("message", ()))))
        rec = self._from_object(obj)
        return _replace(rec, time=self._time(m.group("time")) or rec.time)

    def _from_object(self, obj: dict[str, Any], whole: str | None = None) -> Record:
        """A record from a JSON object; with `whole` (one object a line), an object without a
        message field is scanned as its `key=value` pairs (a message key the table lacks)."""
        get = self._getter(obj)
        message = get("message")
        if message is None and whole is not None:
            message = " ".join(key_values(obj))
        if isinstance(message, list) and all(isinstance(b, int) for b in message):
            # journald: a byte array when the message holds control bytes
            message = bytes(b & 0xFF for b in message).decode("utf-8", errors="replace")
        elif isinstance(message, list):
            message = " ".join(map(str, message))
        text = clean(str(message if message is not None else "").removesuffix("\n"), self.envelope.escapes)
        partial = get("partial")
        if self.envelope.partial == "docker":
            partial_flag = isinstance(message, str) and not message.endswith("\n") and len(
                message.encode("utf-8", "replace")) >= 16 << 10  # see reassembly.DOCKER_PART
        else:
            partial_flag = str(partial).lower() in ("true", "p", "1")
        return Record(text, self._time(get("time")), _str(get("stream")), _str(get("pod")), _str(get("container")),
                      _str(get("node")), _str(get("namespace")), partial_flag)

    def _search(self, line: str, around: Callable[[], tuple[str, str]] | None) -> list[Record]:
        """An Elasticsearch `_search` response: every `_source` on a one-line response is its own
        record; in a pretty one, the field line holding the message gets the rest of its record
        from the lines around it."""
        starts = [m.end() - 1 for m in _SOURCE.finditer(line)]
        records = []
        for start in starts:
            obj = json_object(line, start)
            if obj is not None:
                rec = self._from_object(obj)
                if rec.text or self._getter(obj)("message") is not None:
                    records.append(rec)
        if records or starts:
            return records
        m = _PRETTY_FIELD.match(line)
        if m is None or m.group("key") not in self.envelope.fields.get("message", ()):
            return []
        text = clean(json_string(m.group("value")), self.envelope.escapes)
        if around is not None:
            before, after = around()
            found = before.rfind('"_source"')
            brace = before.find("{", found) if found != -1 else -1
            if brace != -1:
                obj = json_object(before + line + "\n" + after, brace)
                if obj is not None:
                    return [_replace(self._from_object(obj), text=text)]
        return [Record(text)]

    def unwrap_lines(self, lines: Sequence[tuple[int, str]]) -> list[tuple[int, Record]]:
        """The records of consecutive physical lines (line number, record), oldest first; a
        record that spans lines (pretty JSON) gets its fields from the lines around it."""
        if self.envelope.shape != "search":
            return [(n, r) for n, t in lines for r in self._records_again(t)]
        joined = "\n".join(t for _, t in lines)
        out: list[tuple[int, Record]] = []
        pos = 0
        for n, t in lines:
            start, pos = pos, pos + len(t) + 1
            if not _PRETTY_FIELD.match(t) and '"_source"' not in t:
                continue  # braces and other fields: no message
            out.extend((n, r) for r in self.records(t, partial(_split_at, joined, start, pos)))
        return out

    def _records_again(self, line: str) -> list[Record]:
        """`records(line)` of a line a finding looks back at: remembered, since the next finding
        looks back at most of the same lines (in a storm of CSV rows, each row was parsed 40 times)."""
        if len(line) > _REMEMBERED_LINE:
            return self._untimed(line)
        found = self._lookback.get(line)
        if found is None:
            if len(self._lookback) >= 256:
                self._lookback.clear()
            found = self._lookback[line] = self._untimed(line)
        return found

    def _untimed(self, line: str) -> list[Record]:
        """`records(line)` without their times: a line looked back at is read for its texts and
        pods only (`unwrapped_lookback`), and a collector's stamp is unique to its line (parsing
        them was ~9% of a wrapped storm's scan)."""
        self._timed = False
        try:
            return self.records(line)
        finally:
            self._timed = True

    @property
    def lookback_lines(self) -> int:
        """Physical lines to look back over for a dozen records (a pretty `_search` hit is ~24)."""
        return 1000 if self.envelope.shape == "search" else 40

    def _csv(self, line: str) -> Record:
        if line.rstrip("\r") == self.header_row:
            return Record("")
        if "\x1e" in line:  # a record whose quoted cell spans lines, rejoined (reassembly.RECORD_NEWLINE)
            line = line.replace("\r\x1e", "\n").replace("\x1e", "\n")
        row = _csv_row(line.rstrip("\r"))
        if not row:
            return Record(clean(line))

        def get(role: str) -> str | None:
            for name in self.envelope.fields.get(role, ()):
                i = self.columns.get(name)
                if i is not None and i < len(row):
                    return row[i]
            return None
        message = get("message")
        if message is None:
            return Record(clean(line))
        return Record(clean(message), self._time(get("time")), get("stream"), get("pod"), get("container"),
                      get("node"), get("namespace"))

    # -- fields --------------------------------------------------------------------------------
    def _getter(self, obj: dict[str, Any]) -> Callable[[str], Any]:
        def get(role: str) -> Any:
            for path in self.envelope.fields.get(role, ()):
                value = path_value(obj, path)
                if value is not None:
                    return value
            return None
        return get

    def _time(self, raw: object) -> str | None:
        if raw is None or raw == "" or not self._timed:
            return None
        # A line is unwrapped again when a later finding looks back at it: parse its time once.
        key = str(raw)
        cached = self._times.get(key)
        if cached is None:
            if len(self._times) >= 4096:
                self._times.clear()
            cached = self._times[key] = (envelope_time(key, self.envelope.time, self.year),)
        return cached[0]


def texts_of(cand: Candidate, unwrapper: Unwrapper | None) -> list[tuple[Record | None, str]]:
    """The lines a candidate holds, clean: itself, or each line of each record of its envelope."""
    if unwrapper is None:
        text = cand.text()
        return [(None, clean(text) if "\x1b" in text else text)]
    return [(r, t) for r in unwrapper.records(cand.text()) for t in r.text.split("\n")]


def unwrapped_lookback(cand: Candidate, unwrapper: Unwrapper, pod: str | None,
                        done: tuple[tuple[str | None, str], ...]) -> list[tuple[int, str]]:
    """The lines before a record, out of their envelopes: the physical lines before its line, then
    the records before it on the same line; another pod's lines are left out."""
    lines: list[tuple[int, str]] = []
    for line_no, record in unwrapper.unwrap_lines(cand.lookback(unwrapper.lookback_lines)):
        if not (pod and record.pod and record.pod != pod):
            lines.extend((line_no, t) for t in record.text.split("\n"))
    lines.extend((cand.line_no, t) for p, t in done[-40:] if not (pod and p and p != pod))
    return lines


_REMEMBERED_LINE = 4096  # longer lines looked back at are unwrapped again rather than kept


def _csv_row(line: str) -> list[str]:
    """One CSV row's cells; none when it does not parse (a cell over the csv module's limit)."""
    try:
        return next(csv.reader([line]), [])
    except csv.Error:
        return []


def _split_at(text: str, start: int, end: int) -> tuple[str, str]:
    return text[:start], text[end:]


def _str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _replace(rec: Record, **changes: Any) -> Record:
    from dataclasses import replace
    return replace(rec, **changes)
