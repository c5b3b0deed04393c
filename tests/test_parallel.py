"""Stage: parallel. Any --jobs gives the same report; big plain files are cut at line starts
and their ranges renumbered as one file; a broken input is skipped in a worker as it is here."""

import gzip
import json
from pathlib import Path

import analyzer.run.parallel as parallel
from analyzer import analyze
from analyzer.cli import cli
from analyzer.core.serial import finding_dict
from analyzer.inputs import iter_sources
from analyzer.run.api import Options
from click.testing import CliRunner

from bundles import tar_bytes

LOG = (b"[INFO] GE(5569,python3):2025-11-12-03:40:05.000.001 [llm_datadist.cc:1]5571 PullKvBlocks: start\n"
       b"[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:8]5571 PullKvBlocks: "
       b"ErrorNo: 1343270913(request wait to be processed timeout!) [GE][MODULE]pull blocks timeout\n")


def scan(*paths, **options):
    jobs = options.pop("jobs", 1)
    return analyze([str(p) for p in paths], options=Options(**options), jobs=jobs)


def test_jobs_give_the_same_report(tmp_path):
    for i in range(4):
        (tmp_path / f"n{i}.log.gz").write_bytes(gzip.compress(LOG * (i + 1), mtime=0))
    runs = [CliRunner().invoke(cli, ["scan", str(tmp_path), "--format", "json", "--jobs", str(j)]).stdout
            for j in (1, 2, 4)]
    assert runs[0] == runs[1] == runs[2]


def test_big_plain_file_split_across_jobs(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    noise = b"[INFO] GE(5569,python3):2025-11-12-03:40:05.000.001 [x.cc:1]5571 Other: noise\n"
    echo = b"[ERROR] GE(5569,python3):2025-11-12-03:40:05.2 [x.cc:9]5571 Run: ErrorNo: 4294967295(failed)\n"
    cause = b"[ERROR] RUNTIME(5569,python3):2025-11-12-03:40:05.0 [stream.cc:1]5650 Sync: runtime result = 507046\n"
    body = (noise * 996 + cause + LOG + echo) * 40
    path = tmp_path / "big.log"
    path.write_bytes(body)
    one = scan(path, jobs=1)
    assert len(parallel.plan_units(list(iter_sources([str(path)], [])), 3)) == 3
    for jobs in (2, 3):
        many = scan(path, jobs=jobs)
        assert [finding_dict(f) for f in many.findings] == [finding_dict(f) for f in one.findings]
        assert (many.inputs.lines, many.inputs.bytes, many.inputs.files) == (one.inputs.lines, one.inputs.bytes, 1)
    assert len(one.findings) == 80  # 40 timeouts + 40 echoes
    assert {f.causes[0][1:3] for f in one.findings if not f.generic} == {("runtime", "507046")}


def test_corrupt_gzip_is_skipped_not_fatal_in_any_process(tmp_path):
    bad = tmp_path / "bad.log.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + bytes(range(256)) * 20)
    inner = tmp_path / "node-1.tar.gz"
    inner.write_bytes(gzip.compress(tar_bytes({"node-1/app.log.1.gz": bad.read_bytes(), "node-1/ok.log": LOG}), mtime=0))
    (tmp_path / "ok.log").write_bytes(LOG)
    for jobs in ("1", "3"):
        result = CliRunner().invoke(cli, ["scan", str(tmp_path), "--format", "json", "--jobs", jobs])
        report = json.loads(result.stdout)
        assert result.exit_code == 1 and len(report["findings"]) == 2
        # a gzip header over bytes that do not decode: read as plain text, a note (no data lost), not a skip
        assert sorted(Path(s["source"]).name for s in report["inputs"]["notes"]) == ["app.log.1.gz", "bad.log.gz"]


def test_split_cuts_skip_a_huge_line(tmp_path):
    path = tmp_path / "pad.log"
    path.write_bytes(b"a\n" + b"\x00" * 3_000_000 + b"\nb\n" + b"c\n" * 1_000_000)
    cuts = parallel.aligned_cuts(str(path), path.stat().st_size, 4)
    data = path.read_bytes()
    assert cuts[0] == 0 and cuts[-1] == len(data) and cuts == sorted(cuts)
    assert all(data[c - 1:c] == b"\n" for c in cuts[1:-1])
    assert len(cuts) == 4  # the cut that fell inside the NUL run was dropped
