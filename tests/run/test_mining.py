"""`run.mining`: which lines `mine` takes, reading as `scan` reads, and draft families that
`rules check` proves."""

from __future__ import annotations

import gzip
import io
import tarfile
from datetime import datetime
from pathlib import Path

import pytest
from analyzer.detect.patterns import CodeMatcher
from analyzer.knowledge.rules import RuleSet
from analyzer.run.api import Options
from analyzer.run.mining import draft_family, mine, write_drafts
from analyzer.run.rulecheck import check_examples, classified_as

ROOT = Path(__file__).resolve().parents[2]
PLOG = "[{lvl}] GE(4811,python3):2025-11-12-03:40:{s:02d}.100.000 [llm_x.cc:12]4811 {msg}"
LINES = [
    PLOG.format(lvl="ERROR", s=1, msg="Flush: flush of queue 3 stalled for 120 ms"),
    PLOG.format(lvl="ERROR", s=2, msg="Flush: flush of queue 7 stalled for 900 ms"),
    PLOG.format(lvl="WARNING", s=3, msg="Reorder: window of 16 requests is full"),
    PLOG.format(lvl="INFO", s=4, msg="Flush: flush of queue 3 stalled for 1 ms"),  # INFO: not taken
    PLOG.format(lvl="ERROR", s=5, msg="LinkClusters: ErrorNo: 1343270921(local cluster link with remote "
                "cluster failed!) [GE][MODULE]Failed to link clusters, index = 0"),  # a code explains it
    PLOG.format(lvl="ERROR", s=6, msg="Sync: runtime result = 507046"),  # a family explains it
    "(Worker_DP0 pid=4711) ERROR 11-12 03:40:07 [core.py:581] Traceback (most recent call last):",
    '(Worker_DP0 pid=4711) ERROR 11-12 03:40:07 [core.py:581]   File "/x/worker.py", line 3, in run',
    "(Worker_DP0 pid=4711) ERROR 11-12 03:40:08 [core.py:581] Worker 3 lost its KV pool",
]


@pytest.fixture(scope="module")
def sample_mined():
    return mine([str(ROOT / "sample_logs")], jobs=1)


def test_takes_unexplained_error_and_warning_lines_only(tmp_path: Path) -> None:
    log = tmp_path / "node-a" / "plog-4811_20251112034001123.log"
    log.parent.mkdir()
    log.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    result = mine([str(tmp_path)])
    texts = sorted((t.text, t.count, t.level) for t in result.miner.templates())
    assert texts == [("Flush flush of queue <N> stalled for <N> ms", 2, "ERROR"),
                     ("Reorder window of <N> requests is full", 1, "WARNING"),
                     ("Worker <N> lost its KV pool", 1, "ERROR")]
    assert result.taken == 4 and result.explained == 2 and result.stats.lines == len(LINES)
    flush = next(t for t in result.miner.templates() if t.text.startswith("Flush"))
    assert flush.examples == LINES[:2] and flush.sources == [(str(log), 1), (str(log), 2)]


def test_reads_archives_and_the_time_window(tmp_path: Path) -> None:
    data = ("\n".join(LINES) + "\n").encode()
    member = tarfile.TarInfo("node-b/ascend/log/debug/plog/plog-4811_20251112034001123.log.gz")
    packed = gzip.compress(data, mtime=0)
    member.size = len(packed)
    with tarfile.open(tmp_path / "bundle.tar", "w") as tar:
        tar.addfile(member, io.BytesIO(packed))
    result = mine([str(tmp_path / "bundle.tar")], options=Options(since=datetime(2025, 11, 12, 3, 40, 2),
                                                                until=datetime(2025, 11, 12, 3, 40, 3, 500000)))
    assert sorted((t.text, t.count) for t in result.miner.templates()) == [
        ("Flush flush of queue <N> stalled for <N> ms", 1), ("Reorder window of <N> requests is full", 1)]
    assert {n for t in result.miner.templates() for n in t.nodes} == {"node-b"}


def test_sample_logs_hold_unexplained_lines_near_their_incidents(sample_mined) -> None:
    texts = [t.text for t in sample_mined.miner.templates()]
    assert "Heartbeat lost heartbeat from <IP> for <N> times" in texts
    assert "HixlInit HIXL transfer engine not available, fallback to HCCL transport" in texts
    assert sample_mined.incidents == 6 and sample_mined.explained > sample_mined.taken > 10
    matcher = CodeMatcher(RuleSet.load().catalog)
    for t in sample_mined.miner.templates():
        assert all(not matcher.find(ex) for ex in t.examples), t.text  # a code explains none of them
    assert sample_mined.top(1)[0].nearest == 0.0  # inside an incident


def test_draft_families_are_proved_by_rules_check(sample_mined, tmp_path: Path) -> None:
    drafted = write_drafts(tmp_path, sample_mined.top(15), RuleSet.load())
    assert len(drafted) >= 10
    rules = RuleSet.load([tmp_path])
    assert check_examples(rules) == []
    ids = {f.id for f in rules.neighbours.families}
    assert set(drafted) <= ids and {"runtime", "hccl", "socket"} <= ids  # the built-in families kept
    heartbeat = next(t for t in sample_mined.miner.templates() if t.text.startswith("Heartbeat lost"))
    family, examples = draft_family(heartbeat) or ({}, [])
    assert examples == ["[WARNING] HCCL(4811,python3):2025-11-12-03:40:30.303.771 [heartbeat.cc:312] "
                        "[4852][Heartbeat] lost heartbeat from 10.0.2.12 for 3 times"]
    assert family["literals"] == ["heartbeat"] or family["literals"] == ["Heartbeat"]
    # the draft matches its own shape, not a line of another shape
    assert family["id"] in classified_as(rules.neighbours, examples[0].replace("10.0.2.12", "10.9.9.9"))
    assert family["id"] not in classified_as(rules.neighbours, "[WARNING] HCCL(1,p): heartbeat ok")


def test_a_template_with_too_little_fixed_text_is_not_drafted() -> None:
    from analyzer.diagnose.mining import Miner

    m = Miner()
    t = m.add("12 34 56")
    assert draft_family(t) is None


def test_under_the_core_plain_lines_are_explained_there(monkeypatch: pytest.MonkeyPatch) -> None:
    """`mine` and `scan --unexplained` ask of each ERROR/WARNING line whether a code or a link fact
    explains it: under the compiled core a plain ASCII line is answered there (the codes and the
    fact table), not by Python's forms (the pass took twice as long); the answers are the same."""
    import importlib.util

    if importlib.util.find_spec("ddtriage_core") is None:
        pytest.skip("the compiled core (ddtriage_core) is not installed")
    from analyzer.knowledge.linkfacts import LinkFactMatcher
    from analyzer.run import mining
    from analyzer.scan import blocks

    monkeypatch.setattr(blocks, "ENGINE", "rust")
    from analyzer.detect.engine import Engine

    rules = RuleSet.load()
    Engine(rules)  # what a scan builds first: the fact table in the core
    reader = mining._LineReader(rules, Options(), mining.MineResult(mining.Miner()))
    assert reader.codes.core is not None
    fact = "Init: llm datadist init success, role = Decoder, cluster_id = 10, device_id = 0"
    with monkeypatch.context() as patch:
        def python(*_: object) -> None:
            pytest.fail("read by Python's forms")
        patch.setattr(LinkFactMatcher, "find_plainly", python)
        patch.setattr(CodeMatcher, "_matches", python)
        assert reader.explained(LINES[4]) and reader.explained(fact) and not reader.explained(LINES[0])
    # the same answers without the core
    plain = mining._LineReader(RuleSet.load(), Options(), mining.MineResult(mining.Miner()))
    plain.codes.use_core(None)
    assert [plain.explained(t) for t in (LINES[4], fact, LINES[0])] == [True, True, False]
