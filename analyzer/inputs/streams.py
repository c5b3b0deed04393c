"""Streams: budgeted, break-tolerant byte streams and the errors reading can raise.

Stage: inputs (reading). Every layer of an input (the file, each decompressed layer, each archive
member) is read through a `SafeStream`: it lets the format be sniffed from the first bytes, keeps
what was read before a break, and counts what it delivers against the input's decompression
budget (`Limits`). Nothing here knows a format: that is `formats`' table.
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

PIECE = 1 << 16  # read decompressors in small pieces so a break loses nothing before it


class LimitExceeded(Exception):
    """Decompression went past a configured limit (bomb guard)."""


class StreamError(Exception):
    """A stream broke (any decompressor's or archive reader's own error, by its message).
    One plain, picklable type, so a worker process can report it like any other."""


# What reading a damaged stream can raise, at any layer. All of them mean "this stream ends here".
# A SafeStream turns any other error of the layer below (lzma's, zstd's, tar's, zip's, ISA-L's)
# into a StreamError with the same message, so a new format needs no entry here. zlib's error
# is kept as it is: the zip walker reads raw deflate directly, outside a SafeStream.
READ_ERRORS: tuple[type[BaseException], ...] = (
    OSError, EOFError, ValueError, NotImplementedError, LimitExceeded, StreamError, zlib.error,
)


class Reader(Protocol):
    """Anything a SafeStream can read from: a file, a decompressor, an archive member."""

    def read(self, size: int = ..., /) -> bytes: ...


@dataclass(frozen=True)
class Limits:
    """Decompression-bomb guard, per top-level input."""

    max_bytes: int = 50 << 30  # decompressed bytes from one input, all layers and members
    max_ratio: float = 2000.0  # decompressed / compressed, checked once past `ratio_floor`
    ratio_floor: int = 16 << 20


@dataclass
class Budget:
    """What one top-level input has expanded to so far."""

    limits: Limits
    expanded: int = 0  # bytes delivered by every layer and member below the file itself
    broken: bool = False  # a read error was already reported for this input
    source: Callable[[], int] | None = None  # bytes read from the file itself so far
    source_size: int = 0  # or what it is known to hold (a zip read in place)

    def compressed(self) -> int:
        """The input's own bytes behind what it has expanded to: the ratio guard's denominator."""
        return max(self.source_size, self.source() if self.source is not None else 0, 1)


@dataclass
class Leaf:
    """One plain-text log stream to scan."""

    name: str
    stream: SafeStream
    mtime: float | None = None  # the file's, or the archive member's own, modification time


class SafeStream(io.RawIOBase):
    """A read-only stream that (1) lets the first bytes be peeked for format detection,
    (2) reads its inner stream in small pieces and, when the inner stream breaks (truncated
    gzip, bad CRC), returns what it already has and raises only on the next read, and
    (3) counts the bytes it delivers against the input's decompression budget."""

    def __init__(self, inner: Reader, budget: Budget | None = None,
                 compressed: Callable[[], int] | None = None, piece: int = PIECE) -> None:
        self.inner = inner
        self.piece = piece
        self.budget = budget
        self.compressed = compressed  # bytes consumed from the compressed layer below, if any
        self.delivered = 0
        self._head = b""
        self._error: BaseException | None = None
        self._eof = False

    def readable(self) -> bool:
        return True

    def peek(self, size: int) -> bytes:
        while len(self._head) < size and not self._eof and self._error is None:
            try:
                piece = self.inner.read(size - len(self._head))
            except Exception as exc:  # noqa: BLE001 - surfaced on the next read
                self._error = exc
                break
            if not piece:
                self._eof = True
                break
            self._head += piece
            try:
                self._account(len(piece))
            except LimitExceeded as exc:  # keep what came before the limit; fail on the next read
                self._error = exc
                break
        return self._head[:size]

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = 1 << 62
        parts: list[bytes] = []
        have = 0
        if self._head:
            parts.append(self._head[:size])
            have = len(parts[0])
            self._head = self._head[have:]
        while have < size and not self._eof:
            if self._error is not None:
                if have:
                    break  # deliver what we have; raise on the next call
                error, self._error = self._error, None
                self._eof = True
                if self.budget is not None:
                    self.budget.broken = True
                if isinstance(error, READ_ERRORS):
                    raise error
                raise StreamError(why(error)) from None  # e.g. lzma's, zstd's, tar's, ISA-L's
            try:
                piece = self.inner.read(min(self.piece, size - have))
            except Exception as exc:  # noqa: BLE001
                self._error = exc
                continue
            if not piece:
                self._eof = True
                break
            parts.append(piece)
            have += len(piece)
            try:
                self._account(len(piece))
            except LimitExceeded as exc:  # deliver what came before the limit; fail on the next read
                self._error = exc
                break
        return b"".join(parts)

    def readinto(self, buffer: bytearray | memoryview) -> int:  # type: ignore[override]
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)

    def _account(self, n: int) -> None:
        self.delivered += n
        if self.budget is None:
            return
        self.budget.expanded += n
        limits = self.budget.limits
        if self.budget.expanded > limits.max_bytes:
            raise LimitExceeded(f"decompressed size passed the limit of {limits.max_bytes} bytes")
        if self.compressed is not None and self.delivered > limits.ratio_floor:
            ratio = self.delivered / max(1, self.compressed())
            if ratio > limits.max_ratio:
                raise LimitExceeded(f"compression ratio passed {limits.max_ratio:g}:1 (decompression bomb?)")
        # Over all layers and members together: a gzip of a gzip, or a zip whose members overlap,
        # stays under the ratio layer by layer or member by member, not in total.
        known = self.budget.source is not None or self.budget.source_size > 0
        if known and self.budget.expanded > limits.ratio_floor:
            ratio = self.budget.expanded / self.budget.compressed()
            if ratio > limits.max_ratio:
                raise LimitExceeded(f"compression ratio over all layers passed {limits.max_ratio:g}:1 "
                                    "(decompression bomb?)")


def why(exc: BaseException) -> str:
    """An error as a reason for a report line."""
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return text.rstrip(".")


def reason(exc: BaseException) -> str:
    """A read error as the short reason a skipped input is listed with."""
    return (getattr(exc, "strerror", None) or str(exc) or type(exc).__name__).rstrip(".")
