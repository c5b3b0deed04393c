"""Golden reports of sample_logs/ in every registered format. Regenerate with `make golden` (never
by hand); the same input must give byte-identical reports, whatever --jobs is. A format in
`WRITERS` without its golden report fails here."""

from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.writers import WRITERS
from click.testing import CliRunner

GOLDEN = Path(__file__).parent / "golden"


def golden_path(fmt: str) -> Path:
    # A binary format's golden report is its decoded content, as text.
    return GOLDEN / ("sample_logs" + WRITERS[fmt].suffix + (".txt" if getattr(WRITERS[fmt], "binary", False) else ""))


def render(fmt: str, jobs: int = 1) -> str:
    result = CliRunner().invoke(cli, ["scan", "sample_logs", "--format", fmt, "--fail-on", "never",
                                      "--jobs", str(jobs)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    if getattr(WRITERS[fmt], "binary", False):  # Parquet: its decoded content (the bytes name pyarrow's version)
        return WRITERS[fmt].dump(result.stdout_bytes)
    return result.stdout


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_golden_report(in_root, update_golden, fmt):
    path = golden_path(fmt)
    report = render(fmt)
    if update_golden:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(report, encoding="utf-8")
    assert path.exists(), f"format {fmt!r} has no golden report {path.name}: run `make golden` and check it"
    assert report == path.read_text(encoding="utf-8"), f"{path.name} differs: if intended, run `make golden`"


def test_every_golden_report_has_a_writer():
    """A golden file no writer produces is stale (a renamed or removed format)."""
    expected = {golden_path(fmt).name for fmt in WRITERS}
    assert len(expected) == len(WRITERS), "two formats share a suffix, so their golden reports would collide"
    stale = sorted(p.name for p in GOLDEN.glob("sample_logs.*") if p.name not in expected)
    assert not stale, f"golden reports without a writer: {stale}"


def test_same_report_with_more_jobs(in_root):
    assert render("json", jobs=1) == render("json", jobs=3)
