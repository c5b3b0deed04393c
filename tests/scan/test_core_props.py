"""The core's property tests (core/tests/props.rs): its line parser on arbitrary bytes gives the
lines that hold a literal, its link-fact table and code forms answer any line without a panic, the fact
table and proof screen as plain references do, and the plog pid read by hand is the regex's. A short run
(a few seconds; `make install` builds the test binary); skipped where cargo is not on PATH."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"


@pytest.mark.skipif(shutil.which("cargo") is None or not (CORE / "tests" / "props.rs").exists(),
                    reason="cargo is not on PATH (or no core/ in this checkout)")
def test_the_line_parser_holds_its_properties_on_arbitrary_bytes() -> None:
    done = subprocess.run(["cargo", "test", "--release", "--quiet", "--test", "props"], cwd=CORE,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    written = (CORE / "tests" / "props.rs").read_text().count("#[test]")
    assert written >= 11 and f"{written} passed" in done.stdout  # every property ran, none was skipped
