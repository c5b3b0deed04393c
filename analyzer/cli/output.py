"""Where the report goes: never onto an input, never half-written.

`refusal` says why an --output (or --write-baseline, --baseline, --suppressions) path may not be
used: it is one of the inputs (also through a symlink or a hard link, or a log inside a scanned
folder). A report or baseline written inside a scanned folder is fine (`~/ascend/log/triage.json`,
`scan logs/ -o logs/ddtriage.sarif`): it is left out of the scan (`Options.not_these`), and a later
scan tells it from its first bytes. It is refused only when that file already exists and is not a
ddtriage report or baseline: writing would overwrite an input log. `atomic_file` writes a regular
file through a temporary file in the same folder, renamed into place only when the whole report is
written.
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


def refusal(output: str, paths: Sequence[str], selection: Selection, what: str = "report",
            written: bool = True) -> str | None:
    """Why `output` must not be used when scanning `paths`, or None when it may be. `what` names the
    file in the reason (report, baseline); a file only read (`written=False`, --baseline,
    --suppressions) is refused when it is an input. A file inside a scanned folder is an input only
    when it exists and is not ddtriage's own (a new file, or an earlier report, is written and left
    out of the scan)."""
    target = os.path.realpath(output)
    try:
        out_st: os.stat_result | None = os.stat(output)
    except OSError:
        out_st = None
    if out_st is not None and not stat.S_ISREG(out_st.st_mode):
        return None  # /dev/null, a terminal, a FIFO: nothing there to overwrite or rescan
    overwrite = f"the {what} would overwrite the log" if written else f"a log is not a {what}"
    for path in paths:
        if path == "-":
            continue
        try:
            st = os.stat(path)
        except OSError:
            continue
        elsewhere = f"; write the {what} elsewhere" if written else ""
        if out_st is not None and (st.st_dev, st.st_ino) == (out_st.st_dev, out_st.st_ino):
            return f"it is the input {path}; {overwrite}{elsewhere}"
        real = os.path.realpath(path)
        if stat.S_ISDIR(st.st_mode) and os.path.commonpath([real, target]) == real:
            walked = os.path.join(path, os.path.relpath(target, real))  # the name the walk would give it
            if selection.excluded(walked) or out_st is None or _own(target):
                continue  # written, and left out of this scan; a later scan knows it as ddtriage's own
            if not written:
                return f"it is the input {walked} (in the scanned folder {path}); {overwrite}"
            return (f"it is the input {walked} (in the scanned folder {path}), not a ddtriage report or "
                    f"baseline: {overwrite}; write the {what} under another name or elsewhere, or move that "
                    f"file away first")
        elif real == target:
            return f"it is the input {path}; {overwrite}{elsewhere}"
    return None


def _own(path: str) -> bool:
    """Whether `path` holds a report or baseline ddtriage wrote (a later scan leaves it out)."""
    from ..inputs.own import OWN_REPORT_HEAD, own_document

    try:
        with open(path, "rb") as handle:
            return own_document(handle.read(OWN_REPORT_HEAD)) is not None
    except OSError:
        return False


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
