"""Stage: parallel. Small files batched into work units by bytes; what a unit sends back (its
tally, the bursts that can still make the summary's cut) gives the same report for any --jobs."""

import json
import random

import analyzer.diagnose.bursts as bursts_mod
import analyzer.run.parallel as parallel
import pytest
from analyzer import analyze
from analyzer.cli import cli
from analyzer.inputs import iter_sources
from click.testing import CliRunner

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


def scan(path, jobs: str) -> dict:
    result = CliRunner().invoke(cli, ["scan", str(path), "--format", "json", "--fail-on", "never", "-q",
                                      "-j", jobs])
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
    reports = {jobs: scan(tmp_path, jobs) for jobs in ("1", "2", "3")}
    assert sum(dropped) > 0  # the cut did leave bursts behind (in this process, at -j1)
    monkeypatch.setattr(parallel.BurstCut, "apply", lambda self, tracker: None)  # every burst travels
    everything = scan(tmp_path, "2")
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
