"""Hostile input, archives: what `tar`, `unzip -p` and `zcat` show is scanned; valid but unusual
members (GNU sparse, pax) are read as stored; a bad CRC keeps its data with a warning; a zip from a
pipe is spooled; impossible declared sizes are corrupt headers, not hangs."""

from __future__ import annotations

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
