"""Reassembly: a line the container runtime cut in parts is joined again before it is scanned.

Stage: scan (before the prefilter). Docker and containerd cut a line longer than 16 KiB into
parts: CRI marks each part but the last with the tag `P`, Docker json-file leaves the final `\\n`
out of a part's `log`, the journald driver sets `CONTAINER_PARTIAL_MESSAGE=true`. A code cut in
two is found in neither part, so `Rejoined` rewrites the stream: the first physical line of a
logical line gets the whole message (its envelope, time and all), the later parts keep their
envelope with an empty message. Line numbers stay physical, so a finding is reported at the line
where its logical line starts. Blocks without a partial marker pass through untouched.
`peek` reads a stream's first bytes (where its envelope is told) without losing them.
"""

from __future__ import annotations

import io
import json
import re
from typing import Any, BinaryIO, cast

from ..inputs import READ_ERRORS
from ..inputs.streams import Reader

REJOIN_PEEK_BLOCK = 1 << 20
MAX_GROUP = 8 << 20  # a logical line longer than this is left in its parts
DOCKER_PART = 16 << 10  # what Docker puts in one entry of a longer line (its log buffer)

RECORD_NEWLINE = b"\x1e"  # a newline inside a CSV record joined onto one line (never in a log's text)

_CRI = re.compile(rb"^(\S+ (?:stdout|stderr) )([PF])(?: |$)")
# A whole entry's `log` ends in an escaped newline: `\n"` then `,` or `}`, with any JSON spacing and
# any key order (json-file writes `{"log":…,"stream":…}`; a re-serialiser may space or reorder it).
_DOCKER_DONE = re.compile(rb'\\n"\s*[,}]')


class Rejoined(io.RawIOBase):
    """The bytes of `inner` with partial lines of the given kind (cri, docker, journald) joined."""

    def __init__(self, inner: BinaryIO, kind: str) -> None:
        self.inner, self.kind = inner, kind
        self.carry = b""  # bytes not yet handed out: a partial group whose end is still to come
        self.out = b""
        self.eof = False
        self.consumed = self.produced = 0  # bytes read from `inner`, bytes handed out
        self.record: list[bytes] = []  # csv: the physical lines of a record whose quote is still open
        self.record_size = self.record_quotes = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self.out and not self.eof:
            self._fill()
        n = min(len(buffer), len(self.out))
        buffer[:n] = self.out[:n]
        self.out = self.out[n:]
        self.produced += n
        return n

    def _fill(self) -> None:
        chunk = self.inner.read(REJOIN_PEEK_BLOCK)
        self.consumed += len(chunk)
        if self.kind == "csv":
            self._fill_csv(chunk)
            return
        if not chunk:
            self.eof = True
            self.out, self.carry = self._join(self.carry, final=True), b""
            return
        data = self.carry + chunk
        cut = data.rfind(b"\n") + 1
        if cut == 0:
            self.carry = data
            if len(data) > MAX_GROUP:
                self.out, self.carry = data, b""
            return
        ready, self.carry = data[:cut], data[cut:]
        if not self._has_partial(ready):
            self.out = ready
            return
        # Keep an unfinished group (partials up to the block end) for the next block.
        lines = ready.split(b"\n")[:-1]
        keep = len(lines)
        while keep > 0 and self._is_partial(lines[keep - 1]):
            keep -= 1
        if keep < len(lines) and len(ready) < MAX_GROUP:
            tail = b"\n".join(lines[keep:]) + b"\n"
            self.carry = tail + self.carry
            lines = lines[:keep]
        self.out = b"".join(line + b"\n" for line in self._join_lines(lines))

    def _fill_csv(self, chunk: bytes) -> None:
        """CSV: lines handed out as they are, except a record whose quotes are still open at the
        end of a line, which is kept until its quotes close (each `"` opens or closes a quote;
        `""` does both) and handed out as one line plus empty lines."""
        if not chunk:
            self.eof = True
            data, self.carry = self.carry, b""
        else:
            data = self.carry + chunk
            cut = data.rfind(b"\n") + 1
            data, self.carry = data[:cut], data[cut:]
        lines = data.split(b"\n")
        last = lines.pop()  # b"" unless at the end of a stream without a final newline
        out: list[bytes] = []
        for line in lines:
            self._csv_line(line, out)
        if last:
            self._csv_line(last, out)
        if self.eof and self.record:  # a quote never closed: the lines as they were
            out.extend(line + b"\n" for line in self.record)
            self.record = []
        if last and out and not self.record and not out[-1].endswith(b"\n\n"):
            out[-1] = out[-1][:-1]  # the stream's last line had no newline: nor has it here
        self.out = b"".join(out)

    def _csv_line(self, line: bytes, out: list[bytes]) -> None:
        quotes = line.count(b'"')
        if not self.record:
            if quotes % 2 == 0:
                out.append(line + b"\n")
                return
            self.record, self.record_size, self.record_quotes = [line], len(line), quotes
            return
        self.record.append(line)
        self.record_size += len(line)
        self.record_quotes += quotes  # kept as it goes: a stray quote holds up to MAX_GROUP of lines
        if self.record_quotes % 2 == 0:
            out.append(RECORD_NEWLINE.join(self.record) + b"\n" + b"\n" * (len(self.record) - 1))
            self.record = []
        elif self.record_size > MAX_GROUP:  # no record is this long: a stray quote, lines as they are
            out.extend(part + b"\n" for part in self.record)
            self.record = []

    def _join(self, data: bytes, final: bool) -> bytes:
        if not data:
            return b""
        lines = data.split(b"\n")
        last = lines.pop()  # b"" when data ends with a newline
        joined = b"".join(line + b"\n" for line in self._join_lines(lines))
        if last:
            joined += self._join_lines([last])[0] if final else last
        return joined

    # -- which lines are parts -------------------------------------------------------------
    def _has_partial(self, block: bytes) -> bool:
        if self.kind == "cri":
            return any(m in block for m in (b" stdout P ", b" stderr P ", b" stdout P\n", b" stderr P\n"))
        if self.kind == "journald":
            return b"CONTAINER_PARTIAL_MESSAGE" in block
        return len(_DOCKER_DONE.findall(block)) < block.count(b"\n")

    def _is_partial(self, line: bytes) -> bool:
        if self.kind == "cri":
            m = _CRI.match(line)
            return m is not None and m.group(2) == b"P"
        if self.kind == "journald":
            return b"CONTAINER_PARTIAL_MESSAGE" in line and _journald_partial(_loads(line))
        if len(line) < DOCKER_PART or not line.lstrip().startswith(b"{") or _DOCKER_DONE.search(line):
            return False
        obj = _loads(line)  # a part holds 16 KiB of the line: a short `log` without `\n` is whole
        log = obj.get("log") if obj else None
        return isinstance(log, str) and not log.endswith("\n") and len(log.encode("utf-8", "replace")) >= DOCKER_PART

    # -- joining ---------------------------------------------------------------------------
    def _join_lines(self, lines: list[bytes]) -> list[bytes]:
        out: list[bytes] = []
        group: list[bytes] = []
        for line in lines:
            group.append(line)
            if not self._is_partial(line):
                out.extend(self._merge(group) if len(group) > 1 else group)
                group = []
        out.extend(group)  # parts whose last part never came: as they are
        return out

    def _merge(self, parts: list[bytes]) -> list[bytes]:
        """One logical line from its parts, then a stub per later part (same line count)."""
        if self.kind == "cri":
            heads = [_CRI.match(p) for p in parts]
            if not all(heads):
                return parts
            bodies = [p[m.end():] for p, m in zip(parts, heads, strict=True) if m]
            first = heads[0]
            assert first is not None
            return [first.group(1) + b"F " + b"".join(bodies)] + [m.group(1) + b"F " for m in heads[1:] if m]
        objs = [_loads(p) for p in parts]
        if any(o is None for o in objs):
            return parts
        key = "log" if self.kind == "docker" else "MESSAGE"
        texts = [_message(o.get(key)) for o in objs if o is not None]
        whole = dict(objs[0] or {})
        whole[key] = "".join(texts)
        whole.pop("CONTAINER_PARTIAL_MESSAGE", None)
        stubs = []
        for o in objs[1:]:
            stub = dict(o or {})
            stub[key] = "\n" if self.kind == "docker" else ""
            stub.pop("CONTAINER_PARTIAL_MESSAGE", None)
            stubs.append(json.dumps(stub).encode())
        return [json.dumps(whole).encode()] + stubs


def peek(stream: Reader, size: int) -> tuple[bytes, BinaryIO]:
    """The first `size` bytes of a stream (fewer at its end), and the stream read from its start."""
    parts, have = [], 0
    failure: BaseException | None = None
    while have < size:
        try:
            piece = stream.read(size - have)
        except READ_ERRORS as exc:  # raised again once the bytes before the break are scanned
            failure = exc
            break
        if not piece:
            break
        parts.append(piece)
        have += len(piece)
    head = b"".join(parts)
    return head, cast(BinaryIO, _Chained(head, stream, failure))


class _Chained(io.RawIOBase):
    """Bytes already read, then the rest of the stream (or the error that broke it)."""

    def __init__(self, head: bytes, rest: Reader, failure: BaseException | None = None) -> None:
        self.head, self.rest, self.failure = head, rest, failure

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self.head:
            if size is None or size < 0 or size >= len(self.head):
                data, self.head = self.head, b""
                return data
            data, self.head = self.head[:size], self.head[size:]
            return data
        if self.failure is not None:
            raise self.failure
        return self.rest.read(-1 if size is None else size)


class OpenRecord:
    """A CSV stream read line by line (from a record's start): where a record whose quote is still
    open began, as `Rejoined._csv_line` tells it (each `"` opens or closes a quote)."""

    def __init__(self) -> None:
        self.pos, self.opened, self.size, self.quotes = 0, -1, 0, 0

    def line(self, line: bytes) -> None:
        """The next line (without its newline)."""
        n = line.count(b'"')
        if self.opened < 0:
            if n % 2:
                self.opened, self.size, self.quotes = self.pos, len(line), n
        else:
            self.size, self.quotes = self.size + len(line), self.quotes + n
            if self.quotes % 2 == 0 or self.size > MAX_GROUP:  # closed, or no record is this long
                self.opened = -1
        self.pos += len(line) + 1

    @property
    def waiting(self) -> int:
        """The bytes from the open record's start to the last line read (0: none is open)."""
        return 0 if self.opened < 0 else self.pos - self.opened


def waiting_parts(data: bytes, kind: str) -> int:
    """How many bytes at the end of `data` (whole lines, from a record's start) belong to a logical
    line that is not whole yet: parts whose last part is still to be written (cri, docker,
    journald), or a CSV record whose quote is still open. `Rejoined` would hold them back until
    the rest came; `watch` reads a growing file up to them only, so a line the runtime cut in
    parts is scanned whole, as a scan of the finished file reads it. 0 past `MAX_GROUP` bytes,
    where `Rejoined` too gives up and takes the parts as they are."""
    if kind == "csv":
        record = OpenRecord()
        for line in data.split(b"\n")[:-1]:
            record.line(line)
        return record.waiting
    is_partial = Rejoined(cast(BinaryIO, io.BytesIO()), kind)._is_partial
    waiting = 0
    for line in reversed(data.split(b"\n")[:-1]):
        if not is_partial(line):
            break
        waiting += len(line) + 1
        if waiting > MAX_GROUP:
            return 0
    return waiting


def _loads(line: bytes) -> dict[str, Any] | None:
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    return obj if isinstance(obj, dict) else None


def _journald_partial(obj: dict[str, Any] | None) -> bool:
    return obj is not None and str(obj.get("CONTAINER_PARTIAL_MESSAGE", "")).lower() == "true"


def _message(value: Any) -> str:
    if isinstance(value, list):  # journald byte array
        return bytes(b & 0xFF for b in value if isinstance(b, int)).decode("utf-8", errors="replace")
    return "" if value is None else str(value)
