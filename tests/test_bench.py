"""Smoke test of the benchmark script (bench/run.py): it must keep running end to end.

Part of the normal suite and fast (~3 s): tiny inputs, one run each, start-up and sparse cases
only. It checks the parts that rot silently: generation, the C-tool and ddtriage runs, the
findings check against the planted count, the memory figures and the target lines.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def ddtriage_exe() -> str:
    exe = Path(sys.executable).parent / "ddtriage"
    found = str(exe) if exe.exists() else shutil.which("ddtriage")
    if not found:
        pytest.skip("no ddtriage executable next to this Python or on PATH (make install)")
    return found


def test_bench_quick_smoke(tmp_path: Path, ddtriage_exe: str) -> None:
    out_json = tmp_path / "bench.json"
    cmd = [sys.executable, str(ROOT / "bench" / "run.py"), "--quick", "--only", "startup,sparse",
           "--size", "2M", "--repeat", "1", "--cache-dir", str(tmp_path / "cache"),
           "--ddtriage", ddtriage_exe, "--timeout", "60", "--json", str(out_json)]
    started = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    elapsed = time.perf_counter() - started
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert elapsed < 30, f"the smoke run took {elapsed:.1f} s"

    res = json.loads(out_json.read_text())
    assert res["problems"] == [], res["problems"]
    sparse = res["cases"]["sparse"]
    assert sparse["planted"] > 0
    assert sparse["tools"]["grep"]["count"] == sparse["planted"]
    dd = sparse["tools"]["ddtriage"]
    assert dd["count"] == sparse["planted"]          # summary.findings of the JSON report
    assert dd["seconds"] > 0 and dd["mb_s"] > 0
    assert 10 * 1024 < dd["max_single_kib"] < 4 * 1024 * 1024
    startup = res["cases"]["startup"]["tools"]
    assert set(startup) == {"python", "help", "explain", "scan1"}
    assert startup["scan1"]["count"] == 1

    targets = {t["target"]: t for t in res["targets"]}
    assert any(t.startswith("sparse plog: ddtriage >= 2.0x grep -E -c") for t in targets)
    assert any(t.startswith("ddtriage --help <= 5x python3 -c pass") for t in targets)
    assert sum(t.startswith("peak RSS <= 200 MiB") for t in targets) == 2
    for line in ("RESULTS", "PEAK MEMORY", "TARGETS (issue #17"):
        assert line in p.stdout
    assert all(("NOT met" in ln) or ln.rstrip().endswith(("met", "(shown)"))
               for ln in p.stdout.split("TARGETS (issue #17")[1].splitlines()[1:] if ln.startswith("  "))


def test_bench_rejects_unknown_case() -> None:
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "run.py"), "--only", "sparse,nosuch"],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2
    assert "nosuch" in p.stderr


def test_frames_bench_smoke(tmp_path: Path) -> None:
    """bench/frames.py (issue #21) end to end on a small storm: it finds every planted line and
    prints the time, the peak RSS and the verdict."""
    pytest.importorskip("pandas")
    # In a process of its own: the peak RSS it judges is its process's whole life, and a test
    # worker's life holds other tests' peaks (seen: 1.4 GiB, "NOT met").
    p = subprocess.run([sys.executable, str(ROOT / "bench" / "frames.py"), "--findings", "700", "--jobs", "1",
                        "--cache-dir", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    out = p.stdout
    assert "scan: 700 findings" in out and "s CPU" in out and "findings frame: 700 rows x 34 columns" in out
    assert "peak RSS" in out and "within 1 GiB peak RSS: met" in out
