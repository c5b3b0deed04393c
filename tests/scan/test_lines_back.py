"""The lines before a candidate (`Candidate.raw_before`, `Candidate.lookback`) walked back by the
compiled core equal the Python loops, on generated buffers: CR, NUL, invalid UTF-8, lines longer
than the cut, the history floor, the first line a block holds."""

from __future__ import annotations

import importlib.util

import pytest
from analyzer.scan import blocks
from analyzer.scan.blocks import Candidate
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

HAVE_CORE = importlib.util.find_spec("ddtriage_core") is not None
pytestmark = pytest.mark.skipif(not HAVE_CORE, reason="the compiled core (ddtriage_core) is not installed")

ASCII = [b"\n", b"\r\n", b"\r", b"\x00", b"x", b"0x5010 LLM_", b" ", b"a" * 30]
PIECES = st.sampled_from(ASCII) | st.sampled_from(ASCII + [b"\xff\xfe", b"\xe6\x97\xa5", b"\xe6\x97", b"\xc3"])


def _both(cand: Candidate, limit: int, monkeypatch: pytest.MonkeyPatch) -> tuple:
    import ddtriage_core

    monkeypatch.setattr(blocks, "_core", ddtriage_core)
    core = (cand.raw_before(limit), list(cand.lookback(limit)))
    monkeypatch.setattr(blocks, "_core", None)
    plain = (cand.raw_before(limit), list(cand.lookback(limit)))
    return core, plain


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(st.sampled_from(ASCII), max_size=80) | st.lists(PIECES, max_size=80), at=st.integers(0, 10**6), limit=st.integers(0, 45),
       history=st.sampled_from([8, 40, 1 << 16]), cut=st.sampled_from([2, 7, 2000]), short=st.integers(0, 50))
def test_the_core_walks_back_as_python_does(pieces, at, limit, history, cut, short, monkeypatch) -> None:
    buf = b"".join(pieces)
    starts = [0] + [i + 1 for i, b in enumerate(buf) if b == 0x0A]
    start = starts[at % len(starts)]
    line_no = 1000
    first = line_no - buf.count(b"\n", 0, start) + short  # `short`: fewer lines numbered in the block
    nl = buf.find(b"\n", start)
    cand = Candidate(line_no, 5000 + start, buf[start:nl if nl != -1 else len(buf)], buf, start, min(first, line_no))
    monkeypatch.setattr(blocks, "HISTORY_BYTES", history)
    monkeypatch.setattr(blocks, "TEXT_LIMIT", cut)
    core, plain = _both(cand, limit, monkeypatch)
    assert core == plain


def test_a_plog_block(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = [f"[ERROR] GE(7,p):2025-11-10-15:36:{i:02d}.000.001 [l.cc:2] 9 Run: step {i}".encode() for i in range(60)]
    lines[30] = "[INFO] GE(7,p):2025-11-10 模型 加载\r".encode()
    buf = b"\n".join(lines) + b"\n"
    start = buf.index(b"step 50")
    start = buf.rfind(b"\n", 0, start) + 1
    cand = Candidate(51, start, lines[50], buf, start, 1)
    core, plain = _both(cand, 40, monkeypatch)
    assert core == plain
    assert [n for n, _ in core[1]] == list(range(11, 51)) and core[1][20][1].endswith("模型 加载")  # line 31, CR dropped
