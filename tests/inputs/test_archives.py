"""Hostile input, archives: what `tar`, `unzip -p` and `zcat` show is scanned; valid but unusual
members (GNU sparse, pax) are read as stored; a bad CRC keeps its data with a warning; a zip from a
pipe is spooled; impossible declared sizes are corrupt headers, not hangs.

Issue #18, tar: a member with a 300 MiB pax header or GNU long name is refused, and the members
after it are still read: the walk steps over the refused header by its declared size when that is
sane, else looks block by block for the next valid header. Nothing of 300 MiB is held: the archive
is a multi-member gzip whose middle is one small gzip of 1 MiB repeated (folded from test_hostile2_tar.py).

Issue #18, zip: zips nested 8 levels deep inside a tar.gz (each spooled) are all read; a zip of
500,000 entries has its directory refused and its members read from their local headers; a member
name that is not UTF-8 and has no UTF-8 flag is read as CP437, its bytes kept visible (folded from test_hostile2_zip.py).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import shutil
import struct
import subprocess
import tarfile
import threading
import zipfile
import zlib

import pytest

from hostile import ddtriage, line, numbers, scan_json
from planted import marks, planted, reasons, scan

GNU_TAR = shutil.which("tar") and b"GNU tar" in subprocess.run(["tar", "--version"], capture_output=True).stdout


def lines(*numbers: int) -> bytes:
    return b"".join(line(n) for n in numbers)


@pytest.mark.skipif(not GNU_TAR, reason="needs GNU tar to make sparse members")
@pytest.mark.parametrize("fmt", ["gnu", "pax"])
def test_sparse_member_does_not_swallow_the_next(tmp_path, fmt):
    src = tmp_path / "src"
    src.mkdir()
    with open(src / "a-sparse.log", "wb") as out:  # data, a 1 MiB hole, data
        out.write(lines(1, 2))
        out.seek(1 << 20, os.SEEK_CUR)
        out.write(lines(3))
    (src / "b.log").write_bytes(lines(4, 5))
    archive = tmp_path / "bundle.tar"
    subprocess.run(["tar", f"--format={fmt}", "-S", "-cf", str(archive), "-C", str(src), "a-sparse.log", "b.log"],
                   check=True)
    code, report, stderr = scan_json(archive)
    assert code == 1
    assert numbers(report) == [1, 2, 3, 4, 5]
    assert report["inputs"]["skipped"] == [], report["inputs"]["skipped"]


def test_zip_member_with_a_bad_crc_keeps_its_last_lines(tmp_path):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("app.log", lines(*range(1, 2001)))
    raw = bytearray(buf.getvalue())
    crc = struct.pack("<I", zipfile.ZipFile(io.BytesIO(bytes(raw))).infolist()[0].CRC)
    raw = bytearray(bytes(raw).replace(crc, b"\xde\xad\xbe\xef"))  # local and central header
    path = tmp_path / "bad-crc.zip"
    path.write_bytes(bytes(raw))
    code, report, stderr = scan_json(path)
    assert numbers(report) == list(range(1, 2001))  # as `unzip -p` prints them
    assert "CRC mismatch" in stderr and "data was kept" in stderr


def _zip(*members: tuple[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def test_zip_piped_through_dev_stdin(tmp_path):
    data = _zip(("app.log", lines(1, 2, 3)))
    proc = subprocess.Popen(["sh", "-c", 'exec "$0" -m analyzer scan /dev/stdin --format json',
                             os.environ.get("PYTHON", __import__("sys").executable)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "PYTHONPATH": str(__import__("hostile").ROOT)})
    out, err = proc.communicate(data, timeout=60)
    assert proc.returncode == 1, err
    assert numbers(json.loads(out)) == [1, 2, 3]


def test_zip_given_as_a_fifo(tmp_path):
    fifo = tmp_path / "bundle.zip"
    os.mkfifo(fifo)
    data = _zip(("app.log", lines(1, 2)))

    def writer() -> None:
        with open(fifo, "wb") as out:
            out.write(data)

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    result = ddtriage("scan", fifo, "--format", "json", timeout=30)
    assert result.returncode == 1, result.stderr
    assert numbers(json.loads(result.stdout)) == [1, 2]


def _tar_with_sizes(size_field: bytes) -> bytes:
    """ok.log, then a member whose header declares `size_field` (raw 12 bytes), then last.log."""
    def header(name: str, size: bytes) -> bytes:
        block = bytearray(512)
        block[0:len(name)] = name.encode()
        block[100:108] = b"0000644\x00"
        block[124:136] = size
        block[136:148] = b"00000000000\x00"
        block[156:157] = b"0"
        block[257:263] = b"ustar\x00"
        block[263:265] = b"00"
        block[148:156] = b" " * 8
        block[148:156] = b"%06o\x00 " % sum(block)
        return bytes(block)

    def member(name: str, data: bytes) -> bytes:
        return header(name, b"%011o\x00" % len(data)) + data + b"\x00" * (-len(data) % 512)

    evil = lines(2)
    return (member("ok.log", lines(1)) + header("evil.log", size_field) + evil + b"\x00" * (-len(evil) % 512)
            + member("last.log", lines(3)) + b"\x00" * 1024)


@pytest.mark.parametrize("size", [b"\xff" * 12, b"\x80" + b"\x00" * 3 + b"\x7f" + b"\xff" * 7],
                         ids=["negative", "huge"])
def test_tar_with_impossible_declared_size_does_not_hang(tmp_path, size):
    path = tmp_path / "evil.tar"
    path.write_bytes(_tar_with_sizes(size))
    result = ddtriage("scan", path, "--format", "json", timeout=30)
    assert result.returncode == 1, result.stderr
    assert numbers(json.loads(result.stdout)) == [1, 3]


def test_tar_gz_with_a_300_mib_long_name_is_stopped(tmp_path):
    path = tmp_path / "longname.tar.gz"
    head = tarfile.TarInfo("././@LongLink")
    head.type, head.size = tarfile.GNUTYPE_LONGNAME, 300 << 20
    with open(path, "wb") as out:
        gz = zlib.compressobj(1, zlib.DEFLATED, 31)
        first = tarfile.TarInfo("ok.log")
        first.size = len(lines(1))
        out.write(gz.compress(first.tobuf(format=tarfile.GNU_FORMAT) + lines(1) + b"\x00" * (-first.size % 512)))
        out.write(gz.compress(head.tobuf(format=tarfile.USTAR_FORMAT)))
        zeros = b"a" * (1 << 20)
        for _ in range(300):  # compresses to ~1 MiB: lazily made, never held
            out.write(gz.compress(zeros))
        out.write(gz.flush())
    result = ddtriage("scan", path, "--format", "json", timeout=60)
    assert b"line-1" in result.stdout
    assert b"-byte GNU long name (over 1048576 bytes) refused" in result.stderr  # and stepped over (issue #18)


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


def _tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime = len(data), 1_762_905_600
            tar.addfile(info, io.BytesIO(data))
    return gzip.compress(buf.getvalue(), 1)


def _zip_bytes(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return buf.getvalue()


def _nested(levels: int) -> bytes:
    """level-1.zip holding log-1.log (mark 1) and level-2.zip, ..., level-N.zip holding log-N.log."""
    inner = _zip_bytes({f"log-{levels}.log": planted(levels)})
    for level in range(levels - 1, 0, -1):
        inner = _zip_bytes({f"log-{level}.log": planted(level), f"level-{level + 1}.zip": inner})
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
    raw = _zip_bytes({placeholder.decode(): planted(1) + planted(2), "b.log": planted(3)})
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


# -- a tar member read past tarfile's stream buffer -----------------------------------------------
@pytest.mark.parametrize("piece", [511, 65536, 1 << 20, 3 << 20])
def test_tar_members_read_through_give_tarfiles_bytes(piece, monkeypatch):
    """A member read straight from the layer below tarfile's stream (`_TarMember._read_through`)
    gives what tarfile's own reads give, for members around the block size and past its 1 MiB
    buffer, read in pieces of any size; so does the next header after it."""
    from analyzer.inputs import archives

    rng = __import__("random").Random(piece)
    sizes = [0, 1, 511, 512, 513, 10240, (1 << 20) - 1, (1 << 20) + 7, 3 * (1 << 20) + 100]
    bodies = {f"m{i}.log": rng.randbytes(n) for i, n in enumerate(sizes)}
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, body in bodies.items():
            info = tarfile.TarInfo(name)
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))

    def members(through: bool) -> dict[str, bytes]:
        monkeypatch.setattr(archives, "_passes_through", lambda s: through and _real(s))
        got = {}
        with tarfile.open(fileobj=io.BytesIO(buf.getvalue()), mode="r|", bufsize=1 << 20) as archive:
            for member in archive:
                reader = archives._TarMember(archive, member)
                data = bytearray()
                while chunk := reader.read(piece):
                    data += chunk
                got[member.name] = bytes(data)
        return got

    _real = archives._passes_through
    with tarfile.open(fileobj=io.BytesIO(buf.getvalue()), mode="r|") as archive:
        assert _real(archive.fileobj)  # the path under test is the one taken
    assert members(True) == members(False) == bodies
