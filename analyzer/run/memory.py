"""Giving freed memory back to the system between the big steps of a run's end.

Layer: run. glibc's malloc keeps what a program freed inside its heap for reuse; after the parts
of a merge were read (Arrow's metadata and record batches, a few MiB each) and after the tallies
were turned into a summary, tens of MiB stay mapped though nothing uses them, and the next step
adds its own on top: the peak that `make bench` judges. `malloc_trim` hands those pages back.
Elsewhere (musl, macOS, Windows) this does nothing.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

_trim: Callable[[int], int] | None = None
_looked = False


def give_back_freed() -> None:
    """Return the heap's free pages to the system (glibc's `malloc_trim(0)`; a few ms)."""
    global _trim, _looked
    if not _looked:
        _looked = True
        if sys.platform.startswith("linux"):
            import ctypes  # here: ctypes.util costs a one-line scan's start-up ~8 ms
            import ctypes.util
            try:
                libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                _trim = libc.malloc_trim  # absent from musl
            except (OSError, AttributeError):
                _trim = None
    if _trim is not None:
        _trim(0)
