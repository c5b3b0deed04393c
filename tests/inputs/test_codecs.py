"""Stage: inputs (unpacking). Every compression and archive format, nesting, and every failure
mode of issue #3, on small fixtures built here.

Issue #18, UTF-16: a lone surrogate (a Windows tool cut a string mid-pair) costs that code unit,
not the file: the planted lines before, on and after it are all found, with a note (folded from test_hostile2_utf16.py).
"""

from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import os
import tarfile
import zlib
from pathlib import Path

import pytest
import zstandard
from analyzer.cli import cli
from analyzer.inputs import Limits, Selection
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from bundles import collector_bundle, tar_bytes, zip_bytes
from planted import marks, planted, reasons
from planted import scan as scan_cli
from reports import rows, scan

ROOT = Path(__file__).resolve().parents[2]
LOG = (b"[INFO] GE(5569,python3):2025-11-12-03:40:05.000.001 [llm_datadist.cc:1]5571 PullKvBlocks: start\n"
       b"[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:8]5571 PullKvBlocks: "
       b"ErrorNo: 1343270913(request wait to be processed timeout!) [GE][MODULE]pull blocks timeout\n")


def where(result):
    return [(f.source, f.line, f.code) for f in result.findings]


COMPRESSORS = {
    "gz": lambda d: gzip.compress(d, mtime=0),
    "gz-multi": lambda d: gzip.compress(d[:50], mtime=0) + gzip.compress(d[50:], mtime=0),
    "bz2": bz2.compress,
    "xz": lzma.compress,
    "zst": lambda d: zstandard.ZstdCompressor().compress(d),
}


@pytest.mark.parametrize("kind", sorted(COMPRESSORS))
def test_compressed_file_detected_by_magic_not_name(tmp_path, kind):
    path = tmp_path / "plog-5569_20251112034002789.log"  # no compression suffix on purpose
    path.write_bytes(COMPRESSORS[kind](LOG))
    result = scan(path)
    assert where(result) == [(str(path), 2, "0x5010B001")]
    assert list(result.findings)[0].action == "relink"
    assert result.inputs.lines == 2 and result.inputs.bytes == len(LOG)


@pytest.mark.parametrize("mode,suffix", [("w", "tar"), ("w:gz", "tar.gz"), ("w:gz", "tgz"), ("w:bz2", "tar.bz2"),
                                         ("w:xz", "tar.xz")])
def test_tar_formats(tmp_path, mode, suffix):
    path = tmp_path / f"bundle.{suffix}"
    path.write_bytes(tar_bytes({"node-1/a.log": LOG, "node-1/b.log": b"nothing\n" + LOG}, mode))
    result = scan(path)
    assert where(result) == [(f"{path}!node-1/a.log", 2, "0x5010B001"), (f"{path}!node-1/b.log", 3, "0x5010B001")]
    assert list(result.findings)[0].node == "node-1"


def test_zip_and_nesting(tmp_path):
    inner = gzip.compress(tar_bytes({"device-3/device-41_20251112034001456.log": LOG}), mtime=0)
    zipped = zip_bytes({"node-2/device_log.tar.gz": inner, "node-2/app.log": LOG})
    outer = tmp_path / "bundle.tar.gz"
    outer.write_bytes(gzip.compress(tar_bytes({"ticket/bundle.zip": zipped}), mtime=0))
    result = scan(outer)
    names = [f.source for f in result.findings]
    assert names == [f"{outer}!ticket/bundle.zip!node-2/app.log",
                     f"{outer}!ticket/bundle.zip!node-2/device_log.tar.gz!device-3/device-41_20251112034001456.log"]
    dev = list(result.findings)[1]
    assert (dev.node, dev.kind, dev.device, dev.line) == ("node-2", "device", "3", 2)


def test_collected_bundle_equals_unpacked_logs(tmp_path):
    """The collector's nested tar.gz per node, scanned by naming its folder, gives the same findings
    with member line numbers as scanning the same logs unpacked."""
    for node in sorted(p.name for p in (ROOT / "sample_logs").iterdir() if p.is_dir()):
        (tmp_path / f"{node}.tar.gz").write_bytes(collector_bundle(ROOT / "sample_logs" / node))
    packed = scan(tmp_path)
    plain = scan(ROOT / "sample_logs")

    def key(f):
        return (f.node, Path(f.source.split("!")[-1]).name.removesuffix(".1.gz"), f.line, f.code, f.api, f.action)

    assert sorted(map(key, packed.findings)) == sorted(map(key, plain.findings))
    assert packed.inputs.lines == plain.inputs.lines
    assert not packed.inputs.skipped
    assert any("!prompt-node-1/plog.tar.gz!debug/plog/plog-4811" in f.source for f in packed.findings)


def test_truncated_gzip_keeps_every_line_before_the_break(tmp_path):
    # A code on every 10th line (a finding per line only costs time): a lost or doubled line
    # anywhere shifts the numbers of the findings after it, and the line count is exact.
    lines = b"".join((b"line %d ret = 0x5010B009\n" if i % 10 == 0 else b"line %d noise\n") % i for i in range(20000))
    data = gzip.compress(lines, mtime=0)
    path = tmp_path / "cut.log.gz"
    path.write_bytes(data[: len(data) // 2])
    result = scan(path)
    (skip,) = result.inputs.skipped
    assert skip.source == str(path) and "ended before the end-of-stream" in skip.reason
    numbers = [f.line for f in result.findings]
    # Every complete line that zlib can recover, exactly as `zcat` would give them.
    recovered = zlib.decompressobj(31).decompress(data[: len(data) // 2])
    assert numbers == list(range(1, recovered.count(b"\n") + 1, 10))
    assert result.inputs.lines == recovered.count(b"\n") + (0 if recovered.endswith(b"\n") else 1)


def test_truncated_tar_gz_member(tmp_path):
    data = gzip.compress(tar_bytes({"a.log": LOG, "b.log": LOG * 2000}), mtime=0)
    path = tmp_path / "cut.tar.gz"
    path.write_bytes(data[: len(data) - 40])
    result = scan(path)
    assert (f"{path}!a.log", 2, "0x5010B001") in where(result)
    # The member that was cut, and the archive that ends early (with the real reason).
    assert sorted(s.source for s in result.inputs.skipped) == [str(path), f"{path}!b.log"]
    assert any("end-of-stream" in s.reason for s in result.inputs.skipped)


def test_corrupt_tar_member_is_skipped_and_the_rest_scanned(tmp_path):
    raw = bytearray(tar_bytes({"a.log": LOG, "b.log": LOG, "c.log": LOG}))
    second = 512 + 512 * ((len(LOG) + 511) // 512)
    raw[second: second + 100] = b"\xff" * 100  # destroy b.log's header
    path = tmp_path / "bundle.tar"
    path.write_bytes(bytes(raw))
    result = scan(path)
    assert [f.source for f in result.findings] == [f"{path}!a.log", f"{path}!c.log"]
    (skip,) = result.inputs.skipped
    assert "corrupt tar data skipped" in skip.reason and "before member c.log" in skip.reason


def test_corrupt_zip_member(tmp_path):
    data = bytearray(zip_bytes({"a.log": LOG * 50, "b.log": LOG}))
    # Flip bytes inside a.log's compressed data: its CRC check fails; b.log is still read.
    data[60:64] = bytes(b ^ 0xFF for b in data[60:64])
    path = tmp_path / "bundle.zip"
    path.write_bytes(bytes(data))
    result = scan(path)
    assert f"{path}!b.log" in {f.source for f in result.findings}
    assert [s.source for s in result.inputs.skipped] == [f"{path}!a.log"]


def test_encrypted_zip_member(tmp_path):
    data = bytearray(zip_bytes({"secret.log": LOG, "open.log": LOG}))
    # Set the "encrypted" flag bit in the first member's local and central headers.
    for sig in (b"PK\x03\x04", b"PK\x01\x02"):
        at = data.find(sig)
        flag_at = at + (6 if sig == b"PK\x03\x04" else 8)
        data[flag_at] |= 0x1
    path = tmp_path / "bundle.zip"
    path.write_bytes(bytes(data))
    result = scan(path)
    assert [f.source for f in result.findings] == [f"{path}!open.log"]
    assert [(s.source, s.reason) for s in result.inputs.skipped] == [(f"{path}!secret.log", "encrypted zip member")]


def test_decompression_guard(tmp_path):
    big = LOG + b"\x00" * (40 << 20) + LOG  # 40 MiB of NUL padding compresses ~1000:1
    path = tmp_path / "bomb.log.xz"
    path.write_bytes(lzma.compress(big))
    result = scan(path, limits=Limits(max_ratio=100))
    assert "compression ratio passed 100:1" in result.inputs.skipped[0].reason
    assert [f.line for f in result.findings] == [2]  # what came before the limit is kept
    result = scan(path, limits=Limits(max_bytes=1 << 20))
    assert "passed the limit of 1048576 bytes" in result.inputs.skipped[0].reason
    zipped = tmp_path / "big.zip"
    zipped.write_bytes(zip_bytes({"big.log": big, "small.log": LOG}))
    result = scan(zipped, limits=Limits(max_bytes=1 << 20))
    assert [f.source for f in result.findings] == [f"{zipped}!small.log"]
    assert "decompression limit" in result.inputs.skipped[0].reason


def test_include_exclude_match_members(tmp_path):
    path = tmp_path / "bundle.tar.gz"
    path.write_bytes(gzip.compress(tar_bytes({"n/plog/plog-1_2.log": LOG, "n/app.log": LOG, "n/old.log.1.gz":
                                              gzip.compress(LOG, mtime=0)}), mtime=0))
    only_plog = scan(path, selection=Selection(include=("plog-*",)))
    assert [f.source for f in only_plog.findings] == [f"{path}!n/plog/plog-1_2.log"]
    no_app = scan(path, selection=Selection(exclude=("app.log",)))
    assert sorted(f.source.rsplit("/", 1)[-1] for f in no_app.findings) == ["old.log.1.gz", "plog-1_2.log"]
    assert no_app.inputs.excluded == 1
    rotated = scan(path, selection=Selection(include=("*.log",)))  # old.log.1.gz is a .log too
    assert len(rotated.findings) == 3


def test_default_input_and_usage_error(tmp_path, monkeypatch):
    logs = tmp_path / "ascend_logs" / "debug" / "plog"
    logs.mkdir(parents=True)
    (logs / "plog-1_20251112.log").write_bytes(LOG)
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path / "ascend_logs"))
    result = CliRunner().invoke(cli, ["scan", "--format", "json"])
    assert result.exit_code == 1 and json.loads(result.stdout)["findings"][0]["action"] == "relink"
    monkeypatch.setenv("ASCEND_PROCESS_LOG_PATH", str(tmp_path / "nowhere"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    result = CliRunner().invoke(cli, ["scan"])
    assert result.exit_code == 2 and "no PATHS given" in result.stderr and "Traceback" not in result.stderr


def test_strict_and_warnings(tmp_path):
    good = tmp_path / "good.log"
    good.write_bytes(LOG)
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(gzip.compress(LOG * 100, mtime=0)[:-30])
    result = CliRunner().invoke(cli, ["scan", str(tmp_path), "--format", "json"])
    assert result.exit_code == 1
    assert result.stderr.count("ddtriage: warning:") == 1 and str(bad) in result.stderr
    result = CliRunner().invoke(cli, ["scan", str(tmp_path), "--strict", "--quiet"])
    assert result.exit_code == 2 and result.stderr == ""


def test_stdin_gzip(monkeypatch):
    result = CliRunner().invoke(cli, ["scan", "-", "--format", "json"], input=gzip.compress(LOG))
    assert json.loads(result.stdout)["findings"][0]["source"] == "-"


def test_truncated_nested_archive_keeps_the_lines_of_the_inner_member(tmp_path):
    plog = b"".join(b"%d ret = 0x5010B009\n" % i for i in range(300))
    inner = gzip.compress(tar_bytes({"plog/plog-1_20251203.log": plog}), mtime=0)
    outer = gzip.compress(tar_bytes({"node-a/plog.tar.gz": inner}), mtime=0)
    path = tmp_path / "node-a.tar.gz"
    path.write_bytes(outer[: len(outer) * 6 // 10])
    result = scan(path)
    lines = [f.line for f in result.findings]
    assert lines == list(range(1, len(lines) + 1)) and len(lines) >= 50
    assert list(result.findings)[0].source == f"{path}!node-a/plog.tar.gz!plog/plog-1_20251203.log"


def test_truncated_plain_tar_keeps_the_partial_member(tmp_path):
    lines = b"".join(b"%d ret = 0x5010B009\n" % i for i in range(100))
    path = tmp_path / "cut.tar"
    path.write_bytes(tar_bytes({"x.log": lines})[:512 + 700])
    result = scan(path)
    assert [f.line for f in result.findings] == list(range(1, len(result.findings) + 1))
    assert len(result.findings) >= 30
    assert "unexpected end of data" in result.inputs.skipped[0].reason


def test_hostile_headers_are_named_not_fatal(tmp_path):
    for name, data in {"a.gz": b"\x1f\x8bgarbage", "b.zip": b"PK\x03\x04garbage", "c.bz2": b"BZh9garbage",
                       "d.xz": b"\xfd7zXZ\x00garbage", "e.zst": b"\x28\xb5\x2f\xfdgarbage"}.items():
        (tmp_path / name).write_bytes(data)
    (tmp_path / "ok.log").write_bytes(LOG)
    result = CliRunner().invoke(cli, ["scan", str(tmp_path), "--format", "json"])
    report = json.loads(result.stdout)
    assert result.exit_code == 1 and len(report["findings"]) == 1
    named = report["inputs"]["skipped"] + report["inputs"]["notes"]  # notes: read as plain text after all
    assert sorted(Path(s["source"]).name for s in named) == ["a.gz", "b.zip", "c.bz2", "d.xz", "e.zst"]
    assert result.stderr.count("\n") == 5 and "Traceback" not in result.stderr


def test_stdlib_gzip_and_isal_give_the_same_result(tmp_path, monkeypatch):
    import analyzer.inputs.formats as readers

    path = tmp_path / "rot.log.1.gz"
    path.write_bytes(gzip.compress(LOG * 300, mtime=0))
    fast = rows(scan(path))
    import zlib

    monkeypatch.setattr(readers, "_zlib", zlib)
    assert rows(scan(path)) == fast and len(fast) == 300


DECODERS = {
    "gz": lambda: zlib.decompressobj(31),
    "bz2": bz2.BZ2Decompressor,
    "xz": lzma.LZMADecompressor,
    "zst": lambda: zstandard.ZstdDecompressor().decompressobj(),
}


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zst"])
def test_truncated_compressed_file_gives_what_zcat_gives(tmp_path, kind):
    # A code on every 100th line: a lost or doubled line shifts the numbers of the findings after it.
    lines = b"".join((b"%05d ret = 0x5010B009" if i % 100 == 0 else b"%05d noise") % i + b" padding text\n"
                     for i in range(60000))
    data = COMPRESSORS[kind](lines)
    path = tmp_path / f"cut.log.{kind}"
    path.write_bytes(data[: len(data) * 9 // 10])
    result = scan(path)
    assert len(result.inputs.skipped) == 1 and result.inputs.skipped[0].source == str(path)
    numbers = [f.line for f in result.findings]
    # Every code line read is found (the last line read may be a cut one, without its code).
    assert numbers == list(range(1, result.inputs.lines + 1, 100))[: len(numbers)]
    assert numbers and numbers[-1] > result.inputs.lines - 200
    # As many lines as the format's own streaming decoder gives back from the cut file.
    recovered = DECODERS[kind]().decompress(data[: len(data) * 9 // 10])
    assert result.inputs.lines == recovered.count(b"\n") + (0 if recovered.endswith(b"\n") else 1)
    # bzip2 cannot give back a partial 900 kB block, zstd a partial 128 KiB one (~5,000 lines here);
    # the others lose only the last few bytes.
    assert result.inputs.lines > {"bz2": 30000, "zst": 45000}.get(kind, 50000)


def test_selection_works_the_same_inside_archives(tmp_path):
    members = {"./prompt-node-a/plog/plog-1_2.log": LOG, "./decode-node-b/plog/plog-3_4.log": LOG}
    disk = tmp_path / "disk"
    for name, data in members.items():
        (disk / name).parent.mkdir(parents=True, exist_ok=True)
        (disk / name).write_bytes(data)
    packed = tmp_path / "packed"
    packed.mkdir()
    (packed / "bundle.tar.gz").write_bytes(gzip.compress(tar_bytes(members), mtime=0))
    (packed / "other.zip").write_bytes(zip_bytes({"x/app.log": LOG}))

    def nodes(path, **sel):
        return sorted(f.node for f in scan(path, selection=Selection(**sel)).findings)

    for root in (disk, packed / "bundle.tar.gz"):
        assert nodes(root, exclude=("decode-node-b",)) == ["prompt-node-a"]
        assert nodes(root, include=("*/prompt-node-a/*",)) == ["prompt-node-a"]
        assert nodes(root, include=("prompt-node-a/*",)) == ["prompt-node-a"]
    assert nodes(packed, include=("*.zip",)) == ["x"]
    assert any(f.source.endswith("gz!prompt-node-a/plog/plog-1_2.log") for f in scan(packed).findings)  # no "./"


def test_truncated_zip_keeps_its_complete_members(tmp_path):
    data = zip_bytes({"a.log": LOG, "b.log": LOG * 3, "c.log": LOG * 2000})
    path = tmp_path / "cut.zip"
    path.write_bytes(data[: len(data) * 8 // 10])  # no central directory any more
    result = scan(path)
    by_member = {}
    for f in result.findings:
        by_member.setdefault(f.source.rsplit("!", 1)[1], []).append(f.line)
    assert by_member["a.log"] == [2] and by_member["b.log"] == [2, 4, 6]
    assert 100 < len(by_member.get("c.log", [])) < 2000  # what was there before the cut
    reasons = [s.reason for s in result.inputs.skipped]
    assert any("members read from their local headers" in r for r in reasons)
    assert any(s.source.endswith("!c.log") for s in result.inputs.skipped)



@settings(max_examples=40, deadline=None)
@given(sizes=st.lists(st.integers(0, 200_000), min_size=1, max_size=6), piece=st.integers(1, 70_000),
       kind=st.sampled_from(["gz", "bz2", "xz", "zst"]))
def test_property_concatenated_streams_round_trip(sizes, piece, kind):
    from analyzer.inputs import decompressed as Decompressed

    parts = [bytes([65 + i % 26]) * n + b"\n" for i, n in enumerate(sizes)]
    compress = COMPRESSORS["gz" if kind == "gz" else kind]
    data = b"".join(compress(p) for p in parts)
    reader = Decompressed(io.BytesIO(data), {"gz": "gzip", "bz2": "bzip2", "xz": "xz", "zst": "zstd"}[kind])
    out = []
    while chunk := reader.read(piece):
        out.append(chunk)
    assert b"".join(out) == b"".join(parts)


def test_names_that_are_not_utf8(tmp_path):
    odd = os.path.join(os.fsencode(tmp_path), b"plog-\xff\xfe_20251112.log")
    with open(odd, "wb") as handle:
        handle.write(LOG)
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", encoding="gbk") as tar:
        info = tarfile.TarInfo("节点-1/应用.log")
        info.size = len(LOG)
        tar.addfile(info, io.BytesIO(LOG))
    (tmp_path / "gbk.tar").write_bytes(buf.getvalue())
    for fmt in ("json", "text", "markdown"):
        result = CliRunner().invoke(cli, ["scan", str(tmp_path), "--format", fmt])
        assert result.exit_code == 1, result.output
    report = json.loads(CliRunner().invoke(cli, ["scan", str(tmp_path), "--format", "json"]).stdout)
    sources = sorted(f["source"].rsplit("/", 1)[-1] for f in report["findings"])
    assert len(sources) == 2 and "plog-\\xff\\xfe_20251112.log" in sources  # each byte that is not UTF-8 as \xNN


def test_names_whose_bytes_differ_stay_apart_and_can_be_read_back(tmp_path, monkeypatch):
    # `lat\xe9.log` and `lat\xe8.log` (latin-1 names) were both shown `lat\ufffd.log`, and `tab\there.log`
    # as `tab?here.log`: their findings fell into one burst, and -C and `show` found no such file
    monkeypatch.chdir(tmp_path)
    os.mkdir(b"nu")
    for name in (b"lat\xe9.log", b"lat\xe8.log", b"tab\there.log"):
        with open(b"nu/" + name, "wb") as handle:
            handle.write(b"before\n" + LOG.splitlines(keepends=True)[1] + b"after\n")
    code, report, _ = scan_cli("nu")
    assert sorted({f["source"] for f in report["findings"]}) == [
        "nu/lat\\xe8.log", "nu/lat\\xe9.log", "nu/tab\\x09here.log"]
    assert len(report["summary"]["bursts"]) == 3
    shown = CliRunner().invoke(cli, ["show", "nu/lat\\xe9.log:1-3"])
    assert shown.exit_code == 0 and "before" in shown.stdout and "after" in shown.stdout, shown.output
    context = CliRunner().invoke(cli, ["scan", "nu/tab\\x09here.log".replace("\\x09", "\t"), "-C", "1",
                                       "--fail-on", "never", "--no-pager"])
    assert "before" in context.stdout and "after" in context.stdout, context.output


def test_zstd_bomb_is_stopped_too(tmp_path):
    path = tmp_path / "bomb.log.zst"
    path.write_bytes(zstandard.ZstdCompressor(level=19).compress(LOG + b"\x00" * (200 << 20)))
    result = scan(path, limits=Limits(max_bytes=10 << 20))
    assert "passed the limit of 10485760 bytes" in result.inputs.skipped[0].reason
    assert result.inputs.bytes <= (10 << 20) + (32 << 20)


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32", "utf-32-le", "utf-32-be"])
def test_wide_logs(tmp_path, encoding):
    path = tmp_path / "export.log"
    path.write_bytes(("noise line\n" + LOG.decode()).encode(encoding))
    result = scan(path)
    assert [(f.line, f.code) for f in result.findings] == [(3, "0x5010B001")]


@pytest.mark.parametrize("kind", ["gz", "bz2", "xz", "zst"])
def test_lines_before_the_decompression_limit_are_kept(tmp_path, kind):
    body = LOG * 5 + b"A" * (30 << 20) + b"\n" + LOG
    path = tmp_path / f"b.log.{kind}"
    path.write_bytes(COMPRESSORS[kind](body))
    result = scan(path, limits=Limits(max_bytes=10 << 20))
    assert [f.line for f in result.findings] == [2, 4, 6, 8, 10]
    assert "passed the limit" in result.inputs.skipped[0].reason


LONE = {"high": b"\x00\xd8", "low": b"\x00\xdc"}  # one code unit each (little-endian), no partner


def _utf16(lines: list[bytes], bad_line: int, unit: bytes) -> bytes:
    out = bytearray(b"\xff\xfe")
    for n, text in enumerate(lines):
        body = text.decode().encode("utf-16-le")
        if n == bad_line:  # the bad unit sits in the middle of a code line, after its code
            cut = len(body) - 2
            body = body[:cut] + " ".encode("utf-16-le") + unit + "x".encode("utf-16-le") + body[cut:]
        out += body
    return bytes(out)


@pytest.mark.parametrize("kind", sorted(LONE))
@pytest.mark.parametrize("where", [0, 1, 12])  # in the first line (the sniffed head), the next, far on
def test_lone_surrogate_costs_one_unit(tmp_path, kind, where):
    lines = [planted(n) for n in range(1, 15)]
    log = tmp_path / "windows-tool.log"
    log.write_bytes(_utf16(lines, where, LONE[kind]))
    code, report, stderr = scan_cli(log)
    assert marks(report) == list(range(1, 15)), (marks(report), stderr)
    assert code == 1  # findings reach --fail-on any
    assert report["inputs"]["skipped"] == []
    notes = reasons(report, "notes")
    assert any("UTF-16" in n and "1 " in n and "U+FFFD" in n for n in notes), notes
    bad = [f["text"] for f in report["findings"] if "\ufffd" in f["text"]]
    assert len(bad) == 1 and f"mark-{where + 1} \ufffdx" in bad[0], bad  # the unit is what is lost


def test_a_short_line_cut_mid_pair_is_still_utf16(tmp_path):
    # a lone surrogate in a line of fewer than 16 code units made the rest of the file "not UTF-16":
    # it was read as bytes, NUL between every letter, and its codes were lost without a note
    code_line = "[ERROR] x: ErrorNo: 1343270913(x)\n".encode("utf-16-le")
    log = tmp_path / "short.log"
    log.write_bytes(b"\xff\xfe" + code_line + LONE["high"] + "x 0x5010B009\n".encode("utf-16-le") + code_line * 3)
    _, report, stderr = scan_cli(log)
    assert [f["line"] for f in report["findings"]] == [1, 2, 3, 4, 5], stderr
    assert report["inputs"]["lines"] == 5
    assert any("1 code unit of UTF-16-LE" in n for n in reasons(report, "notes")), report["inputs"]


def test_utf16_big_endian_lone_surrogate(tmp_path):
    text = b"".join(planted(n) for n in (1, 2, 3)).decode()
    body = bytearray(b"\xfe\xff" + text.encode("utf-16-be"))
    cut = 2 + 2 * (len(planted(1)) + 10)  # inside the second line
    body[cut:cut] = b"\xdb\xff"
    log = tmp_path / "be.log"
    log.write_bytes(bytes(body))
    code, report, stderr = scan_cli(log)
    assert marks(report) == [1, 2, 3], stderr
    assert code == 1


def test_utf32_lone_surrogate_costs_one_unit(tmp_path):
    # UTF-32 was read as UTF-16 (its BOM starts alike), or as bytes without one: no code found, no note
    text = b"".join(planted(n) for n in (1, 2, 3)).decode()
    body = bytearray(text.encode("utf-32"))
    cut = 4 + 4 * (len(planted(1)) + 10)  # inside the second line
    body[cut:cut] = b"\x00\xd8\x00\x00"
    log = tmp_path / "wide.log"
    log.write_bytes(bytes(body))
    code, report, stderr = scan_cli(log)
    assert marks(report) == [1, 2, 3], stderr
    assert code == 1
    assert any("1 code unit of UTF-32-LE" in n for n in reasons(report, "notes")), report["inputs"]


@pytest.mark.parametrize("ext", ["gz", "bz2", "xz", "zst"])
def test_bytes_after_the_compressed_data_are_a_note_not_a_skipped_input(tmp_path, ext):
    # `gzip -d` says "trailing garbage ignored"; every line was read, yet the file was listed as skipped
    # (cut off) and --strict failed
    path = tmp_path / f"app.log.{ext}"
    path.write_bytes(COMPRESSORS[ext](planted(1) + planted(2)) + b"garbage after it\n")
    code, report, _ = scan_cli(path, "--strict", "--fail-on", "never")
    assert code == 0 and marks(report) == [1, 2]
    assert reasons(report) == []
    names = {"gz": "gzip", "bz2": "bzip2", "xz": "xz", "zst": "zstd"}
    assert reasons(report, "notes") == [f"{path}: bytes after the end of the {names[ext]} data ignored (trailing garbage)"]


def test_a_second_gzip_member_cut_off_is_still_a_skipped_input(tmp_path):
    path = tmp_path / "app.log.gz"
    path.write_bytes(gzip.compress(planted(1)) + gzip.compress(planted(2) * 50)[:30])
    code, report, _ = scan_cli(path, "--fail-on", "never")
    assert marks(report) == [1]
    assert reasons(report) == [f"{path}: stopped after 1 lines: compressed file ended before the end-of-stream "
                               "marker was reached"]


# --- wide text of any script: a Chinese line, a bad unit or a short last line loses nothing ------

ZH = "错误：连接超时\n"  # a line with no ASCII letter, digit or blank: no NUL in UTF-16


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32", "utf-32-be"])
def test_a_chinese_line_keeps_the_lines_after_it(tmp_path, encoding):
    # a line with fewer than a quarter ASCII characters ended the wide part: the rest was read as
    # bytes, NULs between the letters, and its codes were lost without a note
    text = planted(1).decode() + ZH + planted(3).decode() + "🙂🙂🙂\n" + planted(5).decode()
    log = tmp_path / "zh.log"
    log.write_bytes(text.encode(encoding))
    code, report, stderr = scan_cli(log)
    assert marks(report) == [1, 3, 5], stderr
    assert report["inputs"]["lines"] == 5 and not reasons(report, "notes")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-32", "utf-32-le"])  # a BOM, and none
def test_a_chinese_first_line_is_still_wide(tmp_path, encoding):
    # what follows the BOM (or the first bytes) had to be mostly ASCII to be taken for wide text
    log = tmp_path / "zh-first.log"
    log.write_bytes((ZH * 20 + planted(21).decode()).encode(encoding))
    code, report, stderr = scan_cli(log)
    assert [f["line"] for f in report["findings"]] == [21], stderr


def _utf32(lines: list[str], bad: dict[int, bytes]) -> bytes:
    """UTF-32-LE with a BOM; `bad[n]`: raw units put in the middle of line n."""
    out = bytearray(b"\xff\xfe\x00\x00")
    for n, line in enumerate(lines, 1):
        body = line.encode("utf-32-le")
        if n in bad:
            cut = len(body) // 2 // 4 * 4
            body = body[:cut] + bad[n] + body[cut:]
        out += body
    return bytes(out)


@pytest.mark.parametrize("unit", [b"\x00\x00\x11\x00", b"\xff\xff\xff\xff", b"\x00\xd8\x00\x00"])
@pytest.mark.parametrize("where", [1, 2])
def test_a_utf32_unit_that_is_no_character_costs_that_unit(tmp_path, unit, where):
    # past U+10FFFF: the decoder raised, and the file was skipped ("stopped after 0 lines") or,
    # early in a line, the rest was read as bytes without a note
    lines = [planted(1).decode(), "x" * 300 + "\n", planted(3).decode()]
    log = tmp_path / "bad.log"
    log.write_bytes(_utf32(lines, {where: unit}))
    code, report, stderr = scan_cli(log)
    assert marks(report) == [1, 3], stderr
    assert report["inputs"]["lines"] == 3 and report["inputs"]["skipped"] == []
    assert any("1 code unit of UTF-32-LE" in n and "U+FFFD" in n for n in reasons(report, "notes"))


def test_two_lone_surrogates_in_a_short_line(tmp_path):
    body = planted(1).decode().encode("utf-16-le") + LONE["high"] + LONE["high"] + "\n".encode("utf-16-le")
    log = tmp_path / "two.log"
    log.write_bytes(b"\xff\xfe" + body + planted(3).decode().encode("utf-16-le"))
    code, report, stderr = scan_cli(log)
    assert marks(report) == [1, 3], stderr
    assert any("2 code units of UTF-16-LE" in n for n in reasons(report, "notes"))


@pytest.mark.parametrize("tail", [b"A\x00\x00\x00", b"A\x00\x00"])
def test_a_short_last_utf32_line_is_decoded(tmp_path, tail):
    # a last line under 8 bytes went through as bytes: "A\x00\x00", and a cut unit had no note
    log = tmp_path / "short.log"
    log.write_bytes(planted(1).decode().encode("utf-32") + tail)
    code, report, stderr = scan_cli(log)
    assert marks(report) == [1] and report["inputs"]["lines"] == 2, stderr
    assert bool(reasons(report, "notes")) == (len(tail) % 4 != 0)
