"""Readers: open an input and yield the plain-text log streams inside it.

Stage: inputs (unpacking). Compression (gzip, also multi-member; bzip2; xz; zstd) is detected by
magic bytes, not by name, and streamed: nothing is decompressed to disk or wholly into memory.
Archives (tar in any compression, zip) are read member by member, nested to `MAX_DEPTH`; a member
is named `ARCHIVE!MEMBER`. Every part that cannot be read, or not to the end, is recorded as
skipped with its reason, and whatever was readable before the break is still scanned.
"""

from __future__ import annotations

import bz2
import calendar
import codecs
import fnmatch
import io
import lzma
import struct
import re
import tarfile
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Callable, Iterator

from .records import Skipped

try:  # ISA-L's inflate is about twice as fast (perf.md); the stdlib gives the same bytes.
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover - depends on the platform
    _zlib = zlib

try:
    import zstandard as _zstd
except ImportError:  # pragma: no cover
    _zstd = None

MAX_DEPTH = 8
_ROTATION = re.compile(r"\.\d+$")
PIECE = 1 << 16  # read decompressors in small pieces so a break loses nothing before it
SPOOL_IN_MEMORY = 64 << 20  # a nested zip is spooled (zip needs random access); memory up to this

GZIP, BZIP2, XZ, ZSTD = b"\x1f\x8b", b"BZh", b"\xfd7zXZ\x00", b"\x28\xb5\x2f\xfd"
ZIP = (b"PK\x03\x04", b"PK\x05\x06")


class LimitExceeded(Exception):
    """Decompression went past a configured limit (bomb guard)."""


class StreamError(Exception):
    """A stream broke (any decompressor's or archive reader's own error, by its message).
    One plain, picklable type, so a worker process can report it like any other."""


# What reading a damaged stream can raise, at any layer. All of them mean "this stream ends here".
READ_ERRORS: tuple[type[BaseException], ...] = (
    OSError, EOFError, ValueError, LimitExceeded, StreamError, zlib.error, lzma.LZMAError,
    tarfile.TarError, zipfile.BadZipFile, NotImplementedError,
) + ((_zstd.ZstdError,) if _zstd is not None else ())


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
    expanded: int = 0
    broken: bool = False  # a read error was already reported for this input


@dataclass(frozen=True)
class Selection:
    """--include / --exclude globs. A glob is tried against the whole name (with `!` read as
    `/`), and against every folder, archive and file name along it, with and without the
    compression and rotation suffixes. On disk and inside archives alike, `--exclude node-2`
    prunes that folder and `--include '*.zip'` selects what is inside the zips."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @staticmethod
    def _names(name: str) -> set[str]:
        names = {name, name.replace("!", "/")}
        parts = [p for p in name.replace("!", "/").split("/") if p and p != "."]
        for i, part in enumerate(parts):
            plain = strip_compression_suffix(part)
            names.update((part, plain, _ROTATION.sub("", plain)))  # plog.log.3.gz -> plog.log
            names.add("/".join(parts[i:]))  # `node-1/*` matches wherever node-1 sits
        return names

    def _any(self, patterns: tuple[str, ...], name: str) -> bool:
        names = self._names(name)
        return any(fnmatch.fnmatchcase(n, p) for p in patterns for n in names)

    def excluded(self, name: str) -> bool:
        return bool(self.exclude) and self._any(self.exclude, name)

    def wanted(self, name: str) -> bool:
        if self.excluded(name):
            return False
        return not self.include or self._any(self.include, name)


class SafeStream(io.RawIOBase):
    """A read-only stream that (1) lets the first bytes be peeked for format detection,
    (2) reads its inner stream in small pieces and, when the inner stream breaks (truncated
    gzip, bad CRC), returns what it already has and raises only on the next read, and
    (3) counts the bytes it delivers against the input's decompression budget."""

    def __init__(self, inner: BinaryIO, budget: Budget | None = None, compressed: Callable[[], int] | None = None,
                 piece: int = PIECE):
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

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = 1 << 62
        parts, have = [], 0
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
                raise StreamError(_why(error)) from None  # e.g. ISA-L's IsalError
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

    def readinto(self, buffer) -> int:
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


def sniff(stream: SafeStream, name: str = "") -> str:
    """Format of a stream from its first bytes: gzip, bzip2, xz, zstd, zip, tar or text. The name
    only breaks one tie: an empty tar archive is nothing but zero blocks."""
    head = stream.peek(512)
    if head.startswith(GZIP):
        return "gzip"
    if head.startswith(BZIP2) and len(head) > 3 and head[3:4].isdigit():
        return "bzip2"
    if head.startswith(XZ):
        return "xz"
    if head.startswith(ZSTD):
        return "zstd"
    if head.startswith(ZIP):
        return "zip"
    if len(head) >= 262 and head[257:262] == b"ustar":
        return "tar"
    if len(head) == 512 and _old_tar_checksum_ok(head):
        return "tar"
    if len(head) == 512 and not head.strip(b"\x00") and strip_compression_suffix(name).endswith(".tar"):
        return "tar"
    if head.startswith(b"\xff\xfe") or _mostly_zero(head[1::2], head[0::2]):
        return "utf-16-le"
    if head.startswith(b"\xfe\xff") or _mostly_zero(head[0::2], head[1::2]):
        return "utf-16-be"
    return "text"


def _mostly_zero(zeros: bytes, text: bytes) -> bool:
    """UTF-16 without a BOM: ASCII text with every other byte NUL (and the rest not)."""
    if len(zeros) < 16:
        return False
    return zeros.count(0) >= 0.9 * len(zeros) and text.count(0) <= 0.1 * len(text)


class Utf16ToUtf8(io.RawIOBase):
    """A UTF-16 log (Windows tools, some exporters) re-encoded as UTF-8 on the fly."""

    def __init__(self, raw: BinaryIO, encoding: str):
        self.raw = raw
        self._decoder = codecs.getincrementaldecoder(encoding)(errors="replace")
        self._first = True

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        while True:
            data = self.raw.read(size if size and size > 0 else PIECE)
            text = self._decoder.decode(data, final=not data)
            if self._first and text:
                text, self._first = text.lstrip("\ufeff"), False
            if text or not data:
                return text.encode("utf-8", "replace")


def _old_tar_checksum_ok(block: bytes) -> bool:
    """A pre-POSIX (v7) tar header: its checksum field is right."""
    try:
        stored = int(block[148:156].split(b"\x00", 1)[0].strip() or b"-1", 8)
    except ValueError:
        return False
    computed = sum(block[:148]) + 8 * 32 + sum(block[156:])
    return stored == computed and block[0] != 0


class Decompressed(io.RawIOBase):
    """Incremental decompression of gzip (multi-member), bzip2, xz and zstd (multi-frame).

    Unlike `gzip.GzipFile` & co, output decompressed before a break is always returned: a
    truncated file yields every byte `zcat` would, then EOFError. Output per call is bounded,
    so the decompression guard above sees a bomb before it fills memory.
    """

    # Compressed bytes fed per call; zstd cannot cap its output per call, so it is fed less.
    # (512 bytes of zstd RLE blocks can still expand to ~16 MiB: the guard checks after each call.)
    _INPUT = {"gzip": 1 << 16, "bzip2": 1 << 16, "xz": 1 << 16, "zstd": 1 << 9, "deflate": 1 << 16}

    def __init__(self, raw: BinaryIO, kind: str):
        self.raw = raw
        self.kind = kind
        self.consumed = 0  # compressed bytes read, for the ratio check
        self._obj = self._new()
        self._input = b""
        self._flushed = False
        self._capped = False  # the last call returned as much as it was allowed to
        self._pending_error: BaseException | None = None

    def _new(self):
        if self.kind == "gzip":
            return _zlib.decompressobj(31)
        if self.kind == "deflate":  # one raw deflate stream (a zip member), nothing after it
            return zlib.decompressobj(-15)
        if self.kind == "bzip2":
            return bz2.BZ2Decompressor()
        if self.kind == "xz":
            return lzma.LZMADecompressor()
        if _zstd is None:
            raise LimitExceeded("zstd support is not installed (pip install zstandard)")
        return _zstd.ZstdDecompressor().decompressobj()

    def readable(self) -> bool:
        return True

    def _feed(self) -> bytes:
        data = self.raw.read(self._INPUT[self.kind])
        self.consumed += len(data)
        return data

    def read(self, size: int = -1) -> bytes:
        size = PIECE if size is None or size < 0 else size
        while True:
            if self._obj.eof and self.kind == "deflate":
                return b""
            if self._obj.eof:
                # At the end of a stream zlib leaves what follows in unused_data (and, when the
                # output cap was hit too, the same bytes in unconsumed_tail): take it once.
                rest = self._obj.unused_data
                self._input = b""
                if not rest:
                    rest = self._feed()
                if not rest or not rest.strip(b"\x00"):
                    return b""  # clean end (gzip may be followed by zero padding)
                self._obj = self._new()  # the next gzip member or bzip2/xz/zstd stream
                self._input = rest
                continue
            data, self._input = self._input, b""
            if not data and self._capped and self.kind != "zstd":
                # The last call hit the output cap: inflate may still hold output (ISA-L keeps
                # it inside, not in unconsumed_tail). Drain it before asking for more input.
                out = self._obj.decompress(b"", size)
                self._capped = len(out) >= size
                if out:
                    return out
            if not data and getattr(self._obj, "needs_input", True):
                if self._pending_error is not None:
                    error, self._pending_error = self._pending_error, None
                    raise error
                try:
                    data = self._feed()
                except Exception as exc:  # noqa: BLE001 - the layer below broke: flush, then fail
                    self._pending_error = exc
                    data = b""
                if not data:
                    # Cut off: hand out what inflate still holds, then say so.
                    tail = b"" if self._flushed or not hasattr(self._obj, "flush") else self._obj.flush()
                    self._flushed = True
                    if tail:
                        return tail
                    if self._pending_error is not None:
                        error, self._pending_error = self._pending_error, None
                        raise error
                    raise EOFError("compressed file ended before the end-of-stream marker was reached")
            if self.kind == "zstd":
                out = self._obj.decompress(data)
            else:
                out = self._obj.decompress(data, size)
                self._input = getattr(self._obj, "unconsumed_tail", b"")
                self._capped = len(out) >= size
            if out:
                return out

    def leftover(self) -> bytes:
        """Bytes read past the end of a single deflate stream."""
        return self._obj.unused_data if self._obj.eof else b""

    def readinto(self, buffer) -> int:
        data = self.read(len(buffer))
        buffer[: len(data)] = data
        return len(data)


@dataclass
class Leaf:
    """One plain-text log stream to scan."""

    name: str
    stream: BinaryIO
    mtime: float | None = None  # the file's, or the archive member's own, modification time


def strip_compression_suffix(name: str) -> str:
    for suffix in (".tgz", ".tbz2", ".txz"):
        if name.endswith(suffix):
            return name[: -len(suffix)] + ".tar"
    for suffix in (".gz", ".bz2", ".xz", ".zst", ".zstd"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


class Unpacker:
    """Walks one top-level input down to its text streams."""

    def __init__(self, limits: Limits, selection: Selection, skipped: list[Skipped]):
        self.limits = limits
        self.selection = selection
        self.skipped = skipped
        self.excluded = 0  # streams left out by --include/--exclude

    def leaves(self, name: str, raw: BinaryIO, path: str | None = None, mtime: float | None = None) -> Iterator[Leaf]:
        """Text streams inside `raw` (an opened top-level input). The consumer must read each
        leaf before asking for the next: archives are read as one forward stream."""
        budget = Budget(self.limits)
        self._mtimes = [mtime]  # the innermost archive member's mtime is the one that counts
        # A file read as it is loses nothing to a failed big read, so it is read in whole blocks;
        # decompressed layers below are read in small pieces.
        yield from self._expand(name, SafeStream(raw, piece=1 << 30), budget, 0, path)

    def _skip(self, name: str, reason: str) -> None:
        self.skipped.append(Skipped(printable(name), reason))

    def _expand(self, name: str, stream: SafeStream, budget: Budget, depth: int, path: str | None) -> Iterator[Leaf]:
        if depth > MAX_DEPTH:
            self._skip(name, f"archives nested deeper than {MAX_DEPTH} levels")
            return
        try:
            kind = sniff(stream, name)
        except LimitExceeded as exc:
            self._skip(name, str(exc))
            return
        if kind in ("gzip", "bzip2", "xz", "zstd"):
            try:
                inner = Decompressed(stream, kind)
            except LimitExceeded as exc:
                self._skip(name, str(exc))
                return
            yield from self._expand(name, SafeStream(inner, budget, lambda: inner.consumed), budget, depth + 1, None)
            return
        if kind == "tar":
            yield from self._tar(name, stream, budget, depth)
            return
        if kind.startswith("utf-16"):
            stream = SafeStream(Utf16ToUtf8(stream, kind), budget)
        if kind == "zip":
            yield from self._zip(name, stream, budget, depth, path)
            return
        if self.selection.wanted(name):
            yield Leaf(name, stream, self._mtimes[-1])
        else:
            self.excluded += 1

    # -- tar ------------------------------------------------------------------------------
    def _tar(self, name: str, stream: SafeStream, budget: Budget, depth: int) -> Iterator[Leaf]:
        # tarfile reads whole 10 kB records and drops a partial one when the stream below breaks;
        # a break is turned into an end of data here, so the member in reading keeps its bytes.
        soft = _SoftEnd(stream)
        try:
            yield from self._tar_members(name, soft, budget, depth)
        finally:
            if soft.error is not None:
                self._skip(name, f"archive ends early: {_why(soft.error)}")

    def _tar_members(self, name: str, stream: BinaryIO, budget: Budget, depth: int) -> Iterator[Leaf]:
        try:
            # Stream mode: one forward pass, members in order. ignore_zeros lets it step over a
            # corrupt header to the next good one; the gap is reported below.
            archive = tarfile.open(fileobj=stream, mode="r|", ignore_zeros=True)
        except (tarfile.TarError, OSError, EOFError, zlib.error, LimitExceeded) as exc:
            self._skip(name, f"not a readable tar archive: {exc}")
            return
        expected = 0
        try:
            while True:
                try:
                    member = archive.next()
                except READ_ERRORS as exc:
                    if not budget.broken and stream.error is None:  # not already reported
                        self._skip(name, f"archive is truncated or corrupt after offset {expected}: {_why(exc)}")
                    return
                if member is None:
                    return
                if member.offset > expected:
                    self._skip(f"{name}!@{expected}", f"corrupt tar data skipped ({member.offset - expected} bytes "
                                                      f"before member {member.name})")
                expected = member.offset_data + (-(-member.size // 512) * 512 if member.isreg() else 0)
                if not member.isreg():
                    continue
                child = f"{name}!{printable(_clean_member(member.name))}"
                if self.selection.excluded(child):
                    self.excluded += 1
                    continue
                yield from self._member(child, _TarMember(archive, member), budget, depth, mtime=member.mtime or None)
        finally:
            archive.close()

    def _member(self, child: str, handle: BinaryIO, budget: Budget, depth: int, piece: int = PIECE,
                mtime: float | None = None) -> Iterator[Leaf]:
        """Expand one archive member; a failure inside it is charged to the member."""
        stream = SafeStream(handle, budget, piece=piece)
        self._mtimes.append(mtime or self._mtimes[-1])
        try:
            yield from self._expand(child, stream, budget, depth + 1, None)
        except READ_ERRORS as exc:
            self._skip(child, _why(exc))
        finally:
            self._mtimes.pop()

    # -- zip ------------------------------------------------------------------------------
    def _zip(self, name: str, stream: SafeStream, budget: Budget, depth: int, path: str | None) -> Iterator[Leaf]:
        if path is not None:
            source: BinaryIO = open(path, "rb")  # a zip on disk: read it in place
        else:  # a zip inside something else: zip needs random access, so spool it
            source = tempfile.SpooledTemporaryFile(max_size=SPOOL_IN_MEMORY)
            try:
                while chunk := stream.read(1 << 20):
                    source.write(chunk)
            except (LimitExceeded, OSError, EOFError, zlib.error) as exc:
                self._skip(name, f"cannot read zip archive: {_why(exc)}")
                source.close()
                return
            source.seek(0)
        try:
            try:
                archive = zipfile.ZipFile(source)
            except (zipfile.BadZipFile, OSError, ValueError) as exc:
                # No central directory (a download cut short): walk the local headers instead.
                self._skip(name, f"zip directory unreadable ({_why(exc)}); members read from their local headers")
                yield from self._zip_local(name, source, budget, depth)
                return
            with archive:
                for info in sorted(archive.infolist(), key=lambda i: i.header_offset):
                    if info.is_dir():
                        continue
                    child = f"{name}!{printable(_clean_member(info.filename))}"
                    if self.selection.excluded(child):
                        self.excluded += 1
                        continue
                    if info.flag_bits & 0x1:
                        self._skip(child, "encrypted zip member")
                        continue
                    if info.file_size > self.limits.max_bytes - budget.expanded:
                        self._skip(child, f"member of {info.file_size} bytes is over what is left of the "
                                          f"decompression limit ({self.limits.max_bytes} bytes per input)")
                        continue
                    if info.compress_size and info.file_size > self.limits.ratio_floor and \
                            info.file_size / info.compress_size > self.limits.max_ratio:
                        self._skip(child, f"compression ratio over {self.limits.max_ratio:g}:1 (decompression bomb?)")
                        continue
                    try:
                        handle = archive.open(info)
                    except (zipfile.BadZipFile, NotImplementedError, OSError, ValueError, RuntimeError) as exc:
                        self._skip(child, f"cannot open zip member: {_why(exc)}")
                        continue
                    with handle:
                        # zipfile drops what a failing read(n) had decompressed: read small.
                        yield from self._member(child, handle, budget, depth, piece=4096,
                                                mtime=_zip_mtime(info))
        finally:
            source.close()


    def _zip_local(self, name: str, source: BinaryIO, budget: Budget, depth: int) -> Iterator[Leaf]:
        """Members of a zip without its central directory, in file order, from the local file
        headers: stored and deflated members; the first one that cannot be delimited ends it."""
        source.seek(0)
        while True:
            header = source.read(30)
            if len(header) < 30 or header[:4] != b"PK\x03\x04":
                return
            flags, method, csize, nlen, xlen = (struct.unpack("<H", header[6:8])[0], struct.unpack("<H", header[8:10])[0],
                                                struct.unpack("<I", header[18:22])[0],
                                                *struct.unpack("<HH", header[26:30]))
            raw_name = source.read(nlen)
            source.read(xlen)
            if len(raw_name) < nlen or any(b < 32 for b in raw_name) or flags & ~0x0FFF:
                return  # not a member header after all: garbage after a "PK" signature
            child = f"{name}!{printable(_clean_member(raw_name.decode('utf-8' if flags & 0x800 else 'cp437', 'replace')))}"
            sized = not flags & 0x8  # else the sizes come after the data
            if flags & 0x1 or method not in (0, 8) or (method == 0 and not sized):
                reason = "encrypted zip member" if flags & 0x1 else f"zip member with compression method {method}"
                self._skip(child, reason)
                if not sized:
                    return
                source.seek(csize, io.SEEK_CUR)
                continue
            if child.endswith("/"):
                source.seek(csize if sized else 0, io.SEEK_CUR)
                continue
            start = source.tell()
            body: BinaryIO = _Window(source, csize) if method == 0 else Decompressed(source, "deflate")
            if not self.selection.excluded(child):
                yield from self._member(child, body, budget, depth, piece=PIECE)
            else:
                self.excluded += 1
            if method == 8:
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


class _SoftEnd(io.RawIOBase):
    """Reads a stream until it breaks; the break reads as the end of the data, and is kept."""

    def __init__(self, stream: BinaryIO):
        self.stream = stream
        self.error: BaseException | None = None

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.error is not None:
            return b""
        try:
            return self.stream.read(size)
        except READ_ERRORS as exc:
            self.error = exc
            return b""


class _Window(io.RawIOBase):
    """`size` bytes of a stream from where it stands."""

    def __init__(self, stream: BinaryIO, size: int):
        self.stream, self.remaining = stream, size

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self.stream.read(size) if size > 0 else b""
        self.remaining -= len(data)
        if size and not data:
            raise EOFError("zip member data ends early")
        return data


class _TarMember(io.RawIOBase):
    """A tar member's data read straight from the archive stream. Unlike `extractfile`, a short
    read at a truncated end still delivers the bytes that are there before it fails."""

    def __init__(self, archive: tarfile.TarFile, member: tarfile.TarInfo):
        self.stream = archive.fileobj
        self.start = member.offset_data
        self.remaining = member.size

    def readable(self) -> bool:
        return True

    def read(self, size: int = -1) -> bytes:
        if self.start is not None:
            self.stream.seek(self.start)  # forward only: the stream skips to the member's data
            self.start = None
        if self.remaining <= 0:
            return b""
        size = self.remaining if size is None or size < 0 else min(size, self.remaining)
        data = self.stream.read(size)
        if not data:
            raise tarfile.ReadError(f"unexpected end of data ({self.remaining} bytes of the member missing)")
        self.remaining -= len(data)
        return data


def printable(name: str, limit: int = 300) -> str:
    """A file or member name fit for a report line: bytes that are not UTF-8 (kept by Python as
    surrogates, e.g. GBK names from a Chinese-locale host) shown as U+FFFD, control characters
    as `?`, clipped."""
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    clean = "".join("?" if ord(ch) < 32 or ord(ch) == 127 else ch for ch in name)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def _zip_mtime(info: zipfile.ZipInfo) -> float | None:
    try:
        return float(calendar.timegm(info.date_time + (0, 0, 0)))
    except (OverflowError, ValueError):
        return None


def _clean_member(member: str) -> str:
    """`./root/x.log` -> `root/x.log`: the same member however the archive was made."""
    while member.startswith("./"):
        member = member[2:]
    return member.lstrip("/")


def _why(exc: BaseException) -> str:
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return text.rstrip(".")
