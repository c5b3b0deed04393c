"""The knowledge as a MindCluster FaultDiag (`ascend-fd`) custom fault-entity file.

Stage: knowledge (export). `ddtriage rules export --format ascend-fd -o FILE` writes the file that
`ascend-fd entity --update FILE` loads: a JSON object of fault code -> entity, each entity with
flat dotted keys (`attribute.class`, `attribute.cause_zh`, ..., `rule`, `source_file`,
`regex.in`). The format and its limits are FaultDiag's (Ascend/mind-cluster, Apache-2.0):
`docs/en/faultdiag/user_guide/04_customizing_fault_entities.md` and the loader's checks in
`component/ascend-faultdiag/src/ascend_fd/pkg/customize/custom_entity/{valid,custom_update}.py`:
at most 1,000 entries; codes of 1-50 letters, digits, `_` and `-`; class/component/module 1-50
printable ASCII; cause 1-200 characters; description and suggestion a string of 1-2,000 or a list
of lines of 1-200; Chinese (CJK ideographs and CJK/full-width punctuation) only in the `_zh`
fields; `rule` a list of `{dst_code}` naming entries that exist; `source_file` up to 10 names
joined by `|`; `regex.in` keyword groups (OR across groups, AND within one).

Entries: one per LLM-DataDist code of the catalog (the generic LLM_FAILED aside: it is the graph
engine's own failure too), one per context rule, one per neighbour-family code. Fault chains run
from a neighbour error to the LLM-DataDist entries it leads to: a rule whose `nearby:` text the
family's own example lines hold, and a code whose name the family's remedy names.
"""

from __future__ import annotations

import re
import string
import textwrap
from pathlib import Path
from typing import Any

from .catalog import Code, read_yaml
from .families import Family
from .rules import Rule, RuleSet

MAX_ENTRIES = 1000  # custom_update.MAX_OP_NUM: entries past it are not saved
CODE_CHARS = frozenset(string.digits + string.ascii_letters + "-_")
LINE_CHARS = frozenset(string.digits + string.ascii_letters + string.punctuation + " ")
SOURCE_FILES = "CANN_Plog|TrainLog"  # host plog, and the serving application's console log
APP_SOURCE_FILES = "TrainLog|MindIE"
# class, component, module of each neighbour family's entries (FaultDiag's own vocabulary);
# a family not listed (a draft) is CANN software.
FAMILY_PLACES: dict[str, tuple[str, str, str]] = {
    "runtime": ("Software", "CANN", "Runtime"),
    "cann": ("Software", "CANN", "Error Message"),
    "hccl": ("Software", "CANN", "HCCL"),
    "hixl": ("Software", "CANN", "HIXL"),
    "torch-npu": ("Software", "AI Framework", "torch_npu"),
    "mindie": ("Software", "MindIE", "MindIE"),
    "socket": ("Network", "Network", "Socket"),
    "driver": ("Hardware", "NPU", "Driver"),
}
_ASCII = str.maketrans({"\u2013": "-", "\u2014": "-", "\u2192": "->", "\u2026": "...", "\u2018": "'",
                        "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u00d7": "x", "\u2264": "<=",
                        "\u2265": ">=", "\u00a0": " ", "\n": " ", "\t": " "})


def chinese(twin: object | None, field: str, key: str | None = None) -> str | None:
    """The Chinese text of `field` (of `key` when the field is a mapping, such as a family's
    `codes`) on `twin`: the same code, rule or family loaded in Chinese (`RuleSet.load(lang="zh")`,
    which takes each entry's `<field>_zh`, or its English where it has none); None without one."""
    value: Any = getattr(twin, field, None) if twin is not None else None
    if key is not None:
        value = value.get(key) or value.get(key.upper()) if isinstance(value, dict) else None
    if isinstance(value, tuple):  # a family's remedies: (action, remedy)
        value = value[1]
    return str(value) if value else None


def _chinese(char: str) -> bool:
    # FaultDiag's tool.chinese_check: CJK ideographs, CJK punctuation, full-width forms
    return "\u4e00" <= char <= "\u9fa5" or "\u3000" <= char <= "\u303f" or "\uff00" <= char <= "\uffef"


def clean(text: str, zh: bool = False) -> str:
    """Text FaultDiag accepts on one line: printable ASCII (and Chinese in a `_zh` field), the
    typographic marks we write turned into ASCII, anything else dropped, spaces collapsed."""
    text = text.translate(_ASCII)
    kept = "".join(c for c in text if c in LINE_CHARS or (zh and _chinese(c)))
    return re.sub(r" {2,}", " ", kept).strip()


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 3].rstrip() + "..."


def _lines(text: str, zh: bool = False) -> list[str]:
    """A suggestion as a list of lines of at most 200 characters (broken at spaces, and inside a
    run of Chinese, which has none)."""
    return textwrap.wrap(clean(text, zh), 200, break_long_words=True) or ["-"]


def _code_id(*parts: str) -> str:
    raw = "_".join(parts)
    return "".join(c if c in CODE_CHARS else "-" for c in raw)[:50]


def code_entry_id(code: Code) -> str:
    return _code_id("LLMDD", f"{code.value & 0xFFFFFFFF:08X}")


def rule_entry_id(rule: Rule) -> str:
    return _code_id("LLMDD", rule.id)


def family_entry_id(family: Family, code: str) -> str:
    return _code_id("LLMDD_NB", family.id, code)


def _code_keywords(code: Code) -> list[list[str]]:
    """Keyword groups that find a code in a plog, an application log or a traceback."""
    value = code.value & 0xFFFFFFFF
    groups = [[str(value)], [f"0x{value:08X}"], [f"0x{value:08x}"], [f"ret = {value:08x}"], [f"ret={value:08x}"]]
    groups += [[f"LLMStatusCode.{name}"] for name in dict.fromkeys((code.python_name or code.name, code.name))]
    if code.standalone_text and code.plog_text:
        groups.append([code.plog_text])
    return [[clean(k) for k in g] for g in groups]


def _api_spellings(rules: RuleSet) -> dict[str, list[str]]:
    """Canonical API -> its spellings as written in apis.yaml (letter case kept)."""
    paths = [p for p in rules.sources if p.name == "apis.yaml"]
    data: Any = read_yaml(paths[-1]) if paths else {}
    out: dict[str, list[str]] = {}
    for name, entry in ((data or {}).get("apis") or {}).items():
        spellings = [name] + [str(s) for s in (entry or {}).get("spellings") or []]
        out[name] = list(dict.fromkeys(s for s in spellings if " " not in s or len(s) > 12))
    return out


def _family_examples(rules: RuleSet) -> dict[str, list[str]]:
    paths = [p for p in rules.sources if p.name == "neighbours.yaml"]
    data: Any = read_yaml(paths[-1]) if paths else {}
    raw = data.get("examples") if isinstance(data, dict) else None
    return {str(k): list((v or {}).get("match") or []) for k, v in (raw or {}).items() if isinstance(v, dict)}


def export_faultdiag(rules: RuleSet, chinese_rules: RuleSet | None = None) -> dict[str, dict[str, Any]]:
    """The FaultDiag custom entities of a rule set, in a stable order; their Chinese text from
    `chinese_rules`, the same set loaded in Chinese (English where it is not given)."""
    catalog = rules.catalog
    zh_codes = {c.value: c for c in chinese_rules.catalog.codes} if chinese_rules else {}
    zh_rules = chinese_rules.by_id if chinese_rules else {}
    zh_families = {f.id: f for f in chinese_rules.neighbours.families} if chinese_rules else {}
    codes = [c for c in catalog.codes if not c.generic]
    by_value = {c.value & 0xFFFFFFFF: c for c in codes}
    out: dict[str, dict[str, Any]] = {}
    context = sorted((r for r in rules.rules if not r.default), key=lambda r: r.id)
    for code in sorted(codes, key=lambda c: c.value & 0xFFFFFFFF):
        out[code_entry_id(code)] = _code_entity(code, [r for r in context if r.codes and code.value & 0xFFFFFFFF
                                                       in r.codes], zh_codes.get(code.value))
    spellings = _api_spellings(rules)
    for rule in context:
        out[rule_entry_id(rule)] = _rule_entity(rule, [by_value[v] for v in sorted(rule.codes or ()) if v in by_value],
                                                spellings, zh_rules.get(rule.id))
    examples = _family_examples(rules)
    names = {n: c for c in codes for n in c.all_names}
    for family in rules.neighbours.families:
        for printed in sorted(set(family.codes) | set(family.remedies)):
            out[family_entry_id(family, printed)] = _family_entity(family, printed, examples.get(family.id, []),
                                                                   rules, context, names, zh_families.get(family.id))
    if len(out) > MAX_ENTRIES:
        raise ValueError(f"{len(out)} FaultDiag entries: more than the {MAX_ENTRIES} one file may hold")
    return out


def _entity(place: tuple[str, str, str], cause: tuple[str, str], description: tuple[str, str],
            suggestion: tuple[str, str], source_file: str, keywords: list[list[str]],
            chain: list[str] | None = None, case: str | None = None) -> dict[str, Any]:
    entity: dict[str, Any] = {
        "attribute.class": place[0], "attribute.component": place[1], "attribute.module": place[2],
        "attribute.cause_zh": _cut(clean(cause[1], zh=True), 200) or _cut(clean(cause[0]), 200),
        "attribute.cause_en": _cut(clean(cause[0]), 200),
        "attribute.description_zh": _cut(clean(description[1], zh=True), 2000),
        "attribute.description_en": _cut(clean(description[0]), 2000),
        "attribute.suggestion_zh": _lines(suggestion[1], zh=True),
        "attribute.suggestion_en": _lines(suggestion[0]),
    }
    if case:
        entity["attribute.error_case"] = [_cut(clean(case), 200)]
    if chain:
        entity["rule"] = [{"dst_code": dst} for dst in chain]
    entity["source_file"] = source_file
    entity["regex.in"] = [g for g in keywords if all(g)]
    return entity


def _recoverable(code: Code) -> tuple[str, str]:
    if code.recoverable is None:
        return "not stated in the official docs", "官方文档未说明"
    return ("recoverable", "可恢复") if code.recoverable else ("not recoverable", "不可恢复")


def _code_entity(code: Code, context: list[Rule], twin: Code | None) -> dict[str, Any]:
    value = code.value & 0xFFFFFFFF
    meaning_zh = chinese(twin, "meaning")
    solution_zh = chinese(twin, "solution")
    rec_en, rec_zh = _recoverable(code)
    python = f", Python {code.python_name}" if code.python_name else ""
    printed = f" The plog prints ErrorNo: {value}({code.plog_text})." if code.plog_text else ""
    description_en = (f"LLM-DataDist status code {code.name} (0x{value:08X}, {value}{python}): {code.meaning}."
                      f"{printed} {rec_en.capitalize()}.")
    description_zh = (f"LLM-DataDist状态码 {code.name}（0x{value:08X}，{value}）：{meaning_zh or code.meaning}。"
                      f"{rec_zh}。")
    suggestion_en = code.solution or code.meaning
    if context:
        suggestion_en += " Depends on the API: " + " ".join(
            f"[{r.description or r.id}] {r.action}: {r.remedy}" for r in context)
    return _entity(("Software", "CANN", "LLM-DataDist"), (f"{code.name}: {code.meaning}",
                                                           f"{code.name}: {meaning_zh}" if meaning_zh else ""),
                   (description_en, description_zh), (suggestion_en, solution_zh or suggestion_en), SOURCE_FILES,
                   _code_keywords(code), case=code.examples[0] if code.examples else None)


def _rule_entity(rule: Rule, codes: list[Code], spellings: dict[str, list[str]], twin: Rule | None) -> dict[str, Any]:
    names = ", ".join(c.name for c in codes) or "any LLM-DataDist code"
    when = []
    if rule.apis:
        when.append("returned by " + " or ".join(sorted(rule.apis)))
    if rule.not_apis:
        when.append("returned by an API other than " + " and ".join(sorted(rule.not_apis)))
    if rule.in_cluster_results:
        when.append("in the per-cluster results of LinkLlmClusters/UnlinkLlmClusters")
    if rule.nearby is not None:
        when.append("with a related error logged just before it")
    description = f"{rule.description or rule.id} Codes: {names}; " + ("; ".join(when) or "any context") + "."
    keywords: list[list[str]] = []
    for code in codes:
        for group in _code_keywords(code):
            if rule.apis:  # AND: the API's name and the code on one line
                keywords += [[spelling, *group] for api in sorted(rule.apis) for spelling in spellings.get(api, [api])]
            elif rule.in_cluster_results:
                keywords.append(["rets", *group])
            else:
                keywords.append(group)
    remedy_zh = chinese(twin, "remedy")
    cause_zh = chinese(twin, "description")
    return _entity(("Software", "CANN", "LLM-DataDist"), (rule.description or rule.id, cause_zh or ""),
                   (description, cause_zh or description),
                   (f"{rule.action}: {rule.remedy}", f"{rule.action}: {remedy_zh}" if remedy_zh else
                    f"{rule.action}: {rule.remedy}"), SOURCE_FILES,
                   list({tuple(g): g for g in keywords}.values())[:100],
                   case=rule.examples_match[0].splitlines()[-1] if rule.examples_match else None)


def _family_entity(family: Family, code: str, examples: list[str], rules: RuleSet, context: list[Rule],
                   names: dict[str, Code], twin: Family | None) -> dict[str, Any]:
    meaning = family.meaning(code)
    action, remedy = family.remedy_for(code)
    mine = [ex for ex in examples if (family.id, code) in {(f, c) for f, c, _ in rules.neighbours.find(ex, [family])}]
    chain = [rule_entry_id(r) for r in context if r.nearby is not None and any(r.nearby.search(ex) for ex in mine)]
    chain += [code_entry_id(names[n]) for n in re.findall(r"\bLLM_[A-Z_]+\b", remedy) if n in names]
    meaning_zh = chinese(twin, "codes", code)
    remedy_zh = chinese(twin, "remedies", code) or chinese(twin, "remedy")
    # aliases are kept in lower case; FaultDiag's keywords are matched as written: as printed too
    aliases = list(dict.fromkeys(form for text, target in family.aliases.items() if target == code
                                 for form in (text[:1].upper() + text[1:], text, text.upper())))
    keywords = [[alias] for alias in aliases] if aliases else [[code]]
    if family.id == "hccl" and code.isdigit():  # a bare small number says nothing: HCCL prints it so
        keywords = [[f"hcclRet -> {code}"], [f"hcclRet = {code}"], ["HCCL", f"ret[{code}]"]]
    elif family.id == "socket" and code.isdigit() and not aliases:
        keywords = [["errno", code]]
    elif family.id == "driver":
        keywords = [["DRV(", alias] for alias in aliases] or [["DRV(", code]]
    source = APP_SOURCE_FILES if family.level == 3 else "CANN_Plog|CANN_Device"
    return _entity(FAMILY_PLACES.get(family.id, ("Software", "CANN", family.id)),
                   (f"{family.name} {code}: {meaning}", f"{family.name} {code}: {meaning_zh}" if meaning_zh else ""),
                   (f"{family.name} {code} ({meaning}), logged under an LLM-DataDist transfer: a likely cause of the "
                    f"LLM-DataDist failure logged just after it.",
                    f"{family.name} {code}（{meaning_zh or meaning}）：LLM-DataDist传输失败的可能原因。"),
                   (f"{action}: {remedy}", f"{action}: {remedy_zh}" if remedy_zh else f"{action}: {remedy}"),
                   source, keywords, list(dict.fromkeys(chain)), case=mine[0] if mine else None)


def write_faultdiag(rules: RuleSet, path: Path | str, chinese_rules: RuleSet | None = None) -> int:
    """Write the export as UTF-8 JSON (what `ascend-fd entity --update` reads); the entry count."""
    import json

    entities = export_faultdiag(rules, chinese_rules)
    text = json.dumps(entities, ensure_ascii=False, indent=2) + "\n"
    Path(path).write_text(text, encoding="utf-8")
    return len(entities)
