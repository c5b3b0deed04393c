"""Report writers: one module per format, each a `Writer` (below), listed in `WRITERS`.

Writers read an `Analysis`: its findings, its input stats and its `report.Summary` (the typed
contract with triage; attributes, never dict keys). To add a format (SARIF, JUnit, HTML, ...):
one module here with `name`, `suffix` and `write`, one line in `WRITERS`, and its golden report
(`make golden`); the golden test fails for a registered format without one.
"""

from __future__ import annotations

import io
from typing import TYPE_CHECKING, Protocol, TextIO

from . import json_report, markdown, text

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
}


def write_report(fmt: str, analysis: Analysis, out: TextIO) -> None:
    """Write the report in `fmt` to `out`."""
    WRITERS[fmt].write(analysis, out)


def render_report(fmt: str, analysis: Analysis) -> str:
    """The report in `fmt`, as a string."""
    buf = io.StringIO()
    write_report(fmt, analysis, buf)
    return buf.getvalue()
