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


# -- 500,000 entries -----------------------------------------------------------------------------------
_LOCAL = struct.Struct("<4sHHHHHIIIHH")
_CENTRAL = struct.Struct("<4sHHHHHHIIIHHHHHII")


def _many_entries_zip(folders: int) -> bytes:
    """first.log (mark 1), `folders` folder entries, last.log (mark 2): a zip64 directory of
    folders + 2 entries. Built from packed headers: zipfile would take a minute."""
    local, central = bytearray(), bytearray()

    def add(name: bytes, data: bytes = b"", method: int = 0) -> None:
        stored = zlib.compress(data, 6)[2:-4] if method == 8 else data
        crc = zlib.crc32(data)
        central.extend(_CENTRAL.pack(b"PK\x01\x02", 45, 20, 0, method, 0, 0x5B6C, crc, len(stored), len(data),
                                     len(name), 0, 0, 0, 0, 0x10 if name.endswith(b"/") else 0, len(local)) + name)
        local.extend(_LOCAL.pack(b"PK\x03\x04", 20, 0, method, 0, 0x5B6C, crc, len(stored), len(data), len(name), 0)
                     + name + stored)

    add(b"first.log", planted(1), 8)
    offset = len(local)
    names = [b"d/%06d/" % i for i in range(folders)]
    local.extend(b"".join(_LOCAL.pack(b"PK\x03\x04", 20, 0, 0, 0, 0x5B6C, 0, 0, 0, 9, 0) + n for n in names))
    central.extend(b"".join(_CENTRAL.pack(b"PK\x01\x02", 45, 20, 0, 0, 0, 0x5B6C, 0, 0, 0, 9, 0, 0, 0, 0, 0x10,
                                          offset + 39 * i) + n for i, n in enumerate(names)))
    add(b"last.log", planted(2), 8)
    entries, start, size = folders + 2, len(local), len(central)
    zip64_end = start + size
    tail = struct.pack("<4sQHHLLQQQQ", b"PK\x06\x06", 44, 45, 45, 0, 0, entries, entries, size, start)
    tail += struct.pack("<4sLQL", b"PK\x06\x07", 0, zip64_end, 1)
    tail += struct.pack("<4sHHHHLLH", b"PK\x05\x06", 0, 0, 0xFFFF, 0xFFFF, size, start, 0)
    return bytes(local + central + tail)


@pytest.fixture(scope="module")
def many_entries(tmp_path_factory):
    path = tmp_path_factory.mktemp("many") / "bundle.tar.gz"
    path.write_bytes(_tar_gz({"before.log": planted(0), "huge.zip": _many_entries_zip(499_998),
                              "after.log": planted(3)}))
    return path


def test_zip_of_500000_entries_is_read_from_its_local_headers(many_entries):
    code, report, stderr = scan(many_entries)
    assert marks(report) == [0, 1, 2, 3], (reasons(report), stderr)
    refused = reasons(report)
    assert len(refused) == 1, refused
    assert refused[0].startswith(f"{many_entries}!huge.zip: zip of 500000 members"), refused
    assert "directory refused" in refused[0] and "local headers" in refused[0], refused
    assert code == 1
    assert scan(many_entries, "--strict")[0] == 2


def test_local_header_walk_stops_at_its_time_guard(many_entries, monkeypatch):
    from analyzer.inputs import archives

    monkeypatch.setattr(archives, "LOCAL_WALK_SECONDS", 0.0)
    code, report, stderr = scan(many_entries)
    assert {0, 1, 3} <= set(marks(report)), (reasons(report), stderr)  # what comes before and after the zip
    assert any("time guard" in r for r in reasons(report)), reasons(report)
    assert code == 1


# -- member names that are not UTF-8 -----------------------------------------------------------------
GBK_NAME = "日志-1.log".encode("gbk")  # a Chinese-locale Windows zip: GBK bytes, no UTF-8 flag


def _zip_with_gbk_name(cut_directory: bool = False) -> bytes:
    placeholder = b"X" * (len(GBK_NAME) - len(b"-1.log")) + b"-1.log"
    raw = _zip({placeholder.decode(): planted(1) + planted(2), "b.log": planted(3)})
    assert raw.count(placeholder) == 2  # local and central header; the flag is off (an ASCII name)
    raw = raw.replace(placeholder, GBK_NAME)
    return raw[: raw.index(b"PK\x01\x02")] if cut_directory else raw


@pytest.mark.parametrize("where", ["on disk", "in a tar.gz", "without its directory"])
def test_zip_member_name_not_utf8_is_read_as_cp437(tmp_path, where):
    data = _zip_with_gbk_name(cut_directory=where == "without its directory")
    path = tmp_path / ("bundle.tar.gz" if where == "in a tar.gz" else "bundle.zip")
    path.write_bytes(_tar_gz({"logs.zip": data}) if where == "in a tar.gz" else data)
    code, report, stderr = scan(path)
    assert marks(report) == [1, 2, 3], (reasons(report), stderr)
    shown = GBK_NAME.decode("cp437")
    sources = {f["source"].rsplit("!", 1)[1] for f in report["findings"]}
    assert sources == {shown, "b.log"}, sources
    notes = reasons(report, "notes")
    assert any(shown in n and "CP437" in n and "\\xc8\\xd5\\xd6\\xbe" in n for n in notes), notes  # its bytes
    assert code == 1


def test_compression_layers_do_not_count_as_levels_but_are_bounded(tmp_path):
    data = planted(1)
    for _ in range(12):  # a gzip of a gzip ... of a log: 12 layers, no archive
        data = gzip.compress(data, 1)
    (tmp_path / "deep.log.gz").write_bytes(data)
    for _ in range(20):  # 32 layers: past MAX_LAYERS (a gzip quine would never end)
        data = gzip.compress(data, 1)
    (tmp_path / "deeper.log.gz").write_bytes(data)
    (tmp_path / "plain.log").write_bytes(planted(2))
    code, report, stderr = scan(tmp_path)
    assert marks(report) == [1, 2] and code == 1, stderr
    refused = reasons(report)
    assert len(refused) == 1 and "deeper.log.gz: more than 27 layers of compression and archives" in refused[0]
    assert scan(tmp_path, "--strict")[0] == 2
