"""Report writers: one module per format, each a `Writer` (below), listed in `WRITERS`.

Writers read an `Analysis`: its findings, its input stats and its `report.Summary` (the typed
contract with triage; attributes, never dict keys). To add a format (SARIF, JUnit, HTML, ...):
one module here with `name`, `suffix` and `write`, one line in `WRITERS`, and its golden report
(`make golden`); the golden test fails for a registered format without one.
"""

from __future__ import annotations

import io
from typing import IO, TYPE_CHECKING, Any, Protocol, TextIO, cast

from . import csv, github, gitlab, html, json_report, jsonl, junit, markdown, parquet, sarif, text

if TYPE_CHECKING:
    from .. import Analysis


class Writer(Protocol):
    """One report format. A module satisfies it with module-level `name`, `suffix` and `write`."""

    name: str  # the --format value
    suffix: str  # file suffix of a saved report, e.g. ".md" (the golden report is sample_logs + suffix)

    def write(self, analysis: Analysis, out: TextIO) -> None:
        """Write the whole report to `out` (streaming, where the report can be large)."""
        ...


WRITERS: dict[str, Writer] = {
    "text": text,
    "markdown": markdown,
    "json": json_report,
    "jsonl": jsonl,
    "sarif": sarif,
    "junit": junit,
    "github": github,
    "github-summary": github.step_summary,
    "gitlab": gitlab,
    "csv": csv,
    "html": html,
    # A binary format (`binary = True`): its write() takes a binary stream; the CLI opens it so.
    "parquet": cast(Writer, parquet),
}

# File names whose format is not a writer's own suffix (`-o findings.sarif.json`, `-o report.junit`).
EXTRA_SUFFIXES = {".sarif.json": "sarif", ".junit": "junit", ".markdown": "markdown", ".log": "text",
                  ".htm": "html", ".xhtml": "html"}


def format_for(path: str) -> str | None:
    """The format a file name asks for by its ending (the longest matching suffix), else None."""
    lower = path.lower()
    endings = {w.suffix: fmt for fmt, w in WRITERS.items()} | EXTRA_SUFFIXES
    matches = [s for s in endings if lower.endswith(s) and len(lower) > len(s)]
    return endings[max(matches, key=len)] if matches else None


def is_binary(fmt: str) -> bool:
    """Whether the format is written as bytes (Parquet), not text."""
    return bool(getattr(WRITERS[fmt], "binary", False))


def write_report(fmt: str, analysis: Analysis, out: IO[Any]) -> None:
    """Write the report in `fmt` to `out` (a binary stream for a binary format)."""
    WRITERS[fmt].write(analysis, cast(TextIO, out))  # binary formats take `out` as it is (BinaryIO)


def render_report(fmt: str, analysis: Analysis) -> str:
    """The report in `fmt`, as a string (a binary format: its decoded content, its `dump()`)."""
    if is_binary(fmt):
        data = io.BytesIO()
        write_report(fmt, analysis, data)
        return str(getattr(WRITERS[fmt], "dump")(data.getvalue()))  # noqa: B009 - only binary writers have it
    buf = io.StringIO()
    write_report(fmt, analysis, buf)
    return buf.getvalue()
