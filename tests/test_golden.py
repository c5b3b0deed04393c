"""Golden reports of sample_logs/ in every format. Regenerate with `make golden` (never by hand);
the same input must give byte-identical reports, whatever --jobs is."""

from pathlib import Path

import pytest
from click.testing import CliRunner

from analyzer.cli import cli

GOLDEN = Path(__file__).parent / "golden"
FORMATS = {"text": "sample_logs.txt", "markdown": "sample_logs.md", "json": "sample_logs.json"}


def render(fmt: str, jobs: int = 1) -> str:
    result = CliRunner().invoke(cli, ["scan", "sample_logs", "--format", fmt, "--fail-on", "never",
                                      "--jobs", str(jobs)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_golden_report(in_root, update_golden, fmt):
    path = GOLDEN / FORMATS[fmt]
    report = render(fmt)
    if update_golden:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(report, encoding="utf-8")
    assert path.exists(), "no golden report yet: run `make golden`"
    assert report == path.read_text(encoding="utf-8"), f"{path.name} differs: if intended, run `make golden`"


def test_same_report_with_more_jobs(in_root):
    assert render("json", jobs=1) == render("json", jobs=3)
