"""Stage: rules. Every rule proves its examples; malformed rules fail with file, id and reason;
user rules add and override; the most specific rule wins."""

from pathlib import Path

import pytest
from analyzer import RuleError, analyze_text, load_rules
from analyzer.detect.engine import Engine
from analyzer.run.rulecheck import check_example, check_examples


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
