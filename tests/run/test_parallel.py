"""Stage: parallel. Any --jobs gives the same report; big plain files are cut at line starts
and their ranges renumbered as one file; a broken input is skipped in a worker as it is here.

Stage: parallel. Small files batched into work units by bytes; what a unit sends back (its
tally, the bursts that can still make the summary's cut) gives the same report for any --jobs (folded from test_units.py).
"""

import gzip
import json
import random
from pathlib import Path

import analyzer.diagnose.bursts as bursts_mod
import analyzer.run.parallel as parallel
import pytest
from analyzer import analyze
from analyzer.cli import cli
from analyzer.core import observations
from analyzer.core.observations import Observed, RelatedEvent
from analyzer.diagnose.tally import summarize
from analyzer.inputs import iter_sources
from analyzer.knowledge.rules import RuleSet
from click.testing import CliRunner

from bundles import tar_bytes
from reports import rows, scan

LOG = (b"[INFO] GE(5569,python3):2025-11-12-03:40:05.000.001 [llm_datadist.cc:1]5571 PullKvBlocks: start\n"
       b"[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:8]5571 PullKvBlocks: "
       b"ErrorNo: 1343270913(request wait to be processed timeout!) [GE][MODULE]pull blocks timeout\n")


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
        assert rows(many) == rows(one)
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


def test_split_cuts_keep_a_ranges_link_lines_in_its_history(tmp_path):
    # a range's history is the HISTORY_BYTES before it; its first finding looks LINK_LINES lines back
    short, long = b"s" * 99 + b"\n", b"L" * 9_999 + b"\n"  # 12 long lines > HISTORY_BYTES
    path = tmp_path / "mixed.log"
    path.write_bytes(short * 2_000 + long * 200 + short * 2_000)
    data = path.read_bytes()
    cuts = parallel.aligned_cuts(str(path), len(data), 2)
    # the middle falls among the long lines: the cut moves to the first line start whose 12 lines
    # before fit, 6 short lines after them (6 x 100 + 6 x 10,000 bytes; 5 would take 70,500)
    assert parallel.LINK_LINES == 12 and cuts == [0, 200_000 + 2_000_000 + 6 * 100, len(data)]
    # lines all so long that no 12 fit in HISTORY_BYTES: no cut at all
    path.write_bytes(long * 800)
    assert parallel.aligned_cuts(str(path), 8_000_000, 4) == [0, 8_000_000]


def test_no_file_is_split_when_a_line_can_depend_on_any_line_before_it(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    path = tmp_path / "big.log"
    path.write_bytes(LOG * 1_000)
    sources = list(iter_sources([str(path)], []))
    assert len(parallel.plan_units(sources, 3, parallel.splits_files(None, False))) == 3
    for year, versions in ((2025, False), (None, True)):
        assert not parallel.splits_files(year, versions)
        assert len(parallel.plan_units(sources, 3, False)) == 1


# A failed pull, alone in its thread for seconds: each such line is a burst of its own.
PULL = ("[ERROR] GE({pid},python3):2025-11-12-{h:02d}:{m:02d}:{s:02d}.{us:06d} [llm_datadist_v2.cc:174]{tid} "
        "PullKvBlocks: call PullKvBlocks failed, ret = 0x5010B001, req_id = {r}")
NOISE = "[INFO] RUNTIME({pid},python3):2025-11-12-{h:02d}:{m:02d}:{s:02d}.{us:06d} [runtime.cc:1]{tid} rtMalloc: ok"


def bursty_folder(root, files: int = 30, per_file: int = 4, seed: int = 11) -> int:
    """`files` plogs in three node folders, each with `per_file` one-line bursts at shuffled
    times: later files (later units) often hold the earliest bursts. -> bursts written."""
    rnd = random.Random(seed)
    for i in range(files):
        folder = root / f"node-{i % 3}" / "ascend" / "log" / "debug" / "plog"
        folder.mkdir(parents=True, exist_ok=True)
        pid = 4000 + i
        lines = []
        for b in range(per_file):
            minute = rnd.randrange(60)
            when = {"h": 3, "m": minute, "us": rnd.randrange(10**6), "pid": pid, "tid": pid + 1 + b % 2}
            lines.append(PULL.format(s=b * 10, r=i * 100 + b, **when))
            lines += [NOISE.format(s=b * 10 + 5, **when)] * 3
        (folder / f"plog-{pid}_20251112030000000.log").write_text("\n".join(lines) + "\n")
    return files * per_file


def scan_units_of(path, jobs: str, paths: list[str] | None = None) -> dict:
    result = CliRunner().invoke(cli, ["scan", *(paths or [str(path)]), "--format", "json", "--fail-on", "never",
                                      "-q", "-j", jobs])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.fixture
def few_bursts(monkeypatch):
    """The summary keeps 6 bursts, not 1,000: the cut then drops bursts in a small corpus."""
    monkeypatch.setattr(parallel, "MAX_BURSTS", 6)
    monkeypatch.setattr(bursts_mod, "MAX_BURSTS", 6)


def test_many_small_files_make_few_units_in_input_order(tmp_path):
    bursty_folder(tmp_path, files=200, per_file=1)
    sources = list(iter_sources([str(tmp_path)], []))
    for jobs in (1, 2, 4):
        units = parallel.plan_units(sources, jobs)
        assert [s for u in units for s in u.sources] == sources  # plan order is input order
        # Batched (many files per unit), yet several units per job to share out.
        assert jobs * 2 <= len(units) <= 2 * jobs * parallel.BATCHES_PER_JOB


def test_bursts_that_cannot_make_the_cut_stay_in_the_worker(tmp_path, few_bursts, monkeypatch):
    written = bursty_folder(tmp_path)
    dropped: list[int] = []
    apply = parallel.BurstCut.apply

    def counting(self, tracker):
        before = len(tracker.bursts)
        apply(self, tracker)
        dropped.append(before - len(tracker.bursts))
    monkeypatch.setattr(parallel.BurstCut, "apply", counting)
    reports = {jobs: scan_units_of(tmp_path, jobs) for jobs in ("1", "2", "3")}
    assert sum(dropped) > 0  # the cut did leave bursts behind (in this process, at -j1)
    monkeypatch.setattr(parallel.BurstCut, "apply", lambda self, tracker: None)  # every burst travels
    everything = scan_units_of(tmp_path, "2")
    assert reports["1"] == reports["2"] == reports["3"] == everything
    summary = everything["summary"]
    assert len(summary["bursts"]) == 6 and analyze([str(tmp_path)], jobs=2).summary.burst_count == written
    # The six kept are the earliest of all (every burst here is alike in severity).
    firsts = sorted(f["timestamp"] for f in everything["findings"])[:6]
    assert sorted(b["first_seen"] for b in summary["bursts"]) == firsts


def test_a_cut_keeps_only_keys_below_what_this_process_sent(few_bursts):
    cut = parallel.BurstCut()
    tracker = bursts_mod.Bursts()
    tracker.bursts = [((False, False, f"t{i:02d}", "s", i, ("s", i, "c"), 0), None) for i in range(10, 20)]
    cut.apply(tracker)  # nothing sent yet: its own first six go
    assert [k[4] for k, _ in tracker.bursts] == [10, 11, 12, 13, 14, 15]
    later = bursts_mod.Bursts()
    later.bursts = [((False, False, f"t{i:02d}", "s", i, ("s", i, "c"), 0), None) for i in (3, 16, 9, 30)]
    cut.apply(later)  # below the sixth key sent (15): may still be among the first six overall
    assert [k[4] for k, _ in later.bursts] == [3, 9]
    assert [k[4] for k in cut.keys] == [3, 9, 10, 11, 12, 13]


def test_a_burst_key_is_remembered_once(few_bursts):
    cut = parallel.BurstCut()
    for _ in range(2):  # one unit sent twice (Dask may run a unit twice): six keys, not three twice
        tracker = bursts_mod.Bursts()
        tracker.bursts = [((False, False, f"t{i:02d}", "s", i, ("s", i, "c"), 0), None) for i in (4, 5, 6)]
        cut.apply(tracker)
        assert len(tracker.bursts) == 3
    assert [k[4] for k in cut.keys] == [4, 5, 6]


# A failed HCCL call: a related (neighbour-family) error on its own line.
HCCL = ("[ERROR] HCCL({pid},python3):2025-11-12-03:{m:02d}:{s:02d}.000.000 [hccl_comm.cc:655] [{pid}][HcclCommPrepare] "
        "call trace: hcclRet -> 9, rank = {i}")


def related_folder(root, files: int = 24, per_file: int = 5) -> int:
    """`files` plogs in three node folders, each with `per_file` HCCL errors and one failed pull.
    -> related errors written."""
    for i in range(files):
        folder = root / f"node-{i % 3}" / "ascend" / "log" / "debug" / "plog"
        folder.mkdir(parents=True, exist_ok=True)
        pid = 5000 + i
        lines = [HCCL.format(pid=pid, m=i % 60, s=k, i=k) for k in range(per_file)]
        lines.append(PULL.format(pid=pid, h=3, m=i % 60, s=59, us=0, tid=pid + 1, r=i))
        (folder / f"plog-{pid}_20251112030000000.log").write_text("\n".join(lines) + "\n")
    return files * per_file


def test_related_errors_that_cannot_make_the_cut_stay_in_the_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(observations, "MAX_RELATED", 7)  # 120 related errors: the report keeps 7
    written = related_folder(tmp_path)
    dropped: list[int] = []
    apply = parallel.RelatedCut.apply

    def counting(self, observed):
        before = len(observed.related)
        apply(self, observed)
        dropped.append(before - len(observed.related))
    monkeypatch.setattr(parallel.RelatedCut, "apply", counting)
    # Files named out of report order: later units often hold the first related errors.
    paths = sorted(str(p) for p in tmp_path.rglob("*.log"))
    random.Random(7).shuffle(paths)
    reports = {jobs: scan_units_of(tmp_path, jobs, paths) for jobs in ("1", "2", "3")}
    assert sum(dropped) > 0  # the cut did leave related errors behind
    monkeypatch.setattr(parallel.RelatedCut, "apply", lambda self, observed: None)  # every one travels
    everything = scan_units_of(tmp_path, "2", paths)
    assert reports["1"] == reports["2"] == reports["3"] == everything
    kept = [(r["source"], r["line"]) for r in everything["related"]]
    assert len(kept) == 7 and kept == sorted(kept) and written == 120
    result = analyze([str(tmp_path)], jobs=2)
    assert len(result.related) == 7  # and the rest counted, wherever they were dropped


def _related_unit(*lines: int) -> Observed:
    observed = Observed()
    observed.related = [RelatedEvent("s", n, None, "n", "hccl", "9", "HCCL error") for n in lines]
    return observed


def test_a_related_cut_keeps_what_may_still_be_among_the_first(monkeypatch):
    monkeypatch.setattr(observations, "MAX_RELATED", 3)
    cut = parallel.RelatedCut()
    first = _related_unit(10, 11, 12, 13)
    cut.apply(first)  # nothing sent yet: all of it goes (the merge trims), the three smallest remembered
    assert [e.line for e in first.related] == [10, 11, 12, 13] and [k[1] for k in cut.keys] == [10, 11, 12]
    later = _related_unit(3, 12, 20)
    cut.apply(later)  # past the third key sent (12): can never be among the first three overall
    assert [e.line for e in later.related] == [3, 12] and later.related_dropped == 1
    assert [k[1] for k in cut.keys] == [3, 10, 11]
    again = _related_unit(3, 10)
    cut.apply(again)  # a unit sent twice (Dask): its keys are remembered once
    assert [k[1] for k in cut.keys] == [3, 10, 11] and len(again.related) == 2


def test_jobs_not_asked_for_start_workers_only_for_big_inputs(tmp_path, monkeypatch):
    """A scan without --jobs uses every CPU for 16 MiB of input or more, and this process below it
    (workers would cost more than they save); the report is the same either way."""
    (tmp_path / "a.log").write_bytes(LOG * 50)
    (tmp_path / "b.log").write_bytes(LOG * 50)
    sources = list(iter_sources([str(tmp_path)], []))
    monkeypatch.setattr(parallel, "cpu_count", lambda: 4)
    assert parallel.jobs_for(sources) == 1
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 2 * len(LOG) * 50)
    assert parallel.jobs_for(sources) == 4
    started = []
    import concurrent.futures

    real = concurrent.futures.ProcessPoolExecutor  # imported by run_units when a pool starts
    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", lambda **kw: started.append(kw) or real(**kw))
    big = CliRunner().invoke(cli, ["scan", str(tmp_path), "--format", "json", "--fail-on", "never"])
    monkeypatch.setattr(parallel, "POOL_MIN_BYTES", 16 << 20)
    small = CliRunner().invoke(cli, ["scan", str(tmp_path), "--format", "json", "--fail-on", "never"])
    assert [kw["max_workers"] for kw in started] == [2]  # two units (files): two of the four CPUs, once
    assert big.stdout == small.stdout and json.loads(small.stdout)["summary"]["findings"] == 100


def test_a_split_files_ranges_bring_tallies_that_merge(tmp_path, monkeypatch):
    """The ranges' own tallies, extended in order, stand for the file: no second pass over its
    findings, and the summary is the one-process scan's."""
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    noise = b"[INFO] GE(5569,python3):2025-11-12-03:40:05.000.001 [x.cc:1]5571 Other: noise\n"
    body = (noise * 30 + LOG) * 200
    path = tmp_path / "big.log"
    path.write_bytes(body)
    (tmp_path / "small.log").write_bytes(LOG)
    sources = list(iter_sources([str(path), str(tmp_path / "small.log")], []))
    units = parallel.plan_units(sources, 3)
    assert [u.end is not None for u in units] == [True, True, True, False]
    engine = parallel.Engine(RuleSet.load())
    results = [parallel.run_unit(engine, u) for u in units]
    assert all(isinstance(r[2], parallel.Tally) for r in results)
    store, _, tally = parallel.merge_results(units, results)
    assert tally is not None and tally.count == len(list(store)) == 201
    one = analyze([str(path), str(tmp_path / "small.log")], jobs=1)
    assert tally.summary() == summarize(one.findings)


# -- a unit's tally leaves out the sources whose years were guessed ------------------------------
def _found(source, line, guessed=False):
    from analyzer.core.records import Finding
    return Finding(source=source, line=line, timestamp="2025-11-12T03:40:05", code="0x5010B001", name=None,
                   api=None, api_evidence=None, api_line=None, recoverable=None, rule="r", action="retry",
                   text="", form="hex", node="n1", year_guessed=guessed)


def _sunk(findings, hold=None):
    from analyzer.run.store import RunWriter
    tally = parallel.Tally()
    sink = parallel._Batched(RunWriter(), tally, leave_guessed=True)
    if hold is not None:
        sink.HOLD = hold
    for f in findings:
        sink.add(f)
    sink.finish()
    return tally


def test_a_source_with_a_guessed_year_is_left_out_of_the_units_tally():
    found = [_found("a.log", 1), _found("a.log", 2), _found("b.log", 1), _found("b.log", 2, guessed=True),
             _found("b.log", 3), _found("c.log", 1)]
    tally = _sunk(found)
    assert tally.whole and tally.untallied == {"b.log"} and tally.sources == {"a.log", "c.log"}
    assert tally.count == 3 and not tally.guessed
    # Counted later, on its own, it completes the tally exactly.
    rest = parallel.Tally()
    for f in found[2:5]:
        rest.add(f)
    tally.merge(rest)
    assert tally.whole is False  # b.log was left out here: only a tally cleared of it may take it
    again = _sunk(found)
    again.untallied = set()
    again.merge(rest)
    assert again.whole and again.summary() == summarize(found)


def test_a_guessed_year_after_the_held_findings_makes_the_tally_unfit():
    found = [_found("a.log", i) for i in range(1, 6)] + [_found("a.log", 6, guessed=True)]
    assert _sunk(found, hold=10).whole  # still held: left out whole
    late = _sunk(found, hold=3)
    assert not late.whole and late.untallied == {"a.log"}  # some were counted: the parent counts all again


def test_a_left_out_source_met_again_stays_left_out_and_a_counted_one_spoils_the_tally():
    again = [_found("a.log", 1, guessed=True), _found("b.log", 1), _found("a.log", 2)]
    tally = _sunk(again)
    assert tally.whole and tally.untallied == {"a.log"} and tally.count == 1
    counted_first = [_found("a.log", 1), _found("b.log", 1), _found("a.log", 2, guessed=True)]
    assert not _sunk(counted_first).whole


def _json_at(path: Path, jobs: int, *args: str) -> str:
    return CliRunner().invoke(cli, ["scan", str(path), "--format", "json", "--fail-on", "never", "--jobs", str(jobs),
                                    *args]).stdout


# Ways a split file's later range read otherwise than the whole file did (found by a differential
# run of 150 MB mixed logs at --jobs 1 and 2; both engines alike).
def test_a_link_fact_more_than_history_bytes_before_the_cut(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    filler = b"[INFO] GE(1,python3):2025-11-12-03:40:00.000.000 [a.cc:1]1 F: nothing to see here\n"
    fact = (b"[INFO] HCCL(5566,python3):2025-11-12-03:45:03.001.000 [transport_manager.cc:859] [6133][HCCL_TRACE]"
            b"Link: link cluster 6 success\n")
    error = b"[ERROR] GE(5566,python3):2025-11-12-03:45:04.500.000 [llm_datadist.cc:561]6191 Func: ret = 1343270913\n"
    path = tmp_path / "plog-5566.log"
    # the cut at --jobs 2 falls in the long line, so the range after it starts at the error
    path.write_bytes(filler * 120 + fact + b"y" * 70_000 + b"\n" + error + filler * 300)
    one = _json_at(path, 1)
    assert '"remote_cluster": "6"' in one
    assert _json_at(path, 2) == one


def test_new_year_crossed_before_the_cut_with_a_given_year(tmp_path, monkeypatch):
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    dec = b"(W pid=9) INFO 12-31 23:59:58 [c.py:1] ok, nothing to see here\n"
    jan = b"(W pid=9) INFO 01-01 00:00:01 [c.py:1] ok, nothing to see here\n"
    path = tmp_path / "vllm.log"
    path.write_bytes(dec * 200 + b"(W pid=9) ERROR 12-31 23:59:59 [c.py:1] ret = 1343270913\n" + jan * 600
                     + b"(W pid=9) ERROR 01-01 00:00:02 [c.py:1] ret = 1343270913\n" + jan * 10)
    one = _json_at(path, 1, "--year", "2025")
    assert '"timestamp": "2026-01-01T00:00:02"' in one
    assert _json_at(path, 2, "--year", "2025") == one


def test_a_version_logged_long_before_the_cut_still_gates_a_rule(tmp_path, monkeypatch):
    # a user rule with a version condition is judged on every version its process logged before;
    # a range after a cut cannot know those, so such a run does not cut files
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "gated.yaml").write_text(
        "rules:\n  - id: link-failed-new-cann\n    match:\n      codes: [LLM_LINK_FAILED]\n"
        "      versions: {cann: \">=8.3.RC1\"}\n    action: check-network\n    remedy: Gated remedy.\n"
        "    examples:\n      match: [\"CANN version = 8.3.RC1\\nLinkClusters: ErrorNo: 1343270921\"]\n",
        encoding="utf-8")
    init = (b"[INFO] GE(4811,python3):2025-11-12-03:39:50.000.000 [ge_api.cc:80]4811 GEInitialize: GE init begin, "
            b"CANN version = 8.3.RC1, build = 20250820\n")
    filler = b"[INFO] GE(4811,python3):2025-11-12-03:40:00.000.000 [a.cc:1]4811 F: nothing to see here\n"
    fail = (b"[ERROR] GE(4811,python3):2025-11-12-03:40:02.123.456 [llm_link_manager.cc:412]4811 LinkClusters: "
            b"ErrorNo: 1343270921(local cluster link with remote cluster failed!)\n")
    path = tmp_path / "plog-4811.log"
    path.write_bytes(init + filler * 2000 + fail + filler * 100)
    one = _json_at(path, 1, "--rules", str(rules))
    assert '"rule": "link-failed-new-cann"' in one
    assert _json_at(path, 2, "--rules", str(rules)) == one


def test_a_link_fact_exactly_link_lines_before_the_range_start(tmp_path, monkeypatch):
    # the history's last line is the line before the range's first (0, not -1): a fact LINK_LINES
    # lines before a finding that opens a range belongs to it, as in the whole file
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    filler = b"[INFO] GE(1,python3):2025-11-12-03:40:00.000.000 [a.cc:1]1 F: nothing to see here\n"
    fact = (b"[INFO] HCCL(5566,python3):2025-11-12-03:45:03.001.000 [transport_manager.cc:859] [6133][HCCL_TRACE]"
            b"Link: link cluster 6 success\n")
    long = b"[INFO] GE(1,python3):2025-11-12-03:40:00.000.000 [a.cc:1]1 F: " + b"x" * 3000 + b"\n"
    error = b"[ERROR] GE(5566,python3):2025-11-12-03:45:04.500.000 [llm_datadist.cc:561]6191 Func: ret = 1343270913\n"
    head = filler * 40 + fact + filler * 10 + long  # the fact is 12 lines before the error
    middle = len(head) - len(long) // 2  # the --jobs 2 cut falls in the long line, so the error opens a range
    tail = filler * ((2 * middle - len(head) - len(error)) // len(filler))
    path = tmp_path / "plog-5566.log"
    path.write_bytes(head + error + tail)
    assert parallel.aligned_cuts(str(path), path.stat().st_size, 2)[1] == len(head)
    one = _json_at(path, 1)
    assert '"remote_cluster": "6"' in one
    assert _json_at(path, 2) == one


def test_a_file_in_an_envelope_is_not_cut_where_a_record_spans_lines(tmp_path, monkeypatch):
    # a CRI partial record (P, then F) across the middle: a cut between its lines would lose the code
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    filler = b"2025-11-12T03:40:00.000000001+08:00 stdout F (EngineCore_DP0 pid=1) INFO 11-12 03:40:00 [a.py:1] ok\n"
    part = (b"2025-11-12T03:40:09.650208337+08:00 stderr P (EngineCore_DP0 pid=1) ERROR 11-12 03:40:09 "
            b"[llmdatadist_c_mgr_connector.py:874] pull_blocks failed, " + b"x" * 3000 + b" ret = 13432\n")
    rest = b"2025-11-12T03:40:09.650208337+08:00 stderr F 70913 for request chatcmpl-2080\n"
    head = filler * 40 + part
    path = tmp_path / "0.log"
    path.write_bytes(head + rest + filler * ((len(head) - len(part) // 2 - len(rest)) // len(filler)))
    assert parallel.aligned_cuts(str(path), path.stat().st_size, 2)[1] == len(head)  # were it cut
    one = _json_at(path, 1)
    assert '"code": "0x5010B001"' in one
    assert _json_at(path, 2) == one
    (unit,) = parallel.plan_units(list(iter_sources([str(path)], [])), 2, envelopes=RuleSet.load().envelopes)
    assert unit.start == 0 and unit.end is None


@pytest.mark.parametrize("magic", [b"BZh91AY&SY", b"\xfd7zXZ\x00"])
def test_a_file_that_starts_like_a_compressed_one_is_read_whole_with_its_note(tmp_path, monkeypatch, magic):
    # the note that it is read as text comes from the unpacker, which a cut file's ranges skip
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    path = tmp_path / "plog-5569.log"
    path.write_bytes(magic + b"\n" + LOG * 300)
    one = _json_at(path, 1)
    assert "does not decode as" in one and '"code": "0x5010B001"' in one
    assert _json_at(path, 2) == one
