"""Stage: inputs (format detection). The formats table is the one place that knows a format:
sniffing, suffix stripping, selection globs, node names and the unpacker all follow its rows.

7z and RAR inputs (review D21): recognised by their magic bytes (a row each in the formats
table) and skipped with what to do, "unpack it first", never read as text: a compressed bundle
shows no code as text, so a gate would otherwise pass on a bundle it never read (folded from test_unsupported_archives.py, review D21 (7z and RAR)).

Hostile input, sniffing: magic bytes choose a decoder only when it then succeeds, so a plain log
that starts like UTF-16 or bzip2 loses no line; UTF-16 followed by UTF-8 keeps both; a code cut by
a very long line's fragment boundary is still found (folded from test_hostile_sniffing.py).
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import tarfile
import zlib

import pytest
import zstandard
from analyzer import analyze
from analyzer.cli import cli
from analyzer.inputs import (
    FORMATS,
    Codec,
    Format,
    Limits,
    SafeStream,
    Selection,
    Unpacker,
    formats,
    layout_of,
    sniff,
    strip_archive_suffix,
    strip_compression_suffix,
)
from click.testing import CliRunner

from bundles import tar_bytes, zip_bytes
from hostile import FINDING, line, numbers, scan_json

LOG = (b"[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:8]5571 PullKvBlocks: "
       b"ErrorNo: 1343270913(request wait to be processed timeout!) [GE][MODULE]pull blocks timeout\n")

SAMPLES = {
    "gzip": gzip.compress(LOG, mtime=0),
    "bzip2": bz2.compress(LOG),
    "xz": lzma.compress(LOG),
    "zstd": zstandard.ZstdCompressor().compress(LOG),
    "zip": zip_bytes({"a.log": LOG}),
    "tar": tar_bytes({"a.log": LOG}),
    "7z": b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(range(256)),  # recognised, skipped: "unpack it first"
    "rar": b"Rar!\x1a\x07\x01\x00" + bytes(range(256)),
    "utf-16-le": LOG.decode().encode("utf-16-le"),
    "utf-16-be": LOG.decode().encode("utf-16-be"),
    "utf-32-le": LOG.decode().encode("utf-32-le"),
    "utf-32-be": LOG.decode().encode("utf-32-be"),
    "text": LOG,
}


def test_every_row_has_a_sample_and_text_comes_last():
    assert sorted(f.name for f in FORMATS) == sorted(SAMPLES)
    assert FORMATS[-1].name == "text" and FORMATS[-1].test(b"\x00\x01anything", "")
    for fmt in FORMATS[:-1]:  # exactly one handler per row, plain text none
        assert sum(x is not None for x in (fmt.codec, fmt.walk, fmt.encoding, fmt.unsupported)) == 1, fmt.name


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_sniff_finds_each_row_by_its_bytes_not_its_name(name):
    assert sniff(SafeStream(io.BytesIO(SAMPLES[name])), "misleading.zip.gz") == name


def test_suffixes_come_from_the_rows():
    for fmt in FORMATS:
        for suffix in fmt.suffixes:
            stripped = strip_compression_suffix("plog.log" + suffix)
            assert stripped == ("plog.log" if fmt.codec else "plog.log" + suffix), suffix
            upper = "node-1" + suffix.upper()  # archive suffixes in any letter case
            assert strip_archive_suffix(upper) == ("node-1" if fmt.walk else upper)
        for suffix in fmt.tar_suffixes:
            assert strip_compression_suffix("bundle" + suffix) == "bundle.tar"
    assert strip_compression_suffix("plog.log") == "plog.log"


# A format the shipped table does not know: zlib-wrapped deflate, ".zz". One row is all it takes.
ZLIB_ROW = Format("zlib", lambda head, name: head[:2] in (b"\x78\x9c", b"\x78\xda"), (".zz",),
                  codec=Codec(lambda: zlib.decompressobj(15)))


@pytest.fixture
def with_zlib(monkeypatch):
    monkeypatch.setattr(formats, "FORMATS", (ZLIB_ROW,) + FORMATS)


def test_a_new_row_is_sniffed_stripped_and_unpacked(with_zlib):
    data = zlib.compress(LOG)
    assert sniff(SafeStream(io.BytesIO(data))) == "zlib"
    assert strip_compression_suffix("plog-1_2.log.zz") == "plog-1_2.log"
    assert Selection(include=("plog-1_2.log",)).wanted("node-7/plog-1_2.log.zz")
    assert layout_of("node-7.tar.zz!plog/plog-1_2.log").node == "node-7"
    unpacker = Unpacker(Limits(), Selection(), [])
    leaves = [(leaf.name, leaf.stream.read()) for leaf in unpacker.leaves("a.log.zz", io.BytesIO(data))]
    assert leaves == [("a.log.zz", LOG)]


def test_a_new_row_works_end_to_end_inside_a_tar(with_zlib, tmp_path):
    path = tmp_path / "bundle.tar.zz"
    path.write_bytes(zlib.compress(tar_bytes({"node-3/plog/plog-5569_20251112034002789.log": LOG})))
    result = analyze([str(path)])
    assert [(f.source, f.line, f.code) for f in result.findings] == [
        (f"{path}!node-3/plog/plog-5569_20251112034002789.log", 1, "0x5010B001")]
    assert not result.inputs.skipped


def test_without_the_row_the_same_bytes_are_not_unpacked():
    unpacker = Unpacker(Limits(), Selection(), [])
    (leaf,) = unpacker.leaves("a.log.zz", io.BytesIO(zlib.compress(LOG)))
    assert leaf.stream.read() == zlib.compress(LOG)  # read as (binary) text


SEVEN_Z = b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(range(256)) * 4  # a 7z signature header, then data
RAR5 = b"Rar!\x1a\x07\x01\x00" + bytes(range(256)) * 4


def test_7z_and_rar_are_skipped_with_what_to_do(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "app.log").write_text(FINDING + "\n")
    (bundle / "node-3.7z").write_bytes(SEVEN_Z)
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:  # a RAR inside a collector's tarball
        info = tarfile.TarInfo("node-4/logs.rar")
        info.size = len(RAR5)
        tar.addfile(info, io.BytesIO(RAR5))
    (bundle / "node-4.tar.gz").write_bytes(packed.getvalue())
    result = CliRunner().invoke(cli, ["scan", str(bundle), "--format", "json"])
    assert result.exit_code == 1, result.stderr  # the log's finding; the archives are not "clean"
    report = json.loads(result.stdout)
    assert [(s["source"], s["reason"]) for s in report["inputs"]["skipped"]] == [
        (f"{bundle}/node-3.7z", "7z archive: not supported; unpack it first"),
        (f"{bundle}/node-4.tar.gz!node-4/logs.rar", "RAR archive: not supported; unpack it first")]
    assert len(report["findings"]) == 1 and report["inputs"]["files"] == 1
    assert result.stderr.splitlines() == [
        f"ddtriage: warning: {bundle}/node-3.7z: 7z archive: not supported; unpack it first",
        f"ddtriage: warning: {bundle}/node-4.tar.gz!node-4/logs.rar: RAR archive: not supported; unpack it first"]
    strict = CliRunner().invoke(cli, ["scan", str(bundle), "--strict", "--quiet"])
    assert strict.exit_code == 2


def test_a_lone_7z_is_not_a_clean_scan(tmp_path):
    archive = tmp_path / "bundle.7z"
    archive.write_bytes(SEVEN_Z)
    result = CliRunner().invoke(cli, ["scan", str(archive)])
    assert result.exit_code == 2
    assert "7z archive: not supported; unpack it first" in result.stderr
    assert "No LLM-DataDist status codes found" not in result.stdout


def test_plain_log_starting_with_ff_fe_loses_no_line(tmp_path):
    log = tmp_path / "starts-ff-fe.log"
    log.write_bytes(b"\xff\xfe" + b"".join(line(n) for n in range(1, 6)))
    code, report, _ = scan_json(log)
    assert code == 1
    assert numbers(report) == [1, 2, 3, 4, 5]


# BZh9 then text; 1f 8b 08 then text: the flag byte sets reserved bits (RFC 1952), which ISA-L
# ignores and zlib refuses (once the whole file was skipped as a broken gzip)
@pytest.mark.parametrize("magic, fake", [(b"BZh9", "bzip2"), (b"\x1f\x8b\x08", "gzip")])
def test_plain_log_starting_with_a_compression_magic_loses_no_line_and_warns(tmp_path, magic, fake):
    log = tmp_path / "starts-with-magic.log"
    log.write_bytes(magic + b"".join(line(n) for n in range(1, 6)))
    code, report, stderr = scan_json(log)
    assert code == 1
    assert numbers(report) == [1, 2, 3, 4, 5]
    assert f"starts like {fake}" in stderr


def test_a_real_gzip_header_still_decodes(tmp_path):
    import gzip

    log = tmp_path / "real.log.gz"
    log.write_bytes(gzip.compress(b"".join(line(n) for n in range(1, 4))))
    code, report, stderr = scan_json(log)
    assert numbers(report) == [1, 2, 3] and "starts like" not in stderr


def test_utf16_then_utf8_keeps_both(tmp_path):
    log = tmp_path / "mixed.log"
    utf16 = ("\ufeff" + "".join(line(n).decode() for n in (1, 2, 3))).encode("utf-16-le")
    log.write_bytes(utf16 + b"".join(line(n) for n in (4, 5, 6)))
    code, report, _ = scan_json(log)
    assert code == 1
    assert numbers(report) == [1, 2, 3, 4, 5, 6]


@pytest.mark.parametrize("encoding", ["utf-32", "utf-32-le", "utf-32-be"])
def test_utf32_then_utf8_keeps_both(tmp_path, encoding):
    log = tmp_path / "mixed.log"
    log.write_bytes("".join(line(n).decode() for n in (1, 2, 3)).encode(encoding) + b"".join(line(n) for n in (4, 5)))
    code, report, _ = scan_json(log)
    assert code == 1
    assert numbers(report) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"])
def test_wide_text_after_utf8_keeps_its_codes(tmp_path, encoding):
    # a tool appended UTF-16/32 text to a UTF-8 log: the format is told from the first bytes only,
    # so that part was read as bytes, NULs between the letters, and its codes were lost silently
    log = tmp_path / "appended.log"
    log.write_bytes(b"".join(line(n) for n in (1, 2)) + "".join(line(n).decode() for n in (3, 4, 5)).encode(encoding))
    code, report, _ = scan_json(log)
    assert code == 1
    assert numbers(report) == [1, 2, 3, 4, 5]


def test_a_plain_log_starting_like_a_utf32_bom_is_text(tmp_path):
    log = tmp_path / "odd.log"
    log.write_bytes(b"\xff\xfe\x00\x00" + b"".join(line(n) for n in (1, 2)))
    assert numbers(scan_json(log)[1]) == [1, 2]


def test_real_utf16_is_still_read(tmp_path):
    log = tmp_path / "windows.log"
    log.write_bytes(("\ufeff" + "".join(line(n).decode() for n in (1, 2))).encode("utf-16-le"))
    assert numbers(scan_json(log)[1]) == [1, 2]


def test_code_straddling_a_long_line_fragment_cut_is_found_once(tmp_path):
    # The scanner reads 8 MiB blocks and cuts a line longer than 4 MiB into fragments, carrying
    # the last 256 bytes over; put the code's digits across that cut, and around it.
    planted = b" PullKvBlocks failed, ret = 1343270913 line-7 "  # the digits are its only form
    digits = planted.index(b"1343270913")
    for across in (-20, -4, 0):
        log = tmp_path / f"long{across}.log"
        with open(log, "wb") as out:
            out.write(b"x" * ((8 << 20) - 256 + across - digits))
            out.write(planted)
            out.write(b"y" * (1 << 20) + b"\n")
        assert numbers(scan_json(log)[1]) == [7], across


@pytest.mark.parametrize("prefix, name", [(b"#!/bin/sh\nexit 0\n", "bundle.zip"), (b"MZ\x90\x00" + bytes(300), "setup.exe"),
                                          (b"\x7fELF" + bytes(60), "unzipsfx")])
def test_a_zip_after_other_bytes_is_read_as_a_zip_with_a_note(tmp_path, prefix, name):
    # a self-extracting zip, or a header put before a zip: zipfile and unzip read it from its end; it was
    # read as plain text, its members lost without a word
    import io
    import zipfile

    from planted import marks, planted, reasons
    from planted import scan as scan_cli

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("node-1/app.log", planted(1) + planted(2))
        archive.comment = b"made by a test"
    path = tmp_path / name
    path.write_bytes(prefix + buf.getvalue())
    code, report, _ = scan_cli(path)
    assert marks(report) == [1, 2]
    assert reasons(report, "notes") == [f"{path}: a zip archive after other bytes (a self-extracting zip?): read as a zip"]


def test_a_plain_log_named_zip_is_still_read_as_text(tmp_path):
    from planted import marks, planted
    from planted import scan as scan_cli

    path = tmp_path / "not-really.zip"
    path.write_bytes(planted(1) + b"PK\x05\x06 but no record\n")
    code, report, _ = scan_cli(path)
    assert marks(report) == [1]
