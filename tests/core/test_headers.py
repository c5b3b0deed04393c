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
