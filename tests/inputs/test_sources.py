"""Hostile input, confinement: a bundle cannot make the tool read outside the tree it was given
(symlinks are not followed out of it unless --follow), special files are skipped with a reason,
each file is read once however many links reach it, and no folder depth is too deep.

Issue #18, pseudo file systems: `ddtriage scan /proc/self` ends (it looped through
/proc/self/task/*/… and read files that never end): a folder of /proc, /sys or /dev named on the
command line gets the rule of one met inside a folder, and a file there is read, bounded (folded from test_hostile2_proc.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from hostile import ddtriage, line, numbers, scan_json
from planted import scan


@pytest.fixture
def bundle(tmp_path):
    inside = tmp_path / "bundle"
    inside.mkdir()
    (inside / "app.log").write_bytes(line(1))
    outside = tmp_path / "analyst-home"
    outside.mkdir()
    (outside / "secret.log").write_bytes(line(666))
    return inside, outside


def test_symlinks_out_of_the_tree_are_not_followed(bundle):
    inside, outside = bundle
    (inside / "to-home").symlink_to(outside)
    (inside / "secret.log").symlink_to(outside / "secret.log")
    (inside / "root").symlink_to("/")
    (inside / "proc-self").symlink_to("/proc/self")
    code, report, stderr = scan_json(inside)
    assert code == 1
    assert numbers(report) == [1]
    reasons = {s["source"].rsplit("/", 1)[-1]: s["reason"] for s in report["inputs"]["skipped"]}
    assert set(reasons) == {"to-home", "secret.log", "root", "proc-self"}
    assert all("symlink leads out of the folder" in r for r in reasons.values())


def test_follow_reads_what_the_links_lead_to(bundle):
    inside, outside = bundle
    (inside / "to-home").symlink_to(outside)
    assert numbers(scan_json(inside, "--follow")[1]) == [1, 666]


def test_links_inside_the_tree_are_read_once(bundle):
    inside, _ = bundle
    os.link(inside / "app.log", inside / "hardlink.log")
    (inside / "latest.log").symlink_to(inside / "app.log")
    (inside / "again").symlink_to(inside)
    assert numbers(scan_json(inside)[1]) == [1]


def test_special_files_are_skipped_with_a_reason(bundle):
    inside, _ = bundle
    os.mkfifo(inside / "pipe.log")  # nobody writes to it: reading would block forever
    (inside / "null.log").symlink_to("/dev/null")
    result = ddtriage("scan", inside, "--format", "json", timeout=30)
    assert result.returncode == 1
    assert b"pipe.log: not a regular file (FIFO)" in result.stderr
    assert b"null.log: symlink leads out" in result.stderr


def test_folders_nested_1500_deep():
    # Not under pytest's tmp_path: its clean-up (shutil.rmtree) recurses and would fail on it.
    top = Path(tempfile.mkdtemp(prefix="ddtriage-deep-"))
    try:
        deep = top
        for _ in range(1500):  # os.makedirs itself recurses
            deep = deep / "d"
            deep.mkdir()
        (deep / "app.log").write_bytes(line(3))
        result = ddtriage("scan", top, "--format", "json", timeout=60)
    finally:
        subprocess.run(["rm", "-rf", str(top)], check=False)
    assert result.returncode == 1, result.stderr[-500:]
    assert b"Traceback" not in result.stderr
    assert numbers(json.loads(result.stdout)) == [3]


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
