"""Report writers: one module per format, each with `render(analysis) -> str` (and, where the
report can be large, `write(analysis, out)` that streams it).

The registry is a plain dict so adding a format (SARIF, JUnit, HTML) is one module and one line.
"""

from __future__ import annotations

from typing import Protocol, TextIO

from . import json_report, markdown, text


class Writer(Protocol):
    def render(self, analysis) -> str: ...


def write_report(fmt: str, analysis, out: TextIO) -> None:
    """Write the report in `fmt` to `out`, streaming when the writer can."""
    writer = WRITERS[fmt]
    if hasattr(writer, "write"):
        writer.write(analysis, out)
    else:
        out.write(writer.render(analysis))


WRITERS: dict[str, Writer] = {
    "text": text,
    "markdown": markdown,
    "json": json_report,
}
