"""Stage: context (neighbouring error families). HCCL, runtime, CANN, HIXL, torch_npu, MindIE and
socket errors are classified as likely causes of the finding after them, never as findings.

Driver (DRV module) errors are a neighbour family (review D22): an `[ERROR] DRV(...)` line
naming device out of memory, an HBM ECC error or a link down is a related error, the likely cause
of the LLM-DataDist failure logged just after it in the same thread, and an incident's lead. Its
prefilter literal is the error header itself, so the driver's INFO traffic costs nothing (folded from test_driver_family.py, review D22 (the driver family)).
"""

from __future__ import annotations

import json

import pytest
from analyzer import RuleError, analyze_text, load_rules
from analyzer.cli import cli
from analyzer.knowledge.catalog import BUILTIN_RULES_DIR
from analyzer.run.rulecheck import check_examples, classified_as, family_examples
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

NEIGHBOURS = BUILTIN_RULES_DIR / "neighbours.yaml"


def _family_cases():
    rules = load_rules()
    for family, (match, no_match) in sorted(family_examples(NEIGHBOURS, rules.neighbours).items()):
        for i, line in enumerate(match):
            yield pytest.param(family, line, True, id=f"{family}-match-{i}")
        for i, line in enumerate(no_match):
            yield pytest.param(family, line, False, id=f"{family}-no_match-{i}")


@pytest.mark.parametrize("family,line,should_match", list(_family_cases()))
def test_family_examples(rules, family, line, should_match):
    """Every example in neighbours.yaml, through the literal prefilter as a scan runs it."""
    assert (family in classified_as(rules.neighbours, line)) == should_match
    assert analyze_text(line, rules) == []  # a neighbour is a cause, never a finding


def test_every_family_has_examples(rules):
    examples = family_examples(NEIGHBOURS, rules.neighbours)
    assert sorted(examples) == sorted(f.id for f in rules.neighbours.families)
    assert all(match for match, _ in examples.values())


def _user_neighbours(tmp_path, examples: str):
    (tmp_path / "neighbours.yaml").write_text(
        "families:\n  - id: oom\n    literals: [OOM]\n    pattern: '(?P<code>OOM-[0-9]+)'\n" + examples)
    return load_rules(tmp_path)


@pytest.mark.parametrize("examples,reason", [
    ("", "family oom: needs at least one `match` example"),
    ("examples:\n  oom:\n    match: ['out of memory']\n", "family oom: example should match but gave nothing"),
    ("examples:\n  oom:\n    match: ['OOM-12']\n    no_match: ['OOM-7 killed']\n", "family oom: example should not match"),
    ("examples:\n  nope:\n    match: ['OOM-12']\n", "examples: family nope: no such family (known: oom)"),
    ("examples:\n  oom: ['OOM-12']\n", "examples: family oom: must be a mapping"),
])
def test_family_example_problems_are_reported(tmp_path, examples, reason):
    problems = check_examples(_user_neighbours(tmp_path, examples))
    assert len(problems) == 1 and str(tmp_path / "neighbours.yaml") in problems[0] and reason in problems[0], problems


def test_family_examples_pass(tmp_path):
    rules = _user_neighbours(tmp_path, "examples:\n  oom:\n    match: ['OOM-12']\n    no_match: ['OOMPH']\n")
    assert check_examples(rules) == []


@pytest.mark.parametrize("line,family,code", [
    ("[ERROR] RUNTIME(1,p):2025-11-12-03:40:10.011.004 [stream.cc:1143]5650 Synchronize: runtime result = 507046",
     "runtime", "507046"),
    ("EI0006: [PID: 5566] 2025-11-12-03:40:08.301.554 Getting socket times out.", "cann", "EI0006"),
    ("[ERROR] HCCL(1,p):2025-11-12-03:40:06.1 [hccl_comm.cc:655] [5601][HcclCommPrepare] call trace: hcclRet -> 9",
     "hccl", "9"),
    ("[ERROR] GE(1,p):2025-11-12-03:40:02.1 [hixl_adapter.cc:71]1 HixlInit: ErrorNo: 503900() [HIXL]load failed",
     "hixl", "503900"),
    ("[ERROR] 2025-04-08-18:07:20 (PID:1292, Device:1, RankID:1) ERR01100 OPS call acl api failed.", "torch-npu", "ERR01100"),
    ("[2025-11-12 03:40:04.118] [1] [2] [llm] [ERROR] [a.cpp:88] : [MIE05E010019] P/D link failed", "mindie", "MIE05E010019"),
    ("connect to 10.0.1.11:26006 failed, errno 111: Connection refused", "socket", "111"),
])
def test_families_classify_but_never_find(rules, line, family, code):
    assert analyze_text(line, rules) == []
    assert (family, code) in [(f, c) for f, c, _ in rules.neighbours.find(line)]


def test_cause_attached_to_the_finding_after_it(rules):
    text = "\n".join([
        "[ERROR] RUNTIME(5569,python3):2025-11-12-03:40:10.011.004 [stream.cc:1143]5650 Synchronize: runtime result = 507046",
        "[ERROR] GE(5569,python3):2025-11-12-03:40:10.011.220 [data_cache_engine.cc:1]5650 PullCache: ErrorNo: 1343270938(Process timeout.)",
        "[ERROR] GE(4000,python3):2025-11-12-03:40:10.2 [x.cc:1]4000 PullCache: ErrorNo: 1343270938(Process timeout.)",
    ])
    mine, other_process = analyze_text(text, rules)
    assert mine.causes == ((1, "runtime", "507046", "stream sync timeout"),)
    assert other_process.causes == ()  # another pid: not its cause


def test_cause_belongs_to_the_first_finding_after_it(rules):
    text = "\n".join([
        "[ERROR] HCCL(1,p):2025-11-12-03:40:06.1 [hccl_comm.cc:655] [7][X] call trace: hcclRet -> 9",
        "[ERROR] GE(1,p):2025-11-12-03:40:06.2 [a.cc:1]2 Link: ErrorNo: 1343270921(local cluster link with remote cluster failed!)",
        "[ERROR] GE(1,p):2025-11-12-03:40:06.3 [a.cc:1]2 Link: ErrorNo: 4294967295(failed)",
    ])
    first, echo = analyze_text(text, rules)
    assert [c[2] for c in first.causes] == ["9"] and echo.causes == ()


def test_malformed_family_is_named(tmp_path):
    (tmp_path / "neighbours.yaml").write_text("families:\n  - id: x\n    literals: [a]\n    pattern: '('\n")
    with pytest.raises(RuleError, match=r"neighbours.yaml: family x: pattern: invalid regular expression"):
        load_rules(tmp_path)


@pytest.mark.parametrize("line", [
    "[INFO] GE(207001,python3):2025-11-12-03:40:02.1 [a.cc:1]207001 Init: start",
    "pull done, cache_id=507046, req_id=103902",
])
def test_numbers_that_are_not_results_are_not_causes(rules, line):
    assert rules.neighbours.find(line) == []


@pytest.mark.parametrize("line,code", [
    ("E19999: Inner Error!", "E19999"),
    ("EZ1001: operator compile failed", "EZ1001"),
    ("connect failed, errno:111", "111"),
    ("stream sync failed (507046)", "507046"),
])
def test_more_neighbour_forms(rules, line, code):
    assert code in [c for _, c, _ in rules.neighbours.find(line)]


def test_causes_respect_process_time_and_order(rules):
    text = "\n".join([
        "[ERROR] HCCL(1,p):2025-11-12-03:40:00.000.001 [h.cc:1] [7][X] call trace: hcclRet -> 9",
        "[ERROR] HCCL(2,p):2025-11-12-03:40:00.000.002 [h.cc:1] [8][X] call trace: hcclRet -> 12",
        "[ERROR] GE(2,p):2025-11-12-03:40:00.1 [a.cc:1]8 Link: ErrorNo: 1343270921(local cluster link with remote cluster failed!)",
        "[ERROR] GE(1,p):2025-11-12-03:40:00.2 [a.cc:1]7 Link: ErrorNo: 1343270921(local cluster link with remote cluster failed!)",
        "[ERROR] HCCL(1,p):2025-11-12-03:40:00.300.001 [h.cc:1] [7][X] call trace: hcclRet -> 13",
        "[ERROR] HCCL(1,p):2025-11-12-08:10:00.000.001 [h.cc:1] [7][X] call trace: hcclRet -> 19",
        "[ERROR] GE(1,p):2025-11-12-08:10:40.0 [a.cc:1]7 Link: ErrorNo: 1343270921(local cluster link with remote cluster failed!)",
    ])
    a, b, c = analyze_text(text, rules)
    assert [x[2] for x in a.causes] == ["12"]  # pid 2's own error only
    assert [x[2] for x in b.causes] == ["9"]  # pid 1's, though pid 2's finding came between
    assert c.causes == ()  # hcclRet 19 is 40 s before; hcclRet 13 was after pid 1's last finding


def test_causes_are_same_process_recent_and_not_the_finding_itself(rules):
    from analyzer.core.headers import parse_header
    from analyzer.detect.causes import CAUSE_SECONDS, Event, causes

    header = parse_header("[ERROR] GE(5569,p):2025-11-12-03:40:40.000 [x.cc:1]5650 PullCache: ErrorNo: 1343270938(x)")
    events = [
        Event(1, "runtime", "507046", "m", "5569", "2025-11-12T03:40:39"),
        Event(2, "runtime", "507047", "m", "4000", "2025-11-12T03:40:39"),  # another process
        Event(3, "hccl", "9", "m", "5569", f"2025-11-12T03:40:{39 - CAUSE_SECONDS:02.0f}"),  # too long before
        Event(4, "cann", "1343270938", "m", "5569", None),  # the finding's own number on its line
        Event(4, "socket", "Connection refused", "m", None, None),
    ]
    assert causes(events, header, 4, 1343270938) == ((1, "runtime", "507046", "m"),
                                                     (4, "socket", "Connection refused", "m"))


LOG = """\
[INFO] DRV(5569,python3):2025-11-12-03:40:03.900.000 [ascend][curpid:5569,5573][drv][devmm][devmm_alloc 100] alloc 64 MiB, out of memory retries 0
[ERROR] DRV(5569,python3):2025-11-12-03:40:04.000.000 [ascend][curpid:5569,5573][drv][devmm][devmm_alloc 100] out of memory
[ERROR] GE(5569,python3):2025-11-12-03:40:04.100.500 [llm_datadist.cc:400]5573 AllocateCache: ErrorNo: 1343270926(device out of memory!) [GE][MODULE]alloc failed
[ERROR] DRV(5569,python3):2025-11-12-03:40:09.000.000 [ascend][curpid:5569,5580][drv][ecc] device 3 HBM multi-bit ECC error
[ERROR] DRV(5569,python3):2025-11-12-03:40:09.500.000 [ascend][curpid:5569,5581][drv][hccs] port 2 link down
"""


def test_a_driver_error_is_the_cause_and_a_related_error(tmp_path):
    log = tmp_path / "plog-5569_20251112034002789.log"
    log.write_text(LOG)
    result = CliRunner().invoke(cli, ["scan", str(log), "--format", "json", "--fail-on", "never"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    (finding,) = report["findings"]
    assert finding["name"] == "LLM_DEVICE_OUT_OF_MEMORY"
    assert [(c["line"], c["family"], c["code"]) for c in finding["causes"]] == [(2, "driver", "out-of-memory")]
    assert [(e["line"], e["family"], e["code"]) for e in report["related"]] == [
        (2, "driver", "out-of-memory"), (4, "driver", "hbm-ecc"), (5, "driver", "link-down")]
    (incident,) = report["summary"]["incidents"]
    assert (incident["lead"]["line"], incident["lead"]["family"]) == (2, "driver")
    assert incident["action"].startswith("The driver ran out of device memory (HBM): free device memory")


# The socket pattern as first written: case-free throughout. The data now writes its first letters
# as classes (faster in Python's `re`); this holds it to the same answers.
CASE_FREE = {
    "socket": r"(?i)errno\s*+[\[:=]?+\s*+(?P<code>104|110|111|113)\b|(?P<text>connection refused|connection timed out"
              r"|connection reset|ECONNREFUSED|ECONNRESET|ETIMEDOUT)",
}
PIECES = ["hcclRet", "HCCLRET", "hcclret", "HCCL_E_", "hccl_e_", "HCCL", "ERROR", "[ERROR] HCCL(", "ERR0R]", "ret[",
          "ret [", "errno", "ERRNO", "Errno", "connection refused", "CONNECTION Reset", "connection timed out",
          "ECONNREFUSED", "econnreset", "ETIMEDOUT", "etimedout", " ", "  ", "\t", "->", "=", ":", "[", "]", "(", ")",
          "104", "111", "9", "13", "1040", "_", "TIMEOUT", "x", "é", "ſ", "K", "ı", "İ", "ＥＲＲＮＯ", "\u00a0", "\n"]


def test_the_first_letter_classes_are_what_case_free_letters_take():
    import re

    every = "".join(chr(i) for i in range(0x110000) if not 0xD800 <= i < 0xE000)
    assert re.findall("(?i)e", every) == ["E", "e"] and re.findall("(?i)c", every) == ["C", "c"]


@settings(max_examples=400, deadline=None)
@given(parts=st.lists(st.sampled_from(PIECES) | st.text(max_size=3), max_size=24))
def test_a_first_letter_class_answers_as_the_case_free_pattern(rules, parts):
    import re

    line = "".join(parts)
    for family_id, first in CASE_FREE.items():
        family = rules.neighbours.family(family_id)
        old, new = re.search(first, line), family.pattern.search(line)
        assert (old and (old.span(), old.groups())) == (new and (new.span(), new.groups())), (family_id, line)
