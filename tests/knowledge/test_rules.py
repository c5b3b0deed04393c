"""Stage: rules. Every rule proves its examples; malformed rules fail with file, id and reason;
user rules add and override; the most specific rule wins.

Hostile input, rules files: a rules directory may come with a ticket too. Loading one is bounded:
size limit, no aliases (billion laughs), bounded nesting, no tags, a FIFO refused; each failure is
one line naming the file, exit 2, fast (folded from test_hostile_rules_files.py).

Hostile input, denial of service: every built-in pattern runs in linear time on any line, and a
user's catastrophic `nearby` regex is reported and disabled instead of hanging the scan (folded from test_hostile_patterns.py).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from functools import cache
from pathlib import Path

import pytest
from analyzer import RuleError, analyze_text, load_rules
from analyzer.core.headers import parse_header, record_headers
from analyzer.detect.context import ApiResolver
from analyzer.detect.engine import Engine
from analyzer.detect.fingerprint import message_template
from analyzer.detect.patterns import CodeMatcher
from analyzer.knowledge.rules import RuleSet
from analyzer.run.api import analyze_snippet
from analyzer.run.rulecheck import check_example, check_examples
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from hostile import FINDING, ddtriage, one_line_error


def _cases():
    rules = load_rules()
    for rule in sorted(rules.rules, key=lambda r: r.id):
        for i, ex in enumerate(rule.examples_match):
            yield pytest.param(rule.id, ex, True, id=f"{rule.id}-match-{i}")
        for i, ex in enumerate(rule.examples_no_match):
            yield pytest.param(rule.id, ex, False, id=f"{rule.id}-no_match-{i}")


@pytest.fixture(scope="module")
def engine(rules):
    return Engine(rules, prefilter_engine="find")


@pytest.mark.parametrize("rule_id,example,should_match", list(_cases()))
def test_rule_examples(rules, engine, rule_id, example, should_match):
    assert check_example(engine, rules.by_id[rule_id], example, should_match) is None


def test_every_context_rule_has_a_counter_example(rules):
    """A built-in context rule shows the same code in another context, where another rule applies."""
    context_rules = [r for r in rules.rules if not r.default]
    assert len(context_rules) >= 11
    assert [r.id for r in context_rules if not r.examples_no_match] == []


def test_every_rule_has_examples_and_a_known_action(rules):
    assert not check_examples(rules)
    for rule in rules.rules:
        assert rule.examples_match, rule.id


def test_context_remedies(rules):
    pull = "[ERROR] GE(1,p):2025-11-12-03:40:05.1 [llm_datadist.cc:8]2 PullKvBlocks: ErrorNo: 1343270913(request wait to be processed timeout!)"
    link = "[ERROR] GE(1,p):2025-11-12-03:40:05.1 [llm_link_manager.cc:8]2 LinkClusters: ErrorNo: 1343270913(request wait to be processed timeout!)"
    assert analyze_text(pull, rules)[0].action == "relink"
    assert analyze_text(pull, rules)[0].recoverable is False
    assert analyze_text(link, rules)[0].action == "retry"
    assert analyze_text("[switch_role] failed, error code is LLMStatusCode.LLM_FEATURE_NOT_ENABLED", rules)[0].rule == "feature-not-enabled-set-role"
    assert analyze_text("[init] failed, error code is LLMStatusCode.LLM_FEATURE_NOT_ENABLED", rules)[0].rule == "default-feature-not-enabled"


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "mine.yaml").write_text(text)
    return tmp_path


GOOD = """
rules:
  - id: my-link-failed-pull
    match: {codes: [LLM_NOT_YET_LINK], apis: [PullKvCache]}
    action: relink
    remedy: Our cluster manager dropped the link; relink.
    examples:
      match: ["[pull_cache] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK"]
      no_match: ["[pull_blocks] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK"]
  - id: wait-timeout-other
    match: {codes: [LLM_WAIT_PROC_TIMEOUT], not_apis: ["@transfer"]}
    action: retry-later
    remedy: Overridden by the user.
    examples:
      match: ["[link_clusters] failed, error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT"]
"""


def test_user_rules_add_and_override(tmp_path):
    rules = load_rules(write(tmp_path, GOOD))
    f = analyze_text("[pull_cache] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK", rules)[0]
    assert (f.rule, f.action) == ("my-link-failed-pull", "relink")
    f = analyze_text("[link_clusters] failed, error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT", rules)[0]
    assert (f.rule, f.action) == ("wait-timeout-other", "retry-later")
    assert not check_examples(rules)


@pytest.mark.parametrize("body,reason", [
    ("rules:\n  - id: x\n    match: {codes: [LLM_NOPE]}\n    action: retry\n    remedy: r\n    examples: {match: [a]}\n",
     "rule x: match.codes: unknown code 'LLM_NOPE'"),
    ("rules:\n  - id: x\n    match: {codes: [LLM_TIMEOUT], apis: [PulKvCache]}\n    action: retry\n    remedy: r\n    examples: {match: [a]}\n",
     "rule x: match.apis: unknown API 'PulKvCache'"),
    ("rules:\n  - id: x\n    match: {codes: [LLM_TIMEOUT]}\n    action: reboot\n    remedy: r\n    examples: {match: [a]}\n",
     "rule x: action 'reboot' is not one of"),
    ("rules:\n  - id: x\n    match: {codes: [LLM_TIMEOUT]}\n    action: retry\n    remedy: r\n",
     "rule x: `examples.match` must list"),
    ("rules:\n  - id: x\n    match: {codes: [LLM_TIMEOUT], nearby: '('}\n    action: retry\n    remedy: r\n    examples: {match: [a]}\n",
     "rule x: match.nearby: invalid regular expression"),
    ("rules:\n  - id: x\n    match: {codes: [LLM_TIMEOUT]}\n    action: retry\n    remedy: r\n    colour: red\n    examples: {match: [a]}\n",
     "rule x: unknown field(s): colour"),
    ("rules: [\n", "invalid YAML"),
    ("- just a list\n", "expected a mapping with a `rules` list"),
])
def test_malformed_rules_name_file_rule_and_reason(tmp_path, body, reason):
    with pytest.raises(RuleError) as err:
        load_rules(write(tmp_path, body))
    message = str(err.value)
    assert str(tmp_path / "mine.yaml") in message
    assert reason in message


def test_failing_example_is_reported(tmp_path):
    body = GOOD.replace('match: ["[pull_cache] failed', 'match: ["[push_cache] failed')
    problems = check_examples(load_rules(write(tmp_path, body)))
    assert len(problems) == 1 and "rule my-link-failed-pull: example should match" in problems[0]


NO_MATCH = """
rules:
  - id: my-not-yet-link-pull
    match: {codes: [LLM_NOT_YET_LINK], apis: [PullKvCache]}
    action: relink
    remedy: Relink.
    examples:
      match: ["[pull_cache] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK"]
      no_match: [%s]
"""


@pytest.mark.parametrize("counter_example,reason", [
    # Not found at all: a plain "did not match" would pass this vacuously.
    ('"[pull_blocks] failed, the link is gone"', "must be found as 0x5010B007 under another rule, but gave no finding"),
    # Found, but as another code: says nothing about this rule's context.
    ('"[pull_blocks] failed, error code is LLMStatusCode.LLM_PARAM_INVALID"',
     "must be found as 0x5010B007 under another rule, but gave 0x5010B005 under param-invalid-pull-blocks"),
    # The same context: the rule does match.
    ('"[pull_cache] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK"', "example should not match"),
])
def test_counter_example_must_show_the_code_under_another_rule(tmp_path, counter_example, reason):
    problems = check_examples(load_rules(write(tmp_path, NO_MATCH % counter_example)))
    assert len(problems) == 1 and "rule my-not-yet-link-pull: " in problems[0] and reason in problems[0], problems


def test_counter_example_in_another_context_passes(tmp_path):
    body = NO_MATCH % '"[pull_blocks] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK"'
    assert check_examples(load_rules(write(tmp_path, body))) == []


TAKES_OVER = """
rules:
  - id: wait-timeout-our-proxy
    description: Our proxy times out every pull.
    match: {codes: [LLM_WAIT_PROC_TIMEOUT], apis: ["@transfer"]}
    action: relink
    remedy: Restart the proxy sidecar, then relink.
    examples:
      match: ["[pull_blocks] failed, error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT"]
"""


def test_a_user_rule_that_takes_over_a_builtin_context_is_a_note_not_an_error(tmp_path):
    # `rules check` failed with four errors blamed on the built-in context.yaml: the built-in
    # rule's examples now gave the user's rule, which is what the user wrote it for
    notes: list[str] = []
    assert check_examples(load_rules(write(tmp_path, TAKES_OVER)), notes) == []
    assert notes == [f"{tmp_path / 'mine.yaml'}: rule wait-timeout-our-proxy takes over built-in rule "
                     "wait-timeout-transfer (4 of its examples, such as '[ERROR] GE(5569,python3):2025-11-12-03:40:"
                     "05.101.002 [llm_datadist.cc:812]5571 P')"]
    result = ddtriage("rules", "check", tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stderr.decode() == f"ddtriage: note: {notes[0]}\n"
    # the user's own rule is still held to its examples
    write(tmp_path, TAKES_OVER.replace("[pull_blocks] failed", "[link_clusters] failed"))
    result = ddtriage("rules", "check", tmp_path)
    assert result.returncode == 2 and "rule wait-timeout-our-proxy: example should match" in one_line_error(result.stderr)


def test_missing_rules_dir(tmp_path):
    with pytest.raises(RuleError, match="does not exist"):
        load_rules(tmp_path / "nope")


def test_match_resolves_recoverable_from_the_rule_else_the_code(rules, tmp_path):
    timeout = 0x5010B001  # recoverable in the catalog
    other = rules.match(timeout, "LinkLlmClusters", False, lambda: "")
    assert other.rule.id == "wait-timeout-other" and not other.rule.recoverable_set
    assert other.code is not None and other.recoverable is other.code.recoverable is True
    pull = rules.match(timeout, "PullKvBlocks", False, lambda: "")
    assert (pull.rule.id, pull.recoverable) == ("wait-timeout-transfer", False)  # the rule overrides the code
    mine = load_rules(write(tmp_path, """
rules:
  - id: my-timeout
    match: {codes: [LLM_WAIT_PROC_TIMEOUT], apis: [LinkLlmClusters]}
    action: relink
    recoverable: false
    remedy: Never retried here.
    examples:
      match: ["LinkClusters failed, ret = 0x5010B001"]
"""))
    found = mine.match(timeout, "LinkLlmClusters", False, lambda: "")
    assert (found.rule.id, found.recoverable) == ("my-timeout", False)
    unknown = rules.match(0x5010B0A3, None, False, lambda: "")
    assert (unknown.rule.id, unknown.code, unknown.recoverable) == ("unknown-code", None, None)


def laughs(levels: int) -> str:
    """A "billion laughs": each level a list of nine aliases of the one before (9**levels items)."""
    out = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        out.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(out) + "\n"


CASES = {
    "billion laughs": (laughs(6), "aliases (*name) are not allowed"),
    "nested 3000 deep (block)": ("rules:\n  " + "- " * 3000 + "x\n", "nested deeper than 64 levels"),
    "nested 3000 deep (mappings)": ("rules: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", "nested deeper than 64 levels"),
    "nested 3000 deep (flow)": ("rules: " + "[" * 3000 + "]" * 3000 + "\n", "nest"),  # libyaml or ours
    "a tag": ("rules: !!binary aGVsbG8=\n", "tags (tag:yaml.org,2002:binary) are not allowed"),
    "a local tag": ("rules:\n  - !rule {id: x}\n", "tags (!rule) are not allowed"),
    "five megabytes": (("#" + "x" * 99 + "\n") * 50_000 + "rules: []\n", "larger than 4 MiB"),
}


@pytest.mark.parametrize(("text", "reason"), CASES.values(), ids=CASES.keys())
def test_hostile_rules_file_is_one_line_error(tmp_path, text, reason):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "evil.yaml").write_text(text)
    (tmp_path / "app.log").write_text(FINDING + "\n")
    start = time.perf_counter()
    result = ddtriage("scan", tmp_path / "app.log", "--rules", tmp_path / "rules", timeout=30)
    assert time.perf_counter() - start < 10
    assert result.returncode == 2
    error = one_line_error(result.stderr)
    assert "evil.yaml" in error and reason in error, error


def test_rules_file_that_is_a_fifo_is_refused(tmp_path):
    (tmp_path / "rules").mkdir()
    os.mkfifo(tmp_path / "rules" / "pipe.yaml")  # nobody writes: reading it would block forever
    result = ddtriage("rules", "check", tmp_path / "rules", timeout=20)
    assert result.returncode == 2
    assert "pipe.yaml: not a regular file" in one_line_error(result.stderr)


MS_PER_KB = 5.0  # linear patterns take ~0.01-0.5 ms per KB here; the quadratic ones took 20-100
HEADER = "[ERROR] LLMDATADIST(11,python3):2025-11-12-03:40:05.101.002 [llm_link.cc:1]12 LinkLlmClusters: "


@cache
def hostile_engine() -> Engine:
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
PATTERN_CASES = {
    "ErrorNo then 100k blanks": "ErrorNo:" + " " * 100_000 + "x LLM_FAILED\n",
    "runtime error then blanks, then a finding": "rtStreamSynchronize error" + " " * 60_000 + "\n" + FINDING + "\n",
    "flattened plog headers without )": HEADER + "ret = 1343270913 " + "[ERROR] GE(1,x:2025-11-12-03:40:05 " * 8000 + "\n",
    "errno 111 repeated": "errno 111 " * 20_000 + "connection refused\n" + HEADER + "LLM_LINK_FAILED\n",
    "nearby-rule line then blanks": "link failed errno" + " " * 60_000 + "\n" + HEADER + "ret = 1343270921\n",
}


@pytest.mark.parametrize("text", PATTERN_CASES.values(), ids=PATTERN_CASES.keys())
def test_red_team_lines_scan_in_linear_time(text):
    hostile_engine()  # compiled outside the clock
    bound = MS_PER_KB * len(text) / 1024 / 1000 + 0.2
    took = seconds(lambda: analyze_snippet(hostile_engine(), text), bound)
    assert took < bound, f"{took:.2f} s for {len(text) >> 10} KB"


def test_red_team_lines_through_the_command(tmp_path):
    for i, text in enumerate(PATTERN_CASES.values()):
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
    rules = hostile_engine().rules
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


@pytest.mark.parametrize("engine", ["python", "rust"])
def test_catastrophic_user_nearby_regex_is_reported_and_disabled(tmp_path, monkeypatch, engine):
    """Python's backtracking path times out and disables the rule; under the compiled core the
    same regex runs in Rust's linear-time engine (issue #17): nothing to disable, same findings."""
    from analyzer.scan import blocks

    if engine == "rust" and blocks._core is None:
        pytest.skip("the compiled core is not installed")
    monkeypatch.setenv("DDTRIAGE_ENGINE", engine)
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
    if engine == "python":
        assert b"my-slow-rule" in result.stderr and b"disabled" in result.stderr
    else:
        assert b"disabled" not in result.stderr
    rules_used = [f["rule"] for f in json.loads(result.stdout)["findings"]]
    assert rules_used == ["wait-timeout-transfer"] * 3  # the next rule took over


# --- Chinese beside the English (issue #20, item 1) ---

_CJK = re.compile(r"[\u4e00-\u9fff]")


def test_every_builtin_text_is_in_both_languages():
    zh = load_rules(lang="zh")
    assert zh.untranslated == () and load_rules().untranslated == ()
    for rule in zh.rules:
        assert _CJK.search(rule.remedy), rule.id
    for code in zh.catalog.codes:
        assert _CJK.search(code.meaning) and _CJK.search(code.solution), code.name
    for family in zh.neighbours.families:
        assert _CJK.search(family.name) and _CJK.search(family.remedy), family.id
        for code in family.codes:
            assert _CJK.search(family.meaning(code)), (family.id, code)
            assert _CJK.search(family.remedy_for(code)[1]), (family.id, code)


def test_official_chinese_names_are_the_meanings():
    zh = load_rules(lang="zh").catalog
    names = {c.name: c.meaning for c in zh.codes}
    assert names["LLM_WAIT_PROC_TIMEOUT"] == "处理超时" and names["LLM_KV_CACHE_NOT_EXIST"] == "KV不存在"
    assert names["LLM_LINK_FAILED"] == "建链失败" and names["LLM_NOT_YET_LINK"] == "没有建链"
    assert names["LLM_NOTIFY_PROMPT_UNLINK_FAILED"] == "通知Prompt侧断链失败"
    assert names["LLM_SUSPECT_REMOTE_ERROR"] == "疑似UCE内存故障"


@pytest.mark.parametrize("file,drop,reason", [
    ("context.yaml", "    remedy_zh: \"传输超时，", "rule wait-timeout-transfer: lacks `remedy_zh`"),
    ("catalog.yaml", "    meaning_zh: \"建链失败\"", "code LLM_LINK_FAILED: lacks `meaning_zh`"),
    ("neighbours.yaml", "      \"103903\": \"已经建链\"", "family hixl: code 103903: lacks `codes_zh`"),
    ("neighbours.yaml", "      \"103905\": \"当前版本", "family hixl: code 103905: lacks `remedies_zh`"),
])
def test_rules_check_fails_a_builtin_entry_without_chinese(tmp_path, file, drop, reason):
    import shutil

    from analyzer.knowledge.catalog import BUILTIN_RULES_DIR

    data = tmp_path / "data"
    shutil.copytree(BUILTIN_RULES_DIR, data)
    text = (data / file).read_text(encoding="utf-8")
    kept = [line for line in text.split("\n") if not line.startswith(drop)]
    assert len(kept) == text.count("\n")  # exactly one line dropped
    (data / file).write_text("\n".join(kept), encoding="utf-8")
    problems = check_examples(RuleSet.load(builtin_dir=data))
    assert any(reason in p for p in problems), problems
    # the English stays what a Chinese run falls back to
    assert RuleSet.load(builtin_dir=data, lang="zh").lang == "zh"


def test_a_user_rule_without_chinese_is_fine_and_falls_back_to_english(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "rules:\n  - id: mine\n    match: {codes: [LLM_LINK_FAILED], apis: [UnlinkLlmClusters]}\n"
        "    action: check-network\n    remedy: My words.\n"
        "    examples: {match: ['UnlinkLlmClusters: ret = 1343270921']}\n", encoding="utf-8")
    zh = load_rules(tmp_path, lang="zh")
    assert zh.by_id["mine"].remedy == "My words." and zh.untranslated == ()
    assert check_examples(zh) == []


# --- rules gated by version (issue #20, item 2) ---

_GATED = """rules:
  - id: link-failed-new-cann
    description: On CANN 8.3.RC1 and later a link failure is told apart.
    match:
      codes: [LLM_LINK_FAILED]
      versions: {cann: ">=8.3.RC1"}
    action: check-network
    remedy: Gated remedy.
    examples:
      match: ["CANN version = 8.3.RC1\\nLinkClusters: ErrorNo: 1343270921(local cluster link with remote cluster failed!)"]
"""
_INIT = ("[INFO] GE(4811,python3):2025-11-12-03:39:50.000.000 [ge_api.cc:80]4811 GEInitialize: GE init begin, "
         "CANN version = {v}, build = 20250820")
_TOOLKIT = "[INFO] GE(4811,python3):2025-11-12-03:39:50.100.000 [plugin_loader.cc:80]4811 Load: load " \
           "/usr/local/Ascend/cann-{v}/lib64/libllm_engine.so success"
_FAIL = ("[ERROR] GE(4811,python3):2025-11-12-03:40:02.123.456 [llm_link_manager.cc:412]4811 LinkClusters: "
         "ErrorNo: 1343270921(local cluster link with remote cluster failed!) [GE][MODULE]Failed to link clusters")


@pytest.mark.parametrize("before,rule", [
    (_INIT.format(v="8.3.RC1"), "link-failed-new-cann"),
    (_INIT.format(v="9.0.0"), "link-failed-new-cann"),
    (_TOOLKIT.format(v="9.1.0"), "link-failed-new-cann"),
    (_INIT.format(v="8.2.0"), "default-link-failed"),
    (_INIT.format(v="8.3.RC1.alpha001"), "default-link-failed"),
    (_TOOLKIT.format(v="8.2.RC1"), "default-link-failed"),
    ("[INFO] GE(4811,python3):2025-11-12-03:39:50.000.000 [ge_api.cc:80]4811 GEInitialize: GE init begin", "default-link-failed"),
    # another process's version is not this process's
    (_INIT.format(v="8.3.RC1").replace("GE(4811", "GE(5569").replace("]4811 ", "]5569 "), "default-link-failed"),
])
def test_a_version_condition_is_judged_on_the_versions_its_process_logged(tmp_path, before, rule):
    (tmp_path / "gated.yaml").write_text(_GATED, encoding="utf-8")
    gated = load_rules(tmp_path)
    found = analyze_text(before + "\n" + _FAIL, rules=gated)
    assert [f.rule for f in found] == [rule]


def test_a_malformed_version_condition_names_file_rule_and_reason(tmp_path):
    (tmp_path / "gated.yaml").write_text(_GATED.replace(">=8.3.RC1", ">=latest"), encoding="utf-8")
    with pytest.raises(RuleError, match=r"gated.yaml: rule link-failed-new-cann: match.versions: cann: "
                                        r"'>=latest' is not a comparison"):
        load_rules(tmp_path)


NEARBY_PATTERNS = [r"(?i)connection refused|ECONNREFUSED|errno\s*(?:[:=]\s*)?111\b", r"(a|aa)+$", r"^\w+ \d{2,}",
                   r"(?i)\blink\b.*\bfail", r"[^\s]+@[^\s]+", r"x{2,3}?y|\Bq", r"(?s)a.b"]


def test_the_core_runs_portable_nearby_regexes_with_the_same_answers():
    """`ddtriage_core.Nearby` equals Python's `regex` search on generated text, or leaves it to Python."""
    import regex

    core = pytest.importorskip("ddtriage_core", reason="the compiled core is not installed")
    compiled = [(regex.compile(p), core.Nearby(p)) for p in NEARBY_PATTERNS]

    @settings(max_examples=300, deadline=None)
    @given(st.lists(st.sampled_from(["a", "aa", "x", "y", "q", "b", " ", "\n", "\t", "1", "111", "errno", ": ",
                                     "Connection Refused", "link", "LINK", "fail", "@", "_", "\u00e9", "\x00",
                                     "\r"]), max_size=30))
    def check(parts: list[str]) -> None:
        text = "".join(parts)
        for python, rust in compiled:
            got = rust.search(text)
            assert got is None or got == (python.search(text) is not None), (python.pattern, text)

    check()
    with pytest.raises(ValueError, match="look-ahead"):
        core.Nearby(r"refused(?!\d)")


def test_a_user_nearby_regex_the_core_cannot_run_is_named_in_a_note_on_stderr(tmp_path, monkeypatch):
    from analyzer.scan import blocks

    if blocks._core is None:
        pytest.skip("the compiled core is not installed")
    rules_dir = tmp_path / "rules"
    rules_dir.mkdir()
    (rules_dir / "mine.yaml").write_text('''rules:
  - id: my-lookahead-rule
    match:
      codes: [LLM_WAIT_PROC_TIMEOUT]
      apis: [PullKvBlocks]
      nearby: "refused(?!\\\\d)"
    action: relink
    remedy: A peer that refuses.
    examples:
      match: ["connect refused\\nret = 1343270913"]
''')
    log = tmp_path / "app.log"
    log.write_text("connect refused\n" + FINDING + "\n")
    results = {}
    for engine in ("python", "rust"):
        monkeypatch.setattr(blocks, "ENGINE", engine)
        from analyzer import analyze

        results[engine] = analyze([str(log)], rules=load_rules(rules_dir), jobs=1)
    assert [f.rule for f in results["rust"].findings] == [f.rule for f in results["python"].findings] == [
        "my-lookahead-rule"]
    # the report is the same under both engines (it once held the note under the core only) ...
    assert results["rust"].inputs.notes == results["python"].inputs.notes == []
    from analyzer.cli import cli
    from click.testing import CliRunner

    runs = {}
    for engine in ("python", "rust"):
        monkeypatch.setattr(blocks, "ENGINE", engine)
        runs[engine] = CliRunner().invoke(cli, ["scan", str(log), "--rules", str(rules_dir), "--jobs", "1",
                                                "--format", "json", "--fail-on", "never"], catch_exceptions=False)
    assert runs["rust"].stdout == runs["python"].stdout
    # ... and the engine that cannot run the regex says so on stderr, naming the rule
    assert "my-lookahead-rule" not in runs["python"].stderr
    (note,) = [line for line in runs["rust"].stderr.splitlines() if "my-lookahead-rule" in line]
    assert note.startswith("ddtriage: note: ") and "mine.yaml" in note and "timed Python path" in note
