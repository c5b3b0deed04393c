"""detect.observer: a related error past its stream's cap is counted, not built, with the same report."""

from __future__ import annotations

import importlib.util
import json
from functools import partial
from pathlib import Path

import pytest
from analyzer.core import observations
from analyzer.detect import observer
from analyzer.run import api
from analyzer.writers import render_report

HCCL = "call hccl op failed, hcclRet -> 9, rank = 1"
CODE = "[pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT"


def _vllm_across_new_year() -> str:
    """Year-less vLLM stamps: neighbour errors in December, then past the cap into January (the
    clock must see the crossing in the lines it only counts), then findings."""
    lines = [f"(W pid=9) ERROR 12-31 23:59:{s:02d} [c.py:1] {HCCL}" for s in range(40, 60)]
    lines += [f"(W pid=9) ERROR 01-01 00:00:{s:02d} [c.py:1] {HCCL}" for s in range(0, 10)]
    lines += ["(W pid=9) ERROR 01-01 00:00:11 [c.py:1] " + CODE, "a line without a stamp, after it: " + HCCL]
    return "\n".join(lines) + "\n"


def _plog_with_two_families_a_line() -> str:
    out = []
    for i in range(60):
        out.append(f"[ERROR] HCCL(77,python3):2025-11-10-15:36:{i:02d}.000.001 [t.cc:1] 78 Run: {HCCL}; "
                   f"connect failed, errno = 111")
        if i % 7 == 0:
            out.append(f"[ERROR] GE(77,python3):2025-11-10-15:36:{i:02d}.500.000 [l.cc:2] 79 Pull: "
                       "PullKvBlocks failed, ret = 0x5010B001")
    return "\n".join(out) + "\n"


def _report(path: Path, count_past_cap: bool, jobs: int, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(observer, "COUNT_PAST_CAP", count_past_cap)
    return render_report("json", api.analyze([str(path)], jobs=jobs))


@pytest.mark.parametrize("cap", [1, 3, 8])
@pytest.mark.parametrize("log", [_vllm_across_new_year, _plog_with_two_families_a_line])
def test_counting_past_the_cap_gives_the_report_building_them_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    cap: int, log) -> None:
    path = tmp_path / "vllm_20251231.log"
    path.write_text(log())
    monkeypatch.setattr(observations, "MAX_RELATED", cap)
    built = _report(path, False, 1, monkeypatch)
    related = json.loads(built)["related"]
    assert len(related) == cap  # the cap was reached: the shortcut had lines to skip
    for jobs in (1, 2):
        assert _report(path, True, jobs, monkeypatch) == built


def test_the_clock_still_rolls_over_in_lines_only_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """December (noted), then January and July (only counted), then a finding in December: only a
    clock that saw January knows it is the next December (the stream's own times, before a run
    settles guessed years)."""
    import io

    from analyzer.core.records import InputStats
    from analyzer.detect.engine import Engine
    from analyzer.inputs import year_hint
    from analyzer.knowledge.rules import RuleSet

    text = (f"(W pid=9) ERROR 12-31 23:59:00 [c.py:1] {HCCL}\n"
            f"(W pid=9) ERROR 01-01 00:00:01 [c.py:1] {HCCL}\n"
            f"(W pid=9) ERROR 07-01 00:00:01 [c.py:1] {HCCL}\n"
            f"(W pid=9) ERROR 12-01 00:00:01 [c.py:1] {CODE}\n")
    engine = Engine(RuleSet.load())
    monkeypatch.setattr(observations, "MAX_RELATED", 1)

    def stamps(count_past_cap: bool) -> tuple[list, list]:
        monkeypatch.setattr(observer, "COUNT_PAST_CAP", count_past_cap)
        stats = InputStats()
        name = "worker.log"  # with --year 2025: the year the log starts in, New Years counted
        found = engine.scan_leaf(name, io.BytesIO(text.encode()), year_hint(name, None, 2025), stats)
        return [f.timestamp for f in found], [e.timestamp for e in stats.observed.related[:1]]

    assert stamps(True) == stamps(False) == (["2026-12-01T00:00:01"], ["2025-12-31T23:59:00"])


def test_a_long_lines_later_pieces_are_still_built_at_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than a block is scanned in pieces of one line number: a later piece may hold
    an error ordered before one already noted on that line (hccl < socket), which the report keeps."""
    from analyzer.scan import blocks

    monkeypatch.setattr(blocks, "MAX_LINE", 1000)
    monkeypatch.setattr(observations, "MAX_RELATED", 3)
    filler = "x" * (2 * blocks.BLOCK_SIZE + 1000)  # past the block that holds its head
    head = "[ERROR] GE(77,python3):2025-11-10-15:36:01.000.001 [t.cc:1] 78 Run: "
    path = tmp_path / "plog-77_20251110153600000.log"
    path.write_text(head + HCCL + "; connect failed, errno = 111\n"
                    + head + "connect failed, errno = 111 " + filler + " " + HCCL + "\n")
    built = _report(path, False, 1, monkeypatch)
    assert [(e["line"], e["family"]) for e in json.loads(built)["related"]] == [(1, "hccl"), (1, "socket"),
                                                                                (2, "hccl")]
    assert _report(path, True, 1, monkeypatch) == built


# -- the compiled core's share: lines past the cap answered without Python ---------------------------

RELATED_LOG = Path(__file__).resolve().parents[1] / "data" / "twin" / "related_past_cap.log"


def _observed(path: Path, engine: str, monkeypatch: pytest.MonkeyPatch, tz=None, native: bool = False
              ) -> tuple[str, int]:
    """What a stream gives under `engine`: its findings (with their link facts), every related
    error kept and dropped, node facts and proofs, as text; and what the core counted itself
    through `RelatedCount`. `native`: the engine in the core reads the stream (`engine.NATIVE`;
    it counts past the cap itself), else Python's engine with the core's pieces."""
    from analyzer.core.records import InputStats
    from analyzer.detect import engine as engine_module
    from analyzer.detect.engine import Engine
    from analyzer.knowledge.rules import RuleSet
    from analyzer.scan import blocks

    monkeypatch.setattr(blocks, "ENGINE", engine)
    monkeypatch.setattr(engine_module, "NATIVE", native)
    # blocks of 256 bytes: the core is told of the cap from the block after the one that reached it
    monkeypatch.setattr(engine_module, "scan_stream", partial(blocks.scan_stream, block_size=256))
    monkeypatch.setattr(engine_module, "scan_native", partial(blocks.scan_native, block_size=256))
    counted: list[int] = []
    real = observations.Observed.count_dropped
    monkeypatch.setattr(observations.Observed, "count_dropped",
                        lambda self, n: (counted.append(n), real(self, n))[-1])
    engine_ = Engine(RuleSet.load(), tz=tz)
    stats = InputStats()
    with open(path, "rb") as handle:
        found = engine_.scan_leaf(str(path), handle, None, stats)
    o = stats.observed
    nodes = {k or "": v.to_dict(k) for k, v in o.settle().items()}
    return repr((found, o.sorted_related(), o.related_dropped, json.dumps(nodes, sort_keys=True),
                 o.sorted_proofs())), sum(counted)


@pytest.mark.skipif(importlib.util.find_spec("ddtriage_core") is None, reason="the compiled core is not installed")
@pytest.mark.parametrize("ahead", [False, True])
@pytest.mark.parametrize("cap", [1, 3, 5])
def test_the_core_counts_past_the_cap_as_python_does(monkeypatch: pytest.MonkeyPatch, cap: int, ahead: bool) -> None:
    """tests/data/twin/related_past_cap.log (by hand): past the cap, neighbour-error lines with
    and without facts, of two processes, a CRLF and a tab; and beside them what stays Python's (a
    code on the line, a possible proof, non-ASCII, no plog header). Findings after counted lines
    carry the link facts those lines named; a proof names the peer one of them named."""
    from analyzer.scan import blocks

    monkeypatch.setattr(observations, "MAX_RELATED", cap)
    monkeypatch.setattr(blocks, "SCAN_AHEAD", ahead)  # the cap told from the main thread to the one scanning ahead
    python, none = _observed(RELATED_LOG, "python", monkeypatch)
    rust, by_core = _observed(RELATED_LOG, "rust", monkeypatch)
    assert rust == python
    assert none == 0 and by_core > 0  # the core did count lines itself
    assert _observed(RELATED_LOG, "rust", monkeypatch, native=True)[0] == python  # and so does its engine
    monkeypatch.setattr(observer, "COUNT_PAST_CAP", False)  # the plain twin: everything built, then trimmed
    assert _observed(RELATED_LOG, "rust", monkeypatch) == (python, 0)


def test_the_counted_lines_facts_reach_the_findings_after_them(monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.detect import engine as engine_module
    from analyzer.scan import blocks

    monkeypatch.setattr(observations, "MAX_RELATED", 1)
    monkeypatch.setattr(engine_module, "scan_stream", partial(blocks.scan_stream, block_size=256))
    monkeypatch.setattr(engine_module, "scan_native", partial(blocks.scan_native, block_size=256))
    report = json.loads(render_report("json", api.analyze([str(RELATED_LOG)])))
    links = {f["line"]: f.get("link") or {} for f in report["findings"]}
    assert links[7] == {"remote_cluster": "3"}  # the counted line 3 lines up (remote_ip: the serving side's)
    assert links[14] == {"req_id": "4242"}  # process 7001's counted line, 8 lines before
    assert links[18]["remote_cluster"] == "6" and links[18]["device"] == "3"
    assert report["inputs"]["lines"] == 18


STAMPS_LOG = Path(__file__).resolve().parents[1] / "data" / "twin" / "related_stamps.log"


@pytest.mark.skipif(importlib.util.find_spec("ddtriage_core") is None, reason="the compiled core is not installed")
@pytest.mark.parametrize("tz", [None, "+08:00"])
def test_lines_of_neighbour_errors_the_core_reads_are_noted_as_python_notes_them(
        monkeypatch: pytest.MonkeyPatch, tz: str | None) -> None:
    """tests/data/twin/related_stamps.log (by hand): neighbour errors on plog lines whose stamps
    print microseconds, milliseconds of one or two digits, a comma, no fraction; leading blanks,
    spaces inside the header, a CRLF, facts; and beside them what stays Python's: no plog header,
    a code on the line, a possible proof, non-ASCII, a family named with no error. The core reads
    the first kind whole (`related_row`); the related errors, facts and findings are Python's."""
    from datetime import datetime

    zone = datetime.strptime(tz, "%z").tzinfo if tz else None
    read: list[int] = []
    real = observer.LineObserver.related_row
    monkeypatch.setattr(observer.LineObserver, "related_row",
                        lambda self, state, node, n, raw, row: (read.append(n), real(self, state, node, n, raw, row)))
    python, _ = _observed(STAMPS_LOG, "python", monkeypatch, zone)
    assert not read
    rust, _ = _observed(STAMPS_LOG, "rust", monkeypatch, zone)
    assert rust == python
    assert read == [1, 2, 3, 4, 5, 6, 8, 9, 12, 15, 16]  # by hand: the lines the core can read alike
    assert _observed(STAMPS_LOG, "rust", monkeypatch, zone, native=True)[0] == python
    read.clear()
    monkeypatch.setattr(observer, "CORE_READS_RELATED", False)
    assert _observed(STAMPS_LOG, "rust", monkeypatch, zone)[0] == python and not read


# Pieces of generated lines: plog headers as printed and damaged, neighbour errors, codes, facts,
# proofs of recovery, what only Python reads (non-ASCII, a CR, a tab, NUL, colour).
_HEADS = ["[ERROR] HCCL(6120,python3):2025-11-12-03:42:00.001.000 [t.cc:8] [6133]Link: ",
          "[ERROR] HCCL(7001,python3):2025-11-12-03:42:01.5 [t.cc:8] ", "  [WARNING] RUNTIME( 12 ,p):2025-11-12 03:42:02,7 ",
          "[ERROR] GE(6120,python3):2025-11-12T03:42:03 [llm_datadist.cc:1]6190 PullKvBlocks: ",
          "[ERROR] HCCL(6120,python3):2025-11-12-03:42:04.001 ", "(W pid=9) ERROR 11-12 03:42:05 [c.py:1] ",
          "ERROR HCCL(1,p):2025-11-12-03:42:06.1.2 ", "[ERROR] HCCL(6120,python3):2025-13-45-99:99:99.001.000 ", ""]
_BODIES = ["call hccl op failed, hcclRet -> 9", "hcclRet -> 12", "HCCL_E_TIMEOUT", "rtDeviceInit failed, ret = 207001",
           "ret = 1343270913", "LLM_WAIT_PROC_TIMEOUT", ", remote_cluster_id = 3", ", remote_ip = 10.1.0.3, port = 26000",
           ", req_id = 4242", ", device_id = 2", "link cluster 6 success", " 本地", "\r", "\t", "\x00", "\x1b[31m", " x"]


@pytest.mark.skipif(importlib.util.find_spec("ddtriage_core") is None, reason="the compiled core is not installed")
def test_generated_lines_of_neighbour_errors_are_noted_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Generated plog streams of neighbour errors, codes, facts and proofs: the related errors, node
    facts, proofs and findings of the Rust engine (the core reading lines whole) equal the Python
    engine's, below and past a small cap."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    line = st.tuples(st.sampled_from(_HEADS), st.lists(st.sampled_from(_BODIES), min_size=1, max_size=4))
    path = tmp_path / "gen.log"
    read: list[int] = []
    real = observer.LineObserver.related_row
    monkeypatch.setattr(observer.LineObserver, "related_row",
                        lambda self, state, node, n, raw, row: (read.append(n), real(self, state, node, n, raw, row)))

    @settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(lines=st.lists(line, min_size=3, max_size=25), cap=st.sampled_from([2, 5000]))
    def check(lines: list[tuple[str, list[str]]], cap: int) -> None:
        path.write_bytes("".join(h + "".join(b) + "\n" for h, b in lines).encode("utf-8"))
        with monkeypatch.context() as patch:
            patch.setattr(observations, "MAX_RELATED", cap)
            python, _ = _observed(path, "python", patch)
            rust, _ = _observed(path, "rust", patch)
            native, _ = _observed(path, "rust", patch, native=True)
        assert rust == python
        assert native == python

    check()
    assert len(read) > 20  # the core read lines whole, not only Python
