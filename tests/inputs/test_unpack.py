"""Hostile input, compression bombs: the ratio guard counts over every layer and member, a zip
whose entries share one member's data is caught, and a zip directory too big to hold is refused.
Every bomb here is made lazily from highly compressible data, in well under a second.
"""

from __future__ import annotations

import io
import struct
import time
import zipfile
import zlib

from hostile import line, numbers, scan_json


def _gzip(data_chunks, level: int = 9) -> bytes:
    gz = zlib.compressobj(level, zlib.DEFLATED, 31)
    return b"".join(gz.compress(c) for c in data_chunks) + gz.flush()


def test_gzip_of_gzip_is_stopped_over_all_layers(tmp_path):
    # Inner: 64 MiB of NULs (~1000:1, deflate's most), outer: gzip of that; each layer stays under
    # the 2000:1 guard, the two together are far over it.
    inner = _gzip(b"\x00" * (1 << 20) for _ in range(64))
    path = tmp_path / "bomb.log.gz.gz"
    path.write_bytes(_gzip([inner]))
    start = time.perf_counter()
    code, report, stderr = scan_json(path)
    assert time.perf_counter() - start < 20
    assert "over all layers passed 2000:1" in stderr
    assert report["inputs"]["bytes"] < 48 << 20  # stopped early, not after 64 MiB


def _overlapping_zip(copies: int) -> bytes:
    """A zip whose `copies` directory entries all point at one local member."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("app.log", line(1) * 20)
    raw = buf.getvalue()
    cd_at = raw.rindex(b"PK\x01\x02")
    end_at = raw.rindex(b"PK\x05\x06")
    entry = raw[cd_at:end_at]  # names must match the one local header: all are `app.log`
    entries = [entry] * copies
    cd = b"".join(entries)
    end = raw[end_at:end_at + 22]
    count = min(copies, 0xFFFF)  # the directory itself holds them all (zipfile reads by its size)
    end = end[:8] + struct.pack("<HHII", count, count, len(cd), cd_at) + end[20:]
    return raw[:cd_at] + cd + end


def test_zip_entries_overlapping_one_member_are_caught(tmp_path):
    path = tmp_path / "overlap.zip"
    path.write_bytes(_overlapping_zip(150))
    code, report, stderr = scan_json(path)
    assert code == 1
    assert len(report["findings"]) == 20  # one member's lines, once; not 150 times
    assert numbers(report) == [1] * 20
    assert "overlaps the one before it (a zip bomb?)" in stderr


def test_zip_with_half_a_million_entries_is_refused(tmp_path):
    path = tmp_path / "many.zip"
    path.write_bytes(_overlapping_zip(500_000))
    start = time.perf_counter()
    code, report, stderr = scan_json(path)
    assert time.perf_counter() - start < 10
    assert "directory of" in stderr and "zip bomb" in stderr
