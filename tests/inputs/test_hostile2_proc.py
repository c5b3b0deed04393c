"""Issue #18, pseudo file systems: `ddtriage scan /proc/self` ends (it looped through
/proc/self/task/*/… and read files that never end): a folder of /proc, /sys or /dev named on the
command line gets the rule of one met inside a folder, and a file there is read, bounded."""

from __future__ import annotations

import sys
import time
from pathlib import Path

import pytest
from planted import scan

from hostile import ddtriage

LINUX = sys.platform.startswith("linux") and Path("/proc/self/task").is_dir()


@pytest.mark.skipif(not LINUX, reason="needs Linux /proc")
def test_scan_proc_self_ends_within_10_s():
    start = time.monotonic()
    result = ddtriage("scan", "/proc/self", timeout=10)  # a subprocess: a hang is killed, and fails
    assert time.monotonic() - start < 10
    stderr = result.stderr.decode()
    assert "/proc/self: a folder of a pseudo file system" in stderr, stderr
    assert result.returncode == 2  # nothing was scanned (README: exit codes)
    assert "nothing was scanned" in stderr


@pytest.mark.skipif(not LINUX, reason="needs Linux /proc")
def test_pseudo_file_named_on_the_command_line_is_read_bounded():
    start = time.monotonic()
    code, report, stderr = scan("/proc/self/pagemap")  # 8 bytes per page of the address space: endless
    assert time.monotonic() - start < 10
    assert report["inputs"]["files"] == 1
    assert any("pseudo file system" in s["reason"] and "first 16777216 bytes" in s["reason"]
               for s in report["inputs"]["skipped"]), report["inputs"]["skipped"]
    assert code == 0  # no finding; the cut is a skipped input, so --strict fails
    assert scan("/proc/self/status", "--strict")[0] == 0  # a small pseudo file is read whole
    assert scan("/proc/self/pagemap", "--strict")[0] == 2
