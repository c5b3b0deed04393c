"""Proving rules by their examples: each `match` example must produce a finding on its last
line with that rule; no `no_match` example may. Used by `ddtriage rules check` and the tests."""

from __future__ import annotations

from .api import analyze_snippet
from .engine import Engine
from .rules import Rule, RuleSet


def example_result(engine: Engine, rule: Rule, example: str) -> list[str]:
    """What the example's last line gave: rule ids, or for a code's default rule (whose examples
    prove that the code is found in that form) the rule id when the code was found at all."""
    findings = analyze_snippet(engine, example)
    last = example.rstrip("\n").count("\n") + 1
    on_last = [f for f in findings if f.line == last]
    if rule.default and rule.codes is not None:
        codes = {int(f.code, 16) for f in on_last}
        return [rule.id] if codes & rule.codes else [f.rule for f in on_last]
    return [f.rule for f in on_last]


def check_examples(rules: RuleSet) -> list[str]:
    """Every failing example, as `origin: rule id: reason` messages (empty when all pass)."""
    engine = Engine(rules, prefilter_engine="find")
    problems = []
    for rule in sorted(rules.rules, key=lambda r: r.id):
        for example in rule.examples_match:
            got = example_result(engine, rule, example)
            if rule.id not in got:
                problems.append(f"{rule.origin}: rule {rule.id}: example should match but gave "
                                f"{', '.join(got) or 'no finding'}: {example.splitlines()[-1][:120]!r}")
        for example in rule.examples_no_match:
            if rule.id in example_result(engine, rule, example):
                problems.append(f"{rule.origin}: rule {rule.id}: example should not match: "
                                f"{example.splitlines()[-1][:120]!r}")
    return problems
