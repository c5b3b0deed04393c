"""Code detection: the literal prefilter and the full patterns run on candidate lines only.

Stage: detect (what a code looks like). The scanner finds candidate lines
with cheap literals; `CodeMatcher.find` then runs the exact patterns on one decoded line.
Each pattern is anchored on a literal so the regex engine never scans with an alternation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..core.headers import without_possessives
from ..core.records import CodeHit
from ..knowledge.catalog import Catalog
from ..knowledge.compiled import LazyPattern

GENERIC_FAILED = 0xFFFFFFFF
FORMS = ("hex", "decimal", "name", "repr", "text", "generic")  # the compiled core names a form by its index

_Match = tuple[int, int, int, str]  # (code value, start, end, form)

# Literals that every code form contains at least one of. Digits and `0x` are case-free except
# the `x`, so `0x5010`/`0X5010` cover hex in any case.
# `5010b0`/`5010B0` also cover xLLM's hex without `0x` (`ret = 5010b009`); `ffffffff` its LLM_FAILED.
BASE_LITERALS = (b"5010b0", b"5010B0", b"134327", b"LLM_", b"4294967295", b"ffffffff", b"FFFFFFFF",
                 # LLM_FAILED as int32 -1, only right after a code word's `=`, `:` or `is`.
                 b"= -1", b"=-1", b": -1", b":-1", b"is -1")

_HEX = re.compile(r"(?<![0-9A-Za-z_])0[xX]5010[bB]0([0-9A-Fa-f]{2})(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)?(?![0-9A-Za-z_])")
# xLLM prints results as eight hex digits without `0x` (`ret = 5010b009`, `k_ret: ffffffff`);
# they count only in a code context, like decimals.
_BARE_HEX = re.compile(r"(?<![0-9A-Za-z_])5010[bB]0([0-9A-Fa-f]{2})(?![0-9A-Za-z_])")
_BARE_FAILED = re.compile(r"(?<![0-9A-Za-z_])(?:ffffffff|FFFFFFFF)(?![0-9A-Za-z_])")
_DECIMAL = re.compile(r"(?<![0-9A-Za-z_.\-])(134327\d{4})(?![0-9]|\.\d)")
_FAILED_DECIMAL = re.compile(r"(?<![0-9A-Za-z_.\-])(?:4294967295|-1)(?![0-9]|\.\d)")
_NAME = re.compile(r"(?<![0-9A-Za-z_])LLM_[A-Z0-9_]+(?![0-9A-Za-z_])")
# A decimal counts only after a word that says "this is a status": ErrorNo:, ret =, status,
# error code is, code=, an enum repr `<LLMStatusCode.X: N>`, or inside a result list `rets=[...`.
# Both are `$`-anchored and compiled REVERSE (the `regex` module's `(?r)`), so they are tried from
# the hit backwards and fail at once when the text just before the hit is not a code context. Lazy:
# only the Python engine searches them, and importing `regex` is ~7 ms of a scan's start-up.
_DECIMAL_CONTEXT_TEXT = (
    r"(?ix)(?:"
    r"(?:error\s*no|errno|err(?:or)?[\s_]*code|status(?:[\s_]*code)?|ret(?:s|code|urn(?:ed|s)?)?"
    r"|results?|code|rc|err(?:or)?|failed\s+with|got)"
    r"\s*(?:is\b|==?|:|->)?\s*[\[(]?\s*"
    r"|LLMStatusCode\.\w+\s*:\s*"
    r"|(?:ret|result|status|code)\w*\s*[=:]\s*[\[(][^\])]*"
    r")$"
)
_DECIMAL_CONTEXT = LazyPattern("(?r)" + _DECIMAL_CONTEXT_TEXT)
# A hit inside a per-cluster result list: `rets=[`, `results: [`, `link_rets = (` still open.
_IN_RESULT_LIST_TEXT = r"(?i)(?:ret|result|status|code)\w*\s*[=:]\s*[\[(][^\])]*$"
_IN_RESULT_LIST = LazyPattern("(?r)" + _IN_RESULT_LIST_TEXT)


class CodeMatcher:
    """Finds every LLM-DataDist code on a line, one hit per code value."""

    def __init__(self, catalog: Catalog):
        self.catalog = catalog
        self.names = {n: c.value & 0xFFFFFFFF for c in catalog.codes for n in c.all_names}
        # The generic code's text ("failed") says nothing on its own; its number is checked below.
        texts = {c.plog_text: c.value & 0xFFFFFFFF for c in catalog.codes if c.plog_text and not c.generic}
        # Both compiled on first use (~10 ms): under the compiled core, most runs never search in Python.
        self._errno_text = LazyPattern(
            r"ErrorNo\s*+:\s*+-?\d*+\s*+\((" + "|".join(map(re.escape, sorted(texts, key=len, reverse=True))) + r")\)",
            "re") if texts else None
        self._text_values = texts
        standalone = [c.plog_text for c in catalog.codes if c.standalone_text and c.plog_text]
        self._standalone = LazyPattern("|".join(map(re.escape, standalone)), "re") if standalone else None
        # The alternation is slow; run it only when a line holds the longest word of some text.
        self._standalone_anchors = tuple({max(t.split(), key=len) for t in standalone})
        self.literals = BASE_LITERALS + tuple(t.encode() for t in standalone)
        self._standalone_values = [(t, texts[t]) for t in standalone]
        self._core: Any = None

    def core_spec(self) -> tuple[Any, ...]:
        """What the compiled core's `Codes` is built from: the catalog's names, the family, the plog
        texts, and the context patterns in Rust's syntax (possessive repeats made greedy: each is
        followed by what its class cannot match; `x` dropped: the patterns hold no blank or `#`)."""
        errno = without_possessives(self._errno_text.pattern) if self._errno_text is not None else None
        family = (self.catalog.family_base, self.catalog.family_size)
        return (sorted(self.names.items()), family, errno, sorted(self._text_values.items()),
                self._standalone_values, _DECIMAL_CONTEXT_TEXT.replace("(?ix)", "(?i)", 1),
                _IN_RESULT_LIST_TEXT)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_core"] = None  # the core's forms do not pickle: a worker's engine hands over its own
        return state

    def use_core(self, codes: Any) -> None:
        """Find the hits of plain ASCII lines with the compiled core's `Codes` (the same hits)."""
        self._core = codes

    @property
    def core(self) -> Any:
        """The compiled core's `Codes` these hits come from on plain ASCII lines, or None."""
        return self._core

    def find(self, line: str) -> list[CodeHit]:
        """All code hits on one line, deduplicated by value (first occurrence wins)."""
        if self._core is not None:
            found = self._core.find(line)
            if found is not None:
                return [CodeHit(v, s, e, FORMS[f], inside) for v, s, e, f, inside in found]
        hits: dict[int, CodeHit] = {}
        lists = _may_hold_result_list(line)
        for value, start, end, form in self._matches(line):
            if value not in hits:
                hits[value] = CodeHit(value, start, end, form, lists and _in_result_list(line, start))
        return sorted(hits.values(), key=lambda h: h.start)

    def _matches(self, line: str) -> Iterator[_Match]:
        """Every code form in a fixed order (hex, decimal, name, text, generic); each form is
        tried only when its literal is on the line."""
        if "0x5010" in line or "0X5010" in line:
            for m in _HEX.finditer(line):
                yield 0x5010B000 + int(m.group(1), 16), m.start(), m.end(), "hex"
        # bare hex only when some `5010b0` is not the tail of a `0x5010b0` (one C count each)
        if line.count("5010b0") + line.count("5010B0") > line.count("x5010") + line.count("X5010"):
            for m in _BARE_HEX.finditer(line):
                if _has_code_context(line, m.start()):
                    yield 0x5010B000 + int(m.group(1), 16), m.start(), m.end(), "hex"
        if "134327" in line:
            yield from self._decimals(line)
        if "LLM_" in line:
            yield from self._names(line)
        yield from self._texts(line)
        bare = "ffffffff" in line or "FFFFFFFF" in line
        if "4294967295" in line or "-1" in line or bare:
            yield from _generic_failed(line, bare)

    def _decimals(self, line: str) -> Iterator[_Match]:
        for m in _DECIMAL.finditer(line):
            value = int(m.group(1))
            if self.catalog.in_family(value) and _has_code_context(line, m.start()):
                yield value, m.start(), m.end(), "repr" if _is_repr(line, m.start()) else "decimal"

    def _names(self, line: str) -> Iterator[_Match]:
        for m in _NAME.finditer(line):
            value = self.names.get(m.group(0))
            if value is not None:
                in_repr = line.startswith("<LLMStatusCode.", max(0, m.start() - 15))
                yield value, m.start(), m.end(), "repr" if in_repr else "name"

    def _texts(self, line: str) -> Iterator[_Match]:
        if self._errno_text is not None and "ErrorNo" in line:
            for m in self._errno_text.finditer(line):
                yield self._text_values[m.group(1)], m.start(1), m.end(1), "text"
        if self._standalone is not None and any(a in line for a in self._standalone_anchors):
            for m in self._standalone.finditer(line):
                yield self._text_values[m.group(0)], m.start(), m.end(), "text"


def _generic_failed(line: str, bare: bool) -> Iterator[_Match]:
    """The first LLM_FAILED number (4294967295, -1, or xLLM's `ffffffff` when `bare`) that
    follows a code word."""
    for pattern in (_FAILED_DECIMAL, _BARE_FAILED) if bare else (_FAILED_DECIMAL,):
        for m in pattern.finditer(line):
            if _has_code_context(line, m.start()):
                yield GENERIC_FAILED, m.start(), m.end(), "generic"
                return


def _has_code_context(line: str, start: int) -> bool:
    return _DECIMAL_CONTEXT.search(line, max(0, start - 64), start) is not None


def _is_repr(line: str, start: int) -> bool:
    return line.rfind("<LLMStatusCode.", max(0, start - 64), start) != -1


_LIST_OPENER = re.compile(r"[=:] ?[\[(]")


def _may_hold_result_list(line: str) -> bool:
    """Cheap test before the regex: a result list needs `=[`, `= [`, `: [`, `=(`, ... somewhere."""
    return _LIST_OPENER.search(line) is not None


def _in_result_list(line: str, start: int) -> bool:
    """True when the hit sits inside an unclosed `[`/`(` list opened by `rets=`/`results:`."""
    return _IN_RESULT_LIST.search(line, max(0, start - 400), start) is not None
