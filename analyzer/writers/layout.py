"""Width-aware pieces of the text report: tables whose cells are never cut across lines, and
sections bounded to a number of lines.

A cell (a code name, an API, a rule id, `file:line`, a fingerprint) is an identifier: it stays whole
on one line. A table whose rows fit the width is laid out in aligned columns; one that does not
keeps as many leading columns aligned as fit and wraps the other cells, whole, onto indented
lines below (as `ls` and `git` change layout with the width). Only a cell wider than a whole line
is cut, with `…`.
"""

from __future__ import annotations

import re
import textwrap
import unicodedata
from collections.abc import Sequence

from ..knowledge.messages import current, t

GAP = "  "
INDENT = "    "
MORE_HINT = "(see --format json, or --full)"
NBSP = "\ue000"  # joins words that wrap() keeps on one line (`hccl 9`); printed as a space


def cols(text: str) -> int:
    """The columns `text` takes on a terminal: CJK (east-asian wide and full-width) take two."""
    if text.isascii():
        return len(text)
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 0 if unicodedata.combining(c) else 1
               for c in text)


def ljust(text: str, width: int) -> str:
    return text + " " * max(0, width - cols(text))


def rjust(text: str, width: int) -> str:
    return " " * max(0, width - cols(text)) + text


def clip(text: str, width: int) -> str:
    """`text` cut to `width` columns with `…` when wider."""
    if cols(text) <= width:
        return text
    out, used = "", 0
    for c in text:
        w = cols(c)
        if used + w > width - 1:
            break
        out, used = out + c, used + w
    return out + "…"


# A unit of CJK prose that a line may break after: one wide character and the punctuation after it
# (a line never starts with `，` or `）`), or a run of other non-space characters (a word, a code);
# an opening bracket goes with what follows it (a line never ends with `（`).
_WIDE_CHARS = "\u2e80-\u9fff\uf900-\ufaff\uff00-\uffef\u3000-\u303f"
_CLOSERS = "，。；：、）」』》】〉！？"
_OPENERS = "（「『《【〈"
_UNITS = re.compile(rf"\s+|[{_OPENERS}]*(?:[{_WIDE_CHARS}][{_CLOSERS}%]*|[^\s{_WIDE_CHARS}]+[{_CLOSERS}]*)")


_WIDE = re.compile(f"[{_WIDE_CHARS}]")


def wrap(text: str, width: int, indent: str = "", rest: str | None = None) -> list[str]:
    """Prose wrapped at spaces, never inside a word; a word longer than the line is cut with `…`.
    Chinese may break between any two characters (measured in terminal columns)."""
    rest = indent if rest is None else rest
    if text.isascii() or not _WIDE.search(text):
        lines = textwrap.wrap(text, width, initial_indent=indent, subsequent_indent=rest,
                              break_long_words=False, break_on_hyphens=False) or [indent]
        return [clip(line, width).replace(NBSP, " ") for line in lines]
    lead = text[:len(text) - len(text.lstrip())]  # ` 1. ...`: the first line keeps its leading spaces
    out, line = [], indent + lead
    for unit in _UNITS.findall(text.strip()):
        if unit.isspace():  # kept as written (a row's aligned columns), dropped where a line breaks
            if line.strip():
                line += " " if "\n" in unit else unit
            continue
        if cols(line) + cols(unit) > width and line.strip():
            out.append(line.rstrip())
            line = rest
        line += unit
    out.append(line.rstrip() if line.strip() else indent)
    return [clip(x, width).replace(NBSP, " ") for x in out]


def table(rows: Sequence[Sequence[str]], width: int, header: Sequence[str] | None = None,
          right: Sequence[int] = (), indent: str = "") -> tuple[list[str], list[list[str]]]:
    """(header lines, one list of lines per row) for `rows` of cells at `width` columns. `right`:
    the columns aligned right (counts). The last column is never padded."""
    if not rows:
        return [], []
    n = max(len(r) for r in rows)
    cells = [list(r) + [""] * (n - len(r)) for r in rows]
    head = list(header or []) + [""] * (n - len(header or []))
    widths = [max([cols(c[i]) for c in cells] + ([cols(head[i])] if header else [])) for i in range(n)]
    room = width - len(indent)

    def span(k: int) -> int:  # width of the first k columns, aligned
        return sum(widths[:k]) + len(GAP) * (k - 1)

    aligned = n
    while aligned > 1 and span(aligned) > room:
        aligned -= 1

    def line(values: Sequence[str], k: int) -> str:
        parts = []
        for i in range(k):
            v = values[i]
            last = i == k - 1 and k == n
            parts.append(rjust(v, widths[i]) if i in right else (v if last else ljust(v, widths[i])))
        return clip((indent + GAP.join(parts)).rstrip(), width)

    head_lines = [line(head, aligned)] if header else []
    # Cells that do not fit go below, under the second column when the first is narrow (a count).
    cont = indent + (" " * (widths[0] + len(GAP)) if n > 1 and widths[0] <= 8 else INDENT)
    out = []
    for c in cells:
        lines = [line(c, aligned)]
        rest = [v for v in c[aligned:] if v]
        current = cont
        for v in rest:
            v = clip(v, width - len(cont))
            candidate = current + (GAP if current != cont else "") + v
            if cols(candidate) > width and current != cont:
                lines.append(current)
                candidate = cont + v
            current = candidate
        if current != cont:
            lines.append(current)
        out.append(lines)
    return head_lines, out


def bounded(blocks: Sequence[Sequence[str]], budget: int | None, total: int | None = None,
            what: str = "more", indent: str = "") -> list[str]:
    """Row blocks in order while they fit in `budget` lines (the last of which is kept for the
    `… N more` line), then `… N more (see --format json, or --full)`, N counting the rows left out
    (`total`: how many rows there are in all, when more than the blocks given). `budget` None: all.
    The first block is always shown."""
    total = len(blocks) if total is None else total
    out: list[str] = []
    shown = 0
    for block in blocks:
        left_out = total - shown - 1
        room = None if budget is None else budget - (1 if left_out > 0 else 0)
        if shown and room is not None and len(out) + len(block) > room:
            break
        out += block
        shown += 1
    if total > shown:
        if current() == "en":
            out.append(f"{indent}… {total - shown:,} {what} {MORE_HINT}")
        else:
            out.append(indent + t("more", n=f"{total - shown:,}", what=t(_WHAT.get(what, "more_items"))))
    return out


# what `bounded` counts, as its callers name it in English -> its entry in messages.yaml
_WHAT = {"more rows": "more_rows", "more bursts": "more_bursts", "more groups of bursts": "more_groups",
         "more incidents": "more_incidents", "more nodes": "more_nodes", "more bundles": "more_bundles"}
