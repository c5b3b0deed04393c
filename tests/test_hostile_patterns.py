"""Hostile input, denial of service: every built-in pattern runs in linear time on any line, and a
user's catastrophic `nearby` regex is reported and disabled instead of hanging the scan."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from functools import cache

import pytest
from analyzer.core.headers import parse_header, record_headers
from analyzer.detect.context import ApiResolver
from analyzer.detect.engine import Engine
from analyzer.detect.fingerprint import message_template
from analyzer.detect.patterns import CodeMatcher
from analyzer.knowledge.rules import RuleSet
from analyzer.run.api import analyze_snippet
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hostile import FINDING, ddtriage

MS_PER_KB = 5.0  # linear patterns take ~0.01-0.5 ms per KB here; the quadratic ones took 20-100
HEADER = "[ERROR] LLMDATADIST(11,python3):2025-11-12-03:40:05.101.002 [llm_link.cc:1]12 LinkLlmClusters: "


@cache
def engine() -> Engine:
    return Engine(RuleSet.load(), prefilter_engine="find")


def seconds(fn: Callable[[], object], bound: float = float("inf")) -> float:
    """How long `fn` takes; when over `bound`, the best of three (a busy machine's pause is not a
    quadratic pattern, which is over it every time, by 4 to 20 times)."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
        if best < bound:
            break
    return best


# The red team's inputs (issue #7), each a few hundred KB; on the old patterns 10-30 s apiece.
CASES = {
    "ErrorNo then 100k blanks": "ErrorNo:" + " " * 100_000 + "x LLM_FAILED\n",
    "runtime error then blanks, then a finding": "rtStreamSynchronize error" + " " * 60_000 + "\n" + FINDING + "\n",
    "flattened plog headers without )": HEADER + "ret = 1343270913 " + "[ERROR] GE(1,x:2025-11-12-03:40:05 " * 8000 + "\n",
    "errno 111 repeated": "errno 111 " * 20_000 + "connection refused\n" + HEADER + "LLM_LINK_FAILED\n",
    "nearby-rule line then blanks": "link failed errno" + " " * 60_000 + "\n" + HEADER + "ret = 1343270921\n",
}


@pytest.mark.parametrize("text", CASES.values(), ids=CASES.keys())
def test_red_team_lines_scan_in_linear_time(text):
    engine()  # compiled outside the clock
    bound = MS_PER_KB * len(text) / 1024 / 1000 + 0.2
    took = seconds(lambda: analyze_snippet(engine(), text), bound)
    assert took < bound, f"{took:.2f} s for {len(text) >> 10} KB"


def test_red_team_lines_through_the_command(tmp_path):
    for i, text in enumerate(CASES.values()):
        (tmp_path / f"case-{i}.log").write_text(text)
    start = time.perf_counter()
    result = ddtriage("scan", tmp_path, "--jobs", "1", "--format", "json")
    assert result.returncode == 1, result.stderr
    assert time.perf_counter() - start < 20


# Fragments of every built-in pattern's grammar: hypothesis strings them together and repeats them
# into long lines, the shapes that make a backtracking engine go quadratic.
TOKENS = [" ", "\t", "(", ")", "[", "]", ":", "=", ",", "-", "_", ".", "0", "1", "x", "a", "\"", "->", ": ",
          "ErrorNo", "ErrorNo:", "errno", "111", "error", "status", "ret", "rets=[", "code", "result",
          "[ERROR] ", "GE(", "LLMDATADIST(1,", "2025-11-12-03:40:05.101 ", "[a.cc:1]", "LLM_", "1343270913",
          "0x5010B001", "4294967295", "-1", "(pid=1) ", "INFO 11-12 03:40:05 ", "hcclRet", "HCCL_E_",
          "connection refused", "PullKvCache", "pull kv", "File \"", "Traceback", "E1112 ", "req_id=",
          "LLMStatusCode.", "<", ">", "0x", "ERR", "MIE", "llm_datadist"]


def entry_points() -> dict[str, Callable[[str], object]]:
    rules = engine().rules
    matcher, resolver = CodeMatcher(rules.catalog), ApiResolver(rules.apis)
    nearby = [r.nearby for r in rules.rules if r.nearby is not None]
    return {
        "codes": matcher.find,
        "headers": lambda s: (parse_header(s), record_headers(s, 2025)),
        "api": lambda s: resolver.on_line(s, parse_header(s), len(s) // 2),
        "neighbours": rules.neighbours.find,
        "nearby": lambda s: [p.search(s) for p in nearby],
        "fingerprint": message_template,
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@example(["ErrorNo:"], " ", " LLM_FAILED")  # the shapes the red team found, always tried
@example(["error"], " ", "")
@example(["errno"], "\t", "")
@example(["[ERROR] ", "GE(", "1"], " ", "")
@given(st.lists(st.sampled_from(TOKENS), min_size=1, max_size=4), st.sampled_from(TOKENS),
       st.sampled_from(["", " LLM_FAILED", " 1343270913", ")", "\n"]))
def test_every_pattern_is_linear_on_adversarial_lines(unit, filler, tail):
    head = "".join(unit)
    for text in (head * (16_000 // len(head)) + tail, head + filler * (16_000 // len(filler)) + tail):
        for name, run in entry_points().items():
            bound = MS_PER_KB * len(text) / 1024 / 1000 + 0.02
            took = seconds(lambda: run(text), bound)  # noqa: B023 - called at once
            assert took < bound, f"{name}: {took:.3f} s on {text[:40]!r}"


def test_catastrophic_user_nearby_regex_is_reported_and_disabled(tmp_path):
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "mine.yaml").write_text('''rules:
  - id: my-slow-rule
    match:
      codes: [LLM_WAIT_PROC_TIMEOUT]
      apis: [PullKvBlocks]
      nearby: "(a|aa)+$"
    action: relink
    remedy: Never reached on hostile input.
    examples:
      match: ["aaaa\\nret = 1343270913"]
''')
    log = tmp_path / "logs" / "app.log"
    log.parent.mkdir()
    log.write_text(("a" * 40 + "!\n" + FINDING + "\n") * 3)
    start = time.perf_counter()
    result = ddtriage("scan", log.parent, "--rules", rules, "--format", "json", "--jobs", "1")
    assert time.perf_counter() - start < 15
    assert result.returncode == 1, result.stderr
    assert b"my-slow-rule" in result.stderr and b"disabled" in result.stderr
    rules_used = [f["rule"] for f in json.loads(result.stdout)["findings"]]
    assert rules_used == ["wait-timeout-transfer"] * 3  # the next rule took over
