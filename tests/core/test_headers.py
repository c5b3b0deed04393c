"""The plog header's pid as the compiled core reads it (`PLOG_PID_PATTERN`, the grammar without its
possessive repeats) equals `header_pid`'s wherever the plog grammar matches, on generated lines."""

from __future__ import annotations

import pytest
from analyzer.core import headers
from analyzer.core.headers import PLOG_PID_PATTERN, header_pid

HEAD_PIECES = ["[", "]", "ERROR", "ERR0R", "WARN", "WARNING", "INFO", "DEBUG", "EVENT", "GE", "HCCL", "LLM_DATADIST",
               "RUNTIME", "-", "_", "(", ")", "6120", "0", ",", "python3", "  ", " ", "\t", ":", " :",
               "2025-11-12", "-03:41:30", " 03:41:30", "T03:41:30", ".001.118", ",001", "[llm_datadist.cc:300]",
               "6190 Func: ", "x" * 300, "\r", "\u00e9"]


def _core_facts(pattern: str = PLOG_PID_PATTERN) -> object:
    core = pytest.importorskip("ddtriage_core", reason="the compiled core is not installed")
    return core.Facts([], [], pattern)


def test_the_portable_pattern_only_drops_possessive_repeats() -> None:
    assert "*+" not in PLOG_PID_PATTERN and "++" not in PLOG_PID_PATTERN and "}+" not in PLOG_PID_PATTERN
    assert PLOG_PID_PATTERN.replace("\\", "").count("+") < headers._PLOG.pattern.replace("\\", "").count("+")


def test_the_core_reads_the_pid_python_reads() -> None:
    facts = _core_facts()
    line = "[INFO] GE(6120,python3):2025-11-12-03:41:30.001.118 [llm_datadist.cc:300]6190 F: local cluster id = 1"
    assert facts.header_pid(line.encode()) == header_pid(line) == "6120"
    assert facts.header_pid(b"  " + line.encode() + b"\r") == "6120"  # leading blanks, a CR: decode drops it
    assert facts.header_pid(b"(Worker_TP3 pid=5569) INFO 11-12 03:41:36 [x.py:1] local cluster id = 1") is None


def test_the_core_reads_this_grammar_by_hand() -> None:
    # the core's fast path (`facts::PLOG_PATTERN`) holds only for this exact pattern; another
    # grammar is still read right (by regex captures), only slower: keep the two in step
    assert _core_facts().header_by_hand
    assert not _core_facts(PLOG_PID_PATTERN + "x").header_by_hand


def test_generated_headers() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    facts = _core_facts()

    @settings(max_examples=400, deadline=None)
    @given(st.lists(st.one_of(st.sampled_from(HEAD_PIECES), st.text(alphabet="[]() ,:-.0123456789aZ", max_size=3)),
                    max_size=20))
    def check(parts: list[str]) -> None:
        line = "".join(parts)
        raw = line.encode()
        if not all(0x20 <= b < 0x7F or b == 9 for b in raw.rstrip(b"\r")):
            return  # the core reads pids of plain ASCII lines only
        text = line.rstrip("\r")
        pos = len(text) - len(text.lstrip("\x00 \t\ufeff"))
        m = headers._PLOG.match(text, pos)
        assert facts.header_pid(raw) == (m.group("pid") if m else None), line

    check()


TAIL_PIECES = ["4812 LinkClusters: ", "4812 Func:x", "4812 a: : x", "4812 f:: x", "4812 a:b: c", "4812 a:b c: d", "6190 ~Obj::f<T>.g :",
               "[4467][Send]", "[4467]", "[4467][", "tid:12,Send(418) :", "tid:12,Send(418)", "[ascend][curpid: 3, 44]",
               "4812 ", "4812", ":", " ", "\t", "x", "2025-11-12", "[llm_datadist.cc:300]"]


def _readers() -> tuple[object, object]:
    core = pytest.importorskip("ddtriage_core", reason="the compiled core is not installed")
    by_hand = core.PlogHeaders(PLOG_PID_PATTERN, list(headers.CORE_TAILS))
    # the same grammar, written so that the core cannot read it by hand: its captures path
    by_regex = core.PlogHeaders("(?:" + PLOG_PID_PATTERN + ")", list(headers.CORE_TAILS))
    return by_hand, by_regex


def _python(line: str) -> tuple[object, ...] | None:
    """What parse_header and record_headers say in Python, in the core's shape."""
    saved = headers._core_plog
    headers.use_core(None)
    try:
        first = headers.parse_header(line)
        if first.fmt != "plog":
            return None
        again = line.find(first.timestamp[:10], first.msg_start) != -1 if first.timestamp else False
        return (first.timestamp, first.pid, first.tid, first.func, first.msg_start, first.start, again)
    finally:
        headers._core_plog = saved


def test_the_tails_lose_only_their_look_ahead() -> None:
    assert [t.pattern for t in headers._PLOG_TAIL][1:] == list(headers.CORE_TAILS)[1:]
    assert "(?=" not in "".join(headers.CORE_TAILS) and headers.CORE_TAILS[0].endswith(r"(?P<end>)(?:\s|$)")


def test_the_core_reads_plog_headers_as_python_does() -> None:
    by_hand, by_regex = _readers()
    line = "[ERROR] GE(4811,python3):2025-11-10-15:36:33.002.301 [llm_link_manager.cc:100]4812 LinkClusters: x"
    want = ("2025-11-10T15:36:33.002301", "4811", "4812", "LinkClusters", 96, 0, False)
    assert by_hand.read(line) == by_regex.read(line) == _python(line) == want
    assert by_hand.read("vLLM INFO 11-12 03:41:36 [x.py:1] y") is None  # not plog: Python reads it
    assert by_hand.read("[ERROR] GE(1,p):2025-11-10-15:36:33 é") is None  # not plain ASCII


def test_generated_plog_headers() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    by_hand, by_regex = _readers()
    piece = st.one_of(st.sampled_from(HEAD_PIECES + TAIL_PIECES), st.text(alphabet="[]() ,:-.0123456789aZ", max_size=3))

    @settings(max_examples=600, deadline=None)
    @given(st.lists(piece, max_size=24))
    def check(parts: list[str]) -> None:
        line = "".join(parts).replace("\r", "")
        got = by_hand.read(line)
        assert got == by_regex.read(line), line
        if all(0x20 <= ord(c) < 0x7F or c == "\t" for c in line):
            assert got == _python(line), line
        else:
            assert got is None, line

    check()


def test_every_sample_line_has_the_header_python_reads() -> None:
    from pathlib import Path

    by_hand, _ = _readers()
    seen = 0
    for path in sorted(Path(__file__).parents[2].joinpath("sample_logs").rglob("*.log")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            got = by_hand.read(line)
            if got is not None:
                seen += 1
                assert got == _python(line), (path.name, line)
            elif all(0x20 <= ord(c) < 0x7F or c == "\t" for c in line):
                assert _python(line) is None, (path.name, line)
    assert seen > 100
