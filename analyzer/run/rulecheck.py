"""Proving rules and neighbour families by their examples. Used by `ddtriage rules check` and the tests.

- A rule's `match` example must produce a finding with that rule on the example's last line.
- A rule's `no_match` example must still be found, as a code the rule covers, on its last line,
  but under a *different* rule: the same code in another context. (An example the scanner does not
  find at all would pass a plain "did not match" test vacuously.)
- A link fact's `match` example (`linkfacts.yaml`) must give exactly its value; `no_match`, none.
- A neighbour family's `match` example must be classified as that family, literals prefilter
  included; its `no_match` example (a look-alike) must not be. Family examples live under the
  top-level `examples:` key of neighbours.yaml, keyed by family id.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import RuleError
from ..core.records import Finding
from ..detect.engine import Engine
from ..knowledge.catalog import format_code, read_yaml
from ..knowledge.families import NeighbourMatcher
from ..knowledge.rules import Rule, RuleSet
from ..scan.unwrap import detect as detect_envelope
from .api import analyze_snippet


def last_line_findings(engine: Engine, example: str) -> list[Finding]:
    """The findings an example gives on its last line (earlier lines are context)."""
    last = example.rstrip("\n").count("\n") + 1
    return [f for f in analyze_snippet(engine, example) if f.line == last]


def example_result(engine: Engine, rule: Rule, example: str) -> list[str]:
    """What the example's last line gave: rule ids, or for a code's default rule (whose examples
    prove that the code is found in that form) the rule id when the code was found at all."""
    on_last = last_line_findings(engine, example)
    if rule.default and rule.codes is not None:
        codes = {int(f.code, 16) for f in on_last}
        return [rule.id] if codes & rule.codes else [f.rule for f in on_last]
    return [f.rule for f in on_last]


def check_example(engine: Engine, rule: Rule, example: str, should_match: bool) -> str | None:
    """Why one example fails (a message without the origin), or None when it holds."""
    shown = repr(example.splitlines()[-1][:120])
    if should_match:
        got = example_result(engine, rule, example)
        if rule.id in got:
            return None
        return f"example should match but gave {', '.join(got) or 'no finding'}: {shown}"
    on_last = last_line_findings(engine, example)
    gave = ", ".join(f"{f.code} under {f.rule}" for f in on_last) or "no finding"
    if any(f.rule == rule.id for f in on_last):
        return f"example should not match: {shown}"
    if not any(rule.codes is None or int(f.code, 16) in rule.codes for f in on_last):
        wanted = "a code" if rule.codes is None else " or ".join(format_code(v) for v in sorted(rule.codes))
        return f"no_match example must be found as {wanted} under another rule, but gave {gave}: {shown}"
    return None


def check_rule_examples(rules: RuleSet, notes: list[str] | None = None) -> list[str]:
    """Every failing rule example, as `origin: rule id: reason` messages. A built-in rule's `match`
    example that now gives a user's rule instead is no failure: the user's rule took that context
    over, as user rules may. It is one line in `notes` per pair of rules."""
    engine = Engine(rules, prefilter_engine="find")
    by_id = {rule.id: rule for rule in rules.rules}
    problems: list[str] = []
    shadowed: dict[tuple[str, str], list[str]] = {}
    for rule in sorted(rules.rules, key=lambda r: r.id):
        cases = [(ex, True) for ex in rule.examples_match] + [(ex, False) for ex in rule.examples_no_match]
        for example, should_match in cases:
            problem = check_example(engine, rule, example, should_match)
            if not problem:
                continue
            takers = [by_id[r] for r in example_result(engine, rule, example)] if should_match else []
            if rule.builtin and takers and not any(t.builtin for t in takers):
                for taker in takers:
                    shadowed.setdefault((rule.id, taker.id), []).append(example)
                continue
            problems.append(f"{rule.origin}: rule {rule.id}: {problem}")
    for (builtin_id, taker_id), examples in shadowed.items():
        if notes is not None:
            count = f"{len(examples)} of its examples" if len(examples) > 1 else "its example"
            notes.append(f"{by_id[taker_id].origin}: rule {taker_id} takes over built-in rule {builtin_id} "
                         f"({count}, such as {examples[0].splitlines()[-1][:80]!r})")
    return problems


def family_examples(path: Path, matcher: NeighbourMatcher) -> dict[str, tuple[list[str], list[str]]]:
    """The `examples:` of a neighbours file: family id -> (match lines, no_match lines).

    Malformed entries raise RuleError naming the file and the family."""
    data = read_yaml(path)
    raw = data.get("examples") if isinstance(data, dict) else None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RuleError(f"{path}: `examples` must map family ids to `match`/`no_match` lists")
    known = {f.id for f in matcher.families}
    out: dict[str, tuple[list[str], list[str]]] = {}
    for family_id, entry in raw.items():
        where = f"{path}: examples: family {family_id}"
        if family_id not in known:
            raise RuleError(f"{where}: no such family (known: {', '.join(sorted(known))})")
        if not isinstance(entry, dict) or set(entry) - {"match", "no_match"}:
            raise RuleError(f"{where}: must be a mapping with `match` and optionally `no_match`")
        lists = (entry.get("match") or [], entry.get("no_match") or [])
        if not all(isinstance(lst, list) and all(isinstance(x, str) for x in lst) for lst in lists):
            raise RuleError(f"{where}: `match` and `no_match` must be lists of log lines")
        out[family_id] = lists
    return out


def classified_as(matcher: NeighbourMatcher, line: str) -> list[str]:
    """Family ids a line is classified as, going through the literal prefilter as a scan does."""
    present = matcher.families_in(line.encode("utf-8"))
    return [family for family, _, _ in matcher.find(line, present)] if present else []


def check_family_examples(rules: RuleSet, path: Path | None) -> list[str]:
    """Every failing neighbour-family example, and every family without a `match` example."""
    if path is None:
        return []
    matcher = rules.neighbours
    try:
        examples = family_examples(path, matcher)
    except RuleError as exc:  # reported like a failing example: `rules check` prints it, exit 2
        return [str(exc)]
    problems = []
    for family in matcher.families:
        match, no_match = examples.get(family.id, ([], []))
        where = f"{path}: family {family.id}"
        if not match:
            problems.append(f"{where}: needs at least one `match` example under `examples:`")
        for line in match:
            got = classified_as(matcher, line)
            if family.id not in got:
                problems.append(f"{where}: example should match but gave {', '.join(got) or 'nothing'}: "
                                f"{line[:120]!r}")
        for line in no_match:
            if family.id in classified_as(matcher, line):
                problems.append(f"{where}: example should not match: {line[:120]!r}")
    return problems


def neighbours_path(rules: RuleSet) -> Path | None:
    """The neighbours file in effect (the last one loaded)."""
    found = [p for p in rules.sources if p.name == "neighbours.yaml"]
    return found[-1] if found else None


def check_envelope_examples(rules: RuleSet) -> list[str]:
    """Every failing envelope example: it must be detected as its own envelope, and its last line
    must unwrap to its `inner` text and to every other field it names (time, pod, node, ...)."""
    table = rules.envelopes
    problems = []
    for env in table.envelopes:
        for example in env.examples:
            where = f"{table.origin}: envelope {env.name}"
            shown = repr(example["wrapped"].splitlines()[-1][:100])
            unwrapper = detect_envelope(table, example["wrapped"].encode("utf-8"), 2025)
            if unwrapper is None or unwrapper.name != env.name:
                problems.append(f"{where}: example detected as {unwrapper.name if unwrapper else 'no envelope'}: "
                                f"{shown}")
                continue
            records = unwrapper.records(example["wrapped"].split("\n")[-1])
            if not records:
                problems.append(f"{where}: example holds no record: {shown}")
                continue
            for key, want in example.items():
                if key == "wrapped":
                    continue
                got = getattr(records[0], "text" if key == "inner" else key, None)
                if got != want:
                    problems.append(f"{where}: example {key} is {got!r}, expected {want!r}: {shown}")
    return problems


def check_examples(rules: RuleSet, notes: list[str] | None = None) -> list[str]:
    """Every failing example of rules, neighbour families, envelopes and link facts, malformed family
    examples included (empty when all pass); `notes` learns what passes but is worth saying."""
    facts_paths = [p for p in rules.sources if p.name == "linkfacts.yaml"]
    facts = rules.linkfacts.check_examples(str(facts_paths[-1])) if facts_paths else []
    from ..knowledge.messages import check_messages

    # A built-in entry must say everything in English and in Chinese (`field` and `field_zh`).
    languages = [f"{m} (every built-in entry has its English and Chinese text)" for m in rules.untranslated]
    recovery_paths = [p for p in rules.sources if p.name == "recovery.yaml"]
    proofs = rules.recovery.check_examples(rules.linkfacts.find, str(recovery_paths[-1])) if recovery_paths else []
    return (check_rule_examples(rules, notes) + check_family_examples(rules, neighbours_path(rules))
            + check_envelope_examples(rules) + facts + proofs + languages + check_messages())
