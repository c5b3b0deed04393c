"""Report writers: one module per format, each a `Writer` (below), listed in `WRITERS`.

Writers read an `Analysis`: its findings, its input stats and its `report.Summary` (the typed
contract with triage; attributes, never dict keys). To add a format (SARIF, JUnit, HTML, ...):
one module here with `name`, `suffix` and `write`, one line in `WRITERS`, and its golden report
(`make golden`); the golden test fails for a registered format without one.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Protocol, TextIO

from . import github, gitlab, json_report, jsonl, junit, markdown, sarif, text

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
}

# File names whose format is not a writer's own suffix (`-o findings.sarif.json`, `-o report.junit`).
EXTRA_SUFFIXES = {".sarif.json": "sarif", ".junit": "junit", ".markdown": "markdown", ".log": "text"}


def format_for(path: str) -> str | None:
    """The format a file name asks for by its ending (the longest matching suffix), else None."""
    lower = path.lower()
    endings = {w.suffix: fmt for fmt, w in WRITERS.items()} | EXTRA_SUFFIXES
    matches = [s for s in endings if lower.endswith(s) and len(lower) > len(s)]
    return endings[max(matches, key=len)] if matches else None


def write_report(fmt: str, analysis: Analysis, out: TextIO) -> None:
    """Write the report in `fmt` to `out`."""
    WRITERS[fmt].write(analysis, out)


def render_report(fmt: str, analysis: Analysis) -> str:
    """The report in `fmt`, as a string."""
    buf = io.StringIO()
    write_report(fmt, analysis, buf)
    return buf.getvalue()
