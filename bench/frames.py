#!/usr/bin/env python3
"""The findings frame of a storm (issue #21): time and peak memory of `Analysis.frames()`.

    python bench/frames.py [--findings 1000000] [--jobs 2] [--cache-dir DIR]

Writes (once, cached in bench/.cache/) a plog whose every line holds a code: `--findings` lines of
PullKvBlocks wait timeouts from four threads, one LLM_FAILED echo in seven. Scans it with the
library, then builds the findings frame (and, apart, all the frames) and prints the time of each
and the process's peak RSS during each (VmHWM, reset before each step through
/proc/self/clear_refs), judged against the target: a frame of 1,000,000 findings within 1 GiB.
Run by `make bench`, not by CI.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
from pathlib import Path

CACHE = Path(__file__).resolve().parent / ".cache"
TARGET_KIB = 1024 * 1024  # 1 GiB
LINE = ("[ERROR] GE(4811,python3):2025-11-12-{h:02d}:{m:02d}:{s:02d}.{ms:03d}.{us:03d} [llm_datadist_v2.cc:174]48{t} "
        "PullKvBlocks: call PullKvBlocks failed, ret = 0x5010B001, req_id = {r}, remote 10.0.{a}.{b}:26000\n")
ECHO = ("[ERROR] GE(4811,python3):2025-11-12-{h:02d}:{m:02d}:{s:02d}.{ms:03d}.{us:03d} [llm_datadist_v2.cc:180]48{t} "
        "PullKvBlocks: ErrorNo: 4294967295(failed) req_id = {r}\n")


def storm(findings: int, cache: Path = CACHE) -> Path:
    """The cached storm plog with `findings` code lines."""
    path = cache / f"frames-storm-{findings}" / "storm-node" / "plog-4811_20251112034000000.log"
    if path.is_file():
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    part = path.with_suffix(".part")
    with part.open("w", encoding="utf-8") as out:
        for i in range(findings):
            us = i * 1000  # one line a millisecond
            when = {"h": 3 + us // 3_600_000_000, "m": us // 60_000_000 % 60, "s": us // 1_000_000 % 60,
                    "ms": us // 1000 % 1000, "us": us % 1000, "t": 12 + i % 4, "r": 1000 + i}
            out.write((ECHO if i % 7 == 6 else LINE).format(a=i % 251, b=i % 241, **when))
    part.rename(path)
    return path


def hwm_kib() -> int:
    """This process's peak RSS since the last reset (VmHWM)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def reset_hwm() -> None:
    gc.collect()
    with contextlib.suppress(OSError):  # not Linux, or not allowed: the figure is then the peak since the start
        Path("/proc/self/clear_refs").write_text("5")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--findings", type=int, default=1_000_000)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--cache-dir", type=Path, default=CACHE)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from analyzer import analyze

    t = time.perf_counter()
    log = storm(args.findings, args.cache_dir)
    print(f"storm: {log} ({log.stat().st_size / 2**20:.0f} MiB), ready in {time.perf_counter() - t:.1f} s")

    reset_hwm()
    t = time.perf_counter()
    result = analyze([str(log.parent)], jobs=args.jobs)
    scan_s, scan_kib = time.perf_counter() - t, hwm_kib()
    print(f"scan: {len(result.findings):,} findings in {scan_s:.1f} s, peak RSS of this process "
          f"{scan_kib / 1024:.0f} MiB (the workers' apart)")

    t = time.perf_counter()
    import pandas  # noqa: F401 - timed apart: a notebook pays it once
    import pyarrow  # noqa: F401
    print(f"import pandas and pyarrow: {time.perf_counter() - t:.1f} s")

    reset_hwm()
    t, cpu = time.perf_counter(), time.process_time()
    frame = result.frame("findings")
    frame_s, frame_cpu, frame_kib = time.perf_counter() - t, time.process_time() - cpu, hwm_kib()
    held = frame.memory_usage(deep=True).sum() / 2**20
    print(f"findings frame: {len(frame):,} rows x {frame.shape[1]} columns in {frame_s:.1f} s "
          f"({frame_cpu:.1f} s CPU; {len(frame) / frame_s:,.0f} rows/s), peak RSS {frame_kib / 1024:.0f} MiB, "
          f"the frame holds {held:.0f} MiB")
    del frame
    reset_hwm()
    t = time.perf_counter()
    every = result.frames()
    all_s, all_kib = time.perf_counter() - t, hwm_kib()
    print("all frames: " + ", ".join(f"{name} {len(df):,}" for name, df in every.items())
          + f" rows in {all_s:.1f} s, peak RSS {all_kib / 1024:.0f} MiB")
    result.close()

    ok = len(every["findings"]) >= args.findings and max(frame_kib, all_kib) <= TARGET_KIB
    verdict = "met" if ok else "NOT met"
    print(f"target (issue #21): a frame of {args.findings:,} findings within 1 GiB peak RSS: {verdict}")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("DDTRIAGE_ENGINE", "auto")
    sys.exit(main())
