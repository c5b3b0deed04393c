"""Which report goes where: `-o FILE` (repeatable), `-o FORMAT:FILE`, `--format`.

- No `-o`: one report on standard output, in `--format` (default text).
- One `-o FILE` with `--format X`: X into FILE, as it always was.
- Otherwise each `-o` takes its format from a `FORMAT:` prefix, else from its name
  (`findings.sarif`, `report.xml`, `summary.md`), else from `--format`; `-` is standard output.
- A name whose ending names no format (`report.htm`, `r.xyz`) or an unknown `FORMAT:` prefix is a
  usage error naming the formats, unless `--format` says what to write: a report is never guessed
  into text under a name a browser or a CI system would read as something else.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

import click

from ..writers import WRITERS, format_for


@dataclass(frozen=True)
class Output:
    fmt: str
    path: str  # "-" for standard output


def resolve_outputs(fmt: str | None, outputs: tuple[str, ...] | list[str]) -> list[Output]:
    """The reports to write, or a usage error naming the output whose format is unclear."""
    if not outputs:
        return [Output(fmt or "text", "-")]
    resolved: list[Output] = []
    for raw in outputs:
        prefix, sep, rest = raw.partition(":")
        if sep and prefix in WRITERS and rest:
            resolved.append(Output(prefix, rest))
            continue
        if sep and prefix in WRITERS:
            raise click.UsageError(f"-o {raw}: no file after the format; write {prefix}:FILE ({prefix}:- for "
                                   "standard output)")
        _check_name(raw, fmt, prefix if sep and rest else None)
        if len(outputs) == 1 and fmt:
            resolved.append(Output(fmt, raw))
        else:
            guess = format_for(raw) or fmt or ("text" if raw == "-" or len(outputs) == 1 else None)
            if guess is None:
                raise click.UsageError(f"-o {raw}: cannot tell the format from the name; write it as "
                                       f"FORMAT:{raw} (formats: {', '.join(sorted(WRITERS))})")
            resolved.append(Output(guess, raw))
    for out in resolved:  # never another format under a name a browser renders: markup from a log would run
        ending = os.path.splitext(out.path)[1].lower()
        if ending in _HTML and out.fmt != "html":
            raise click.UsageError(f"-o {out.path}: an {ending} name gets the HTML report, not {out.fmt}")
    # the same file however it is spelled (`r.json`, `./r.json`, an absolute path): one would overwrite the other
    paths = [o.path if o.path == "-" else os.path.realpath(o.path) for o in resolved]
    twice = [o.path for o, p in zip(resolved, paths, strict=True) if paths.count(p) > 1]
    if twice:
        raise click.UsageError(f"-o {twice[-1]}: given more than once" + (
            f" (as {twice[0]})" if twice[0] != twice[-1] else ""))
    return resolved


_FORMAT_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_-]+")  # two letters or more: not a drive letter
_HTML = (".html", ".htm", ".xhtml")


def _check_name(raw: str, fmt: str | None, prefix: str | None) -> None:
    """A usage error for an output whose prefix or name asks for a format ddtriage does not write."""
    known = ", ".join(sorted(WRITERS))
    if prefix is not None and _FORMAT_WORD.fullmatch(prefix):
        raise click.UsageError(f"-o {raw}: unknown format {prefix!r} (formats: {known}); "
                               f"a file name with a colon is written ./{raw}")
    ending = os.path.splitext(os.path.basename(raw))[1].lower()
    if ending and raw != "-" and format_for(raw) is None and not fmt:
        raise click.UsageError(f"-o {raw}: cannot tell the format from the name ({ending!r} names none); write "
                               f"it as FORMAT:{raw}, or give --format (formats: {known})")
