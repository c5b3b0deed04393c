"""Spill folders a killed run left behind are removed by the next run; live ones are kept."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from analyzer.run.store import SPILL_PREFIX, spill_dir, sweep_spills


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_dead_runs_spill_goes_a_live_ones_stays(tmp_path: Path) -> None:
    dead = tmp_path / f"{SPILL_PREFIX}{_dead_pid()}-abc"
    dead.mkdir()
    (dead / "run-0").write_bytes(b"x" * 1000)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = tmp_path / f"{SPILL_PREFIX}{sleeper.pid}-def"
        live.mkdir()
        other = tmp_path / "ddtriage-something-else"
        other.mkdir()
        assert sweep_spills(str(tmp_path)) == [str(dead)]
        assert not dead.exists() and live.exists() and other.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_new_spill_folder_names_its_process(tmp_path: Path) -> None:
    leftover = tmp_path / f"{SPILL_PREFIX}{_dead_pid()}-zz"
    leftover.mkdir()
    made = spill_dir(str(tmp_path))
    assert Path(made).name.startswith(f"{SPILL_PREFIX}{os.getpid()}-")
    assert not leftover.exists()


def test_a_scan_killed_with_sigkill_leaves_nothing_after_the_next_scan(tmp_path: Path) -> None:
    """A storm scan SIGKILLed mid-way keeps its spill; the next scan (any) removes it."""
    log = tmp_path / "storm.log"
    line = ("[ERROR] GE(4811,python3):2025-11-10-15:36:33.000.283 [llm_datadist.cc:812]4830 PullKvBlocks: "
            "ErrorNo: 1343270913(request wait to be processed timeout!) req_id = {}\n")
    log.write_text("".join(line.format(i) for i in range(60000)))
    spills = tmp_path / "tmp"
    spills.mkdir()
    env = dict(os.environ, TMPDIR=str(spills))
    scan = subprocess.Popen([sys.executable, "-m", "analyzer", "scan", str(log), "-q", "-j1", "--format", "jsonl",
                             "-o", str(tmp_path / "out.jsonl")], env=env)
    spilled = False
    try:
        for _ in range(600):  # wait until it spills
            spilled = any(p.name.startswith(SPILL_PREFIX) and any(p.iterdir()) for p in spills.iterdir())
            if spilled or scan.poll() is not None:
                break
            subprocess.run(["sleep", "0.05"], check=True)
    finally:
        scan.kill()
        scan.wait()
    assert spilled and [p for p in spills.iterdir() if p.name.startswith(SPILL_PREFIX)]  # SIGKILL left it
    subprocess.run([sys.executable, "-m", "analyzer", "explain", "0x5010B001"], env=env, check=True,
                   capture_output=True)  # not a scan: nothing swept yet
    one = tmp_path / "one.log"
    one.write_text(line.format(1))
    subprocess.run([sys.executable, "-m", "analyzer", "scan", str(one), "-q"], env=env, capture_output=True)
    assert not [p for p in spills.iterdir() if p.name.startswith(SPILL_PREFIX)]
