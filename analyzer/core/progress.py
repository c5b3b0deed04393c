"""A progress bar on stderr for scans that take more than a moment.

Shown only when stderr is a terminal (and not --quiet), only after `DELAY` seconds, and redrawn
at most every `INTERVAL` seconds: bytes done of bytes known, files done.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    pass

DELAY = 0.7
INTERVAL = 0.2


class Progress:
    """Null progress: the library default."""

    def start(self, total_bytes: int, total_files: int) -> None: ...

    def advance(self, n_bytes: int) -> None: ...

    def file_done(self) -> None: ...

    def finish(self) -> None: ...


class ProgressBar(Progress):
    """Bytes and files done, redrawn in place on a terminal. `clock` gives seconds (monotonic);
    tests pass their own."""

    def __init__(self, stream: TextIO | None = None, width: int = 30,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream or sys.stderr
        self.width = width
        self.clock = clock
        self.total_bytes = self.total_files = 0
        self.done_bytes = self.done_files = 0
        self.began = clock()
        self.drawn = 0.0
        self.visible = False

    def start(self, total_bytes: int, total_files: int) -> None:
        self.total_bytes, self.total_files = total_bytes, total_files
        self.began = self.clock()

    def advance(self, n_bytes: int) -> None:
        self.done_bytes += n_bytes
        self._draw()

    def file_done(self) -> None:
        self.done_files += 1
        self._draw()

    def _draw(self, force: bool = False) -> None:
        now = self.clock()
        if not force and (now - self.began < DELAY or now - self.drawn < INTERVAL):
            return
        self.drawn = now
        frac = min(1.0, self.done_bytes / self.total_bytes) if self.total_bytes else 0.0
        bar = "#" * int(frac * self.width)
        text = (f"\r[{bar:<{self.width}}] {human_bytes(self.done_bytes)} of {human_bytes(self.total_bytes)}"
                f", {self.done_files}/{self.total_files} files")
        self.stream.write(text[:79].ljust(79))
        self.stream.flush()
        self.visible = True

    def finish(self) -> None:
        if self.visible:
            self.stream.write("\r" + " " * 79 + "\r")
            self.stream.flush()


def human_bytes(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
