"""Where the report goes: never onto an input, never half-written.

`refusal` says why an --output path may not be used: it is one of the inputs (also through a
symlink or a hard link), or it lies inside a scanned folder and is not excluded by name (the next
run would scan the report). `atomic_file` writes a regular file through a temporary file in the
same folder, renamed into place only when the whole report is written.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

from ..inputs import Selection


def refusal(output: str, paths: Sequence[str], selection: Selection) -> str | None:
    """Why `output` must not be written when scanning `paths`, or None when it may be."""
    target = os.path.realpath(output)
    try:
        out_st: os.stat_result | None = os.stat(output)
    except OSError:
        out_st = None
    if out_st is not None and not stat.S_ISREG(out_st.st_mode):
        return None  # /dev/null, a terminal, a FIFO: nothing there to overwrite or rescan
    for path in paths:
        if path == "-":
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        if out_st is not None and (st.st_dev, st.st_ino) == (out_st.st_dev, out_st.st_ino):
            return f"it is the input {path}; the report would overwrite the log"
        real = os.path.realpath(path)
        if stat.S_ISDIR(st.st_mode) and os.path.commonpath([real, target]) == real:
            walked = os.path.join(path, os.path.relpath(target, real))  # the name the walk would give it
            if not selection.excluded(walked):
                return (f"it lies inside the scanned folder {path}; write it elsewhere, or leave it out "
                        f"with --exclude {os.path.basename(target)}")
        elif real == target:
            return f"it is the input {path}; the report would overwrite the log"
    return None


@contextmanager
def atomic_file(output: str, binary: bool = False) -> Iterator[Any]:
    """A text (or binary) handle for `output`. A regular file (or a new one) is written to a temporary file
    beside it and renamed over it at the end; on any failure the temporary file is removed and
    `output` is left as it was. Anything else (a device, a FIFO) is written in place."""
    try:
        special = not stat.S_ISREG(os.stat(output).st_mode)
    except OSError:
        special = False
    if special:
        with open(output, "wb") if binary else open(output, "w", encoding="utf-8") as handle:
            yield handle
        return
    folder = os.path.dirname(os.path.abspath(output))
    fd, temp = tempfile.mkstemp(prefix=".ddtriage-", suffix=".tmp", dir=folder)
    try:
        with open(fd, "wb") if binary else open(fd, "w", encoding="utf-8") as handle:
            yield handle
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)  # as an ordinary new file would be, not mkstemp's 0600
        os.replace(temp, output)
    except BaseException:
        with suppress(OSError):
            os.unlink(temp)
        raise


def paths_in_error(paths: Sequence[str]) -> dict[str, str]:
    """Top-level paths that cannot be used at all (missing, unreadable, bad name), with why."""
    bad = {}
    for path in paths:
        if path == "-":
            if sys.stdin is None:
                bad[path] = "standard input is closed"
            continue
        try:
            os.stat(path)
        except OSError as exc:
            bad[path] = exc.strerror or str(exc)
        except ValueError as exc:  # an embedded NUL
            bad[path] = str(exc)
    return bad
