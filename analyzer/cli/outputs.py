"""Which report goes where: `-o FILE` (repeatable), `-o FORMAT:FILE`, `--format`.

- No `-o`: one report on standard output, in `--format` (default text).
- One `-o FILE` with `--format X`: X into FILE, as it always was.
- Otherwise each `-o` takes its format from a `FORMAT:` prefix, else from its name
  (`findings.sarif`, `report.xml`, `summary.md`), else from `--format`; `-` is standard output.
"""

from __future__ import annotations

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
        elif len(outputs) == 1 and fmt:
            resolved.append(Output(fmt, raw))
        else:
            guess = format_for(raw) or fmt or ("text" if raw == "-" or len(outputs) == 1 else None)
            if guess is None:
                raise click.UsageError(f"-o {raw}: cannot tell the format from the name; write it as "
                                       f"FORMAT:{raw} (formats: {', '.join(sorted(WRITERS))})")
            resolved.append(Output(guess, raw))
    paths = [o.path for o in resolved]
    twice = sorted({p for p in paths if paths.count(p) > 1})
    if twice:
        raise click.UsageError(f"-o {twice[0]}: given more than once")
    return resolved
