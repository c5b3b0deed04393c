"""Stage: inputs (reading ahead). A compressed file inflated in a background thread gives the same
bytes, the same errors at the same place, the same reports, and leaves no thread behind.
"""

import bz2
import gc
import gzip
import io
import json
import lzma
import tarfile
import threading
import time
import zlib
from collections import Counter

import pytest
import zstandard
from analyzer.cli import cli
from analyzer.inputs import Codec, Decompressed, readahead, unpack
from analyzer.inputs.formats import BY_NAME
from click.testing import CliRunner

COMPRESS = {
    "gzip": lambda d: gzip.compress(d, mtime=0),
    "bzip2": bz2.compress,
    "xz": lzma.compress,
    "zstd": lambda d: zstandard.ZstdCompressor().compress(d),
}


def log_lines(n: int) -> bytes:
    """A plog with a code line in every 7 (numbers vary, so it compresses like a real log)."""
    out = []
    for i in range(n):
        stamp = f"2025-11-12-03:{40 + i // 60000 % 10:02d}:{i // 1000 % 60:02d}.{i % 1000:03d}.{i * 7 % 1000:03d}"
        if i % 7 == 3:
            out.append(f"[ERROR] GE(5569,python3):{stamp} [llm_datadist.cc:8]5571 PullKvBlocks: "
                       f"ErrorNo: 1343270913(request wait to be processed timeout!) req {i * 2654435761 % 99991}\n")
        else:
            out.append(f"[INFO] GE(5569,python3):{stamp} [graph_manager.cc:668]5571 step {i} cache_id = {i * 31}\n")
    return "".join(out).encode()


def threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "ddtriage-readahead"]


def wait_no_threads() -> bool:
    for _ in range(100):
        if not threads():
            return True
        time.sleep(0.05)
    return False


def read_all(stream, size: int = 1 << 16) -> bytes:
    parts = []
    while True:
        piece = stream.read(size)
        if not piece:
            return b"".join(parts)
        parts.append(piece)


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_the_same_bytes_as_reading_in_this_thread(kind, tmp_path):
    data = log_lines(30000)
    path = tmp_path / "x.gz"
    path.write_bytes(COMPRESS[kind](data))
    codec: Codec = BY_NAME[kind].codec
    with open(path, "rb") as handle:
        inner = Decompressed(handle, codec)
        ahead = readahead.ReadAhead(inner, inner.widen, block=40_000, ahead=2, start=10_000)
        assert read_all(ahead, 7_000) == data
        assert ahead.direct >= 10_000 and ahead._thread is not None  # the thread did run
    assert wait_no_threads()


def test_an_error_comes_after_the_bytes_before_it(tmp_path):
    data = log_lines(40000)
    packed = gzip.compress(data, mtime=0)
    cut = packed[: len(packed) // 2]
    expected = zlib.decompressobj(31).decompress(cut)
    path = tmp_path / "cut.gz"
    path.write_bytes(cut)
    with open(path, "rb") as handle:
        inner = Decompressed(handle, BY_NAME["gzip"].codec)
        ahead = readahead.ReadAhead(inner, inner.widen, block=50_000, ahead=3, start=1)
        got = []
        with pytest.raises(EOFError, match="end-of-stream"):
            while piece := ahead.read(4096):
                got.append(piece)
        assert b"".join(got) == expected
        assert ahead.read(10) == b""  # after the error: the end
    assert wait_no_threads()


def test_a_reader_that_lets_go_stops_the_thread(tmp_path):
    path = tmp_path / "big.gz"
    path.write_bytes(gzip.compress(log_lines(60000), mtime=0))
    with open(path, "rb") as handle:
        inner = Decompressed(handle, BY_NAME["gzip"].codec)
        ahead = readahead.ReadAhead(inner, inner.widen, block=20_000, ahead=2, start=1)
        ahead.read(100)
        ahead.read(100)  # the thread now waits for room in its queue
        assert threads()
        del ahead, inner
        gc.collect()
        assert wait_no_threads()

    with open(path, "rb") as handle:
        inner = Decompressed(handle, BY_NAME["gzip"].codec)
        closed = readahead.ReadAhead(inner, inner.widen, block=20_000, ahead=2, start=1)
        closed.read(100)
        closed.close()  # explicitly: the thread is gone when close returns
        assert not threads()


def scan_json(*args: str) -> str:
    result = CliRunner().invoke(cli, ["scan", *args, "--format", "json", "--fail-on", "never", "-q"])
    assert result.exit_code == 0, result.output
    return result.stdout


class Started:
    """Threads started, counted in a file: worker processes count too."""

    def __init__(self, path) -> None:
        self.path = path
        path.write_text("")

    def __len__(self) -> int:
        return len(self.path.read_text())


@pytest.fixture
def small_blocks(monkeypatch, tmp_path_factory):
    """Read-ahead from the first 5 kB, in 30 kB blocks: test files exercise the thread."""
    monkeypatch.setattr(readahead, "START", 5_000)
    monkeypatch.setattr(readahead, "READ_AHEAD_BLOCK", 30_000)
    started = Started(tmp_path_factory.mktemp("count") / "started")
    start = readahead.ReadAhead._start

    def counting(self):
        with open(started.path, "a") as mark:
            mark.write("x")
        start(self)
    monkeypatch.setattr(readahead.ReadAhead, "_start", counting)
    return started


def test_reports_are_the_same_with_and_without_reading_ahead(tmp_path, monkeypatch, small_blocks):
    data = log_lines(6000)
    whole = tmp_path / "plog-5569_20251112034002789.log.gz"
    whole.write_bytes(gzip.compress(data, mtime=0))
    packed = gzip.compress(data, mtime=0)
    cut = tmp_path / "cut-5570_20251112034002789.log.gz"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    body = io.BytesIO()
    with tarfile.open(fileobj=body, mode="w:xz") as tar:
        for i in range(2):
            member = tarfile.TarInfo(f"node-{i}/plog-{7000 + i}_20251112034002789.log")
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
    bundle = tmp_path / "bundle.tar.xz"
    bundle.write_bytes(body.getvalue())
    # One input with a CPU to spare (--jobs 2, one unit): inflated ahead in a thread.
    ahead = {path: scan_json(str(path), "-j", "2") for path in (whole, cut, bundle)}
    assert len(small_blocks) == 3
    monkeypatch.setattr(unpack, "READ_AHEAD", False)
    assert {path: scan_json(str(path), "-j", "2") for path in ahead} == ahead
    assert len(small_blocks) == 3
    code_lines = len(range(3, 6000, 7))
    per_source = Counter(f["source"].rsplit("/", 1)[-1] for f in json.loads(ahead[bundle])["findings"])
    assert [per_source[f"plog-{7000 + i}_20251112034002789.log"] for i in range(2)] == [code_lines] * 2
    assert len(json.loads(ahead[whole])["findings"]) == code_lines
    report = json.loads(ahead[cut])
    assert 0 < len(report["findings"]) < code_lines and len(report["inputs"]["skipped"]) == 1
    assert wait_no_threads()


def test_no_thread_where_no_cpu_is_spare(tmp_path, monkeypatch, small_blocks):
    data = log_lines(3000)
    for i in range(2):
        (tmp_path / f"plog-{5569 + i}_20251112034002789.log.gz").write_bytes(gzip.compress(data, mtime=0))
    one = tmp_path / "plog-5569_20251112034002789.log.gz"
    reports = [scan_json(str(one), "-j", "1"), scan_json(str(tmp_path), "-j", "2")]  # --jobs 1; busy workers
    assert len(small_blocks) == 0 and unpack.READ_AHEAD  # and the switch is back as it was
    assert scan_json(str(one), "-j", "2") == reports[0] and len(small_blocks) == 1
