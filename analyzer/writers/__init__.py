"""Report writers: one module per format, each with `render(analysis) -> str`.

The registry is a plain dict so adding a format (SARIF, JUnit, HTML) is one module and one line.
"""

from __future__ import annotations

from typing import Protocol

from . import json_report, markdown, text


class Writer(Protocol):
    def render(self, analysis) -> str: ...


WRITERS: dict[str, Writer] = {
    "text": text,
    "markdown": markdown,
    "json": json_report,
}
