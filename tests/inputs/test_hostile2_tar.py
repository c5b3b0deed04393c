"""Issue #18, tar: a member with a 300 MiB pax header or GNU long name is refused, and the members
after it are still read: the walk steps over the refused header by its declared size when that is
sane, else looks block by block for the next valid header. Nothing of 300 MiB is held: the archive
is a multi-member gzip whose middle is one small gzip of 1 MiB repeated."""

from __future__ import annotations

import gzip
import tarfile

import pytest
from planted import marks, planted, reasons, scan

MIB = 1 << 20
HUGE = 300 * MIB


def _member(name: str, data: bytes) -> bytes:
    info = tarfile.TarInfo(name)
    info.size, info.mtime = len(data), 1_762_905_600
    return info.tobuf(tarfile.GNU_FORMAT) + data + b"\0" * (-len(data) % 512)


def _header(kind: str, size: int) -> bytes:
    info = tarfile.TarInfo("././@LongLink" if kind == "gnu" else "./PaxHeaders/x")
    info.type = tarfile.GNUTYPE_LONGNAME if kind == "gnu" else tarfile.XHDTYPE
    info.size = size
    return info.tobuf(tarfile.GNU_FORMAT)


def _hostile_tar_gz(kind: str, declared: int, stored: int) -> bytes:
    """a.log (mark 1), a `kind` header declaring `declared` bytes of which `stored` follow, the member
    it describes (mark 2), c.log (mark 3); gzip members, the stored bytes of 'a' in 1 MiB members."""
    prefix = f"{declared} path=".encode() if kind == "pax" else b""
    head = _member("a.log", planted(1)) + _header(kind, declared) + prefix
    one = gzip.compress(b"a" * MIB, 9)
    body, left = [], stored - len(prefix) - 1
    while left >= MIB:
        body.append(one)
        left -= MIB
    tail = b"a" * left + (b"\n" if kind == "pax" else b"\0") + b"\0" * (-stored % 512)
    tail += _member("named-by-its-long-header.log", planted(2)) + _member("c.log", planted(3)) + b"\0" * 1024
    return gzip.compress(head, 1) + b"".join(body) + gzip.compress(tail, 1)


@pytest.mark.parametrize("kind", ["gnu", "pax"])
def test_300_mib_header_is_stepped_over(tmp_path, kind):
    bundle = tmp_path / "bundle.tar.gz"
    bundle.write_bytes(_hostile_tar_gz(kind, HUGE, HUGE))
    assert bundle.stat().st_size < 2 * MIB
    code, report, stderr = scan(bundle)
    assert marks(report) == [1, 2, 3], (reasons(report), stderr)
    refused = reasons(report)
    assert len(refused) == 1, refused
    word = "GNU long name" if kind == "gnu" else "pax header"
    assert f"a {HUGE}-byte {word}" in refused[0] and "refused" in refused[0] and "declared size" in refused[0]
    assert refused[0].startswith(f"{bundle}!@"), refused
    assert code == 1
    assert scan(bundle, "--strict")[0] == 2  # a guard refused something


def test_header_whose_size_is_not_sane_is_scanned_past(tmp_path):
    bundle = tmp_path / "bundle.tar.gz"
    bundle.write_bytes(_hostile_tar_gz("gnu", 4 << 30, 2048))  # declares 4 GiB, holds 2 KiB
    code, report, stderr = scan(bundle)
    assert marks(report) == [1, 2, 3], (reasons(report), stderr)
    refused = reasons(report)
    assert any("not sane" in r and "next valid header" in r for r in refused), refused
    assert code == 1
    assert scan(bundle, "--strict")[0] == 2
