"""The regular expressions of the tables, each compiled on its first use (issue #17, start-up).

Stage: knowledge. A table holds dozens of patterns (link facts, proofs of recovery, neighbour
families, `nearby` rules), and a run uses few of them, often none: `explain`, a scan whose lines
name no fact, every line the compiled core answers. So a loader checks that its table's texts
compile once (a bad one is the same RuleError, at load, as ever), remembers on disk that these
texts do (`diskcache`, kind `proven`), and from then on hands out `LazyPattern`s that compile
when first searched. A process that meets texts not proven compiles them all at load, as before.
"""

from __future__ import annotations

import marshal
from typing import Any

from . import diskcache


class LazyPattern:
    """A regular expression (`re` or `regex`) compiled on first use; it answers as the compiled
    pattern does (`search`, `match`, `pattern`, ...). It pickles as its text: a worker compiles
    its own when it needs it."""

    __slots__ = ("pattern", "engine", "_compiled")

    def __init__(self, pattern: str, engine: str = "regex", compiled: Any = None) -> None:
        self.pattern, self.engine, self._compiled = pattern, engine, compiled

    def compiled(self) -> Any:
        found = self._compiled
        if found is None:
            found = self._compiled = _module(self.engine).compile(self.pattern)
        return found

    def search(self, string: Any, *args: Any, **kwargs: Any) -> Any:
        return (self._compiled or self.compiled()).search(string, *args, **kwargs)

    def match(self, string: Any, *args: Any, **kwargs: Any) -> Any:
        return (self._compiled or self.compiled()).match(string, *args, **kwargs)

    def fullmatch(self, string: Any, *args: Any, **kwargs: Any) -> Any:
        return (self._compiled or self.compiled()).fullmatch(string, *args, **kwargs)

    def __getattr__(self, name: str) -> Any:  # groupindex, flags, finditer, sub, ...
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.compiled(), name)

    def __reduce__(self) -> tuple[type[LazyPattern], tuple[str, str]]:
        return (LazyPattern, (self.pattern, self.engine))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, LazyPattern):
            return NotImplemented
        return (self.pattern, self.engine) == (other.pattern, other.engine)

    def __hash__(self) -> int:
        return hash((self.pattern, self.engine))

    def __repr__(self) -> str:
        return f"{self.engine}.compile({self.pattern!r})"


def _module(engine: str) -> Any:
    if engine == "re":
        import re

        return re
    import regex

    return regex


def proven(texts: list[str], engine: str = "regex") -> bool:
    """Whether an earlier load found that every one of `texts` compiles under `engine` (the same
    engine version, the same Python): then they need not be compiled now."""
    return bool(texts) and diskcache.get(f"proven-{engine}", marshal.dumps(texts)) is not None


def remember(texts: list[str], engine: str = "regex") -> None:
    """Note that every one of `texts` compiled under `engine` (call it once they all have)."""
    if texts:
        diskcache.put(f"proven-{engine}", marshal.dumps(texts), b"")


def pattern(text: str, engine: str = "regex", lazy: bool = False) -> LazyPattern:
    """`text` as a LazyPattern, compiled now unless `lazy` (its table's texts are `proven`); a text
    that does not compile raises the engine's error (`re.error`, `regex.error`) for the caller to word."""
    return LazyPattern(text, engine, None if lazy else _module(engine).compile(text))
