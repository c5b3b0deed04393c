"""`ddtriage explain CODE`: what a code means and every remedy that can apply to it."""

from __future__ import annotations

from typing import Any

from ..core.errors import InputError
from .catalog import format_code
from .messages import action_label, language, t
from .rules import Rule, RuleSet


def explain(token: str, rules: RuleSet | None = None) -> dict[str, Any]:
    """Meaning, recoverability and every context rule for a code given as hex, decimal or name."""
    rules = rules or RuleSet.load()
    with language(rules.lang):
        return _explain(token, rules)


def _explain(token: str, rules: RuleSet) -> dict[str, Any]:
    resolved = rules.catalog.lookup(token)
    if resolved is None and token.strip().upper().removeprefix("LLMSTATUSCODE.") in ("LLM_SUCCESS", "0", "0X0"):
        raise InputError(t("err_success", token=repr(token)))
    if resolved is None:
        neighbour = explain_neighbour(token, rules)
        if neighbour is not None:
            return neighbour
        raise InputError(t("err_not_a_code", token=repr(token)))
    value, code = resolved
    known = code is not None
    applicable = [r for r in rules.candidates(value) if (r.codes is not None or (r.unknown and not known))]
    return {
        "code": format_code(value),
        "decimal": value,
        "name": code.name if code else None,
        "python_name": (code.python_name or code.name) if code else None,
        "plog_text": code.plog_text if code else None,
        "meaning": code.meaning if code else t("explain_unknown_meaning"),
        "recoverable": code.recoverable if code else None,
        "public": code.public if code else False,
        "solution": code.solution if code else None,
        "since": code.since if code else None,
        # where the C++ and Python documentation disagree: what each says, and which the catalog follows
        "docs": [{"binding": b, "recoverable": rec, "says": says} for b, rec, says in (code.docs if code else ())],
        "docs_follow": code.docs_follow if code else None,
        "rules": [describe_rule(r) for r in applicable],
        "lang": rules.lang,
    }


def describe_rule(rule: Rule) -> dict[str, Any]:
    """One rule as `explain` shows it: when it applies (in words), its action and remedy."""
    when = []
    if rule.apis:
        when.append(t("when_api", apis=t("when_or").join(sorted(rule.apis))))
    if rule.not_apis:
        when.append(t("when_not_api", apis=t("when_nor").join(sorted(rule.not_apis))))
    if rule.in_cluster_results is not None:
        when.append(t("when_in_list" if rule.in_cluster_results else "when_not_in_list"))
    if rule.nearby is not None:
        when.append(t("when_nearby", pattern=rule.nearby.pattern))
    if rule.versions is not None:
        when.append(t("when_versions", condition=rule.versions.describe()))
    return {"id": rule.id, "when": t("when_join").join(when) or t("when_any"), "action": rule.action,
            "action_text": action_label(rule.action), "remedy": rule.remedy, "specificity": rule.specificity,
            "follows": rule.follows}


def explain_neighbour(token: str, rules: RuleSet) -> dict[str, Any] | None:
    """A neighbour-family error (runtime, CANN, HCCL, HIXL, torch_npu, MindIE, socket): what it
    means and what to do. `hccl 9` names the family; a bare `507046` or `EI0006` is looked up in
    every family that lists it."""
    words = token.strip().split()
    family_id, code = (words[0].lower(), words[1]) if len(words) == 2 else (None, token.strip())
    for family in rules.neighbours.families:
        if family_id is not None and family.id != family_id and family.name.lower().split()[0] != family_id:
            continue
        listed = code in family.codes or code.upper() in family.codes or code in family.remedies
        found = [c for _, c, _ in rules.neighbours.find(f"ret = {code}", [family])] if not listed else [code]
        if listed or (family_id is not None and code.isdigit()) or code.upper() in found:
            action, remedy = family.remedy_for(code)
            with language(rules.lang):
                level, note = t(f"level_{family.level}"), t("explain_neighbour_note")
            return {
                "code": code.upper() if not code.isdigit() else code,
                "family": family.id,
                "family_name": family.name,
                "meaning": family.meaning(code),
                "action": action,
                "remedy": remedy,
                "level": level,
                "note": note,
            }
    return None
