"""Fixes from the first review of the CI gate (issue #11): exit codes on a closed pipe, output names
that ask for no known format, ddtriage's own files never scanned as logs, related errors in the CI
formats, inputs read with a caveat kept apart from skipped ones. Everything through the real command."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from hostile import ROOT

SAMPLES = ROOT / "sample_logs"


def _pipeline(script: str) -> subprocess.CompletedProcess:
    """`script` in bash with pipefail, `ddtriage` being this checkout's command."""
    prelude = f'ddtriage() {{ "{sys.executable}" -m analyzer "$@"; }}\n'
    return subprocess.run(["bash", "--noprofile", "--norc", "-o", "pipefail", "-c", prelude + script],
                          capture_output=True, cwd=ROOT, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("repeat", range(4))  # racy by nature: head may leave before or after the write
def test_a_reader_that_leaves_early_does_not_change_the_exit_code(repeat):
    explain = _pipeline("ddtriage explain 0x5010B001 | head -c1")
    assert explain.returncode == 0, explain.stderr
    assert explain.stderr == b""
    scan = _pipeline("ddtriage scan sample_logs --no-pager | head -1")
    assert scan.returncode == 1, scan.stderr  # sample_logs has findings: the --fail-on code, never 141
    assert scan.stderr == b"" and len(scan.stdout.splitlines()) == 1
    never = _pipeline("ddtriage scan sample_logs --fail-on never --format json | head -c1")
    assert never.returncode == 0, never.stderr


def _scan(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "analyzer", "scan", *args], capture_output=True, text=True,
                          cwd=cwd or ROOT, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _usage_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("name", ["r.unknownext", "report.2025", "notes.docx"])
def test_an_output_name_that_names_no_format_is_a_usage_error(tmp_path, name):
    out = tmp_path / name
    line = _usage_line(_scan(str(SAMPLES), "-q", "-o", str(out)))
    assert "names no report format" in line and "sarif" in line and "junit" in line, line
    assert not out.exists()
    # --format says what to write: then the name is the user's business
    given = _scan(str(SAMPLES), "-q", "--format", "json", "-o", str(out))
    assert given.returncode == 1, given.stderr
    assert out.read_text().startswith("{")


def test_an_unknown_format_prefix_is_a_usage_error(tmp_path):
    line = _usage_line(_scan(str(SAMPLES), "-q", "-o", f"htlm:{tmp_path / 'r.html'}"))
    assert "unknown format 'htlm'" in line and "markdown" in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["report.html", "report.HTM"])
def test_an_html_name_gets_the_html_report_never_text(tmp_path, name):
    out = tmp_path / name
    result = _scan(str(SAMPLES), "-q", "-o", str(out))
    assert result.returncode == 1, result.stderr
    head = out.read_text()[:200].lower()
    assert head.startswith("<!doctype html"), head
    line = _usage_line(_scan(str(SAMPLES), "-q", "--format", "text", "-o", str(tmp_path / "t.html")))
    assert "gets the HTML report, not text" in line, line
    assert not (tmp_path / "t.html").exists()
