"""Codecs: streaming decompression and UTF-16/UTF-32 re-encoding.

Stage: inputs (decoding). `Decompressed` drives any decompressor object (zlib-, bz2-, lzma- or
zstd-like) described by a `Codec`; which codecs exist, and how each is recognised, is the
business of `formats`' table. Nothing is decompressed to disk or wholly into memory.
"""

from __future__ import annotations

import codecs
import io
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .streams import PIECE, Reader

# A decompressor object: `decompress(data[, max_length])`, `eof`, `unused_data`, and, for some,
# `unconsumed_tail`, `needs_input`, `flush()`. Typed loosely: zstandard and ISA-L ship no stubs.
Decompressor = Any
WIDE_FEED = 1 << 20  # compressed bytes per call when read ahead in a thread (`widen`)
LONE_SURROGATE = re.compile("[\ud800-\udfff]")  # a UTF-16 code unit without its partner, once decoded


def _bad_unit(exc: UnicodeError) -> tuple[str, int]:
    """A code unit of wide text that is no character (a lone surrogate, a UTF-32 value past
    U+10FFFF, a unit cut at the end) reads as one lone surrogate: `WideToUtf8._clean` counts it
    and shows U+FFFD. Stateless, so streams in threads share it."""
    if not isinstance(exc, UnicodeDecodeError):
        raise exc
    return "\udfff", exc.end


codecs.register_error("ddtriage-bad-unit", _bad_unit)


@dataclass(frozen=True)
class Codec:
    """How to decompress one compression format."""

    new: Callable[[], Decompressor]  # a fresh decompressor, for each stream (gzip member, xz stream…)
    feed: int = 1 << 16  # compressed bytes fed per call
    bounded: bool = True  # decompress(data, max_length) caps its output (zstd's cannot)
    concatenated: bool = True  # another stream may follow the first (gzip members); raw deflate: no
    # what the format's own header allows, where a lenient decoder (ISA-L) accepts more
    header_ok: Callable[[bytes], bool] | None = None
    # how another stream starts (its magic bytes): anything else after a whole stream is trailing
    # bytes, ignored with a note (as `gzip -d` does: "trailing garbage ignored"); empty: not told
    starts: tuple[bytes, ...] = ()


class Decompressed(io.RawIOBase):
    """Incremental decompression of one compressed stream (multi-member, multi-frame).

    Unlike `gzip.GzipFile` & co, output decompressed before a break is always returned: a
    truncated file yields every byte `zcat` would, then EOFError. Output per call is bounded,
    so the decompression guard (`streams.SafeStream`) sees a bomb before it fills memory. A codec
    whose output cannot be capped is fed little per call instead (512 bytes of zstd RLE blocks
    can still expand to ~16 MiB: the guard checks after each call).
    """

    def __init__(self, raw: Reader, codec: Codec) -> None:
        self.raw = raw
        self.codec = codec
        self.consumed = 0  # compressed bytes read, for the ratio check
        self.feed = codec.feed
        self._obj: Decompressor = codec.new()
        self._input = b""
        self._flushed = False
        self._capped = False  # the last call returned as much as it was allowed to
        self._pending_error: BaseException | None = None
        self.trailing = False  # bytes that start no stream followed the last whole one (ignored)

    def readable(self) -> bool:
        return True

    def _feed(self) -> bytes:
        data: bytes = self.raw.read(self.feed) or b""
        self.consumed += len(data)
        return data

    def read(self, size: int | None = -1) -> bytes:  # noqa: C901 - one state machine, read in order
        size = PIECE if size is None or size < 0 else size
        while True:
            if self._obj.eof and not self.codec.concatenated:
                return b""
            if self._obj.eof:
                # At the end of a stream zlib leaves what follows in unused_data (and, when the
                # output cap was hit too, the same bytes in unconsumed_tail): take it once.
                rest: bytes = self._obj.unused_data
                self._input = b""
                if not rest:
                    rest = self._feed()
                if not rest or not rest.strip(b"\x00"):
                    return b""  # clean end (gzip may be followed by zero padding)
                if self.codec.starts and not self._starts_stream(rest):
                    self.trailing = True
                    return b""
                self._obj = self.codec.new()  # the next gzip member or bzip2/xz/zstd stream
                self._input = rest
                continue
            data, self._input = self._input, b""
            if not data and self._capped and self.codec.bounded:
                # The last call hit the output cap: inflate may still hold output (ISA-L keeps
                # it inside, not in unconsumed_tail). Drain it before asking for more input.
                out: bytes = self._obj.decompress(b"", size)
                self._capped = len(out) >= size
                if out:
                    return out
            if not data and getattr(self._obj, "needs_input", True):
                if self._pending_error is not None:
                    error, self._pending_error = self._pending_error, None
                    raise error
                try:
                    data = self._feed()
                except Exception as exc:  # noqa: BLE001 - the layer below broke: flush, then fail
                    self._pending_error = exc
                    data = b""
                if not data:
                    # Cut off: hand out what inflate still holds, then say so.
                    tail = b"" if self._flushed or not hasattr(self._obj, "flush") else self._obj.flush()
                    self._flushed = True
                    if tail:
                        return bytes(tail)
                    if self._pending_error is not None:
                        error, self._pending_error = self._pending_error, None
                        raise error
                    raise EOFError("compressed file ended before the end-of-stream marker was reached")
            if not self.codec.bounded:
                out = self._obj.decompress(data)
            else:
                out = self._obj.decompress(data, size)
                self._input = getattr(self._obj, "unconsumed_tail", b"")
                self._capped = len(out) >= size
            if out:
                return out

    def _starts_stream(self, rest: bytes) -> bool:
        """Whether `rest` (bytes after a whole stream) starts another one; read on while too short to tell."""
        longest = max(map(len, self.codec.starts))
        while len(rest) < longest:
            more = self._feed()
            if not more:
                break
            rest += more
        self._input = rest
        return rest.startswith(self.codec.starts)

    def widen(self) -> None:
        """Feed more per call (1 MiB), for a reader in another thread: each call then inflates
        megabytes without the GIL. Only where the output per call is capped (not zstd's)."""
        if self.codec.bounded:
            self.feed = max(self.feed, WIDE_FEED)

    def leftover(self) -> bytes:
        """Bytes read past the end of a single deflate stream."""
        return bytes(self._obj.unused_data) if self._obj.eof else b""

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


class WideToUtf8(io.RawIOBase):
    """A UTF-16 or UTF-32 log (Windows tools, some exporters) re-encoded as UTF-8 on the fly, line
    by line. A log that goes on in UTF-8 after a wide part (a tool appended to it) keeps both: at the
    first line that reads as UTF-8 and holds no NUL (`still_wide`: wide text of any script has
    them, or is no UTF-8), the rest is passed through as bytes. A bad code unit (a lone surrogate:
    a string cut mid-pair; a UTF-32 value past U+10FFFF; a unit cut at the end) costs that unit
    alone: it reads as U+FFFD, and `bad(count)` is called once at the end when there was any."""

    LOOK = 256  # bytes of a line looked at to tell (a multiple of every unit's size)

    def __init__(self, raw: Reader, encoding: str, bad: Callable[[int], None] | None = None) -> None:
        self.raw = raw
        self.little = encoding.endswith("le")
        self.unit = 4 if "32" in encoding else 2  # bytes per code unit
        newline = b"\n" + b"\x00" * (self.unit - 1)
        self._newline = newline if self.little else newline[::-1]
        # a unit that is no character decodes as a lone surrogate, to be counted and replaced (`_clean`)
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="ddtriage-bad-unit")
        self._bad = bad
        self.bad_units = 0
        self._buf = b""
        self._eof = False
        self._plain = False  # past the wide part: bytes as they are
        self._first = True
        self._done = False

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        want = size if size and size > 0 else PIECE
        while True:
            if self._plain:
                if self._buf:
                    out, self._buf = self._buf, b""
                    return out
                data: bytes = self.raw.read(want) or b""
                if not data:
                    self._finish()
                return data
            text = self._convert()
            if self._first and text:
                text, self._first = text.lstrip("\ufeff"), False
            if text:
                return text.encode("utf-8")
            if self._plain:
                continue
            if self._eof:  # a part of a code unit at the very end is a bad unit
                text = self._clean(self._decoder.decode(b"", final=True))
                self._decoder.reset()
                self._finish()
                return text.encode("utf-8")
            data = self.raw.read(max(want, PIECE)) or b""
            self._eof = not data
            self._buf += data

    def _clean(self, text: str) -> str:
        """Lone surrogates (decoded as themselves) counted and shown as U+FFFD."""
        if LONE_SURROGATE.search(text) is None:
            return text
        text, n = LONE_SURROGATE.subn("\ufffd", text)
        self.bad_units += n
        return text

    def _finish(self) -> None:
        if not self._done:
            self._done = True
            if self.bad_units and self._bad is not None:
                self._bad(self.bad_units)

    def _convert(self) -> str:
        """Decode the whole wide lines at the front of the buffer; stop at a line that is not."""
        out: list[str] = []
        start = 0
        buf = self._buf
        while start < len(buf):
            end = self._line_end(buf, start)
            if end == -1 and not self._eof and len(buf) - start < 4 * PIECE:
                break  # wait for the rest of the line
            end = len(buf) if end == -1 else end
            look = buf[start:min(end, start + self.LOOK)]
            if not still_wide(look):
                self._plain = True
                break
            if end == len(buf) and not self._eof:
                end -= (end - start) % self.unit  # keep a part of a unit for the next read
                if end == start:
                    break
            out.append(self._decoder.decode(buf[start:end]))
            start = end
        self._buf = buf[start:]
        return self._clean("".join(out))

    def _line_end(self, buf: bytes, start: int) -> int:
        """Offset just past the next wide newline (a whole number of units from `start`), or -1."""
        pos = buf.find(self._newline, start)
        while pos != -1 and (pos - start) % self.unit:
            pos = buf.find(self._newline, pos + 1)
        return -1 if pos == -1 else pos + self.unit


def still_wide(line: bytes) -> bool:
    """Whether a line met in a wide part (its first bytes) is still wide text: it holds a NUL (any
    UTF-32, and UTF-16 with a Latin letter, digit, blank or newline), or it is no UTF-8. A UTF-8 or
    ASCII line holds no NUL; wide text of other scripts (a Chinese line) is no UTF-8."""
    if b"\x00" in line:
        return True
    try:
        codecs.getincrementaldecoder("utf-8")().decode(line)  # a character cut at the end may follow
    except UnicodeDecodeError:
        return True
    return False


def looks_utf16(data: bytes, little: bool) -> bool:
    """Whether `data` (what follows a BOM, or a later line) reads as UTF-16 text: it decodes, and at
    least a quarter of its high bytes are zero, as in any text with ASCII in it (timestamps, blanks,
    newlines). A plain log that merely starts with `FF FE` has no zero bytes at all. A lone surrogate
    (one, or at most one code unit in 16) is a damaged unit, not binary data: a short line cut
    mid-pair is still a line of text."""
    data = data[: len(data) // 2 * 2]
    if len(data) < 4:
        return False
    high = data[1::2] if little else data[0::2]
    if high.count(0) * 4 < len(high):
        return False
    try:  # a lone surrogate (a string cut mid-pair) decodes as itself here: a few do not make it binary
        text = data.decode("utf-16-le" if little else "utf-16-be", "surrogatepass")
    except UnicodeDecodeError:
        return False
    return len(LONE_SURROGATE.findall(text)) <= max(1, len(text) // 16)


def looks_utf32(data: bytes, little: bool) -> bool:
    """Whether `data` (what follows a BOM, or a file's first bytes) reads as UTF-32 text: at most
    one unit in 16 is no character (past U+10FFFF, or a surrogate), and not every one is U+0000.
    Any script passes; a plain log never does (its every fourth byte is no NUL)."""
    data = data[: len(data) // 4 * 4]
    if len(data) < 8:
        return False
    text = data.decode("utf-32-le" if little else "utf-32-be", "ddtriage-bad-unit")
    if not text.strip("\x00"):
        return False
    return len(LONE_SURROGATE.findall(text)) <= max(1, len(text) // 16)


def reads_as_text(text: str) -> bool:
    """Whether decoded text looks like text, not numbers of a binary file read as characters:
    nine characters in ten printable or blanks."""
    shown = sum(ch.isprintable() or ch in "\t\r\n" for ch in text)
    return shown * 10 >= len(text) * 9
