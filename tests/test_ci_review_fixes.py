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
