"""Sources: turn command-line paths into top-level sources, skipping what cannot be read.

Stage: inputs (paths). Files, directories (walked iteratively, sorted, symlink loops survived, confined
to the folder given unless --follow) and `-` for stdin.
With no path, the local Ascend log root: $ASCEND_PROCESS_LOG_PATH, else ~/ascend/log. Every
input that is not read is recorded with its reason. What is inside a file (compression,
archives) is `unpack`'s business. Also here: the year a year-less timestamp belongs to.
"""

from __future__ import annotations

import io
import os
import re
import stat
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import BinaryIO, cast

from ..core.errors import InputError
from ..core.records import Skipped
from .formats import strip_archive_suffix, strip_compression_suffix
from .layout import is_layout_folder
from .names import printable
from .selection import Selection
from .streams import LimitExceeded

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+://")
_DATE_IN_NAME = re.compile(r"(?<!\d)(20\d\d)(0[1-9]|1[0-2])(0[1-9]|[12]\d|3[01])")


@dataclass(frozen=True)
class Source:
    """One top-level input: a local file (`path`), an fsspec URL (`url`), or stdin (neither)."""

    name: str
    path: str | None
    size: int | None = None
    mtime: float | None = None
    bundle: str | None = None  # the top-level input it belongs to (see `_walk`)
    url: str | None = None  # `s3://…`, `file://…`, `memory://…`: opened through fsspec
    pseudo: bool = False  # a file of /proc, /sys or /dev named on the command line: read up to MAX_PSEUDO_BYTES

    @property
    def is_stdin(self) -> bool:
        return self.path is None and self.url is None

    def open(self) -> BinaryIO:
        """The input's bytes, from the start."""
        if self.url is not None:
            import fsspec  # the `fleet` extra; only URLs need it

            return cast(BinaryIO, fsspec.open(self.url, "rb").open())
        if self.path is None:
            return sys.stdin.buffer
        if self.pseudo:
            return cast(BinaryIO, _Bounded(open(self.path, "rb"), MAX_PSEUDO_BYTES))  # noqa: SIM115 - closed by its reader
        return open(self.path, "rb")


class _Bounded(io.RawIOBase):
    """A pseudo file (`/proc/self/pagemap` never ends; sizes there are 0) read up to `limit` bytes;
    past it the read fails, so the file is listed as cut short (what came before is scanned)."""

    def __init__(self, inner: BinaryIO, limit: int) -> None:
        self.inner, self.left, self.limit = inner, limit, limit

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self.left <= 0:
            if self.inner.read(1):
                raise LimitExceeded(f"a file of a pseudo file system (/proc, /sys, /dev): read no more than "
                                    f"its first {self.limit} bytes")
            return b""
        want = self.left if size is None or size < 0 else min(size, self.left)
        data = self.inner.read(want)
        self.left -= len(data)
        return data

    def close(self) -> None:
        self.inner.close()
        super().close()


@dataclass(frozen=True)
class YearHint:
    """The year for timestamps that print none (vLLM's `MM-DD hh:mm:ss`, short glog).

    - From a date in the log's name (`vllm_20260101.log`): each stamp takes the year that puts
      it nearest that date, so a log named for the day it ended still has December last year.
    - From --year: the year the log starts in; the pipeline counts New Year crossings.
    - From the file's (or archive member's) mtime it is a guess: a stamp later in the year than
      the mtime was written the year before, and the pipeline prefers the year the node's other
      logs print."""

    year: int | None
    guessed: bool = False
    written_by: str | None = None  # "MM-DD" of the mtime (a guess)
    near: str | None = None  # "MM-DD" of the date in the name

    @property
    def rolls(self) -> bool:
        """Whether the pipeline should count New Year crossings (a bare --year)."""
        return self.year is not None and not self.guessed and self.near is None

    def for_stamp(self, month_day: str) -> int | None:
        """The year of a stamp printed as `MM-DD …`."""
        if self.year and self.near:
            months = int(month_day[:2]) - int(self.near[:2])
            return self.year - 1 if months > 6 else self.year + 1 if months < -6 else self.year
        if self.year and self.written_by and month_day > self.written_by:
            return self.year - 1
        return self.year


def year_hint(name: str, mtime: float | None, default: int | None = None) -> YearHint:
    """--year, else a date in the log's name or path (`plog-4811_20251112034001123.log`), else
    a guess from the mtime."""
    if default:
        return YearHint(default)
    found = _DATE_IN_NAME.findall(name.rsplit("/", 1)[-1]) or _DATE_IN_NAME.findall(name)
    if found:
        year, month, day = found[-1]
        return YearHint(int(year), near=f"{month}-{day}")
    if mtime is not None:
        when = datetime.fromtimestamp(mtime, tz=UTC)
        return YearHint(when.year, True, when.strftime("%m-%d"))
    return YearHint(None, True)


def is_archive_name(name: str) -> bool:
    """Whether a file name says archive (`.tar.gz`, `.tgz`, `.zip`, ...), as a bundle would be."""
    return strip_archive_suffix(strip_compression_suffix(name)) != strip_compression_suffix(name)


def default_paths() -> list[str]:
    """Where CANN writes logs on this machine, or a usage error saying what to pass."""
    env = os.environ.get("ASCEND_PROCESS_LOG_PATH")
    candidates = [env] if env else []
    candidates.append(os.path.join(os.path.expanduser("~"), "ascend", "log"))
    for path in candidates:
        if path and os.path.isdir(path):
            return [path]
    tried = " or ".join(c for c in candidates if c)
    raise InputError(f"no PATHS given and no local Ascend log directory ({tried}); "
                     "pass log files, folders, archives or - for stdin")


# Pseudo file systems: their files lie about their size, never end, or block (/proc/kmsg), and
# /proc/PID/task/TID/ holds the process again. A folder there is not walked (its files would be
# skipped as inside any folder); a file there named on the command line is read, bounded.
_PSEUDO = ("/proc", "/sys", "/dev")
MAX_PSEUDO_BYTES = 16 << 20


def _pseudo(path: str, real: str | None = None) -> bool:
    """Whether `path` (resolved: `real`) lies in /proc, /sys or /dev; /dev/shm holds real files."""
    real = real or os.path.realpath(path)
    return any(_inside(real, p) for p in _PSEUDO) and not _inside(real, "/dev/shm")


def iter_sources(paths: list[str], skipped: list[Skipped], selection: Selection | None = None,
                 excluded: list[str] | None = None, not_these: tuple[str, ...] = (),
                 follow: bool = False) -> Iterator[Source]:
    """Top-level sources for every path, in command-line order; directories expand sorted.
    Files and folders pruned by --exclude are appended to `excluded`; `not_these` (the report
    being written) are never read. Each file is read once, however many links lead to it.
    Inside a folder, a symlink that leads out of it is skipped unless `follow`; FIFOs, sockets,
    devices and files of /proc, /sys and /dev are always skipped, with the reason."""
    selection = selection or Selection()
    excluded = excluded if excluded is not None else []
    seen: dict[tuple[int, int], str] = {}
    for path in not_these:
        try:
            st = os.stat(path)
            seen[(st.st_dev, st.st_ino)] = path  # our own report from an earlier run: never read
        except (OSError, ValueError):
            pass
    for source in _sources(paths, skipped, selection, excluded, follow):
        if source.path is not None:
            try:
                st = os.stat(source.path)
            except (OSError, ValueError):
                yield source  # reported when it is opened
                continue
            key = (st.st_dev, st.st_ino)
            if key in seen:
                continue  # read already, through another link (`latest.log -> plog-1.log`)
            seen[key] = source.name
        yield source


def _sources(paths: list[str], skipped: list[Skipped], selection: Selection, excluded: list[str],
             follow: bool) -> Iterator[Source]:
    for raw in paths:
        if raw == "-":
            if sys.stdin is None:
                skipped.append(Skipped("-", "standard input is closed"))
            else:
                yield Source("-", None, bundle="-")
            continue
        if _URL.match(raw):
            yield from _url_sources(raw, skipped, selection, excluded)
            continue
        try:
            st = os.stat(raw)
        except FileNotFoundError:
            skipped.append(Skipped(printable(raw), "no such file or directory"))
            continue
        except OSError as exc:
            skipped.append(Skipped(printable(raw), exc.strerror or str(exc)))
            continue
        except ValueError as exc:  # a NUL in the name
            skipped.append(Skipped(printable(raw), str(exc)))
            continue
        if stat.S_ISDIR(st.st_mode) and _pseudo(raw):
            skipped.append(Skipped(printable(raw), "a folder of a pseudo file system (/proc, /sys, /dev): not "
                                                   "walked, as inside any folder; name one of its files to read it"))
        elif stat.S_ISDIR(st.st_mode):
            yield from _walk(raw, skipped, selection, excluded, follow)
        elif stat.S_ISREG(st.st_mode) or stat.S_ISFIFO(st.st_mode):  # a FIFO named on purpose: <(zcat x)
            pseudo = stat.S_ISREG(st.st_mode) and _pseudo(raw)
            yield Source(printable(raw), raw, st.st_size if stat.S_ISREG(st.st_mode) and not pseudo else None,
                         st.st_mtime, printable(raw), pseudo=pseudo)
        else:
            skipped.append(Skipped(printable(raw), "not a regular file"))


def _bundle_of(root: str, entry: str, is_dir: bool) -> str:
    """The bundle of what sits at `root/entry`: each folder or archive directly inside a folder
    given on the command line is a bundle (`fleet/node-1/`, `bundles/node-1-1112.tar.gz`); when
    the folder is itself a log tree (its entries are `ascend/`, `log/`, `plog/`, `debug/`, ...,
    or plain logs), the folder is the bundle."""
    if (is_dir and not is_layout_folder(entry)) or (not is_dir and is_archive_name(entry)):
        return printable(os.path.join(root, entry))
    return printable(root)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip(os.sep) + os.sep)


def _walk(root: str, skipped: list[Skipped], selection: Selection, excluded: list[str],
          follow: bool) -> Iterator[Source]:
    """Files under `root`, sorted, depth first; iterative, so no depth is too deep."""
    top = os.path.realpath(root)
    seen: set[tuple[int, int]] = set()
    stack: list[tuple[Iterator[os.DirEntry[str]], str | None]] = []  # (entries left, their bundle)

    def enter(directory: str, bundle: str | None) -> None:
        try:
            st = os.stat(directory)
        except OSError as exc:
            skipped.append(Skipped(printable(directory), exc.strerror or str(exc)))
            return
        key = (st.st_dev, st.st_ino)
        if key in seen:
            return  # a symlink loop or a second link to a directory already read
        seen.add(key)
        try:
            with os.scandir(directory) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            skipped.append(Skipped(printable(directory), exc.strerror or str(exc)))
            return
        stack.append((iter(entries), bundle))

    enter(root, None)
    while stack:
        entry, bundle = next(stack[-1][0], None), stack[-1][1]
        if entry is None:
            stack.pop()
            continue
        if selection.skip_hidden(entry.name):
            continue  # .git, .venv, .pytest_cache: not logs (--hidden reads them)
        path = entry.path
        if selection.excluded(path):
            excluded.append(path)
            continue
        real = os.path.realpath(path) if entry.is_symlink() else None
        if real is not None and not follow and not _inside(real, top):
            skipped.append(Skipped(printable(path), "symlink leads out of the folder scanned (--follow reads it)"))
            continue
        try:
            est = os.stat(path)
        except OSError as exc:
            reason = "broken symlink" if entry.is_symlink() else (exc.strerror or str(exc))
            skipped.append(Skipped(printable(path), reason))
            continue
        if _pseudo(path, real or os.path.abspath(path)):
            skipped.append(Skipped(printable(path), "file of a pseudo file system (/proc, /sys, /dev)"))
            continue
        here = bundle or _bundle_of(root, entry.name, stat.S_ISDIR(est.st_mode))
        if stat.S_ISDIR(est.st_mode):
            enter(path, here)
        elif stat.S_ISREG(est.st_mode):
            yield Source(printable(path), path, est.st_size, est.st_mtime, here)
        else:  # a FIFO could block forever; sockets and devices are not logs
            skipped.append(Skipped(printable(path), f"not a regular file ({_kind(est.st_mode)})"))


def _kind(mode: int) -> str:
    for test, word in ((stat.S_ISFIFO, "FIFO"), (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "character device"),
                       (stat.S_ISBLK, "block device")):
        if test(mode):
            return word
    return "special file"


def _url_sources(url: str, skipped: list[Skipped], selection: Selection, excluded: list[str]) -> Iterator[Source]:
    """The files at an fsspec URL (`s3://bucket/fleet/`, `file:///logs`, `memory://x`), named by
    the URL as given plus their path below it; a folder expands sorted, as on disk."""
    try:
        import fsspec
    except ImportError:
        raise InputError(f"{url}: reading URLs needs fsspec: pip install 'ddtriage[fleet]'") from None
    try:
        fs, root = fsspec.core.url_to_fs(url)
        if not fs.exists(root):
            skipped.append(Skipped(printable(url), "no such file or directory"))
            return
        if not fs.isdir(root):
            info = fs.info(root)
            yield Source(printable(url), None, info.get("size"), _mtime(info), printable(url), url)
            return
        base, top = root.rstrip("/"), url.rstrip("/")
        for found, info in sorted(fs.find(root, detail=True).items()):
            rel = found[len(base):].lstrip("/")
            name = f"{top}/{rel}"
            if selection.excluded(name):
                excluded.append(name)
                continue
            first, _, below = rel.partition("/")
            yield Source(printable(name), None, info.get("size"), _mtime(info), _bundle_of(top, first, bool(below)),
                         fs.unstrip_protocol(found))
    except (OSError, ValueError, ImportError) as exc:
        skipped.append(Skipped(printable(url), str(exc) or type(exc).__name__))


def _mtime(info: dict) -> float | None:
    """A file's modification time from an fsspec `info()`, whatever the backend calls it."""
    for key in ("mtime", "LastModified", "last_modified", "updated", "created"):
        value = info.get(key)
        if isinstance(value, (int, float)):
            return float(value)
        if isinstance(value, datetime):
            return value.timestamp()
    return None
