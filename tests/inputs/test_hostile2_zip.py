"""Issue #18, zip: zips nested 8 levels deep inside a tar.gz (each spooled) are all read; a zip of
500,000 entries has its directory refused and its members read from their local headers; a member
name that is not UTF-8 and has no UTF-8 flag is read as CP437, its bytes kept visible."""

from __future__ import annotations

import gzip
import io
import struct
import tarfile
import zipfile
import zlib

import pytest

from planted import marks, planted, reasons, scan


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_762_905_600
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), 1)


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _nested(levels: int) -> bytes:
    """level-1.zip holding log-1.log (mark 1) and level-2.zip, ..., level-N.zip holding log-N.log."""
    inner = _zip({f"log-{levels}.log": planted(levels)})
    for level in range(levels - 1, 0, -1):
        inner = _zip({f"log-{level}.log": planted(level), f"level-{level + 1}.zip": inner})
    return inner


def test_zips_nested_8_deep_in_a_tar_gz_are_all_read(tmp_path):
    bundle = tmp_path / "bundle.tar.gz"
    bundle.write_bytes(_tar_gz({"top.log": planted(0), "level-1.zip": _nested(8)}))
    code, report, stderr = scan(bundle)
    assert marks(report) == list(range(9)), (reasons(report), stderr)  # 9 planted lines, all found
    assert report["inputs"]["skipped"] == []
    assert code == 1


def test_zips_nested_deeper_than_8_say_which_level_was_cut(tmp_path):
    bundle = tmp_path / "bundle.tar.gz"
    bundle.write_bytes(_tar_gz({"top.log": planted(0), "level-1.zip": _nested(10)}))
    code, report, stderr = scan(bundle)
    assert marks(report) == list(range(9)), (reasons(report), stderr)  # levels 1 to 8 read
    refused = reasons(report)
    assert len(refused) == 1, refused
    assert "level-9.zip: zip archive at nesting level 9" in refused[0] and "deeper than 8" in refused[0], refused
    assert code == 1
    assert scan(bundle, "--strict")[0] == 2
