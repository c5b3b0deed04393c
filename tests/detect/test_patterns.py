"""Stage: scan (what a code looks like). Every print form of domain.md §5 is found; look-alikes are not.
"""

import pytest
from analyzer.detect.patterns import CodeMatcher


@pytest.fixture(scope="module")
def matcher(rules):
    return CodeMatcher(rules.catalog)


def codes(matcher, line):
    return [f"0x{h.value:08X}" for h in matcher.find(line)]


FOUND = [
    ("4811 LinkClusters: ErrorNo: 1343270921(local cluster link with remote cluster failed!) [GE][MODULE]x", ["0x5010B009"]),
    ("Initialize failed, ret = 1343270917", ["0x5010B005"]),
    ("ret=1343270917", ["0x5010B005"]),
    ("status 1343270913", ["0x5010B001"]),
    ("error code is 1343270919", ["0x5010B007"]),
    ("code=1343270926", ["0x5010B00E"]),
    ("header says 0x5010B009", ["0x5010B009"]),
    ("lower 0x5010b007 too", ["0x5010B007"]),
    ("constexpr Status LLM_LINK_BUSY = 0x5010B01BU;", ["0x5010B01B"]),
    ("raise LLM_LINK_FAILED", ["0x5010B009"]),
    ("error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT", ["0x5010B001"]),
    ("error code is LLMStatusCode.LLM_SEQ_LENOVERLIMIT", ["0x5010B011"]),
    ("rets=[<LLMStatusCode.LLM_SUCCESS: 0>, <LLMStatusCode.LLM_LINK_FAILED: 1343270921>]", ["0x5010B009"]),
    ("got LLM_NOT_YET_LINK (0x5010b007) at every layer's PushKvBlocks", ["0x5010B007"]),
    ("ErrorNo: 1343270914(kv cache not exit!)", ["0x5010B002"]),
    ("Process: request wait to be processed timeout! req=3", ["0x5010B001"]),
    ("ErrorNo: 4294967295(failed)", ["0xFFFFFFFF"]),
    ("unknown ret = 0x5010B0A3", ["0x5010B0A3"]),
    ("ErrorNo: 1343271011(whatever)", ["0x5010B063"]),
    ("two codes 0x5010B009 and LLM_TIMEOUT on one line", ["0x5010B009", "0x5010B01A"]),
    ("same code twice 0x5010B009 LLM_LINK_FAILED 1343270921", ["0x5010B009"]),
    ("LLMStatusCode.LLM_DEVICE_MEM_ERROR", ["0x0007BCAD"]),
]

NOT_FOUND = [
    "LLM_SUCCESS",
    "ret = 0",
    "rets=[<LLMStatusCode.LLM_SUCCESS: 0>]",
    "id 13432709130 is long",
    "ret = 13432709130",
    "hex 0x5010B0015 is longer",
    "addr 0xffff5010b001 is an address",
    "addr 0x00005010b001",
    "bare number 1343270921 without a code word",
    "size=1343270921.5",
    "[ERROR] LLM_DATADIST(4811,python3):2025-11-12 03:40:02.123 [x.py:1]MainThread init: hello",
    "EI0006: socket timeout",
    "rtStreamSynchronize failed, runtime result = 507046",
    "hcclRet -> 9",
    "ErrorNo: 503900()",
    "ERR01100 OPS call acl api failed",
    "[MIE05E010019] pull kv failed",
    "Out of memory.",  # a generic plog text alone is not evidence
]


@pytest.mark.parametrize("line,expected", FOUND)
def test_every_form_is_found(matcher, line, expected):
    assert codes(matcher, line) == expected


@pytest.mark.parametrize("line", NOT_FOUND)
def test_look_alikes_are_not_codes(matcher, line):
    assert codes(matcher, line) == []


def test_result_list_membership(matcher):
    line = "link_clusters ret=LLMStatusCode.LLM_SUCCESS rets=[<LLMStatusCode.LLM_LINK_FAILED: 1343270921>]"
    (hit,) = matcher.find(line)
    assert hit.in_cluster_results
    (hit,) = matcher.find("[link_clusters] failed, error code is LLMStatusCode.LLM_LINK_FAILED")
    assert not hit.in_cluster_results


@pytest.mark.parametrize("line,found", [
    ("ErrorNo: -1(failed)", True),
    ("LinkLlmClusters failed, ret = -1", True),
    ("error code is -1", True),
    ("offset = -10", False),
    ("ret = -1.5", False),
    ("index -1 out of range", False),
])
def test_llm_failed_as_minus_one(matcher, line, found):
    assert (codes(matcher, line) == ["0xFFFFFFFF"]) == found


# -- the compiled core's forms (issue #17): the same hits as Python's, line for line ----------------

def _core_matcher(rules):

    core = pytest.importorskip("ddtriage_core", reason="the compiled core is not installed")
    python, rust = CodeMatcher(rules.catalog), CodeMatcher(rules.catalog)
    rust.use_core(core.Codes(*rust.core_spec()))
    assert rust._core is not None  # the core read every pattern
    return python, rust


def _hits(matcher, line):
    return [(h.value, h.start, h.end, h.form, h.in_cluster_results) for h in matcher.find(line)]


CORE_PIECES = ["0x5010B009", "0X5010b01b", "0x5010B0", "5010b009", "5010B01A", "1343270921", "1343270913",
               "134327", "1343279999", "4294967295", "-1", "ffffffff", "FFFFFFFF", "LLM_LINK_FAILED", "LLM_",
               "LLM_SUCCESS", "LLM_WAIT_PROCESS_TIMEOUT", "<LLMStatusCode.", "LLMStatusCode.", ": ", "=", " = ",
               "ret", "rets=[", "results: (", "status", "error code is ", "ErrorNo: ", "ErrorNo:-1(", ")", "]",
               "(", "[", ", ", " ", ".", ".5", "-", "_", "U", "UL", "ull", "LU", "l", "x", "a", "Z", "0", "9",
               "request wait to be processed timeout!", "kv cache not exit!", "Process timeout.", "code", "is"]


@pytest.mark.parametrize("line", [line for line, _ in FOUND] + list(NOT_FOUND))
def test_the_core_finds_every_form_alike(rules, line):
    python, rust = _core_matcher(rules)
    assert _hits(rust, line) == _hits(python, line)


def test_the_core_equals_python_on_generated_lines(rules):
    from hypothesis import given, settings
    from hypothesis import strategies as st

    python, rust = _core_matcher(rules)

    @settings(max_examples=600, deadline=None)
    @given(st.lists(st.one_of(st.sampled_from(CORE_PIECES), st.text(max_size=3)), max_size=24))
    def check(parts):
        line = "".join(parts)
        assert _hits(rust, line) == _hits(python, line), line

    check()


def test_the_core_leaves_other_lines_to_python(rules):
    _, rust = _core_matcher(rules)
    assert rust._core.find("ret = 1343270921 \u00e9") is None  # not plain ASCII
    assert rust._core.find("ret = 1343270921\x00") is None
    assert rust._core.find("ret = 1343270921") == [(0x5010B009, 6, 16, 1, False)]
