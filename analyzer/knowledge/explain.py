"""`ddtriage explain CODE`: what a code means and every remedy that can apply to it."""

from __future__ import annotations

from typing import Any

from ..core.errors import InputError
from .catalog import format_code
from .rules import Rule, RuleSet


def explain(token: str, rules: RuleSet | None = None) -> dict[str, Any]:
    """Meaning, recoverability and every context rule for a code given as hex, decimal or name."""
    rules = rules or RuleSet.load()
    resolved = rules.catalog.lookup(token)
    if resolved is None and token.strip().upper().removeprefix("LLMSTATUSCODE.") in ("LLM_SUCCESS", "0", "0X0"):
        raise InputError(f"{token!r} is LLM_SUCCESS (0): success, not a fault")
    if resolved is None:
        neighbour = explain_neighbour(token, rules)
        if neighbour is not None:
            return neighbour
        raise InputError(f"{token!r} is not an LLM-DataDist status code (give hex, decimal or a name "
                         "such as 0x5010B009, 1343270921, LLM_LINK_FAILED) nor a known neighbour error "
                         "(EI0006, 507046, 'hccl 9', 103901, MIE05E010019, 'socket 111')")
    value, code = resolved
    known = code is not None
    applicable = [r for r in rules.candidates(value) if (r.codes is not None or (r.unknown and not known))]
    return {
        "code": format_code(value),
        "decimal": value,
        "name": code.name if code else None,
        "python_name": (code.python_name or code.name) if code else None,
        "plog_text": code.plog_text if code else None,
        "meaning": code.meaning if code else "Unknown LLM-DataDist code (not in this catalog)",
        "recoverable": code.recoverable if code else None,
        "public": code.public if code else False,
        "solution": code.solution if code else None,
        "rules": [describe_rule(r) for r in applicable],
    }


def describe_rule(rule: Rule) -> dict[str, Any]:
    """One rule as `explain` shows it: when it applies (in words), its action and remedy."""
    when = []
    if rule.apis:
        when.append("API is " + " or ".join(sorted(rule.apis)))
    if rule.not_apis:
        when.append("API is not " + " nor ".join(sorted(rule.not_apis)))
    if rule.in_cluster_results is not None:
        when.append(("in" if rule.in_cluster_results else "not in") + " a per-cluster result list")
    if rule.nearby is not None:
        when.append(f"nearby lines match /{rule.nearby.pattern}/")
    return {"id": rule.id, "when": "; ".join(when) or "any context", "action": rule.action,
            "remedy": rule.remedy, "specificity": rule.specificity}


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
            return {
                "code": code.upper() if not code.isdigit() else code,
                "family": family.id,
                "family_name": family.name,
                "meaning": family.meaning(code),
                "action": action,
                "remedy": remedy,
                "level": {1: "below LLM-DataDist", 2: "beside LLM-DataDist", 3: "above LLM-DataDist"}[family.level],
                "note": "not an LLM-DataDist status code: reported as a related error, and as the lead of an "
                        "incident when it comes first",
            }
    return None
