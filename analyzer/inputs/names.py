"""Names: file and archive-member names made fit for report lines.

Stage: inputs (naming). Every name a report shows (a path, `ARCHIVE!MEMBER`) goes through
`printable` first; archive members are named the same however the archive was made.
"""

from __future__ import annotations

import os
import re

# A byte that was not UTF-8 (kept by Python as a surrogate, e.g. a GBK name from a Chinese-locale
# host) and a control character: each shown as `\xNN`, so two names stay two names (a name of
# U+FFFD or `?` for each merged files whose bytes differ) and `show`/`-C` can find the file again.
_ESCAPED = re.compile("[\x00-\x1f\x7f\udc80-\udcff]")
_SURROGATE = re.compile("[\ud800-\udfff]")  # any other lone surrogate: no byte to name
_ESCAPE = re.compile(r"\\x([0-9a-f]{2})")


def printable(name: str, limit: int = 300) -> str:
    r"""A file or member name fit for a report line: bytes that are not UTF-8 (kept by Python as
    surrogates, e.g. GBK names from a Chinese-locale host) and control characters shown as `\xNN`
    (`lat\xe9.log`, `tab\x09here.log`), clipped. `real_name` reads such a name back."""
    if len(name) <= limit and name.isascii() and name.isprintable():
        return name  # the usual name, as it is (a folder of 10,000 logs asks 20,000 times)
    clean = _SURROGATE.sub("\ufffd", _ESCAPED.sub(_escape, name))
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def _escape(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code - 0xDC00 if code >= 0xDC80 else code:02x}"


def real_name(shown: str) -> str:
    r"""The path a name `printable` showed stands for: itself when that exists, else with each `\xNN`
    read back (a byte of 0x80 or more as the surrogate Python keeps a non-UTF-8 byte as)."""
    if "\\x" not in shown or os.path.lexists(shown):
        return shown
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16) + (0xDC00 if int(m.group(1), 16) >= 0x80 else 0)), shown)


def clean_member(member: str) -> str:
    """`./root/x.log` -> `root/x.log`: the same member however the archive was made."""
    while member.startswith("./"):
        member = member[2:]
    return member.lstrip("/")
