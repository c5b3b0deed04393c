"""The compiled core's neighbour families (`ddtriage_core.Families`) against `NeighbourMatcher`'s
own patterns: the same (family, code, meaning) on every line the core answers."""

import pytest
from analyzer.knowledge.families import NeighbourMatcher, core_pattern
from analyzer.knowledge.rules import RuleSet


def _core():
    return pytest.importorskip("ddtriage_core", reason="the compiled core is not installed")


def _pair() -> tuple[NeighbourMatcher, NeighbourMatcher]:
    """(Python's matcher, the same families answered by the core)."""
    plain = RuleSet.load().neighbours
    fast = NeighbourMatcher(plain.families)
    fast.use_core(_core().Families(fast.core_rows()))
    return plain, fast


def test_every_shipped_family_runs_in_the_core():
    plain, _ = _pair()
    assert [f.id for f, (_, p) in zip(plain.families, plain.core_rows(), strict=True) if p is None] == []


def test_the_rewrites_keep_what_python_reads():
    assert core_pattern(r"(?<![0-9A-Za-z_])(?P<code>E[0-9]{4})(?![0-9A-Za-z_])", False) == r"\b(?P<code>E[0-9]{4})\b"
    assert core_pattern(r"ret=(?P<code>10)(?![0-9])|\((?P<p>10)\)", False) == r"ret=(?P<code>10)(?:[^0-9]|$)|\((?P<p>10)\)"
    # a look-ahead with more after it, or inside a group, would lose a character: Python's
    assert core_pattern(r"ret=(?P<code>10)(?![0-9]),", False) is None
    assert core_pattern(r"(?:ret=(?P<code>10)(?![0-9]))", False) is None
    # a look-behind next to what is not a word character is no word boundary: Python's
    assert core_pattern(r"(?<![0-9A-Za-z_])(?P<code>-1)", False) is not None  # left for Rust to refuse
    # a possessive repeat is greedy only in the shipped patterns (checked by hand there)
    assert core_pattern(r"a\s*+b", False) is None
    assert core_pattern(r"a\s*+b", True) == r"a\s*b"


def test_a_family_the_core_cannot_read_stays_python_s():
    core = _core()
    table = core.Families([(["ret"], r"(?<![0-9A-Za-z_])(?P<code>-1)"), (["errno"], r"errno=(?P<code>\d+)")])
    assert table.find(b"errno=5") == [(1, "5")]
    assert table.find(b"ret -1 errno=5") is None  # a family present whose pattern is Python's
    assert table.find("errno=5 \u00e9".encode()) is None  # not plain ASCII
    assert table.find(b"errno=5\r") == [(1, "5")]  # trailing CRs are not the line's
    assert table.present(b"xx errno ret") == 0b11


def test_the_core_equals_python_on_the_examples():
    plain, fast = _pair()
    lines = [line for f in plain.families for line in _examples(f.id)]
    assert len(lines) > 20
    for line in lines:
        assert fast.find(line) == plain.find(line), line


def _examples(family_id: str) -> list[str]:
    from analyzer.knowledge.catalog import read_yaml
    from analyzer.knowledge.families import SHIPPED

    ex = (read_yaml(SHIPPED).get("examples") or {}).get(family_id) or {}
    return [str(x) for key in ("match", "no_match") for x in ex.get(key) or []]


PIECES = ["result", "ret", "Ret", "code", "errno", "Errno", "errorno", "errcode", "error", "status", "STATUS",
          " = ", "=", ":", " is ", "is", " ", "  ", "\t", "-> ", "->", "[", "]", "(", ")", ",",
          "107030", "207001", "507046", "5070460", "103900", "103905", "203900", "104", "110", "1040", "9",
          "hcclRet", "HCCL_E_TIMEOUT", "hccl_e_x", "ERROR]", "[ERROR] HCCL(12,p):", "ERR0R", " ret[", "ret [",
          "E19999", "EI0006", "xE19999", "E199990", "ERR00001", "MIE05E000001", "MIE05W00000A",
          "connection refused", "Connection timed out", "ECONNRESET", "eTIMEDOUT", "ERROR] DRV(", "DRV(",
          "out of memory", "multi-bit ecc", "link is down", "linkdown", "version in option", "peer version",
          "does not support hrtRaAiQpCreate", "ascend_direct", "_", "a", "Z", "0", "\r", "\u00e9"]


def test_the_core_equals_python_on_generated_lines():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    plain, fast = _pair()

    @settings(max_examples=500, deadline=None)
    @given(st.lists(st.sampled_from(PIECES), max_size=20))
    def check(parts: list[str]) -> None:
        line = "".join(parts)
        assert fast.find(line) == plain.find(line), line
        raw = line.encode()
        assert fast.families_in(raw) == plain.families_in(raw), line

    check()
