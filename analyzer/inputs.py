"""Inputs: turn command-line paths into named byte streams, skipping what cannot be read.

Stage: inputs. Files, directories (recursive, sorted, symlink loops survived) and `-` for stdin.
Every input that is not read, or not read to the end, is recorded with its reason.
"""

from __future__ import annotations

import os
import re
import stat
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import BinaryIO, Callable, Iterator

from .records import Skipped

_YEAR_IN_NAME = re.compile(r"(?<!\d)(20\d\d)(?:0[1-9]|1[0-2])(?:0[1-9]|[12]\d|3[01])")


@dataclass(frozen=True)
class Source:
    """One stream of log bytes and the name reports show for it."""

    name: str
    open: Callable[[], BinaryIO]
    size: int | None = None
    year: int | None = None  # for timestamps that print no year (vLLM)


def year_hint(name: str, mtime: float | None) -> int | None:
    """The year a year-less timestamp most likely belongs to: from the file name, else mtime."""
    found = _YEAR_IN_NAME.findall(name)
    if found:
        return int(found[-1])
    if mtime is not None:
        return datetime.fromtimestamp(mtime, tz=timezone.utc).year
    return None


def iter_sources(paths: list[str], skipped: list[Skipped], default_year: int | None = None) -> Iterator[Source]:
    """Sources for every path, in command-line order; directories expand sorted."""
    for raw in paths:
        if raw == "-":
            yield Source("-", lambda: sys.stdin.buffer, None, default_year)
            continue
        try:
            st = os.stat(raw)
        except FileNotFoundError:
            skipped.append(Skipped(raw, "no such file or directory"))
            continue
        except OSError as exc:
            skipped.append(Skipped(raw, exc.strerror or str(exc)))
            continue
        if stat.S_ISDIR(st.st_mode):
            yield from _walk(raw, skipped, default_year)
        elif stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode):
            yield _file_source(raw, st, default_year)
        else:
            skipped.append(Skipped(raw, "not a regular file"))


def _file_source(path: str, st: os.stat_result, default_year: int | None) -> Source:
    return Source(path, lambda: open(path, "rb"), st.st_size if stat.S_ISREG(st.st_mode) else None,
                  default_year or year_hint(os.path.basename(path), st.st_mtime))


def _walk(root: str, skipped: list[Skipped], default_year: int | None) -> Iterator[Source]:
    seen: set[tuple[int, int]] = set()

    def visit(directory: str) -> Iterator[Source]:
        try:
            st = os.stat(directory)
        except OSError as exc:
            skipped.append(Skipped(directory, exc.strerror or str(exc)))
            return
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return  # a symlink loop or a second link to a directory already read
        seen.add(key)
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(directory, exc.strerror or str(exc)))
            return
        for entry in entries:
            path = os.path.join(directory, entry.name)
            try:
                est = os.stat(path)
            except OSError as exc:
                skipped.append(Skipped(path, "broken symlink" if entry.is_symlink() else (exc.strerror or str(exc))))
                continue
            if stat.S_ISDIR(est.st_mode):
                yield from visit(path)
            elif stat.S_ISREG(est.st_mode):
                yield _file_source(path, est, default_year)
            # sockets, fifos and devices inside a tree are not logs: passed over silently

    yield from visit(root)
