"""Output hygiene: names and log text made safe for the place they are written to.

Stage: writers (shared). Everything a report or a warning shows may come from an untrusted bundle:
file and archive-member names, log lines, skip reasons that quote them. One function per target:

- `terminal`: text reports and stderr. C0 and C1 controls, DEL, bidi overrides and every other
  character that is not printable are shown as escapes (`ESC` -> `\\x1b`, U+202E -> `\\u202e`);
  a byte that was not UTF-8 (kept by Python as a lone surrogate) as `\\xNN`.
- `markdown` / `markdown_code`: a table cell or list item, and a code span, where a name cannot
  open HTML, a link, a new row or a new line.
- `html`: `terminal`, then HTML-escaped.
- `json_text`: a JSON document made safe to print: lone surrogates, C1 controls, DEL and bidi
  characters as `\\uXXXX` escapes, so any name encodes and the JSON stays valid.
"""

from __future__ import annotations

import html as _html
import re

_NOT_PRINTABLE = re.compile(r"[^\t -~]")  # fast test: anything outside printable ASCII (and tab)
# In JSON (already escaped for C0 by the encoder): what a terminal could still act on, or what
# cannot be encoded as UTF-8 (lone surrogates from names that are not UTF-8).
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# A Markdown cell: backslashes and pipes escaped, brackets escaped (no link, image or reference),
# `<` as an entity (no HTML, comment or autolink), backticks as quotes (no code span).
_MARKDOWN = str.maketrans({"\\": "\\\\", "|": "\\|", "`": "'", "<": "&lt;", "[": "\\[", "]": "\\]"})


def _escape_char(ch: str) -> str:
    code = ord(ch)
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def terminal(text: object) -> str:
    """`text` with every character a terminal could act on shown as an escape."""
    value = "" if text is None else str(text)
    if not _NOT_PRINTABLE.search(value):
        return value
    return "".join(ch if ch.isprintable() or ch == "\t" else _escape_char(ch) for ch in value)


def markdown(text: object) -> str:
    """`text` for a Markdown table cell or list item: no line break, pipe, HTML tag or comment,
    autolink, link, image, link reference definition or code span can come out of it. Every
    bracket is escaped, not only a `](`: brackets from two names, or a name and the writer's own
    text, could pair up; every `<` is an entity, so no `<!--`, `<http://…>` or tag opens."""
    return terminal(text).translate(_MARKDOWN)


def markdown_code(text: object) -> str:
    """`text` inside a Markdown code span (in a table): it cannot close the span or the cell (a
    code span shows everything else as it is: no link, HTML or autolink is read inside it)."""
    return terminal(text).replace("`", "'").replace("|", "\\|")


def html(text: object) -> str:
    """`text` for HTML content or an attribute value."""
    return _html.escape(terminal(text), quote=True)


def json_text(document: str) -> str:
    """A JSON document (from `json.dumps(..., ensure_ascii=False)`) made safe to print and to encode
    as UTF-8: still valid JSON, and it decodes to the same strings."""
    if document.isascii() and "\x7f" not in document:
        return document  # the usual line: the encoder escaped C0 already (~3 us a finding saved)
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", document)
