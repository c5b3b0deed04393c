"""Remedy rules: load, validate, and pick the most specific rule for a finding.

Stage: knowledge (remedy rules). A rule is data (`analyzer/data/*.yaml`, key `rules:`): which
codes, optionally which APIs (or which not), whether the code sits in a per-cluster result list,
and what nearby text must be present. Every code in the catalog also gets a default rule from its
official solution, so every finding has a rule. Rules from `--rules DIR` override built-in ones with the same id.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import RuleError
from ..core.records import RuleText, RuleTexts
from . import compiled
from .catalog import (
    ACTIONS,
    BINDINGS,
    BUILTIN_RULES_DIR,
    LANGS,
    ApiTable,
    Catalog,
    Code,
    format_code,
    localized,
    read_yaml,
)
from .compiled import LazyPattern
from .envelopes import EnvelopeTable
from .families import NeighbourMatcher
from .linkfacts import LinkFactMatcher
from .recovery import RecoveryTable
from .versions import VersionCondition, Versions

UNKNOWN_RULE_ID = "unknown-code"
_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
_RULE_FIELDS = {"id", "description", "match", "action", "recoverable", "remedy", "references", "examples",
                "description_zh", "remedy_zh", "follows"}
_MATCH_FIELDS = {"codes", "apis", "not_apis", "in_cluster_results", "nearby", "unknown", "versions"}
# The files of a rules folder that are tables, not `rules:` files.
TABLES = ("catalog.yaml", "apis.yaml", "neighbours.yaml", "envelopes.yaml", "linkfacts.yaml", "recovery.yaml",
          "messages.yaml")
# A user's `nearby` regex may backtrack catastrophically: each search gets this long, then the rule
# is reported and disabled for the rest of the run (the `regex` module's `timeout`).
NEARBY_TIMEOUT = 0.5


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    codes: frozenset[int] | None  # None: any code
    unknown: bool  # matches codes the catalog does not know
    apis: frozenset[str] | None
    not_apis: frozenset[str] | None
    in_cluster_results: bool | None
    nearby: LazyPattern | None  # a `regex` pattern, compiled on first use (`compiled`)
    action: str
    recoverable: bool | None
    recoverable_set: bool
    remedy: str
    references: tuple[str, ...]
    examples_match: tuple[str, ...]
    examples_no_match: tuple[str, ...]
    origin: str  # file it came from
    builtin: bool
    default: bool = False
    description: str = ""  # one line: when the rule applies (SARIF/JUnit rule text)
    versions: VersionCondition | None = None  # `match.versions`: e.g. cann ">=8.3.RC1"
    follows: str | None = None  # the binding (cpp, python) whose documentation the rule follows

    @property
    def specificity(self) -> int:
        """More conditions, more specific. A positive API set beats a complement."""
        score = 0 if self.codes is None and not self.unknown else 1
        score += 4 if self.apis else 0
        score += 2 if self.not_apis else 0
        score += 4 if self.in_cluster_results is not None else 0
        score += 3 if self.nearby is not None else 0
        score += 3 if self.versions is not None else 0
        return score

    def matches(self, value: int, known: bool, api: str | None, in_cluster: bool,
                nearby_text: Callable[[], str], versions: Versions = (), fast: Any = None) -> bool:
        """Whether the rule applies; `fast`: the compiled core's matcher of `nearby` (it answers
        True/False, or None for text it leaves to the timed Python path)."""
        if self.unknown and known:
            return False
        if self.codes is not None and value not in self.codes:
            return False
        if self.apis is not None and api not in self.apis:
            return False
        if self.not_apis is not None and api in self.not_apis:
            return False
        if self.in_cluster_results is not None and in_cluster != self.in_cluster_results:
            return False
        if self.versions is not None and not self.versions.holds(dict(versions)):
            return False
        if self.nearby is None:
            return True
        text = nearby_text()
        found = fast.search(text) if fast is not None else None
        return found if found is not None else self.nearby.search(text, timeout=NEARBY_TIMEOUT) is not None


@dataclass(frozen=True, slots=True)
class RuleMatch:
    """The rule that applies to one finding, the catalog entry of its code (None when unknown)
    and the finding's recoverability as resolved from both."""

    rule: Rule
    code: Code | None
    recoverable: bool | None


class RuleSet:
    """The catalog, the API table and every remedy rule, ready to match."""

    def __init__(self, catalog: Catalog, apis: ApiTable, rules: list[Rule], sources: list[Path],
                 neighbours: NeighbourMatcher | None = None, envelopes: EnvelopeTable | None = None,
                 linkfacts: LinkFactMatcher | None = None, recovery: RecoveryTable | None = None,
                 lang: str = "en", untranslated: tuple[str, ...] = ()):
        self.lang = lang  # the language of every human text loaded (remedies, meanings, names)
        self.untranslated = untranslated  # built-in entries without one of their languages (`rules check` fails)
        self.catalog = catalog
        self.apis = apis
        self.neighbours = neighbours or NeighbourMatcher([])
        self.envelopes = envelopes or EnvelopeTable([])
        self.linkfacts = linkfacts or LinkFactMatcher([])
        self.recovery = recovery or RecoveryTable([], [])
        self.rules = rules
        self.sources = sources
        self.by_id = {r.id: r for r in rules}
        # Most specific first; user rules before built-ins at equal specificity; then by id.
        self._ordered = sorted(rules, key=lambda r: (-r.specificity, r.builtin, r.default, r.id))
        self._by_code: dict[int, list[Rule]] = {}
        self._generic = [r for r in self._ordered if r.codes is None]
        self.uses_nearby = any(r.nearby is not None for r in rules)
        self.uses_versions = any(r.versions is not None for r in rules)
        self.disabled: dict[str, str] = {}  # rule id -> why it stopped being tried (a regex timeout)
        self._texts: RuleTexts | None = None
        self._fast: dict[str, Any] = {}  # rule id -> the compiled core's `nearby` matcher (this process only)

    @property
    def texts(self) -> RuleTexts:
        """Each rule's remedy and references, by id: what a report prints for a finding's rule."""
        if self._texts is None:
            self._texts = RuleTexts({r.id: RuleText(r.remedy, r.references) for r in self.rules})
        return self._texts

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_fast"] = {}  # the core's matchers do not pickle: a worker's engine compiles its own
        return state

    def use_core(self, compile_nearby: Callable[[str], Any]) -> list[tuple[str, str]]:
        """Run `nearby` regexes in the compiled core's linear-time engine (`ddtriage_core.Nearby`)
        where they compile there. Returns (origin, note) for each user rule whose regex does not:
        it keeps the timed Python path, with the same answers."""
        notes = []
        for rule in self.rules:
            if rule.nearby is None or rule.id in self._fast:
                continue
            try:
                self._fast[rule.id] = compile_nearby(rule.nearby.pattern)
            except ValueError as exc:
                if not rule.builtin:
                    notes.append((rule.origin, f"rule {rule.id}: `nearby` regex is not portable to the compiled core "
                                               f"({exc}); it runs in the timed Python path"))
        return notes

    def candidates(self, value: int) -> list[Rule]:
        rules = self._by_code.get(value)
        if rules is None:
            rules = [r for r in self._ordered if r.codes is None or value in r.codes]
            self._by_code[value] = rules
        return rules

    def match(self, value: int, api: str | None, in_cluster: bool, nearby_text: Callable[[], str],
              versions: Versions = ()) -> RuleMatch:
        """The most specific rule for a code found with this API context (and the versions its
        process logged before it: `((kind, version), ...)`), and whether the finding is
        recoverable (the rule says so when it sets `recoverable`, else the catalog's code)."""
        code = self.catalog.get(value)
        for rule in self.candidates(value):
            if rule.id in self.disabled:
                continue
            try:
                hit = rule.matches(value, code is not None, api, in_cluster, nearby_text, versions,
                                   self._fast.get(rule.id))
            except TimeoutError:
                self.disabled[rule.id] = (f"rule {rule.id}: `nearby` regex ran over {NEARBY_TIMEOUT:g} s on one "
                                          "finding; rule disabled for this run")
                continue
            if hit:
                recoverable = rule.recoverable if rule.recoverable_set else (code.recoverable if code else None)
                return RuleMatch(rule, code, recoverable)
        raise AssertionError(f"no rule for {format_code(value)}")  # the fallback always matches

    @classmethod
    def load(cls, extra_dirs: list[Path] | tuple[Path, ...] = (), builtin_dir: Path = BUILTIN_RULES_DIR,
             lang: str = "en") -> RuleSet:
        """Load built-in rules, then each extra directory (later ones override earlier ones); human
        text in `lang` (en or zh; an entry without Chinese keeps its English)."""
        if lang not in LANGS:
            raise RuleError(f"language {lang!r} is not one of {', '.join(LANGS)}")
        dirs = [builtin_dir, *map(Path, extra_dirs)]
        missing: list[str] = []
        for d in dirs:
            if not d.is_dir():
                raise RuleError(f"{d}: rules directory does not exist")
        catalog_path = _last_existing(dirs, "catalog.yaml")
        apis_path = _last_existing(dirs, "apis.yaml")
        if catalog_path is None or apis_path is None:
            raise RuleError(f"{builtin_dir}: catalog.yaml and apis.yaml are required")
        catalog = Catalog.load(catalog_path, lang, missing)
        apis = ApiTable.load(apis_path)
        neighbours_path = _last_existing(dirs, "neighbours.yaml")
        neighbours = NeighbourMatcher.load(neighbours_path, lang, missing)
        envelopes_path = _last_existing(dirs, "envelopes.yaml")
        envelopes = EnvelopeTable.load(envelopes_path) if envelopes_path else EnvelopeTable([])
        linkfacts_path = _last_existing(dirs, "linkfacts.yaml")
        linkfacts = LinkFactMatcher.load(linkfacts_path)
        recovery_path = _last_existing(dirs, "recovery.yaml")
        recovery = RecoveryTable.load(recovery_path, catalog, apis)
        rules: dict[str, Rule] = {}
        for code in catalog.codes:
            rule = default_rule(code, catalog_path)
            rules[rule.id] = rule
        rules[UNKNOWN_RULE_ID] = Rule(
            id=UNKNOWN_RULE_ID, codes=None, unknown=True, apis=None, not_apis=None,
            in_cluster_results=None, nearby=None, action="collect-logs", recoverable=None,
            recoverable_set=False,
            remedy=catalog.unknown_remedy,
            references=(), examples_match=("ret = 0x5010B0A3",), examples_no_match=("ret = 0x5010B009",),
            origin=str(catalog_path), builtin=True, default=True,
        )
        tables = (neighbours_path, envelopes_path, linkfacts_path, recovery_path)
        sources = [catalog_path, apis_path] + [p for p in tables if p]
        for index, d in enumerate(dirs):
            for path in sorted(d.glob("*.yaml")) + sorted(d.glob("*.yml")):
                if path.name in TABLES:
                    continue
                sources.append(path)
                for rule in load_rule_file(path, catalog, apis, builtin=index == 0, lang=lang, missing=missing):
                    earlier = rules.get(rule.id)
                    if earlier is not None and earlier.origin == str(path):
                        raise RuleError(f"{path}: rule {rule.id}: id is defined twice in this file")
                    if earlier is not None and not earlier.default and earlier.origin.startswith(str(d) + "/"):
                        raise RuleError(f"{path}: rule {rule.id}: id is also defined in {earlier.origin}")
                    rules[rule.id] = rule  # a later directory overrides an earlier one
        builtin = str(builtin_dir) + "/"
        return cls(catalog, apis, list(rules.values()), sources, neighbours, envelopes, linkfacts, recovery, lang,
                   tuple(m for m in missing if m.startswith(builtin)))


def _last_existing(dirs: list[Path], name: str) -> Path | None:
    found = None
    for d in dirs:
        if (d / name).is_file():
            found = d / name
    return found


def default_rule(code: Code, origin: Path) -> Rule:
    """The rule every code has: its official solution and default action."""
    return Rule(
        id="default-" + code.name.lower().removeprefix("llm_").replace("_", "-"),
        codes=frozenset({code.value & 0xFFFFFFFF}), unknown=False, apis=None, not_apis=None,
        in_cluster_results=None, nearby=None, action=code.action, recoverable=code.recoverable,
        recoverable_set=False, remedy=code.solution, references=("CANN LLM-DataDist error codes",),
        examples_match=code.examples, examples_no_match=(), origin=str(origin), builtin=True, default=True,
        description=code.meaning,
    )


def load_rule_file(path: Path, catalog: Catalog, apis: ApiTable, builtin: bool, lang: str = "en",
                   missing: list[str] | None = None) -> list[Rule]:
    data = read_yaml(path)
    if data is None:
        return []
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise RuleError(f"{path}: expected a mapping with a `rules` list")
    matches = [raw["match"] for raw in data["rules"] if isinstance(raw, dict) and isinstance(raw.get("match"), dict)]
    texts = [m["nearby"] for m in matches if isinstance(m.get("nearby"), str) and m["nearby"]]
    lazy = compiled.proven(texts)
    rules = [_parse_rule(raw, i, path, catalog, apis, builtin, lang, missing, lazy)
             for i, raw in enumerate(data["rules"])]
    if not lazy:
        compiled.remember(texts)
    return rules


def _parse_rule(raw: object, index: int, path: Path, catalog: Catalog, apis: ApiTable, builtin: bool,
                lang: str = "en", missing: list[str] | None = None, lazy: bool = False) -> Rule:
    if not isinstance(raw, dict):
        raise RuleError(f"{path}: rule #{index + 1}: must be a mapping")
    rid = raw.get("id")
    if not isinstance(rid, str) or not _ID.match(rid):
        raise RuleError(f"{path}: rule #{index + 1}: `id` must be lower-case words joined by '-', got {rid!r}")
    where = f"{path}: rule {rid}"

    def fail(reason: str) -> RuleError:
        return RuleError(f"{where}: {reason}")

    unknown = sorted(set(raw) - _RULE_FIELDS)
    if unknown:
        raise fail(f"unknown field(s): {', '.join(unknown)}")
    match = raw.get("match")
    if not isinstance(match, dict):
        raise fail("`match` must be a mapping")
    unknown = sorted(set(match) - _MATCH_FIELDS)
    if unknown:
        raise fail(f"match: unknown field(s): {', '.join(unknown)}")
    codes, unknown_codes = _match_codes(match, catalog, fail)
    api_sets = {key: apis.expand(match[key], f"{where}: match.{key}")
                for key in ("apis", "not_apis") if _non_empty_list(match, key, fail)}
    cluster = match.get("in_cluster_results")
    if cluster is not None and not isinstance(cluster, bool):
        raise fail("match.in_cluster_results: must be true or false")
    nearby = _nearby(match, fail, lazy)
    action = raw.get("action")
    if action not in ACTIONS:
        raise fail(f"action {action!r} is not one of: {', '.join(ACTIONS)}")
    remedy = localized(raw, "remedy", lang, missing, where)
    if not isinstance(remedy, str) or not remedy.strip() or not isinstance(raw.get("remedy"), str):
        raise fail("`remedy` must be non-empty text")
    description = localized(raw, "description", lang, missing if "description" in raw else None, where)
    versions = None
    if "versions" in match:
        try:
            versions = VersionCondition.parse(match["versions"])
        except ValueError as exc:
            raise fail(f"match.versions: {exc}") from None
    follows = raw.get("follows")
    if follows is not None and follows not in BINDINGS:
        raise fail(f"`follows` must be one of {', '.join(BINDINGS)}")
    rec = raw.get("recoverable", None)
    if rec is not None and not isinstance(rec, bool):
        raise fail("`recoverable` must be true or false")
    refs = raw.get("references") or []
    if not isinstance(refs, list) or not all(isinstance(r, str) for r in refs):
        raise fail("`references` must be a list of strings")
    ex_match, ex_no = _examples(raw.get("examples"), fail)
    return Rule(
        id=rid, codes=codes, unknown=unknown_codes, apis=api_sets.get("apis"), not_apis=api_sets.get("not_apis"),
        in_cluster_results=cluster, nearby=nearby, action=action, recoverable=rec,
        recoverable_set="recoverable" in raw, remedy=" ".join(remedy.split()), references=tuple(refs),
        examples_match=tuple(ex_match), examples_no_match=tuple(ex_no), origin=str(path), builtin=builtin,
        description=" ".join(str(description or "").split()), versions=versions, follows=follows,
    )


def _match_codes(match: dict[str, Any], catalog: Catalog,
                 fail: Callable[[str], RuleError]) -> tuple[frozenset[int] | None, bool]:
    """`match.codes` resolved to values, and `match.unknown`."""
    codes = None
    if "codes" in match:
        if not isinstance(match["codes"], list) or not match["codes"]:
            raise fail("match.codes: must be a non-empty list of code names, hex or decimal values")
        values = set()
        for entry in match["codes"]:
            resolved = catalog.lookup(str(entry))
            if resolved is None:
                raise fail(f"match.codes: unknown code {entry!r}")
            values.add(resolved[0])
        codes = frozenset(values)
    unknown_codes = match.get("unknown", False)
    if not isinstance(unknown_codes, bool):
        raise fail("match.unknown: must be true or false")
    if codes is None and not unknown_codes:
        raise fail("match: needs `codes` (or `unknown: true`)")
    return codes, unknown_codes


def _non_empty_list(match: dict[str, Any], key: str, fail: Callable[[str], RuleError]) -> bool:
    """Whether `match` has `key`, which must then be a non-empty list of API names."""
    if key not in match:
        return False
    if not isinstance(match[key], list) or not match[key]:
        raise fail(f"match.{key}: must be a non-empty list of API names or @groups")
    return True


def _nearby(match: dict[str, Any], fail: Callable[[str], RuleError], lazy: bool = False) -> LazyPattern | None:
    """`match.nearby` compiled (on first use when `lazy`: the file's are proven to compile), or None."""
    if "nearby" not in match:
        return None
    if not isinstance(match["nearby"], str) or not match["nearby"]:
        raise fail("match.nearby: must be a regular expression string")
    if lazy:
        return compiled.pattern(match["nearby"], "regex", lazy=True)
    import regex

    try:
        return compiled.pattern(match["nearby"], "regex")
    except (regex.error, ValueError) as exc:
        raise fail(f"match.nearby: invalid regular expression: {exc}") from None


def _examples(examples: object, fail: Callable[[str], RuleError]) -> tuple[list[str], list[str]]:
    """`examples.match` (at least one) and `examples.no_match`, as lists of log text."""
    if not isinstance(examples, dict) or not examples.get("match"):
        raise fail("`examples.match` must list at least one example that the rule matches")
    ex_match = examples.get("match") or []
    ex_no = examples.get("no_match") or []
    for key, lst in (("match", ex_match), ("no_match", ex_no)):
        if not isinstance(lst, list) or not all(isinstance(e, str) for e in lst):
            raise fail(f"examples.{key}: must be a list of log text")
    return ex_match, ex_no
