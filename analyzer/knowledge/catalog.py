"""The code catalog and the API spelling table, loaded from the rules YAML and validated.

Stage: knowledge (codes and APIs). Everything the scanner and the rule engine know about codes and APIs comes from
here, so a user changes behaviour by editing YAML, not Python. The built-in YAML ships inside the
package (`analyzer/data/`, package data), so an installed ddtriage finds it wherever it lives.
"""

from __future__ import annotations

import copy
import marshal
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.errors import RuleError
from . import diskcache

ACTIONS = (
    "relink", "retry", "retry-later", "check-network", "check-link-state", "check-cache",
    "fix-params", "free-memory", "unlink-first", "enable-option", "cleanup-prompt",
    "collect-logs", "none",
)



def builtin_rules_dir() -> Path:
    """The built-in rules directory inside the installed package.

    The loader globs and opens files, so it needs a real directory; setuptools installs package
    data as plain files (wheel and editable installs alike), beside the modules (the folder
    `importlib.resources.files("analyzer")` names, without importing importlib.resources)."""
    data = Path(__file__).parent.parent / "data"
    if not data.is_dir():  # a zipped install: not supported, say so instead of failing later
        raise RuleError(f"{data}: built-in rules are not on the file system; install ddtriage unzipped")
    return data


BUILTIN_RULES_DIR = builtin_rules_dir()


@dataclass(frozen=True, slots=True)
class Code:
    """One catalog entry."""

    name: str
    value: int
    python_name: str | None
    aliases: tuple[str, ...]
    plog_text: str | None
    standalone_text: bool
    public: bool
    recoverable: bool | None
    generic: bool
    by_name_only: bool
    action: str
    meaning: str
    solution: str
    examples: tuple[str, ...]
    since: str | None = None  # the CANN release that introduced the code, where that is public
    docs: tuple[tuple[str, bool | None, str], ...] = ()  # (binding, recoverable, what its doc says) where they differ
    docs_follow: str | None = None  # the binding whose doc the catalog's `recoverable` follows

    @property
    def hex(self) -> str:
        return format_code(self.value)

    @property
    def all_names(self) -> tuple[str, ...]:
        names = [self.name, *self.aliases]
        if self.python_name:
            names.append(self.python_name)
        return tuple(names)


def format_code(value: int) -> str:
    """`0x5010B009` form of a code value (negative int32 values wrap to 32 bits)."""
    return f"0x{value & 0xFFFFFFFF:08X}"


# libyaml's loader when PyYAML was built with it: the same data, ~10x faster than the pure-Python
# one (~3 ms instead of ~30 ms for the built-in rules, measured). PyYAML itself (~20 ms to import)
# is imported only for a file content that the disk cache (`diskcache`) does not hold.
_LOADER: Any = None  # set on first use (tests set it to yaml.SafeLoader)


def _yaml() -> Any:
    """PyYAML, imported on first use, and its loader."""
    global _LOADER
    import yaml

    if _LOADER is None:
        _LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml
MAX_YAML_BYTES = 4 << 20  # a rules file is a few KiB; this refuses a "bomb" before it is parsed
MAX_YAML_DEPTH = 64  # rules nest five levels; the composer recurses per level


class _UnsafeYaml(Exception):
    """A YAML construct a rules file may not use (alias, tag, deep nesting)."""

    def __init__(self, problem: str, line: int) -> None:
        super().__init__(problem)
        self.problem, self.line = problem, line


class _InvalidYaml(Exception):
    """What PyYAML said of a file it could not parse (yaml.YAMLError, named without PyYAML imported)."""

    def __init__(self, problem: str, line: int | None) -> None:
        super().__init__(problem)
        self.problem, self.line = problem, line


def _check_events(text: str) -> None:
    """Refuse aliases (a 569-byte "billion laughs" expands to gigabytes), explicit tags and nesting
    deeper than MAX_YAML_DEPTH (a RecursionError in the composer), from the parser's events, before
    anything is composed (the events come from libyaml too, when it is there)."""
    yaml = _yaml()
    depth = 0
    for event in yaml.parse(text, Loader=_LOADER):
        line = event.start_mark.line + 1 if event.start_mark is not None else 0
        if isinstance(event, yaml.AliasEvent):
            raise _UnsafeYaml("aliases (*name) are not allowed in rules files", line)
        tag = getattr(event, "tag", None)
        if tag not in (None, "!"):
            raise _UnsafeYaml(f"tags ({tag}) are not allowed in rules files", line)
        if isinstance(event, yaml.CollectionStartEvent):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                raise _UnsafeYaml(f"nested deeper than {MAX_YAML_DEPTH} levels", line)
        elif isinstance(event, yaml.CollectionEndEvent):
            depth -= 1


# The parsed YAML of each distinct file content, as marshal bytes: a process that loads the rules
# again (each scan of a test run, a watch, a merge after a scan) parses the same text once, and a
# process that finds it in the disk cache (`diskcache`, kept from an earlier run) not even once.
# Keyed by the bytes, so a changed file is parsed again; each caller gets its own copy (unmarshalled,
# ~4x faster than a deepcopy). Data marshal cannot hold (a YAML date) is kept as it is and copied.
_PARSED: dict[bytes, bytes | _Kept] = {}
PARSED_FILES = 64


class _Kept:
    """Parsed YAML that marshal cannot hold, kept in memory only."""

    def __init__(self, value: object) -> None:
        self.value = value


def _parse(data: bytes) -> bytes | _Kept:
    """The parsed YAML of a file's bytes (UTF-8, checked by `_check_events`), as `_PARSED` holds it."""
    cached = diskcache.get("parsed", data)
    if cached is not None:
        try:
            marshal.loads(cached)
            return cached
        except (EOFError, ValueError, TypeError):  # a damaged entry: parsed again (and rewritten)
            pass
    text = data.decode("utf-8")
    yaml = _yaml()
    try:
        _check_events(text)
        parsed = yaml.load(text, Loader=_LOADER)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise _InvalidYaml(problem, mark.line + 1 if mark is not None else None) from None
    except (ValueError, OverflowError) as exc:  # a value YAML cannot build: `2025-02-30`, a date past year 9999
        raise _InvalidYaml(f"a value that cannot be read: {exc}", None) from None
    try:
        held = marshal.dumps(parsed)
    except ValueError:
        return _Kept(parsed)
    diskcache.put("parsed", data, held)  # only once the content passed the checks and parsed
    return held


def read_yaml(path: Path) -> object:
    """Load a YAML file, turning every failure into a RuleError that names the file. Only a
    regular file of at most MAX_YAML_BYTES is read (a FIFO would block); see `_check_events`."""
    try:
        # O_NONBLOCK: opening a FIFO would wait for a writer; a regular file ignores the flag.
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb", buffering=0) as raw:
            st = os.fstat(raw.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise RuleError(f"{path}: not a regular file")
            data = raw.read(MAX_YAML_BYTES + 1)
        if len(data) > MAX_YAML_BYTES:
            raise RuleError(f"{path}: larger than {MAX_YAML_BYTES >> 20} MiB; not a rules file")
        held = _PARSED.get(data)
        if held is None:
            held = _parse(data)
            if len(_PARSED) >= PARSED_FILES:
                _PARSED.clear()
            _PARSED[data] = held
        # the caller's own: loaders may change what they are given
        return marshal.loads(held) if isinstance(held, bytes) else copy.deepcopy(held.value)
    except OSError as exc:
        raise RuleError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise RuleError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except _UnsafeYaml as exc:
        raise RuleError(f"{path}: line {exc.line}: unsafe YAML: {exc.problem}") from None
    except _InvalidYaml as exc:
        where = f" line {exc.line}:" if exc.line is not None else ""
        raise RuleError(f"{path}:{where} invalid YAML: {exc.problem}") from None
    except RecursionError:  # nesting in flow style that the composer never sees (`[[[[...`)
        raise RuleError(f"{path}: invalid YAML: nested too deeply") from None


def _require(cond: bool, where: str, reason: str) -> None:
    if not cond:
        raise RuleError(f"{where}: {reason}")


def _mapping(raw: object, where: str, reason: str) -> dict[str, Any]:
    """`raw` as a mapping, or a RuleError naming `where`."""
    if not isinstance(raw, dict):
        raise RuleError(f"{where}: {reason}")
    return raw


def _strings(raw: object, where: str, reason: str) -> list[str]:
    """`raw` as a list of strings (None counts as empty), or a RuleError naming `where`."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not all(isinstance(item, str) for item in raw):
        raise RuleError(f"{where}: {reason}")
    return raw


_CODE_FIELDS = {"name", "python_name", "aliases", "value", "plog_text", "standalone_text", "public",
                "recoverable", "generic", "by_name_only", "action", "meaning", "solution", "examples",
                "meaning_zh", "solution_zh", "since", "docs", "docs_follow"}
LANGS = ("en", "zh")  # the languages of every human text in the YAML: `field` (English) and `field_zh`


def localized(entry: dict[str, Any], key: str, lang: str, missing: list[str] | None = None,
              where: str = "") -> Any:
    """`entry[key]` in `lang`: `key_zh` for Chinese, else the English `key` (also when the entry
    has no Chinese). Either one absent is noted in `missing` (`where: lacks key_zh`), whatever
    `lang` is: `ddtriage rules check` fails a built-in entry that lacks a language."""
    english, chinese = entry.get(key), entry.get(f"{key}_zh")
    if missing is not None:
        missing.extend(f"{where}: lacks `{k}`" for k, v in ((key, english), (f"{key}_zh", chinese))
                       if v is None or v == "" or v == {})
    return chinese if lang == "zh" and chinese not in (None, "", {}) else english


def _int_value(raw: object, where: str) -> int:
    if isinstance(raw, bool) or not isinstance(raw, (int, str)):
        raise RuleError(f"{where}: value must be an integer or hex string, got {raw!r}")
    try:
        return int(raw, 0) if isinstance(raw, str) else raw
    except ValueError:
        raise RuleError(f"{where}: value {raw!r} is not a number") from None


class Catalog:
    """Codes by value and by every name they are printed under."""

    def __init__(self, codes: list[Code], family_base: int, family_size: int, unknown_remedy: str = ""):
        self.codes = codes
        self.unknown_remedy = unknown_remedy  # the remedy of a family code not listed
        self.family_base = family_base
        self.family_size = family_size
        self.by_value = {c.value & 0xFFFFFFFF: c for c in codes}
        self.by_name = {n: c for c in codes for n in c.all_names}

    def in_family(self, value: int) -> bool:
        return self.family_base <= value < self.family_base + self.family_size

    def get(self, value: int) -> Code | None:
        return self.by_value.get(value & 0xFFFFFFFF)

    def is_generic(self, code: str) -> bool:
        """Whether a code printed as in reports (`0x5010B009`) is a generic one of the catalog."""
        found = self.get(int(code, 16))
        return found.generic if found else False

    def lookup(self, text: str) -> tuple[int, Code | None] | None:
        """Resolve user input (hex, decimal or any name) to (value, code or None)."""
        token = text.strip()
        upper = token.upper().removeprefix("LLMSTATUSCODE.")
        for named in self.codes:
            if upper in named.all_names:
                return named.value & 0xFFFFFFFF, named
        try:
            # hex without `0x` (xLLM's `5010b007`, `ffffffff`, `0007BCAD`: any hex with a letter in it)
            # as well as 0x-hex and decimal (digits only stay decimal: 507053 is that number)
            bare = re.fullmatch(r"(?i)(?=[0-9]*[a-f])[0-9a-f]{1,8}", token)
            value = int(token, 16) if bare else int(token, 0)
        except ValueError:
            return None
        value &= 0xFFFFFFFF
        code = self.get(value)
        if code is None and not self.in_family(value):
            return None
        return value, code

    @classmethod
    def load(cls, path: Path, lang: str = "en", missing: list[str] | None = None) -> Catalog:
        """Read and validate catalog.yaml; every problem is a RuleError naming file and code. Human
        text is taken in `lang`; an entry without it is noted in `missing`."""
        where = str(path)
        data = _mapping(read_yaml(path), where, "expected a mapping with a `codes` list")
        _require(isinstance(data.get("codes"), list), where, "expected a mapping with a `codes` list")
        family = _mapping(data.get("family") or {}, where, "`family` must be a mapping")
        base = _int_value(family.get("base", 0x5010B000), f"{where}: family.base")
        size = _int_value(family.get("size", 256), f"{where}: family.size")
        codes: list[Code] = []
        seen_names: set[str] = set()
        seen_values: set[int] = set()
        for index, raw in enumerate(data["codes"]):
            code = _parse_code(raw, f"{where}: code #{index + 1}", where, lang, missing)
            here = f"{where}: code {code.name}"
            for n in code.all_names:
                _require(n not in seen_names, here, f"name {n} is defined twice")
                seen_names.add(n)
            _require(code.value & 0xFFFFFFFF not in seen_values, here, f"value {code.hex} is defined twice")
            seen_values.add(code.value & 0xFFFFFFFF)
            codes.append(code)
        unknown = _mapping(data.get("unknown") or {}, where, "`unknown` must be a mapping with `remedy`")
        remedy = localized(unknown, "remedy", lang, missing, f"{where}: unknown") or ""
        return cls(codes, base, size, " ".join(str(remedy).split()))


def _parse_code(raw: object, here: str, where: str, lang: str = "en", missing: list[str] | None = None) -> Code:
    """One catalog entry, validated."""
    entry = _mapping(raw, here, "each code must be a mapping")
    name = entry.get("name")
    if not isinstance(name, str) or not name.startswith("LLM_"):
        raise RuleError(f"{here}: `name` must be an LLM_* identifier")
    here = f"{where}: code {name}"
    unknown = sorted(set(entry) - _CODE_FIELDS)
    _require(not unknown, here, f"unknown field(s): {', '.join(unknown)}")
    value = _int_value(entry.get("value"), f"{here}: value")
    action = entry.get("action", "collect-logs")
    _require(action in ACTIONS, here, f"action {action!r} is not one of: {', '.join(ACTIONS)}")
    rec = entry.get("recoverable")
    _require(rec is None or isinstance(rec, bool), here, "`recoverable` must be true, false or null")
    aliases = _strings(entry.get("aliases"), here, "`aliases` must be a list of names")
    examples = _strings(entry.get("examples"), here, "`examples` must be a non-empty list of lines")
    _require(bool(examples), here, "`examples` must be a non-empty list of lines")
    return Code(
        name=name, value=value, python_name=entry.get("python_name"),
        aliases=tuple(aliases), plog_text=entry.get("plog_text"),
        standalone_text=bool(entry.get("standalone_text", False)),
        public=bool(entry.get("public", False)), recoverable=rec,
        generic=bool(entry.get("generic", False)),
        by_name_only=bool(entry.get("by_name_only", False)), action=action,
        meaning=str(localized(entry, "meaning", lang, missing, here) or name),
        solution=str(localized(entry, "solution", lang, missing, here) or ""),
        examples=tuple(examples), since=_since(entry.get("since"), here),
        docs=_docs(entry.get("docs"), here, lang, missing), docs_follow=_follow(entry, here),
    )


def _since(raw: object, here: str) -> str | None:
    """`since:` (a CANN version such as 8.2.RC1), validated by the version comparator's parser."""
    if raw is None:
        return None
    from .versions import parse_version

    _require(isinstance(raw, str) and parse_version(raw) is not None, here,
             f"`since` must be a CANN version such as 8.2.RC1, got {raw!r}")
    return str(raw)


BINDINGS = ("cpp", "python")  # the two documented bindings of LLM-DataDist


def _docs(raw: object, here: str, lang: str, missing: list[str] | None) -> tuple[tuple[str, bool | None, str], ...]:
    """`docs:` where the C++ and Python documentation disagree: per binding, its recoverable and
    what its page says (`says`, `says_zh`)."""
    if raw is None:
        return ()
    entries = _mapping(raw, here, "`docs` must map a binding (cpp, python) to {recoverable, says}")
    out = []
    for binding, doc in entries.items():
        _require(binding in BINDINGS, here, f"docs: binding {binding!r} is not one of {', '.join(BINDINGS)}")
        doc = _mapping(doc, f"{here}: docs.{binding}", "must be a mapping with `says`")
        rec = doc.get("recoverable")
        _require(rec is None or isinstance(rec, bool), f"{here}: docs.{binding}", "`recoverable` must be true/false")
        says = localized(doc, "says", lang, missing, f"{here}: docs.{binding}")
        _require(isinstance(says, str) and bool(says), f"{here}: docs.{binding}", "`says` must be text")
        out.append((str(binding), rec, str(says)))
    return tuple(out)


def _follow(entry: dict[str, Any], here: str) -> str | None:
    follow = entry.get("docs_follow")
    _require(follow is None or (follow in BINDINGS and bool(entry.get("docs"))), here,
             "`docs_follow` must name a binding of `docs` (cpp or python)")
    return follow


class ApiTable:
    """Canonical API names and every spelling that maps to them."""

    def __init__(self, spellings: dict[str, str], tags: dict[str, str], groups: dict[str, tuple[str, ...]],
                 canonical: tuple[str, ...], shared: frozenset[str] = frozenset()):
        self.shared = shared  # names other CANN components use too (see apis.yaml)
        self.spellings = spellings  # lower-case spelling -> canonical (free text too)
        self.tags = tags  # lower-case spelling -> canonical (func fields, tags, frames only)
        self.groups = groups
        self.canonical = canonical

    def resolve_token(self, token: str) -> str | None:
        """A func field, tag or frame name: reduce `A.b`/`A::b` to `b`, strip `_`, look up."""
        token = token.strip()
        candidates = [token]
        for sep in ("::", "."):
            if sep in token:
                candidates.append(token.rsplit(sep, 1)[1])
        for cand in candidates:
            key = cand.strip("_").lower()
            if key in self.spellings:
                return self.spellings[key]
            if key in self.tags:
                return self.tags[key]
        return None

    def expand(self, names: list[str], where: str) -> frozenset[str]:
        """Rule `apis:` entries: canonical names or `@group`, validated."""
        out: set[str] = set()
        lower = {c.lower(): c for c in self.canonical}
        for name in names:
            if not isinstance(name, str):
                raise RuleError(f"{where}: API entries must be strings, got {name!r}")
            if name.startswith("@"):
                group = self.groups.get(name[1:])
                if group is None:
                    raise RuleError(f"{where}: unknown API group {name!r} "
                                    f"(known: {', '.join('@' + g for g in sorted(self.groups))})")
                out.update(group)
                continue
            canon = lower.get(name.lower()) or self.resolve_token(name)
            if canon is None:
                raise RuleError(f"{where}: unknown API {name!r}")
            out.add(canon)
        return frozenset(out)

    @classmethod
    def load(cls, path: Path) -> ApiTable:
        """Read and validate apis.yaml; a spelling may belong to one API only."""
        where = str(path)
        data = _mapping(read_yaml(path), where, "expected a mapping with an `apis` mapping")
        apis = _mapping(data.get("apis"), where, "expected a mapping with an `apis` mapping")
        spellings: dict[str, str] = {}
        tags: dict[str, str] = {}
        canonical = tuple(apis)
        shared = frozenset(c for c, e in apis.items() if isinstance(e, dict) and e.get("shared"))
        for canon, raw in apis.items():
            here = f"{where}: api {canon}"
            entry = _mapping(raw or {}, here, "must be a mapping with `spellings`/`tags`")
            unknown = sorted(set(entry) - {"spellings", "tags", "shared"})
            _require(not unknown, here, f"unknown field(s): {', '.join(unknown)}")
            # The canonical name is a free-text spelling unless it is a generic word listed
            # under `tags` (Link, Finalize).
            lowered_tags = {str(t).lower() for t in entry.get("tags") or []}
            for kind, table in (("spellings", spellings), ("tags", tags)):
                values = entry.get(kind) or []
                _require(isinstance(values, list), here, f"`{kind}` must be a list")
                names = [canon] if kind == "spellings" and canon.lower() not in lowered_tags else []
                for spelling in names + values:
                    _require(isinstance(spelling, str) and bool(spelling.strip()), here,
                             f"`{kind}` entries must be non-empty strings")
                    key = spelling.lower()
                    other = spellings.get(key) or tags.get(key)
                    _require(other in (None, canon), here, f"spelling {spelling!r} already belongs to {other}")
                    table[key] = canon
        groups: dict[str, tuple[str, ...]] = {}
        for gname, members in _mapping(data.get("groups") or {}, where, "`groups` must be a mapping").items():
            here = f"{where}: group {gname}"
            _require(isinstance(members, list), here, "must be a list of API names")
            for m in members:
                _require(m in canonical, here, f"unknown API {m!r}")
            groups[gname] = tuple(members)
        return cls(spellings, tags, groups, canonical, shared)
