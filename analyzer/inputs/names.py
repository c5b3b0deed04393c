"""Names: file and archive-member names made fit for report lines.

Stage: inputs (naming). Every name a report shows (a path, `ARCHIVE!MEMBER`) goes through
`printable` first; archive members are named the same however the archive was made.
"""

from __future__ import annotations


def printable(name: str, limit: int = 300) -> str:
    """A file or member name fit for a report line: bytes that are not UTF-8 (kept by Python as
    surrogates, e.g. GBK names from a Chinese-locale host) shown as U+FFFD, control characters
    as `?`, clipped."""
    if len(name) <= limit and name.isascii() and name.isprintable():
        return name  # the usual name, as it is (a folder of 10,000 logs asks 20,000 times)
    name = name.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    clean = "".join("?" if ord(ch) < 32 or ord(ch) == 127 else ch for ch in name)
    return clean if len(clean) <= limit else clean[: limit - 1] + "…"


def clean_member(member: str) -> str:
    """`./root/x.log` -> `root/x.log`: the same member however the archive was made."""
    while member.startswith("./"):
        member = member[2:]
    return member.lstrip("/")
