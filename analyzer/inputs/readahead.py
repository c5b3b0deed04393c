"""Read-ahead: a decompressed layer inflated in a background thread, a few blocks ahead.

Stage: inputs (reading). ISA-L's and zlib's inflate (and bz2's, lzma's) release the GIL, so a
thread can decompress the next blocks while the scanner works on this one: a big `.gz` then
costs about the larger of decompressing and scanning, not their sum. At most `AHEAD` blocks of
`READ_AHEAD_BLOCK` bytes wait in the queue, so memory stays bounded whatever the file's size. A short
stream never starts a thread: its first `START` bytes are read in the caller's thread.

Errors keep their place: whatever the layer below raises (a truncated gzip, a bad CRC, the
decompression guard) is handed over after the bytes that came before it, and raised by the read
that reaches it, as if there were no thread.

A `.gz` is one deflate stream: without an index of its blocks it cannot be cut into ranges for
several workers (each block's window depends on the bytes before it), so this overlaps the two
stages of one stream instead.
"""

from __future__ import annotations

import io
import queue
import threading
import weakref
from collections.abc import Callable
from contextlib import suppress

from .streams import Reader

READ_AHEAD_BLOCK = 4 << 20  # bytes asked of the decompressor per read in the thread (a block handed over)
AHEAD = 3  # blocks decompressed ahead of the reader, at most
START = 8 << 20  # bytes read in the caller's thread before a thread is worth starting
POLL = 0.1  # seconds between checks, by a blocked thread, that its reader still wants it

_EOF = object()  # the end of the stream, in the queue


class ReadAhead(io.RawIOBase):
    """`inner`'s bytes, the same and in the same order, decompressed ahead in a thread once past
    `start` bytes. `widen` (if given) is called once before the thread starts: the decompressor
    may then feed itself more per call (fewer, longer calls without the GIL)."""

    def __init__(self, inner: Reader, widen: Callable[[], None] | None = None, *, block: int | None = None,
                 ahead: int | None = None, start: int | None = None) -> None:
        self.inner = inner
        self.widen = widen
        self.block = block or READ_AHEAD_BLOCK
        self.ahead = ahead or AHEAD
        self.start = START if start is None else start
        self.direct = 0  # bytes read in the caller's thread
        self._queue: queue.Queue[object] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._buf = b""
        self._pos = 0
        self._done = False
        # However the reader lets go of this stream (end, error, an abandoned archive member), a
        # blocked thread learns it and ends; it holds no reference to this object.
        weakref.finalize(self, self._stop.set)

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            size = self.block
        if self._pos < len(self._buf):
            out = self._buf[self._pos:self._pos + size]
            self._pos += len(out)
            return out
        if self._done:
            return b""
        if self._thread is None:
            if self.direct < self.start:
                data: bytes = self.inner.read(size) or b""
                self.direct += len(data)
                self._done = not data
                return data
            self._start()
        assert self._queue is not None
        item = self._queue.get()
        if item is _EOF:
            self._done = True
            return b""
        if isinstance(item, BaseException):
            self._done = True
            self._stop.set()
            raise item
        assert isinstance(item, bytes)
        self._buf, self._pos = item, min(size, len(item))
        return item[:size]

    def _start(self) -> None:
        if self.widen is not None:
            self.widen()
        self._queue = queue.Queue(maxsize=self.ahead)
        self._thread = threading.Thread(target=_fill, args=(self.inner, self._queue, self._stop, self.block),
                                        name="ddtriage-readahead", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the thread (it ends at its next block or check) and drop what it read ahead."""
        self._stop.set()
        if self._thread is not None and self._queue is not None:
            while self._thread.is_alive():
                with suppress(queue.Empty):
                    self._queue.get(timeout=POLL)  # unblock a put
            self._thread = None
        self._buf, self._done = b"", True
        super().close()


def _fill(inner: Reader, out: queue.Queue[object], stop: threading.Event, block: int) -> None:
    """The thread: what each read of `inner` gives (up to `block` bytes, as it comes: no copy),
    then the end or the error."""
    item: object = _EOF
    while not stop.is_set():
        try:
            piece = inner.read(block)
        except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there in order
            item = exc
            break
        if not piece:
            break
        if not put_or_stop(out, piece, stop):
            return
    put_or_stop(out, item, stop)


def put_or_stop(out: queue.Queue[object], item: object, stop: threading.Event) -> bool:
    """Wait for room in the queue; False when the reader let go meanwhile (`stop`). Also what
    `scan.ahead` hands its items over with."""
    while not stop.is_set():
        try:
            out.put(item, timeout=POLL)
            return True
        except queue.Full:
            continue
    return False
