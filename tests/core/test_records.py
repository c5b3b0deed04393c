"""Stage: core (records). The one order of findings and the one renumbering of a later byte range's."""

from analyzer.core.records import Finding, report_key, shifted
from hypothesis import given
from hypothesis import strategies as st

_cause = st.tuples(st.integers(1, 10**6), st.text(max_size=5), st.text(max_size=5), st.text(max_size=5))


@st.composite
def findings(draw):
    return Finding(source=draw(st.text(max_size=8)), line=draw(st.integers(1, 10**9)), timestamp=None,
                   code=draw(st.text(max_size=10)), name=None, api=None, api_evidence=None,
                   api_line=draw(st.none() | st.integers(1, 10**9)), recoverable=None, rule="r", action="a",
                   text=draw(st.text(max_size=20)), form="hex", pid=draw(st.none() | st.text(max_size=4)),
                   causes=tuple(draw(st.lists(_cause, max_size=3))), fingerprint=draw(st.text(max_size=8)))


def test_report_key_is_source_line_code():
    f = Finding(source="a.log", line=7, timestamp=None, code="0x5010B001", name=None, api=None, api_evidence=None,
                api_line=None, recoverable=None, rule="r", action="a", text="t", form="hex")
    assert report_key(f) == ("a.log", 7, "0x5010B001")


@given(findings(), st.integers(0, 10**9))
def test_shifted_renumbers_the_line_the_api_line_and_the_causes_only(f, lines):
    expected = f._replace(line=f.line + lines, api_line=None if f.api_line is None else f.api_line + lines,
                          causes=tuple((c[0] + lines, *c[1:]) for c in f.causes))
    got = shifted(f, lines)
    assert got == expected and type(got) is Finding
