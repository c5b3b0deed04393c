"""Stage: inputs (format detection). The formats table is the one place that knows a format:
sniffing, suffix stripping, selection globs, node names and the unpacker all follow its rows."""

import bz2
import gzip
import io
import lzma
import zlib

import pytest
import zstandard
from analyzer import analyze
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

from bundles import tar_bytes, zip_bytes

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
