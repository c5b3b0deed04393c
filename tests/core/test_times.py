"""Stage: time policy. Time windows (a stamp-less line takes the time before it), years of
year-less stamps (file names, --year, mtimes, New Year crossings, the node's other logs).
"""

import io
import os
import tarfile
from datetime import UTC, datetime

from analyzer.core.headers import parse_header
from analyzer.core.records import Finding
from analyzer.core.times import EVERY_TIME, TimeWindow, parse_ts, parse_tz, settle_years
from analyzer.inputs import YearHint
from analyzer.scan.clock import Rollover, StreamClock, time_before

from reports import scan

LOG = (b"[INFO] GE(5569,python3):2025-11-12-03:40:05.000.001 [llm_datadist.cc:1]5571 PullKvBlocks: start\n"
       b"[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:8]5571 PullKvBlocks: "
       b"ErrorNo: 1343270913(request wait to be processed timeout!) [GE][MODULE]pull blocks timeout\n")


def test_time_window_across_formats(tmp_path):
    (tmp_path / "plog-1_20251112000000000.log").write_bytes(LOG)  # 03:40:05
    (tmp_path / "vllm.log").write_text(
        "(Worker pid=9) ERROR 11-12 03:50:00 [c.py:1] [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT\n")
    (tmp_path / "glog.log").write_text("E20251112 04:10:00.000001 77 a.cpp:1] LinkClusters failed, ret = 1343270921\n")
    result = scan(tmp_path, since=datetime(2025, 11, 12, 3, 45), until=datetime(2025, 11, 12, 4, 0), year=2025)
    assert [f.source.rsplit("/", 1)[-1] for f in result.findings] == ["vllm.log"]
    assert list(result.findings)[0].timestamp == "2025-11-12T03:50:00"
    assert result.inputs.outside_window == 2


def test_traceback_line_takes_the_time_of_its_traceback(tmp_path):
    path = tmp_path / "vllm_20251203.log"
    path.write_text("\n".join([
        "(Worker pid=7) ERROR 12-03 10:15:30 [w.py:1] something earlier",
        "(Worker pid=8) ERROR 12-03 10:15:38 [w.py:1] other worker",
        "(Worker pid=7) ERROR 12-03 10:15:40 [w.py:1] Traceback (most recent call last):",
        '(Worker pid=7)   File "/x.py", line 3, in pull_blocks',
        "(Worker pid=7) llm_datadist.status.LLMException: error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT",
    ]) + "\n")
    assert len(scan(path, since=datetime(2025, 12, 3, 10, 15, 35)).findings) == 1
    assert len(scan(path, until=datetime(2025, 12, 3, 10, 15, 39)).findings) == 0


def test_year_for_vllm_comes_from_mtime(tmp_path):
    path = tmp_path / "worker.log"
    path.write_text("(W pid=9) ERROR 11-12 03:50:00 [c.py:1] [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT\n")
    os.utime(path, (1750000000, 1750000000))  # 2025-06-15
    assert list(scan(path, year=2024).findings)[0].timestamp == "2024-11-12T03:50:00"
    os.utime(path, (1765000000, 1765000000))  # 2025-12-06: written after November 12th
    assert list(scan(path).findings)[0].timestamp == "2025-11-12T03:50:00"
    os.utime(path, (1735700000, 1735700000))  # 2025-01-01: November 12th was the year before
    assert list(scan(path).findings)[0].timestamp == "2024-11-12T03:50:00"


def test_vllm_year_from_the_member_mtime_never_after_it(tmp_path):
    line = b"(W pid=9) ERROR 12-03 03:50:00 [c.py:1] [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT\n"
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("vllm.log")
        info.size, info.mtime = len(line), 1717200000  # 2024-06-01: the member's own time
        tar.addfile(info, io.BytesIO(line))
    path = tmp_path / "bundle.tar.gz"
    path.write_bytes(buf.getvalue())
    # December 3rd cannot be after the member was written on 2024-06-01: it is 2023-12-03.
    assert list(scan(path).findings)[0].timestamp == "2023-12-03T03:50:00"


def test_guessed_year_follows_the_node_not_the_mtime(tmp_path):
    node = tmp_path / "decode-node-2"
    node.mkdir()
    (node / "plog-5569_20251112034002789.log").write_bytes(LOG)
    vllm = node / "worker.log"
    vllm.write_text("(W pid=9) ERROR 11-12 03:50:00 [c.py:1] [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT\n")
    os.utime(vllm, (1800000000, 1800000000))  # 2027: when the bundle was copied, not the incident
    stamps = {f.source.rsplit("/", 1)[-1]: f.timestamp for f in scan(tmp_path).findings}
    assert stamps["worker.log"] == "2025-11-12T03:50:00"
    assert list(scan(vllm).findings)[0].timestamp == "2026-11-12T03:50:00"  # mtime 2027-01-15: the November before


def test_year_crossing_inside_a_vllm_log(tmp_path):
    lines = ("(W pid=9) ERROR 12-31 23:59:58 [c.py:1] [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT\n"
             "(W pid=9) ERROR 01-01 00:00:03 [c.py:1] [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT\n")
    named = tmp_path / "vllm_20251231.log"
    named.write_text(lines)
    assert [f.timestamp[:10] for f in scan(named).findings] == ["2025-12-31", "2026-01-01"]
    node = tmp_path / "n1"
    node.mkdir()
    (node / "plog-1_20251231120000000.log").write_bytes(LOG)  # the node's logs say 2025
    worker = node / "worker.log"
    worker.write_text(lines)
    os.utime(worker, (1767300000, 1767300000))  # 2026-01-01: written after both lines
    stamps = sorted(f.timestamp[:10] for f in scan(tmp_path / "n1").findings if f.source.endswith("worker.log"))
    assert stamps == ["2025-12-31", "2026-01-01"]


def test_name_date_at_the_end_of_a_log_crossing_new_year(tmp_path):
    path = tmp_path / "vllm_20260101.log"
    path.write_text("(W pid=9) ERROR 12-31 23:59:59 [c.py:1] [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT\n"
                    "(W pid=9) ERROR 01-01 00:00:05 [c.py:1] [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT\n")
    assert [f.timestamp[:10] for f in scan(path).findings] == ["2025-12-31", "2026-01-01"]
    assert [f.timestamp[:10] for f in scan(path, year=2025).findings] == ["2025-12-31", "2026-01-01"]


# -- the policy itself, without files ----------------------------------------------------------
def _finding(timestamp, node="n1", year_guessed=False, time_hint=None):
    return Finding(source="x.log", line=1, timestamp=timestamp, code="0x5010B001", name=None, api=None,
                   api_evidence=None, api_line=None, recoverable=None, rule="r", action="retry",
                   text="", form="hex", node=node, year_guessed=year_guessed, time_hint=time_hint)


def test_rollover_counts_each_new_year():
    roll = Rollover()
    stamps = ["2025-11-30T10:00:00", "2025-12-31T23:59:59", "2025-01-01T00:00:01", "2025-06-01T00:00:00",
              "2025-12-01T00:00:00", "2025-01-02T00:00:00"]
    assert [roll.adjust(s)[:4] for s in stamps] == ["2025", "2025", "2026", "2026", "2026", "2027"]


def test_settle_years_moves_guesses_next_to_the_node():
    known = _finding("2025-12-30T10:00:00")
    guess = _finding("2027-01-02T10:00:00", year_guessed=True)  # the mtime's year was a wrong guess
    elsewhere = _finding("2024-01-02T10:00:00", node="n2", year_guessed=True, time_hint="2024-01-02T09:00:00")
    settled = settle_years([known, guess, elsewhere])
    assert settled[0] == known
    assert settled[1].timestamp == "2026-01-02T10:00:00"  # the January right after the node's December
    assert (settled[2].timestamp, settled[2].time_hint) == ("2026-01-02T10:00:00", "2026-01-02T09:00:00")  # run's
    march = settle_years([_finding("2025-03-01T00:00:00"), _finding("2023-03-02T00:00:00", year_guessed=True)])
    assert march[1].timestamp == "2025-03-02T00:00:00"


def test_settle_years_gives_february_29th_a_leap_year():
    out = settle_years([_finding("2025-06-01T00:00:00"), _finding("2028-02-29T00:00:00", year_guessed=True)])
    assert out[1].timestamp == "2024-02-29T00:00:00"  # of 2024, 2025, 2026 only 2024 has the day


def test_the_window_keeps_what_has_no_time():
    inside, outside = _finding("2025-11-12T03:50:00"), _finding("2025-11-12T05:00:00")
    hinted, timeless = _finding(None, time_hint="2025-11-12T03:55:00"), _finding(None)
    window = TimeWindow.of(datetime(2025, 11, 12, 3, 45), datetime(2025, 11, 12, 4, 0))
    kept = [f for f in (inside, outside, hinted, timeless) if window.holds(f.timestamp, f.time_hint)]
    assert kept == [inside, hinted, timeless]
    assert EVERY_TIME.holds(outside.timestamp) and not EVERY_TIME


def test_one_window_for_findings_and_related_errors_whatever_the_bounds_carry():
    """Review #16: related errors were windowed against the raw bounds, findings against the
    zone-adjusted ones, so an aware bound met a naive stamp (TypeError)."""
    window = TimeWindow.of(datetime(2025, 11, 12), None, parse_tz("+08:00"))
    assert window.since == datetime(2025, 11, 11, 16, 0)  # naive UTC, as stamps are compared
    assert window.holds("2025-11-11T17:00:00") and not window.holds("2025-11-11T15:59:59")
    assert window.holds("2025-11-12T01:00:00+08:00") is True  # 17:00 UTC
    assert TimeWindow.of(datetime(2025, 11, 12, tzinfo=UTC), None).holds("2025-11-12T00:00:01")


def test_a_stamp_less_line_takes_the_time_of_its_process_record_before_it():
    header = parse_header("(Worker pid=7) llm_datadist.status.LLMException: error code is LLMStatusCode.LLM_FAILED")
    earlier = [(1, "(Worker pid=7) ERROR 12-03 10:15:30 [w.py:1] mine"),
               (2, "(Worker pid=8) ERROR 12-03 10:15:38 [w.py:1] another worker")]
    assert time_before(earlier, header, YearHint(2025))[0] == "2025-12-03T10:15:30"
    clock = StreamClock(YearHint(2025, guessed=True, written_by="12-31"), year_guessed=True)
    when = clock.time_of(header, lambda: earlier)
    assert (when.timestamp, when.time_hint, when.year_guessed) == (None, "2025-12-03T10:15:30", True)


def test_parse_ts():
    assert parse_ts("2025-11-12T03:40:05.101002") == datetime(2025, 11, 12, 3, 40, 5, 101002)
    assert parse_ts(None) is None and parse_ts("not a time") is None
