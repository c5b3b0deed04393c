#!/usr/bin/env python3
"""Deterministic generator of a fault bundle: many small CANN logs across node folders.

    python3 bench/gen_bundle.py --files 10000 --size 100M OUT_DIR

What a cluster log collector leaves after an incident, unpacked: one folder per node, each
with the CANN log tree of shared/domain.md §7,

    OUT_DIR/node-07/ascend/log/debug/plog/plog-48213_20251110153633123.log
    OUT_DIR/node-07/ascend/log/debug/device-3/device-48213_20251110153633123.log
    OUT_DIR/node-07/ascend/log/run/plog/plog-48213_20251110153633123.log

Lines are those of bench/gen_plog.py (same grammar, same noise, same code-bearing lines, each
process with its own pid). Files are small and skewed (lognormal sizes, 512 B .. ~1 MB).
A bundle is cut around a fault, so its debug plogs are error-heavy: about one line in four
carries an LLM-DataDist code; device logs one in twenty; run/ (INFO) plogs none. With the
defaults that is ~91,000 code-bearing lines in 100 MiB.

OUT_DIR.expected.json (next to the folder) records the planted count, so a benchmark can check
that a scanner found them all, and `grep -r -E -c gen_plog.BENCH_PATTERN OUT_DIR` sums to it.
Only the standard library is used; output is a pure function of (files, size, seed, version).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import random
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import gen_plog  # noqa: E402

BUNDLE_VERSION = 1
NODES_PER_1000_FILES = 2     # 10,000 files -> 20 nodes, ~500 files each
PROCESSES_PER_NODE = 8       # pids per node; each writes several rotated plogs
MIN_FILE = 512
MAX_FILE = 1 << 20

# (kind, share of the files, probability that a line carries a code)
KINDS = [("debug", 0.60, 0.26), ("device", 0.25, 0.05), ("run", 0.15, 0.0)]


def _sizes(rng: random.Random, files: int, total: int) -> list[int]:
    """Skewed file sizes that add up to about `total`."""
    raw = [rng.lognormvariate(0.0, 1.0) for _ in range(files)]
    scale = total / sum(raw)
    return [max(MIN_FILE, min(MAX_FILE, int(x * scale))) for x in raw]


def _write_file(path: str, size: int, rng: random.Random, noise: gen_plog.Noise, code_rate: float,
                planted_before: int, start: _dt.datetime) -> tuple[int, int, int]:
    """Write one log of about `size` bytes. -> (bytes, lines, planted)."""
    clock = gen_plog._Clock()
    clock.epoch = start
    t_us = 0
    out: list[str] = []
    written = lines = planted = 0
    while True:
        t_us += rng.randrange(1, 4000)
        if code_rate and rng.random() < code_rate:
            line = gen_plog.code_line(planted_before + planted, clock.stamp(t_us), noise.pid, noise.pname)[0]
            is_code = True
        elif rng.randrange(100) == 0:
            line = noise.continuation()
            is_code = False
        else:
            head, tail = noise.header_and_tail()
            line = (head + clock.stamp(t_us) + tail)[:gen_plog.MAX_LINE].rstrip(" ,")
            is_code = False
        if written + len(line) + 1 > size and lines:
            break
        out.append(line)
        written += len(line) + 1
        lines += 1
        planted += is_code
    with open(path, "w", encoding="ascii", newline="\n") as f:
        f.write("\n".join(out) + "\n")
    return written, lines, planted


def generate(out_dir: str, files: int = 10000, size: int = 100 << 20, seed: int = gen_plog.DEFAULT_SEED,
             quiet: bool = False) -> dict:
    """Write the bundle into `out_dir` (replaced if present) and `out_dir`.expected.json."""
    if files < 1:
        raise ValueError("files must be >= 1")
    rng = random.Random(f"{seed}:bundle:{BUNDLE_VERSION}")
    sizes = _sizes(rng, files, size)
    nodes = max(1, files * NODES_PER_1000_FILES // 1000)
    tmp = out_dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    epoch = _dt.datetime(2025, 11, 10, 15, 36, 33)
    totals = {"bytes": 0, "lines": 0, "planted": 0}
    by_kind = {k: {"files": 0, "planted": 0} for k, _, _ in KINDS}
    start = time.perf_counter()
    kinds, shares = [k[0] for k in KINDS], [k[1] for k in KINDS]
    rates = {k: r for k, _, r in KINDS}
    for i, fsize in enumerate(sizes):
        node = i % nodes
        pid = 10000 + (node * PROCESSES_PER_NODE + rng.randrange(PROCESSES_PER_NODE)) * 37 % 89000
        kind = rng.choices(kinds, shares)[0]
        when = epoch + _dt.timedelta(seconds=rng.randrange(6 * 3600), milliseconds=rng.randrange(1000))
        stamp = when.strftime("%Y%m%d%H%M%S") + f"{when.microsecond // 1000:03d}"
        base = os.path.join(tmp, f"node-{node:02d}", "ascend", "log")
        if kind == "device":
            folder = os.path.join(base, "debug", f"device-{rng.randrange(8)}")
            name = f"device-{pid}_{stamp}.log"
        else:
            folder = os.path.join(base, kind, "plog")
            name = f"plog-{pid}_{stamp}.log"
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, name)
        stem, n = path[:-4], 0
        while os.path.exists(path):  # same pid and millisecond: a rotated file
            n += 1
            path = f"{stem}.{n}.log"
        noise = gen_plog.Noise(rng, pid=pid, pname="python3" if kind != "device" else "")
        nbytes, nlines, planted = _write_file(path, fsize, rng, noise, rates[kind], totals["planted"], when)
        totals["bytes"] += nbytes
        totals["lines"] += nlines
        totals["planted"] += planted
        by_kind[kind]["files"] += 1
        by_kind[kind]["planted"] += planted
        if not quiet and sys.stderr.isatty() and i % 500 == 0:
            print(f"\r  {out_dir}: {i:6d} files", end="", file=sys.stderr)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(tmp, out_dir)
    if not quiet and sys.stderr.isatty():
        print(file=sys.stderr)
    expected = {
        "generator": "bench/gen_bundle.py",
        "generator_version": gen_plog.GENERATOR_VERSION,
        "bundle_version": BUNDLE_VERSION,
        "seed": seed,
        "files": files,
        "nodes": nodes,
        "size_requested": size,
        **totals,
        "by_kind": by_kind,
        "pattern": gen_plog.BENCH_PATTERN,
        "generate_seconds": round(time.perf_counter() - start, 2),
    }
    with open(out_dir + ".expected.json", "w") as jf:
        json.dump(expected, jf, indent=2)
        jf.write("\n")
    return expected


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", help="output folder (OUT_DIR.expected.json is written next to it)")
    ap.add_argument("--files", type=int, default=10000, help="number of log files (default 10000)")
    ap.add_argument("--size", type=gen_plog.parse_size, default=gen_plog.parse_size("100M"),
                    help="total size, e.g. 100M (default 100M)")
    ap.add_argument("--seed", type=int, default=gen_plog.DEFAULT_SEED)
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args(argv)
    exp = generate(a.out_dir, a.files, a.size, a.seed, quiet=a.quiet)
    print(json.dumps({k: exp[k] for k in ("files", "nodes", "bytes", "lines", "planted", "generate_seconds")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
