"""Archives: tar and zip read member by member.

Stage: inputs (unpacking). A walker reads one archive and hands each member to the unpacker
(`unpack.Unpacker`), which expands it in turn: a member is named `ARCHIVE!MEMBER`. Every part that
cannot be read, or not to the end, is recorded as skipped with its reason, and whatever was
readable before the break is still scanned. The walkers are the `walk` handlers of `formats`' table.
"""

from __future__ import annotations

import calendar
import io
import itertools
import os
import re
import stat
import struct
import tarfile
import tempfile
import time
import zipfile
import zlib
from collections.abc import Callable, Iterator
from typing import Any, BinaryIO, ClassVar, Protocol

from .codecs import Codec, Decompressed
from .names import clean_member, printable
from .streams import PIECE, READ_ERRORS, Budget, Leaf, LimitExceeded, Limits, Reader, SafeStream, why

SPOOL_IN_MEMORY = 1 << 20  # a zip read from a stream is spooled (zip needs random access); past this, on disk
MAX_HEADER_BYTES = 1 << 20  # a GNU long name or a pax header bigger than this is hostile: refused
MAX_HEADER_SKIP = 1 << 30  # ... and stepped over by its declared size up to this; past it, scanned over
MAX_ZIP_MEMBERS = 100_000  # zipfile holds every directory entry in memory (~1 KiB each)
MAX_ZIP_DIRECTORY = 8 << 20  # ... and so, bytes of directory (an entry is at least 46 of them)
LOCAL_WALK_SECONDS = 120.0  # the local headers of a zip whose directory was refused: read for so long at most
_DEFLATE = Codec(lambda: zlib.decompressobj(-15), concatenated=False)  # one zip member, nothing after it
_TAR_ERRORS = READ_ERRORS + (tarfile.TarError,)
_CONTROL = re.compile(rb"[\x00-\x1f]")  # not in a member name: a "PK" that starts no header


class Unpacking(Protocol):
    """What a walker needs of the unpacker driving it."""

    @property
    def limits(self) -> Limits: ...

    def skip(self, name: str, reason: str) -> None:
        """Record `name` as skipped, with the reason."""

    def note(self, name: str, reason: str) -> None:
        """Record a caveat about `name`, read in full all the same."""

    def left_out(self, name: str) -> bool:
        """Whether --include/--exclude leave this member out (it is then counted)."""

    def member(self, child: str, handle: Reader, budget: Budget, depth: int, piece: int = PIECE,
               mtime: float | None = None) -> Iterator[Leaf]:
        """The text streams in one archive member."""


# (unpacker, archive name, its stream, budget, depth, path on disk if it is a top-level file)
Walker = Callable[[Unpacking, str, SafeStream, Budget, int, str | None], Iterator[Leaf]]


# -- tar ------------------------------------------------------------------------------------------
def walk_tar(unpacker: Unpacking, name: str, stream: SafeStream, budget: Budget, depth: int,
             path: str | None) -> Iterator[Leaf]:
    """Members of a tar archive, in one forward pass."""
    # tarfile reads whole 10 kB records and drops a partial one when the stream below breaks;
    # a break is turned into an end of data here, so the member in reading keeps its bytes.
    soft = _SoftEnd(stream)
    try:
        yield from _tar_members(unpacker, name, soft, budget, depth)
    finally:
        if soft.error is not None:
            unpacker.skip(name, f"archive ends early: {why(soft.error)}")


def _tar_members(unpacker: Unpacking, name: str, stream: _SoftEnd, budget: Budget, depth: int) -> Iterator[Leaf]:
    try:
        # Stream mode: one forward pass, members in order. ignore_zeros lets it step over a
        # corrupt header to the next good one; the gap is reported below.
        refused: list[tuple[int, int, str]] = []  # headers refused by _CheckedTarInfo: (offset, end, why)
        checked = type("CheckedTarInfo", (_CheckedTarInfo,), {"max_size": unpacker.limits.max_bytes,
                                                              "refused": refused})
        archive = tarfile.open(fileobj=stream, mode="r|", ignore_zeros=True,  # noqa: SIM115 - closed below
                               tarinfo=checked, bufsize=1 << 20)
    except (tarfile.TarError, OSError, EOFError, zlib.error, LimitExceeded) as exc:
        unpacker.skip(name, f"not a readable tar archive: {exc}")
        return
    expected = 0
    try:
        while True:
            try:
                member = archive.next()
            except _TAR_ERRORS as exc:
                if not budget.broken and stream.error is None:  # not already reported
                    unpacker.skip(name, f"archive is truncated or corrupt after offset {expected}: {why(exc)}")
                return
            for offset, end, reason in refused:  # a hostile header before this member
                unpacker.skip(f"{name}!@{offset}", reason)
                expected = max(expected, end)
            refused.clear()
            if member is None:
                return
            shown = printable(clean_member(member.name))
            child = f"{name}!{shown}"
            if member.offset > expected:
                unpacker.skip(f"{name}!@{expected}", f"corrupt tar data skipped ({member.offset - expected} bytes "
                                                     f"before member {shown})")
            # Where tarfile reads the next header: past the data as stored, which is less than
            # `size` for a sparse member (GNU or pax), whose holes are not stored.
            expected = archive.offset
            if not member.isreg():
                continue
            if unpacker.left_out(child):
                continue
            yield from unpacker.member(child, _TarMember(archive, member), budget, depth, mtime=member.mtime or None)
    finally:
        archive.close()


# -- zip ------------------------------------------------------------------------------------------
def walk_zip(unpacker: Unpacking, name: str, stream: SafeStream, budget: Budget, depth: int,
             path: str | None) -> Iterator[Leaf]:
    """Members of a zip archive, in file order: from its central directory, or from the local
    headers when that is missing."""
    source: BinaryIO
    if path is not None and _regular(path):
        source = open(path, "rb")  # noqa: SIM115 - a zip on disk, read in place; closed in finally
        budget.source_size = os.fstat(source.fileno()).st_size  # the ratio guard's denominator
    else:  # inside something else, or a pipe (/dev/stdin, a FIFO): zip needs random access, so spool it
        spool = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)  # noqa: SIM115 - closed in finally
        source = spool  # type: ignore[assignment]  # SpooledTemporaryFile is a BinaryIO in all but name
        try:
            while chunk := stream.read(1 << 20):
                source.write(chunk)
        except (LimitExceeded, OSError, EOFError, zlib.error) as exc:
            unpacker.skip(name, f"cannot read zip archive: {why(exc)}")
            source.close()
            return
        source.seek(0)
    try:
        members, directory = _zip_directory(source)
        if members > MAX_ZIP_MEMBERS or directory > MAX_ZIP_DIRECTORY:
            # Too big to index in memory; the local headers are read one at a time, as for a zip
            # cut short, within the byte guard and a time guard.
            unpacker.skip(name, f"zip of {members} members, directory of {directory} bytes: more than "
                                f"{MAX_ZIP_MEMBERS} members or {MAX_ZIP_DIRECTORY} bytes (a zip bomb?), so its "
                                "directory refused; members read from their local headers, in file order")
            yield from _zip_local(unpacker, name, source, budget, depth, time.monotonic() + LOCAL_WALK_SECONDS)
            return
        try:
            archive = zipfile.ZipFile(source)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            # No central directory (a download cut short): walk the local headers instead.
            unpacker.skip(name, f"zip directory unreadable ({why(exc)}); members read from their local headers")
            yield from _zip_local(unpacker, name, source, budget, depth)
            return
        with archive:
            yield from _zip_members(unpacker, name, archive, budget, depth)
    finally:
        source.close()


def _zip_members(unpacker: Unpacking, name: str, archive: zipfile.ZipFile, budget: Budget,
                 depth: int) -> Iterator[Leaf]:
    limits = unpacker.limits
    data_end = 0  # where the previous member's data ends, at the least
    for info in sorted(archive.infolist(), key=lambda i: i.header_offset):
        child = f"{name}!{printable(clean_member(info.filename))}"
        if info.header_offset < data_end:  # entries sharing one member's data: a zip bomb's trick
            unpacker.skip(child, "zip member overlaps the one before it (a zip bomb?)")
            continue
        # The name as stored: zipfile decoded it as UTF-8 when flagged, else as CP437 (one byte a character).
        raw_name = info.orig_filename.encode("utf-8" if info.flag_bits & 0x800 else "cp437", "surrogateescape")
        data_end = info.header_offset + 30 + len(raw_name) + info.compress_size
        _note_cp437(unpacker, child, raw_name, info.flag_bits)
        if info.is_dir():
            continue
        if unpacker.left_out(child):
            continue
        if info.flag_bits & 0x1:
            unpacker.skip(child, "encrypted zip member")
            continue
        if info.file_size > limits.max_bytes - budget.expanded:
            unpacker.skip(child, f"member of {info.file_size} bytes is over what is left of the "
                                 f"decompression limit ({limits.max_bytes} bytes per input)")
            continue
        if info.compress_size and info.file_size > limits.ratio_floor and \
                info.file_size / info.compress_size > limits.max_ratio:
            unpacker.skip(child, f"compression ratio over {limits.max_ratio:g}:1 (decompression bomb?)")
            continue
        try:
            handle = archive.open(info)
        except (zipfile.BadZipFile, NotImplementedError, OSError, ValueError, RuntimeError) as exc:
            unpacker.skip(child, f"cannot open zip member: {why(exc)}")
            continue
        with handle:
            # A bad CRC: keep the data and warn, as `unzip` does (zipfile would drop the last read).
            handle._expected_crc = None  # type: ignore[attr-defined]  # no public switch for the check
            checked = _CrcCheck(handle, info.CRC, lambda got, c=child, i=info: unpacker.note(  # type: ignore[misc]
                c, f"CRC mismatch (stored {i.CRC:08x}, data {got:08x}); the data was kept, as unzip does"))
            # zipfile drops what a failing read(n) had decompressed: read small.
            yield from unpacker.member(child, checked, budget, depth, piece=4096, mtime=_zip_mtime(info))


def _zip_local(unpacker: Unpacking, name: str, source: BinaryIO, budget: Budget, depth: int,
               deadline: float | None = None) -> Iterator[Leaf]:
    """Members of a zip without its central directory (or with one too big to index), in file
    order, from the local file headers: stored and deflated members; the first one that cannot be
    delimited ends it, and so does the `deadline` (time.monotonic()) when one is given."""
    source.seek(0)
    for count in itertools.count():
        if deadline is not None and count % 1024 == 1023 and time.monotonic() > deadline:
            unpacker.skip(name, f"local-header walk stopped by its time guard ({LOCAL_WALK_SECONDS:g} s) after "
                                f"{count} entries, at offset {source.tell()}; the members after it are not read")
            return
        header = source.read(30)
        if len(header) < 30 or header[:4] != b"PK\x03\x04":
            return
        flags, method = struct.unpack("<HH", header[6:10])
        (csize,) = struct.unpack("<I", header[18:22])
        nlen, xlen = struct.unpack("<HH", header[26:30])
        names = source.read(nlen + xlen)
        raw_name = names[:nlen]
        if len(names) < nlen + xlen or _CONTROL.search(raw_name) or flags & ~0x0FFF:
            return  # not a member header after all: garbage after a "PK" signature
        sized = not flags & 0x8  # else the sizes come after the data
        if sized and raw_name.endswith(b"/") and not flags & 0x1:
            source.seek(csize, io.SEEK_CUR)  # a folder (half a million of them in a hostile zip): cheaply
            continue
        member = raw_name.decode("utf-8" if flags & 0x800 else "cp437", "replace")
        child = f"{name}!{printable(clean_member(member))}"
        _note_cp437(unpacker, child, raw_name, flags)
        if flags & 0x1 or method not in (0, 8) or (method == 0 and not sized):
            reason = "encrypted zip member" if flags & 0x1 else f"zip member with compression method {method}"
            unpacker.skip(child, reason)
            if not sized:
                return
            source.seek(csize, io.SEEK_CUR)
            continue
        if child.endswith("/"):
            source.seek(csize if sized else 0, io.SEEK_CUR)
            continue
        start = source.tell()
        body: io.RawIOBase = _Window(source, csize) if method == 0 else Decompressed(source, _DEFLATE)
        if not unpacker.left_out(child):
            yield from unpacker.member(child, body, budget, depth, piece=PIECE)
        if isinstance(body, Decompressed):
            try:  # finish the member (also when excluded or cut off) to find the next header
                while body.read(1 << 20):
                    pass
            except READ_ERRORS:
                return
            source.seek(-len(body.leftover()), io.SEEK_CUR)
        else:
            source.seek(start + csize)
        if not sized:  # data descriptor: optional signature, crc, sizes
            tail = source.read(16)
            skip = 16 if tail[:4] == b"PK\x07\x08" else 12
            source.seek(skip - len(tail), io.SEEK_CUR)


def _note_cp437(unpacker: Unpacking, child: str, raw_name: bytes, flags: int) -> None:
    """A member name that is not ASCII and has no UTF-8 flag is read as CP437 (the zip default, as
    zipfile and unzip do); its bytes stay visible in a note (a GBK or Shift-JIS name reads as noise)."""
    if flags & 0x800 or raw_name.isascii():
        return
    shown = "".join(chr(b) if b < 0x80 else f"\\x{b:02x}" for b in raw_name)
    try:
        also = f"; as UTF-8 it would read {printable(raw_name.decode('utf-8'))}"
    except UnicodeDecodeError:
        also = " (not UTF-8 either)"
    unpacker.note(child, f"member name has no UTF-8 flag: read as CP437, the zip default{also}; its bytes: "
                         f"{printable(shown)}")


def _zip_mtime(info: zipfile.ZipInfo) -> float | None:
    try:
        return float(calendar.timegm(info.date_time + (0, 0, 0)))
    except (OverflowError, ValueError):
        return None


def _regular(path: str) -> bool:
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except OSError:
        return False


def _zip_directory(source: BinaryIO) -> tuple[int, int]:
    """The member count and directory size a zip's end record declares ((0, 0) without one),
    read before zipfile builds its whole directory in memory."""
    try:
        record = zipfile._EndRecData(source)  # type: ignore[attr-defined]  # private, stable since 2.x
    except (OSError, ValueError, struct.error):
        return 0, 0
    finally:
        source.seek(0)
    if not record:
        return 0, 0
    return int(record[zipfile._ECD_ENTRIES_TOTAL]), int(record[zipfile._ECD_SIZE])  # type: ignore[attr-defined]


_LONG_NAMES = (tarfile.GNUTYPE_LONGNAME, tarfile.GNUTYPE_LONGLINK)
_EXTENDED = (*_LONG_NAMES, tarfile.XHDTYPE, tarfile.XGLTYPE, tarfile.SOLARIS_XHDTYPE)


class _CheckedTarInfo(tarfile.TarInfo):
    """Tar headers with their sizes checked: a negative or huge declared size is a corrupt header
    (stepped over like one). A long name or pax header over MAX_HEADER_BYTES (tarfile would read it
    whole into memory) is refused and the walk goes on: past its data by its declared size when that
    is sane (at most MAX_HEADER_SKIP and the input's byte limit), else block by block to the next
    valid header. The member it describes is then read under the name in its own header."""

    max_size = 50 << 30
    refused: ClassVar[list[tuple[int, int, str]]] = []  # set per archive by `_tar_members`

    def _proc_member(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        if self.size < 0 or self.size > self.max_size:
            raise tarfile.InvalidHeaderError(  # type: ignore[attr-defined]  # not in the stubs
                f"declared size {self.size} is impossible")
        if self.type in _EXTENDED and self.size > MAX_HEADER_BYTES:
            return self._step_over(tarfile_)
        return super()._proc_member(tarfile_)  # type: ignore[misc]

    def _step_over(self, tarfile_: tarfile.TarFile) -> tarfile.TarInfo:
        what = "GNU long name" if self.type in _LONG_NAMES else "pax header"
        refusal = f"a {self.size}-byte {what} (over {MAX_HEADER_BYTES} bytes) refused"
        assert tarfile_.fileobj is not None
        if self.size > min(MAX_HEADER_SKIP, self.max_size):
            self.refused.append((self.offset, self.offset + tarfile.BLOCKSIZE,
                                 f"{refusal}; its declared size is not sane, so the walk looked for the next "
                                 "valid header block"))
            tarfile_.offset = self.offset  # tarfile steps one block on and tries again from there
            raise tarfile.InvalidHeaderError(refusal)  # type: ignore[attr-defined]
        end = self.offset + tarfile.BLOCKSIZE + self._block(self.size)  # type: ignore[attr-defined]
        self.refused.append((self.offset, end, f"{refusal}; stepped over by its declared size, the member "
                                               "after it is read under the name in its own header"))
        tarfile_.fileobj.seek(end)  # forward: a stream reads and drops the data, piece by piece
        tarfile_.offset = end
        return self.fromtarfile(tarfile_)


class _CrcCheck(io.RawIOBase):
    """Passes a zip member's data through and, at its end, calls `mismatch(crc)` when its CRC-32
    is not the stored one."""

    def __init__(self, inner: Reader, expected: int, mismatch: Callable[[int], None]) -> None:
        self.inner, self.expected, self.mismatch = inner, expected, mismatch
        self.crc, self.done = 0, False

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        data = self.inner.read(-1 if size is None else size)
        if data:
            self.crc = zlib.crc32(data, self.crc)
        elif not self.done:
            self.done = True
            if self.crc != self.expected:
                self.mismatch(self.crc)
        return data


# -- streams the walkers read through -------------------------------------------------------------
class _SoftEnd(io.RawIOBase):
    """Reads a stream until it breaks; the break reads as the end of the data, and is kept."""

    def __init__(self, stream: SafeStream) -> None:
        self.stream = stream
        self.error: BaseException | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self.error is not None:
            return b""
        try:
            return self.stream.read(size)
        except READ_ERRORS as exc:
            self.error = exc
            return b""


class _Window(io.RawIOBase):
    """`size` bytes of a stream from where it stands."""

    def __init__(self, stream: BinaryIO, size: int) -> None:
        self.stream, self.remaining = stream, size

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self.stream.read(size) if size > 0 else b""
        self.remaining -= len(data)
        if size and not data:
            raise EOFError("zip member data ends early")
        return data


class _TarMember(io.RawIOBase):
    """A tar member's data read straight from the archive stream. Unlike `extractfile`, a short
    read at a truncated end still delivers the bytes that are there before it fails."""

    def __init__(self, archive: tarfile.TarFile, member: tarfile.TarInfo) -> None:
        assert archive.fileobj is not None  # a TarFile opened on a stream has one
        self.stream = archive.fileobj
        self.start: int | None = member.offset_data
        # A sparse member stores only its data chunks (the holes read as NULs, which the scanner
        # drops anyway): read what is stored, not the size it unpacks to.
        chunks: list[tuple[int, int]] = member.sparse or []  # type: ignore[assignment]  # (offset, size) pairs
        self.remaining = sum(n for _, n in chunks) if chunks else member.size

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> bytes:
        if self.start is not None:
            self.stream.seek(self.start)  # forward only: the stream skips to the member's data
            self.start = None
        if self.remaining <= 0:
            return b""
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self._read_through(size) if _passes_through(self.stream) else self.stream.read(size)
        if not data:
            raise tarfile.ReadError(f"unexpected end of data ({self.remaining} bytes of the member missing)")
        self.remaining -= len(data)
        return data

    def _read_through(self, size: int) -> bytes:
        """`size` bytes (fewer at the end) as tarfile's stream would give them, without its copies:
        it joins a megabyte piece at a time and slices the join twice, three copies of each
        member's data; here what it holds, then the layer below, joined once."""
        stream: Any = self.stream
        pieces, got = [], 0
        held: bytes = stream.buf
        if held:
            first = held[:size]
            stream.buf = held[len(first):]
            pieces.append(first)
            got = len(first)
        while got < size:
            piece = stream.fileobj.read(size - got)
            if not piece:
                break
            pieces.append(piece)
            got += len(piece)
        stream.pos += got
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)


def _passes_through(stream: object) -> bool:
    """Whether `stream` is tarfile's plain stream (`r|`), whose buffer and position a member may
    read past (`_TarMember._read_through`): checked, as they are not tarfile's public API."""
    return (type(stream).__name__ == "_Stream" and getattr(stream, "comptype", None) == "tar"
            and isinstance(getattr(stream, "buf", None), bytes) and isinstance(getattr(stream, "pos", None), int)
            and hasattr(stream, "fileobj"))
