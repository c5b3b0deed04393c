"""The engine in the compiled core (`ddtriage_core.Stream`, `core/src/detect.rs`) against this
package's engine, its reference: the pieces it reads lines with (record headers of every format,
API evidence on a line, message templates and fingerprints) on generated lines, and whole streams
of generated lines (every header format, tracebacks, generic echoes, causes, facts, proofs, lines
it leaves to Python) under each kind of year hint and as a byte range after its history."""

from __future__ import annotations

import importlib.util
import io
from functools import partial
from pathlib import Path

import pytest
from analyzer.core import headers, observations
from analyzer.core.records import InputStats
from analyzer.core.times import parse_tz
from analyzer.detect import engine as engine_module
from analyzer.detect import fingerprint
from analyzer.detect.context import ApiResolver
from analyzer.detect.engine import Engine
from analyzer.inputs import YearHint
from analyzer.knowledge.rules import RuleSet
from analyzer.scan import blocks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linegen import BODIES, HEADS, YEARS

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ddtriage_core") is None,
                                reason="the compiled core (ddtriage_core) is not installed")

ROOT = Path(__file__).resolve().parents[2]



def _rust(monkeypatch: pytest.MonkeyPatch, tz: str | None = None) -> Engine:
    monkeypatch.setattr(blocks, "ENGINE", "rust")
    engine = Engine(RuleSet.load(), tz=None if tz is None else parse_tz(tz))
    assert engine._detector is not None, "the core's engine was not built"
    return engine


def _state(engine: Engine, data: bytes, year: YearHint | None, native: bool, start: int = 0) -> str:
    """Findings, related errors, node facts and proofs of a stream (from byte `start`, after its
    history, as a parallel range is read), as text."""
    from analyzer.run.parallel import scan_range

    engine_module.NATIVE = native
    stats, found = InputStats(), []
    try:
        if start:
            import tempfile

            src = type("Src", (), {"name": "gen.log", "mtime": None, "bundle": None})()
            with tempfile.TemporaryFile() as handle:
                handle.write(data)
                scan_range(engine, src, handle, start, len(data), stats, found.append)  # type: ignore[arg-type]
        else:
            found = engine.scan_leaf("node-3/gen.log", io.BytesIO(data), year, stats, year_guessed=bool(
                year and year.guessed))
    finally:
        engine_module.NATIVE = True
    o = stats.observed
    nodes = {k or "": v.to_dict(k) for k, v in o.settle().items()}
    return repr((found, o.sorted_related(), o.related_dropped, nodes, o.sorted_proofs(), stats.lines))


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(st.sampled_from(HEADS), st.lists(st.sampled_from(BODIES), min_size=1, max_size=4)),
                      min_size=1, max_size=40),
       year=st.sampled_from(YEARS), cap=st.sampled_from([2, 5000]), cut=st.integers(0, 39), crlf=st.booleans())
def test_generated_streams_give_what_the_python_engine_gives(monkeypatch: pytest.MonkeyPatch, lines, year, cap, cut,
                                                              crlf) -> None:
    engine = _rust(monkeypatch)
    end = "\r\n" if crlf else "\n"
    text = [h + "".join(b) for h, b in lines]
    data = "".join(t + end for t in text).encode("utf-8")
    with monkeypatch.context() as patch:
        patch.setattr(observations, "MAX_RELATED", cap)
        plain = _state(engine, data, year, False)
        assert _state(engine, data, year, True) == plain
        # a byte range after its history: the state `_seed` noted reaches the core's engine
        start = len("".join(t + end for t in text[:cut]).encode("utf-8")) if cut < len(text) else 0
        if start:
            assert _state(engine, data, year, True, start) == _state(engine, data, year, False, start)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(st.sampled_from(HEADS), st.lists(st.sampled_from(BODIES), min_size=1, max_size=4)),
                      min_size=1, max_size=30),
       year=st.sampled_from(YEARS), zone=st.sampled_from(["+08:00", "-03:30", "America/New_York", "UTC"]),
       cut=st.integers(0, 29))
def test_generated_streams_under_tz_give_what_the_python_engine_gives(monkeypatch: pytest.MonkeyPatch, lines, year,
                                                                      zone, cut) -> None:
    """--tz: the core's engine asks the stream's clock for each stamp (`StreamClock.zoned`)."""
    engine = _rust(monkeypatch, zone)
    text = [h + "".join(b) for h, b in lines]
    data = "".join(t + "\n" for t in text).encode("utf-8")
    assert _state(engine, data, year, True) == _state(engine, data, year, False)
    start = len("".join(t + "\n" for t in text[:cut]).encode("utf-8")) if cut < len(text) else 0
    if start:
        assert _state(engine, data, year, True, start) == _state(engine, data, year, False, start)


def test_the_core_reads_the_lines_under_tz(monkeypatch: pytest.MonkeyPatch) -> None:
    """--tz keeps a plain log in the core's engine (it once sent every line to Python): stamps in a
    daylight-saving gap and fold of New York, a repeated stamp and a year-less vLLM one, in UTC as
    zoneinfo reads them (fold 0: the gap and the fold take the offset before the change)."""
    engine = _rust(monkeypatch, "America/New_York")
    python: list[int] = []
    real_candidate = Engine._candidate
    monkeypatch.setattr(Engine, "_candidate", lambda self, *a: (python.append(1), real_candidate(self, *a))[1])
    plog = "[ERROR] GE(61,python3):{} [x.cc:1]62 PullKvBlocks: ret = 1343270913\n"
    data = "".join([plog.format("2025-03-09-02:30:00.001.000"), plog.format("2025-11-02-01:30:00.002.000"),
                    plog.format("2025-11-02-01:30:00.002.000"), plog.format("2025-07-01-12:00:00"),
                    "(W pid=9) ERROR 01-15 08:00:00 [c.py:1] ret = 1343270913\n"]).encode()
    found = engine.scan_leaf("n/x.log", io.BytesIO(data), YearHint(2025), InputStats())
    assert python == []
    assert [f.timestamp for f in found] == ["2025-03-09T07:30:00.001000Z", "2025-11-02T05:30:00.002000Z",
                                            "2025-11-02T05:30:00.002000Z", "2025-07-01T16:00:00Z",
                                            "2025-01-15T13:00:00Z"]
    assert _state(engine, data, YearHint(2025), True) == _state(engine, data, YearHint(2025), False)


def test_the_core_reads_the_lines_and_leaves_only_odd_ones(monkeypatch: pytest.MonkeyPatch) -> None:
    """Candidate lines are read in the core; a line that is not printable ASCII, and each line with
    it among the 40 before (what Python may look back at), is Python's, with the stream's state."""
    engine = _rust(monkeypatch)
    declined, python, handed, taken = [], [], [], []
    real_decline, real_candidate = Engine._decline, Engine._candidate
    real_to_core = engine_module._StreamState.to_core

    def decline(self, state, row, cand, *rest):
        declined.append(cand[0])
        handed.append(row is not None)
        return real_decline(self, state, row, cand, *rest)
    monkeypatch.setattr(Engine, "_decline", decline)
    monkeypatch.setattr(Engine, "_candidate", lambda self, *a: (python.append(1), real_candidate(self, *a))[1])
    monkeypatch.setattr(engine_module._StreamState, "to_core", lambda self: (taken.append(1), real_to_core(self))[1])
    plain = HEADS[0] + BODIES[0] + "\n"
    data = (plain * 30 + HEADS[0] + BODIES[1] + " 本地\n" + plain * 100).encode()
    native = _state(engine, data, None, True)
    assert declined == list(range(31, 72))  # by hand: line 31, and the 40 after it
    assert len(python) == len(declined)
    # the state crossed once each way for the run of 41 lines, not twice a line
    assert handed == [True] + [False] * 40 and len(taken) == 1
    python.clear()
    assert _state(engine, data, None, False) == native
    assert len(python) == 131  # the plain engine reads every candidate in Python


HEADER_PIECES = ["[", "]", "ERROR", "INFO", "WARNING", "GE", "(", ")", "6120", ",", "python3", " ", "\t", ":",
                 "2025-11-12", "-03:41:30", " 03:41:30", ".001.118", ",001", "[llm_datadist.cc:300]", "6190 Func: ",
                 "(W pid=9) ", "pid=", "11-12", "E1112", "E20251112", " 280651 ", "x.cpp:1] ", "(PID:3301, Device:0, "
                 "RankID:-1) ", "[9120] ", "[2025-11-13 10:02:09.887+08:00] ", "[x] ", "[ERROR] ", ".5", "Z",
                 "[6133][Link]", "tid:7,f(1) :", "[ascend][curpid: 1, 2]", "- "]


@settings(max_examples=500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(HEADER_PIECES + HEADS), max_size=12), year=st.sampled_from(YEARS))
def test_record_headers_as_python_reads_them(monkeypatch: pytest.MonkeyPatch, parts: list[str], year) -> None:
    detector = _rust(monkeypatch)._detector
    line = "".join(parts)
    saved = headers._core_plog
    headers.use_core(None)
    try:
        want = [(h.fmt, h.timestamp, h.pid, h.tid, h.func, h.msg_start, h.start, h.yearless, h.pod)
                for h in headers._record_headers(line, year)]
    finally:
        headers._core_plog = saved
    hint = None if year is None else (year.year, year.guessed, year.written_by, year.near, False)
    assert detector.records(line, hint) == want  # type: ignore[attr-defined]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(parts=st.lists(st.sampled_from(BODIES[:16] + ["_", "__", " ", "x", "[", "]", ".", "::", "LinkLlmClusters",
                                                     "pull_blocks_v2"]), max_size=8),
       head=st.sampled_from(HEADS[:8] + [""]), at=st.integers(0, 200))
def test_api_evidence_on_a_line_as_python_reads_it(monkeypatch: pytest.MonkeyPatch, parts: list[str], head: str,
                                                    at: int) -> None:
    engine = _rust(monkeypatch)
    line = head + "".join(parts).replace("\r", "").replace("\x00", "").replace("\x1b", "")
    if not all(0x20 <= ord(c) < 0x7F or c == "\t" for c in line):
        return
    resolver = ApiResolver(engine.rules.apis)
    header = headers.parse_header(line)
    for offset in (None, min(at, len(line))):
        assert engine._detector.on_line(line, offset) == resolver.on_line(line, header, offset)  # type: ignore


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet="0123456789abcdefABCDEFxX:.-_= []\"'/TZ+reqidtaskspan…", max_size=120))
def test_templates_and_fingerprints_as_python_makes_them(monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    detector = _rust(monkeypatch)._detector
    assert detector.template(text) == fingerprint.mask(text)  # type: ignore[attr-defined]
    want = fingerprint.fingerprint("0x5010B009", "PullKvBlocks", "r", text)
    assert type(detector).fingerprint("0x5010B009", "PullKvBlocks", "r", text) == want


@pytest.mark.parametrize("tz", [None, "Asia/Shanghai"])
@pytest.mark.parametrize("corpus", ["sample_logs", "tests/data/twin", "tests/data/unseen"])
def test_every_corpus_reads_alike_with_and_without_the_core_engine(corpus: str, tz: str | None,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.run import api
    from analyzer.writers import render_report

    monkeypatch.setattr(blocks, "ENGINE", "rust")
    path = ROOT / corpus
    options = api.Options(tz=None if tz is None else parse_tz(tz))
    native = render_report("json", api.analyze([str(path)], options=options))
    monkeypatch.setattr(engine_module, "NATIVE", False)
    assert render_report("json", api.analyze([str(path)], options=options)) == native


def test_a_rule_decided_by_nearby_text_is_asked_each_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """The core remembers a rule only where its match did not read the nearby text: a `nearby` rule
    (connection refused) applies to one finding and not to the same code and API a line later."""
    engine = _rust(monkeypatch)
    head = "[ERROR] GE(1,p):2025-11-12-03:42:00.001.000 [x.cc:1]2 LinkLlmClusters: "
    data = (f"{head}connect failed, connection refused\n{head}ret = 1343270921\n" + "filler\n" * 20
            + f"{head}ret = 1343270921\n").encode()
    assert _state(engine, data, None, True) == _state(engine, data, None, False)
    ran = partial(engine.scan_leaf, "n/x.log")
    found = ran(io.BytesIO(data), None, InputStats())
    assert len({f.rule for f in found}) == 2, [f.rule for f in found]


def _plog(n: int, body: str, second: int = 0) -> str:
    return f"[ERROR] GE(61,python3):2025-11-12-03:42:{second:02d}.{n:03d}.000 [x.cc:1]62 PullKvBlocks: {body}\n"


@pytest.mark.parametrize("gap", [13, 14, 15, 16])
def test_causes_at_the_edge_of_their_window(monkeypatch: pytest.MonkeyPatch, gap: int) -> None:
    """A neighbour error `gap` lines before a finding: a cause up to CAUSE_LINES (15) lines back,
    and within CAUSE_SECONDS; the lines between hold nothing (written by hand)."""
    engine = _rust(monkeypatch)
    lines = [_plog(0, "call hccl op failed, hcclRet -> 9")] + ["[INFO] GE(61,p):2025-11-12-03:42:00.5 [x.cc:1]62 F: "
                                                              "ok\n"] * (gap - 1)
    data = "".join(lines + [_plog(1, "ret = 1343270913", 1), _plog(2, "ret = 1343270913", 45)]).encode()
    native = _state(engine, data, None, True)
    assert native == _state(engine, data, None, False)
    found = engine.scan_leaf("n/x.log", io.BytesIO(data), None, InputStats())
    assert [len(f.causes) for f in found] == [1 if gap <= 15 else 0, 0]


@pytest.mark.parametrize("odd", [False, True])
def test_year_less_stamps_cross_new_year_in_the_core(monkeypatch: pytest.MonkeyPatch, odd: bool) -> None:
    """With --year (a year the log starts in), vLLM stamps that jump back from December to January
    have crossed into the next year; a line Python reads between them keeps the count (`odd`)."""
    engine = _rust(monkeypatch)
    lines = ["(W pid=9) ERROR 12-31 23:59:58 [c.py:1] ret = 1343270913\n",
             "(W pid=9) ERROR 01-01 00:00:01 [c.py:1] ret = 1343270913" + (" 本地" if odd else "") + "\n",
             *["(W pid=9) INFO 01-01 00:00:02 [c.py:1] ok\n"] * 41,
             "(W pid=9) ERROR 01-01 00:00:03 [c.py:1] ret = 1343270913\n"]
    data = "".join(lines).encode()
    year = YearHint(2025)
    assert _state(engine, data, year, True) == _state(engine, data, year, False)
    found = engine.scan_leaf("n/x.log", io.BytesIO(data), YearHint(2025), InputStats())
    assert [f.timestamp[:4] for f in found] == ["2025", "2026", "2026"]


@pytest.mark.parametrize("where", ["head", "tail"])
@pytest.mark.parametrize("near", [True, False])
def test_causes_read_off_the_lines_that_hold_family_literals(monkeypatch: pytest.MonkeyPatch, where: str,
                                                              near: bool) -> None:
    """The core reads which neighbour families the bytes before a finding hold off the candidate
    lines that hold their literals (`Engine::families_between`), searching only a line the
    region's start cuts: a 70 KB line whose HCCL error is at its head (before the 64 KiB the
    region reaches back) or at its tail (inside it), after a finding of the same process or not."""
    engine = _rust(monkeypatch)
    error = "call hccl op failed, hcclRet -> 9"
    filler = "x" * 70_000
    long = _plog(1, f"{error} {filler}" if where == "head" else f"{filler} {error}").rstrip("\n") + "\n"
    lines = ([_plog(0, "ret = 1343270913")] if near else []) + [long, _plog(2, "ret = 1343270913"),
                                                                    _plog(3, "ok " + error), _plog(4, "ret = 1343270913")]
    data = "".join(lines).encode()
    native = _state(engine, data, None, True)
    assert native == _state(engine, data, None, False)
    found = engine.scan_leaf("n/x.log", io.BytesIO(data), None, InputStats())
    # by hand: the finding after the long line has no cause (the line starts more than the 64 KiB
    # a finding reads back before it), the last one has the error on the line before it
    assert [len(f.causes) for f in found] == [0] * (2 if near else 1) + [1]
