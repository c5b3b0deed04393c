"""Scan-ahead: an iterator's next items made in a background thread while the caller uses this one.

Stage: scan. The compiled core scans a block without the GIL, so a thread can read and scan the
next block while the main thread turns this one's candidates into findings: a lone stream (a
`.gz`, stdin, a file too small to split) then costs about the larger of the two, not their sum.
At most `DEPTH` items wait, so memory stays bounded (a block each).

Order and errors are kept: the items come in the iterator's order, and whatever it raises is
raised by the `next` that reaches it, after the items before it, as if there were no thread.
"""

from __future__ import annotations

import queue
import sys
import threading
import weakref
from collections.abc import Iterator
from contextlib import suppress
from typing import Generic, TypeVar

from ..inputs.readahead import POLL, put_or_stop

T = TypeVar("T")

DEPTH = 1  # items made ahead and waiting, at most (one block: the caller works on another)
# While a thread scans ahead, the GIL changes hands at most this often (seconds). Python's 5 ms
# default would keep the scanning thread waiting that long each time it comes back from the core
# (two or three times a block) while the main thread runs Python.
SWITCH_INTERVAL = 0.0005

_END = object()  # the iterator ended, in the queue
# Re-entrant: a collected Ahead's finalizer may run (from the collector) in a thread that holds it.
_switch_lock = threading.RLock()
_running = 0  # Ahead threads alive: the switch interval is restored when the last one ends
_saved_interval = 0.005


class _Raised:
    """What the iterator raised, in the queue."""

    __slots__ = ("exc",)

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc


class Ahead(Generic[T]):
    """`items`, the same and in the same order, each made in a thread while the one before it is
    used. `close()` (or the end) stops the thread; it holds no reference to this object, so one
    let go of without `close()` (a consumer that stopped early) is stopped when it is collected:
    its thread ends, and the switch interval is restored when it was the last."""

    def __init__(self, items: Iterator[T], depth: int = DEPTH) -> None:
        self._queue: queue.Queue[object] = queue.Queue(maxsize=depth)
        self._stop = threading.Event()
        self._done = False
        _enter()
        # Runs once: from close(), or when this object is collected.
        self._release = weakref.finalize(self, _release, self._stop)
        self._thread = threading.Thread(target=_fill, args=(items, self._queue, self._stop),
                                        name="ddtriage-scan-ahead", daemon=True)
        self._thread.start()

    def __iter__(self) -> Ahead[T]:
        return self

    def __next__(self) -> T:
        if self._done:
            raise StopIteration
        item = self._queue.get()
        if item is _END:
            self.close()
            raise StopIteration
        if isinstance(item, _Raised):
            self.close()
            raise item.exc
        return item  # type: ignore[return-value]

    def close(self) -> None:
        """Stop the thread (it ends after the item it is making) and drop what it made ahead."""
        if self._done:
            return
        self._done = True
        self._stop.set()
        while self._thread.is_alive():
            with suppress(queue.Empty):
                self._queue.get(timeout=POLL)  # unblock a put
        self._release()


def _fill(items: Iterator[T], out: queue.Queue[object], stop: threading.Event) -> None:
    """The thread: each item, then the end or what was raised."""
    last: object = _END
    try:
        for item in items:
            if not put_or_stop(out, item, stop):
                return
    except BaseException as exc:  # noqa: BLE001 - handed to the reader, raised there in order
        last = _Raised(exc)
    finally:
        close = getattr(items, "close", None)
        if stop.is_set() and close is not None:
            close()  # a generator's own cleanup runs here, in the thread that ran it
    put_or_stop(out, last, stop)


def _release(stop: threading.Event) -> None:
    """An Ahead let go of: its thread stops (at its next item or check), and it no longer counts."""
    stop.set()
    _leave()


def _enter() -> None:
    global _running, _saved_interval
    with _switch_lock:
        if _running == 0:
            _saved_interval = sys.getswitchinterval()
            sys.setswitchinterval(min(_saved_interval, SWITCH_INTERVAL))
        _running += 1


def _leave() -> None:
    global _running
    with _switch_lock:
        _running -= 1
        if _running == 0:
            sys.setswitchinterval(_saved_interval)
