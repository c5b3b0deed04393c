"""Report writers: one module per format, each a `Writer` (below), listed in `WRITERS`.

Writers read an `Analysis`: its findings, its input stats and its `diagnose.summary.Summary` (the typed
contract with triage; attributes, never dict keys). To add a format (SARIF, JUnit, HTML, ...):
one module here with `name`, `suffix` and `write`, one line in `REGISTRY`, and its golden report
(`make golden`); the golden test fails for a registered format without one.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import IO, TYPE_CHECKING, Any, Protocol, TextIO, cast

if TYPE_CHECKING:
    from ..run.api import Analysis


class Writer(Protocol):
    """One report format. A module satisfies it with module-level `name`, `suffix` and `write`."""

    name: str  # the --format value
    suffix: str  # file suffix of a saved report, e.g. ".md" (the golden report is sample_logs + suffix)

    def write(self, analysis: Analysis, out: TextIO) -> None:
        """Write the whole report to `out` (streaming, where the report can be large)."""
        ...


# format -> (module, attribute, file suffix). Modules are imported on first use: `--help`, a worker
# that scans, and a run that writes JSON import no other writer (the suffixes answer `format_for`;
# tests/writers hold each to its module's own `suffix`).
REGISTRY: dict[str, tuple[str, str | None, str]] = {
    "text": ("text", None, ".txt"),
    "markdown": ("markdown", None, ".md"),
    "json": ("json_report", None, ".json"),
    "jsonl": ("jsonl", None, ".jsonl"),
    "sarif": ("sarif", None, ".sarif"),
    "junit": ("junit", None, ".xml"),
    "github": ("github", None, ".github.txt"),
    "github-summary": ("github", "step_summary", ".summary.md"),
    "gitlab": ("gitlab", None, ".gitlab.json"),
    "csv": ("csv", None, ".csv"),
    "html": ("html", None, ".html"),
    # A binary format (`binary = True`): its write() takes a binary stream; the CLI opens it so.
    "parquet": ("parquet", None, ".parquet"),
}


class _Writers(Mapping[str, Writer]):
    """`WRITERS[fmt]`: the writer of a format, its module imported on first use."""

    def __init__(self) -> None:
        self._loaded: dict[str, Writer] = {}

    def __getitem__(self, fmt: str) -> Writer:
        found = self._loaded.get(fmt)
        if found is None:
            module, attribute, _ = REGISTRY[fmt]
            loaded: Any = import_module(f".{module}", __name__)
            found = self._loaded[fmt] = cast(Writer, getattr(loaded, attribute) if attribute else loaded)
        return found

    def __iter__(self) -> Iterator[str]:
        return iter(REGISTRY)

    def __len__(self) -> int:
        return len(REGISTRY)


WRITERS: Mapping[str, Writer] = _Writers()

# File names whose format is not a writer's own suffix (`-o findings.sarif.json`, `-o report.junit`).
EXTRA_SUFFIXES = {".sarif.json": "sarif", ".junit": "junit", ".markdown": "markdown", ".log": "text",
                  ".htm": "html", ".xhtml": "html"}


def format_for(path: str) -> str | None:
    """The format a file name asks for by its ending (the longest matching suffix), else None."""
    lower = path.lower()
    endings = {suffix: fmt for fmt, (_, _, suffix) in REGISTRY.items()} | EXTRA_SUFFIXES
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
