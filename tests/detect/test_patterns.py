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
