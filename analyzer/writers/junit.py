"""JUnit XML, for Jenkins' `junit` step and GitLab's `artifacts:reports:junit`.

    <testsuites name="ddtriage" tests="44" failures="2" errors="0">
      <testsuite name="ddtriage" tests="44" failures="2" errors="0" skipped="0">
        <testcase classname="wait-timeout-transfer" name="node-2/plog/plog-1.log:61">
          <failure type="LLM_WAIT_PROC_TIMEOUT" message="Unlink the clusters and ...">...</failure>
        </testcase>
        <testcase classname="link-busy" name="no findings"/>

Each rule is a test class (`classname`: Jenkins and GitLab group by it). Each finding group (one
fingerprint in one file) is a failed test case named after its file and first line, with the
remedy as the failure message and every line in the text. Jenkins and GitLab read one failure per
test case, so a group per test case is what keeps every group visible. A rule without findings is
one passing test case. Validated against the Jenkins xUnit plugin's JUnit schema in tests/schemas/.

Related errors (runtime, HCCL, HIXL, MindIE, ...: no LLM-DataDist code) come after, one test case
per family, code and file, classname `related-FAMILY`: a failure under `--fail-on related` (they
fail the gate then), otherwise a passing case whose system-out holds the line, so the report
shows them without turning a green build red.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TextIO
from xml.sax.saxutils import quoteattr

from ..diagnose.summary import ONGOING, RECOVERED
from . import safe
from .ci import (
    Group,
    RelatedGroup,
    groups,
    headline,
    related_fails,
    related_groups,
    related_headline,
    related_message,
    related_rule,
    rules_in_use,
)
from .common import finding_states

if TYPE_CHECKING:
    from ..core.records import RuleTexts
    from ..run.analysis import Analysis

name = "junit"
suffix = ".xml"

_XML_BAD = {c: " " for c in range(32) if c not in (9, 10, 13)} | {0xFFFE: " ", 0xFFFF: " "}


def _clean(text: str) -> str:
    """XML 1.0 cannot hold most control characters (a log line may); surrogate escapes neither."""
    # Other controls, C1, bidi and surrogates as visible escapes; the body's line breaks stay.
    text = "\n".join(safe.terminal(part) for part in text.split("\n")).translate(_XML_BAD)
    return text.encode("utf-8", "replace").decode("utf-8") if any(0xD800 <= ord(c) < 0xE000 for c in text) else text


def _attr(text: str) -> str:
    return quoteattr(_clean(text), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _body(text: str) -> str:
    return _clean(text).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _case(g: Group, texts: RuleTexts, state: str) -> str:
    f = g.first
    lines = [f"{headline(f)} ({f.rule})", f"{f.source}: {g.where(limit=50)}", f"state: {state}"]
    if f.node:
        lines.append(f"node: {f.node}")
    if f.timestamp:
        lines.append(f"first at: {f.timestamp}")
    lines.append(f"line {f.line}: {f.text}")
    return (f"    <testcase classname={_attr(f.rule)} name={_attr(f'{f.source}:{f.line}')}>\n"
            f"      <failure type={_attr(f.name or f.code)} message={_attr(texts.remedy(f.rule))}>"
            f"{_body(chr(10).join(lines))}</failure>\n"
            f"    </testcase>\n")


def _related_case(g: RelatedGroup, failing: bool) -> str:
    e = g.first
    head = f"    <testcase classname={_attr(related_rule(e))} name={_attr(f'{e.source}:{e.line}')}>\n"
    if failing:
        return (head + f"      <failure type={_attr(related_headline(e))} message={_attr(related_message(g))}>"
                f"{_body(e.text)}</failure>\n    </testcase>\n")
    return head + f"      <system-out>{_body(related_message(g))}</system-out>\n    </testcase>\n"


def write(analysis: Analysis, out: TextIO) -> None:
    by_rule: dict[str, list[Group]] = {}
    for g in groups(analysis):
        by_rule.setdefault(g.first.rule, []).append(g)
    rule_ids = rules_in_use(analysis)
    state_of = finding_states(analysis)
    related, failing = related_groups(analysis), related_fails(analysis)
    failures = sum(len(v) for v in by_rule.values()) + (len(related) if failing else 0)
    tests = failures + sum(1 for r in rule_ids if r not in by_rule) + (0 if failing else len(related))
    counts = f'tests="{tests}" failures="{failures}" errors="0"'
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(f'<testsuites name="ddtriage" {counts}>\n')
    out.write(f'  <testsuite name="ddtriage" {counts} skipped="0">\n')
    for rule_id in rule_ids:
        found = by_rule.get(rule_id)
        if not found:
            out.write(f"    <testcase classname={_attr(rule_id)} name=\"no findings\"/>\n")
            continue
        for g in sorted(found, key=lambda g: (g.first.source, g.first.line)):
            state = ONGOING if any(state_of(f) == ONGOING for f in g.kept) else RECOVERED
            out.write(_case(g, analysis.rule_texts, state))
    for r in related:
        out.write(_related_case(r, failing))
    skipped = analysis.inputs.to_dict()["skipped"]
    if skipped:
        text = "\n".join(f"skipped {s['source']}: {s['reason']}" for s in skipped)
        out.write(f"    <system-err>{_body(text)}</system-err>\n")
    out.write("  </testsuite>\n</testsuites>\n")

