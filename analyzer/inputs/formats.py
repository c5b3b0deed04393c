"""Formats: THE table of what an input can be, and how each kind is recognised and opened.

Stage: inputs (format detection). One row per format: compressions (gzip, also multi-member;
bzip2; xz; zstd), archives (tar in any compression, zip) and text encodings. A format is
recognised by its first bytes, not by its name; the name only breaks one tie (an empty tar).
Sniffing, suffix stripping (selection globs, node names in `layout`) and the unpacker all read
this table, in its order: to add a compression, add its `Codec` and one row here.

Imports point one way: `formats` (the table) -> `archives` (walkers) -> `codecs` -> `streams`.
Neither `codecs` nor `archives` imports this module: what both the table and a codec need
(`looks_utf16`, `looks_utf32`, `still_wide`, which tell wide text from a plain log) live in `codecs`.
"""

from __future__ import annotations

import bz2
import lzma
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from . import archives
from .codecs import (
    LONE_SURROGATE,
    Codec,
    Decompressed,
    Decompressor,
    looks_utf16,
    looks_utf32,
    reads_as_text,
    still_wide,
)
from .streams import LimitExceeded, Reader

_zlib: Any
try:  # ISA-L's inflate is about twice as fast (perf.md); the stdlib gives the same bytes.
    from isal import isal_zlib as _zlib
except ImportError:  # pragma: no cover - depends on the platform
    _zlib = zlib

_zstd: Any
try:
    import zstandard as _zstd
except ImportError:  # pragma: no cover
    _zstd = None

SNIFF_BYTES = 512  # bytes sniffed: one tar header block


class Peekable(Protocol):
    def peek(self, size: int) -> bytes: ...


@dataclass(frozen=True)
class Format:
    """One row of the table. Exactly one of `codec`, `walk`, `encoding`, `unsupported` is set,
    except for plain text, which has none."""

    name: str
    test: Callable[[bytes, str], bool]  # (first SNIFF_BYTES bytes, name) -> is it this format?
    suffixes: tuple[str, ...] = ()  # file-name suffixes, stripped from names (`x.log.gz` -> `x.log`)
    tar_suffixes: tuple[str, ...] = ()  # short for `.tar` + a suffix (`.tgz`)
    codec: Codec | None = None  # a compression: decompress, then look again
    walk: archives.Walker | None = None  # an archive: read its members
    encoding: str | None = None  # text in an encoding other than UTF-8 / ASCII
    unsupported: str | None = None  # a format recognised but not read: why it is skipped


# -- decompressors and tests ---------------------------------------------------------------------
def _gzip() -> Decompressor:
    return _zlib.decompressobj(31)  # looked up per stream: tests swap ISA-L for the stdlib


def _zstd_decompressor() -> Decompressor:
    if _zstd is None:
        raise LimitExceeded("zstd support is not installed (pip install zstandard)")
    return _zstd.ZstdDecompressor().decompressobj()


def _magic(*prefixes: bytes) -> Callable[[bytes, str], bool]:
    return lambda head, name: head.startswith(prefixes)


def _is_bzip2(head: bytes, name: str) -> bool:
    return head.startswith(b"BZh") and len(head) > 3 and head[3:4].isdigit()


def _is_tar(head: bytes, name: str) -> bool:
    if len(head) >= 262 and head[257:262] == b"ustar":
        return True
    if len(head) == SNIFF_BYTES and _old_tar_checksum_ok(head):
        return True
    # An empty tar archive is nothing but zero blocks: only its name tells.
    return len(head) == SNIFF_BYTES and not head.strip(b"\x00") and strip_compression_suffix(name).endswith(".tar")


def _old_tar_checksum_ok(block: bytes) -> bool:
    """A pre-POSIX (v7) tar header: its checksum field is right."""
    try:
        stored = int(block[148:156].split(b"\x00", 1)[0].strip() or b"-1", 8)
    except ValueError:
        return False
    computed = sum(block[:148]) + 8 * 32 + sum(block[156:])
    return stored == computed and block[0] != 0


def _mostly_zero(zeros: bytes, text: bytes) -> bool:
    """UTF-16 without a BOM: ASCII text with every other byte NUL (and the rest not)."""
    if len(zeros) < 16:
        return False
    return zeros.count(0) >= 0.9 * len(zeros) and text.count(0) <= 0.1 * len(text)


def _is_utf32_le(head: bytes, name: str) -> bool:
    if head.startswith(b"\xff\xfe\x00\x00"):
        return looks_utf32(head[4:], True)
    return _utf32_without_bom(head, True)


def _is_utf32_be(head: bytes, name: str) -> bool:
    if head.startswith(b"\x00\x00\xfe\xff"):
        return looks_utf32(head[4:], False)
    return _utf32_without_bom(head, False)


def _utf32_without_bom(head: bytes, little: bool) -> bool:
    """UTF-32 without a BOM: a NUL as every fourth byte (the top byte of each unit), units that are
    characters, and text, not the small numbers of a binary file."""
    head = head[: len(head) // 4 * 4]
    top = head[3::4] if little else head[0::4]
    if len(top) < 4 or top.count(0) < 0.9 * len(top) or not looks_utf32(head, little):
        return False
    return reads_as_text(head.decode("utf-32-le" if little else "utf-32-be", "ddtriage-bad-unit"))


def _utf16_after_bom(data: bytes, little: bool) -> bool:
    """What follows a UTF-16 BOM is UTF-16: ASCII-rich (`looks_utf16`), or text of another script
    (a Chinese first line) that is no plain log: no UTF-8, even without its NULs (a plain log
    that starts with FF FE 00 00 is UTF-8 once those are gone)."""
    if looks_utf16(data, little):
        return True
    data = data[: len(data) // 2 * 2]
    if len(data) < 4 or not still_wide(data.replace(b"\x00", b"")):
        return False
    text = data.decode("utf-16-le" if little else "utf-16-be", "ddtriage-bad-unit")
    return len(LONE_SURROGATE.findall(text)) <= max(1, len(text) // 16) and reads_as_text(text)


def _is_utf16_le(head: bytes, name: str) -> bool:
    if head.startswith(b"\xff\xfe"):
        return _utf16_after_bom(head[2:], True)
    return _mostly_zero(head[1::2], head[0::2])


def _is_utf16_be(head: bytes, name: str) -> bool:
    if head.startswith(b"\xfe\xff"):
        return _utf16_after_bom(head[2:], False)
    return _mostly_zero(head[0::2], head[1::2])


def _gzip_header_ok(head: bytes) -> bool:
    """RFC 1952: deflate (CM 8), and the reserved flag bits zero (ISA-L ignores them; zlib and
    gzip refuse the file). A plain log that starts with the magic bytes fails here."""
    return len(head) < 4 or (head[2] == 8 and head[3] & 0xE0 == 0)


def _decodes(codec: Codec, head: bytes) -> bool:
    """Whether a compression's decoder accepts the first bytes (magic bytes alone prove nothing:
    a plain log may start with `BZh9`)."""
    if codec.header_ok is not None and not codec.header_ok(head):
        return False
    try:
        obj = codec.new()
    except LimitExceeded:
        return True  # its library is missing: the unpacker says so
    try:
        if codec.bounded:
            obj.decompress(head, 1 << 16)
        else:
            obj.decompress(head[:512])
    except Exception:  # noqa: BLE001 - zlib, bz2, lzma and zstd each raise their own
        return False
    return True


# -- THE table: tried in this order; the last row always matches ----------------------------------
FORMATS: tuple[Format, ...] = (
    Format("gzip", _magic(b"\x1f\x8b"), (".gz",), (".tgz",),
           codec=Codec(_gzip, header_ok=_gzip_header_ok, starts=(b"\x1f\x8b",))),
    Format("bzip2", _is_bzip2, (".bz2",), (".tbz2",), codec=Codec(bz2.BZ2Decompressor, starts=(b"BZh",))),
    Format("xz", _magic(b"\xfd7zXZ\x00"), (".xz",), (".txz",),
           codec=Codec(lzma.LZMADecompressor, starts=(b"\xfd7zXZ\x00",))),
    # zstd cannot cap its output per call, so it is fed less. A frame or a skippable frame follows a frame.
    Format("zstd", _magic(b"\x28\xb5\x2f\xfd"), (".zst", ".zstd"),
           codec=Codec(_zstd_decompressor, feed=1 << 9, bounded=False,
                       starts=(b"\x28\xb5\x2f\xfd", *(bytes([0x50 + i, 0x2A, 0x4D, 0x18]) for i in range(16))))),
    Format("zip", _magic(b"PK\x03\x04", b"PK\x05\x06"), (".zip",), walk=archives.walk_zip),
    Format("tar", _is_tar, (".tar",), walk=archives.walk_tar),
    # Compressed archives no stdlib module opens: read as text they hold no visible code, and a
    # gate would pass on a bundle it never read. Skipped (so --strict fails), with what to do.
    Format("7z", _magic(b"7z\xbc\xaf\x27\x1c"), (".7z",), unsupported="7z archive: not supported; unpack it first"),
    Format("rar", _magic(b"Rar!\x1a\x07\x00", b"Rar!\x1a\x07\x01\x00"), (".rar",),
           unsupported="RAR archive: not supported; unpack it first"),
    # UTF-32 before UTF-16: its little-endian BOM starts like UTF-16's
    Format("utf-32-le", _is_utf32_le, encoding="utf-32-le"),
    Format("utf-32-be", _is_utf32_be, encoding="utf-32-be"),
    Format("utf-16-le", _is_utf16_le, encoding="utf-16-le"),
    Format("utf-16-be", _is_utf16_be, encoding="utf-16-be"),
    Format("text", lambda head, name: True),
)
BY_NAME: dict[str, Format] = {f.name: f for f in FORMATS}


def detect(head: bytes, name: str = "") -> Format:
    """The format of a stream that starts with `head` (its first SNIFF_BYTES bytes). A compression is
    chosen only when its decoder accepts those bytes; else the table goes on (to plain text)."""
    return next(f for f in FORMATS if f.test(head, name) and (f.codec is None or _decodes(f.codec, head)))


ZIP_END = b"PK\x05\x06"  # a zip's end-of-central-directory record: 22 bytes and its comment, last in the file


def zip_after_prefix(head: bytes, name: str, path: str | None) -> bool:
    """Whether a regular file that does not start like a zip ends like one: a self-extracting zip,
    or a zip with a header put before it (zip readers, `unzip` too, find its members from its end).
    Asked only of a name ending `.zip`, or of a head that is not text (a NUL, an executable's
    magic): a plain log costs no extra read."""
    if path is None or not (name.lower().endswith(".zip") or b"\x00" in head or head.startswith((b"MZ", b"\x7fELF"))):
        return False
    try:
        with open(path, "rb") as handle:
            size = handle.seek(0, 2)
            tail = min(size, 22 + 0xFFFF)
            handle.seek(size - tail)
            data = handle.read(tail)
    except OSError:
        return False
    at = data.rfind(ZIP_END)
    # the record's comment (its length at offset 20) must reach exactly to the file's end
    return at != -1 and len(data) - at >= 22 and at + 22 + int.from_bytes(data[at + 20:at + 22], "little") == len(data)


def lookalike(head: bytes, name: str = "") -> str | None:
    """The compression whose magic bytes `head` starts with but whose decoder refuses it, if any."""
    return next((f.name for f in FORMATS if f.codec is not None and f.test(head, name)
                 and not _decodes(f.codec, head)), None)


def lookalike_note(head: bytes, name: str = "") -> str | None:
    """The note of a stream read as plain text although it starts like a compressed file (`lookalike`),
    or None."""
    fake = lookalike(head[:SNIFF_BYTES], name)
    return f"starts like {fake} but does not decode as {fake}; read as plain text" if fake else None


def sniff(stream: Peekable, name: str = "") -> str:
    """Format name of a stream from its first bytes: gzip, bzip2, xz, zstd, zip, tar, 7z, rar,
    utf-16-le, utf-16-be or text. The name only breaks one tie: an empty tar archive is nothing but zero
    blocks."""
    return detect(stream.peek(SNIFF_BYTES), name).name


def strip_compression_suffix(name: str) -> str:
    """`x.log.gz` -> `x.log`, `x.tgz` -> `x.tar`: the name without its compression suffix."""
    for fmt in FORMATS:
        for suffix in fmt.tar_suffixes:
            if name.endswith(suffix):
                return name[: -len(suffix)] + ".tar"
    for fmt in FORMATS:
        if fmt.codec is not None:
            for suffix in fmt.suffixes:
                if name.endswith(suffix):
                    return name[: -len(suffix)]
    return name


def strip_archive_suffix(name: str) -> str:
    """`node-2.tar` -> `node-2`, in any letter case: an archive named as the folder it holds."""
    for fmt in FORMATS:
        if fmt.walk is not None:
            for suffix in fmt.suffixes:
                if len(name) >= len(suffix) and name[-len(suffix):].lower() == suffix:
                    return name[: -len(suffix)]
    return name


def decompressed(raw: Reader, name: str) -> Decompressed:
    """`raw` decompressed, by the table's name for its compression ("gzip", "zstd", …)."""
    codec = BY_NAME[name].codec
    if codec is None:
        raise ValueError(f"{name} is not a compression format")
    return Decompressed(raw, codec)
