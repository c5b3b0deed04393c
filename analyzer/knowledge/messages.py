"""The words of ddtriage's own text (section headings, notes, sentences, error messages) in English
and Chinese: one table (`analyzer/data/messages.yaml`), looked up through `t`.

Stage: knowledge (UI text). The language of a run is chosen once (`--lang`, the config file, else
the locale: `LC_ALL`, `LC_MESSAGES`, `LANG`, zh for `zh_*`) and set with `language(...)` around the
code that writes; `t(key, **values)` then gives the text in it. JSON keys and ids never change.
"""

from __future__ import annotations

import contextvars
import functools
import os
import string
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from .catalog import BUILTIN_RULES_DIR, LANGS, read_yaml

_CURRENT: contextvars.ContextVar[str] = contextvars.ContextVar("ddtriage_lang", default="en")


def lang_from_env(environ: Mapping[str, str] | None = None) -> str:
    """zh when the locale's language is Chinese (`zh_CN.UTF-8`, `zh_TW`), else en; the first of
    LC_ALL, LC_MESSAGES, LANG that is set decides, as gettext reads them."""
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(name)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


@contextmanager
def language(lang: str) -> Iterator[None]:
    """Within the block, `t` answers in `lang`."""
    token = _CURRENT.set(lang if lang in LANGS else "en")
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> str:
    """The language `t` answers in here."""
    return _CURRENT.get()


@functools.cache
def _table() -> dict[str, dict[str, str]]:
    data = read_yaml(BUILTIN_RULES_DIR / "messages.yaml")
    assert isinstance(data, dict)
    out: dict[str, dict[str, str]] = {}
    for section in ("messages", "actions", "nouns"):
        for key, texts in (data.get(section) or {}).items():
            out[f"{section}.{key}"] = texts
    return out


def t(key: str, lang: str | None = None, **values: Any) -> str:
    """The message `key` (`section.name` of messages.yaml, `messages.` by default) in `lang` (the
    current language by default), its `{placeholders}` filled from `values`."""
    entry = _table()[key if "." in key and key.split(".", 1)[0] in ("actions", "nouns") else f"messages.{key}"]
    text = entry[lang or current()]
    return text.format(**values) if values else text


def action_label(action: str, lang: str | None = None) -> str:
    """The words of an action id (`relink` -> `relink` / `重新建链`); the id for one the table lacks."""
    entry = _table().get(f"actions.{action}")
    return entry[lang or current()] if entry else action


def noun(n: int, word: str, lang: str | None = None) -> str:
    """`3 findings` / `3 条发现`: a count and its noun (nouns.yaml entries give en [one, many] and zh)."""
    entry = _table()[f"nouns.{word}"]
    text = entry[lang or current()]
    if isinstance(text, list):
        return f"{n:,} {text[0] if n == 1 else text[1]}"
    return f"{n:,} {text}"


def check_messages() -> list[str]:
    """Every entry of messages.yaml must have en and zh, with the same placeholders."""
    problems = []
    where = BUILTIN_RULES_DIR / "messages.yaml"
    for key, texts in _table().items():
        if not isinstance(texts, dict) or set(texts) != set(LANGS):
            problems.append(f"{where}: {key}: needs exactly {' and '.join(LANGS)}")
            continue
        fields = [sorted(f for _, f, _, _ in string.Formatter().parse(str(v)) if f) for v in texts.values()]
        if any(f != fields[0] for f in fields):
            problems.append(f"{where}: {key}: en and zh must use the same {{placeholders}}")
    return problems
