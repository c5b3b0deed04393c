#!/usr/bin/env python3
"""Fleet benchmark (issue #12): 500 bundles, scanned by the local pool, by `--dask local:N`, and
scanned in parts then merged, with throughput and peak memory of each, in one run.

    python3 bench/fleet.py --ddtriage .venv/bin/ddtriage            # 500 bundles (~5 min; ~1.1 GB cache)
    python3 bench/fleet.py --bundles 50 --noise 1M --repeat 1       # a quick run

The fleet (bench/.cache/fleet-<N>-<noise>/, generated once, seeded): N collector-style bundles
`node-<i>.tar.gz`, each holding one node's plog folder with --noise of sparse plog noise
(bench/gen_plog.py) plus the sample decode plog re-timed and re-pidded, and its application logs.
Every bundle logs the same failures, so the report's first screen must name them as recurring
across all N bundles and nodes.

Cases, each `ddtriage ... --format json --output FILE --fail-on never --quiet`, timed with peak
memory (bench/measure.py: the largest single process, exact; the sampled sum over the tree):
  local   scan FLEET --jobs J                       (J = the CPU count; fastest of --repeat)
  dask    scan FLEET --dask local:J                 (LocalCluster start-up included; fastest of --repeat)
  parts   scan of each of --parts slices of the bundles to Parquet, one after the other
  merge   merge PARTS                               (the reduce step alone)

Checks: the dask and merge reports are byte-identical to the local one; Dask overhead (dask time
over local time - 1) at most 15%; peak RSS of the local scan at most 200 MiB (single process).
Exit status 1 when a check fails. Only the standard library is used here.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import os
import shutil
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import gen_plog  # noqa: E402 - bench/ is not a package
from measure import Run, run_monitored  # noqa: E402

SAMPLE = os.path.join(ROOT, "sample_logs", "decode-node-2")
SAMPLE_PID = "5569"
DASK_OVERHEAD_MAX = 0.15
RSS_MAX_MIB = 200
TIMEOUT_S = 1800.0
RSS_CAP_KIB = 8 << 20


def _tar_member(tar: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mtime = len(data), 1762918800
    tar.addfile(info, io.BytesIO(data))


def _retimed(data: bytes, i: int) -> bytes:
    minute, pid = 10 + i % 45, str(6000 + i)
    return data.decode().replace("03:40:", f"03:{minute:02d}:").replace(SAMPLE_PID, pid).encode()


def ensure_fleet(cache: str, bundles: int, noise_bytes: int) -> str:
    """The fleet folder, generated unless a complete one is cached."""
    fleet = os.path.join(cache, f"fleet-{bundles}-{noise_bytes}")
    done = os.path.join(fleet, ".complete")
    if os.path.exists(done):
        return fleet
    shutil.rmtree(fleet, ignore_errors=True)
    os.makedirs(fleet)
    noise_path = os.path.join(cache, f"noise-{noise_bytes}.log")
    if not os.path.exists(noise_path):
        gen_plog.generate(noise_path, noise_bytes, "sparse", quiet=True)
    with open(noise_path, "rb") as f:
        noise = f.read()
    samples = {}
    for folder, _, files in os.walk(SAMPLE):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                samples[os.path.relpath(path, SAMPLE)] = f.read()
    t0 = time.perf_counter()
    for i in range(1, bundles + 1):
        node = f"node-{i:04d}"
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tar:
            for rel, data in sorted(samples.items()):
                member = f"{node}/{rel.replace(SAMPLE_PID, str(6000 + i))}"
                # The debug plog: the failures at the end of a long plog.
                data = noise + _retimed(data, i) if "/debug/plog/" in member else _retimed(data, i)
                _tar_member(tar, member, data)
        with open(os.path.join(fleet, f"{node}.tar.gz"), "wb") as out:
            out.write(gzip.compress(buf.getvalue(), compresslevel=1, mtime=0))
    print(f"generated {bundles} bundles in {time.perf_counter() - t0:.0f} s: {fleet}", file=sys.stderr)
    open(done, "w").close()
    return fleet


def measure(name: str, cmd: list[str], report: str) -> dict:
    run: Run = run_monitored(cmd, TIMEOUT_S, RSS_CAP_KIB)
    if not run.ok:
        raise SystemExit(f"{name}: {' '.join(cmd)} failed ({run.killed or run.rc}): {run.stderr_tail}")
    head: dict = {}
    if report.endswith(".json"):  # the report's head, up to its findings (one per line after it)
        lines = []
        with open(report, encoding="utf-8") as f:
            for line in f:
                if line.startswith('  "findings": ['):
                    break
                lines.append(line)
        head = json.loads("".join(lines).rstrip().rstrip(",") + "}")
    return {"name": name, "seconds": run.seconds, "cpu": run.cpu, "max_single_mib": (run.max_single_kib or 0) / 1024,
            "tree_sum_mib": (run.tree_sum_kib or 0) / 1024, "inputs": head.get("inputs", {}),
            "findings": head.get("summary", {}).get("findings")}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ddtriage", default=os.path.join(ROOT, ".venv", "bin", "ddtriage"))
    ap.add_argument("--bundles", type=int, default=500)
    ap.add_argument("--noise", type=gen_plog.parse_size, default=gen_plog.parse_size("8M"),
                    help="sparse plog noise per bundle (default 8M: a scan long enough that the cluster's "
                         "start-up, ~3 s, is not most of what is measured)")
    ap.add_argument("--repeat", type=int, default=2, help="runs of local and dask, alternated; the fastest counts")
    ap.add_argument("--parts", type=int, default=10, help="slices of the fleet scanned separately for merge")
    ap.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--cache-dir", default=os.path.join(HERE, ".cache"))
    args = ap.parse_args(argv)

    fleet = ensure_fleet(args.cache_dir, args.bundles, args.noise)
    bundles = sorted(os.path.join(fleet, n) for n in os.listdir(fleet) if n.endswith(".tar.gz"))
    common = ["--format", "json", "--fail-on", "never", "--quiet"]
    with tempfile.TemporaryDirectory(prefix="ddtriage-fleet-") as tmp:
        for path in bundles:  # warm the page cache
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
        out = {k: os.path.join(tmp, f"{k}.json") for k in ("local", "dask", "merge")}
        runs: dict[str, list[dict]] = {"local": [], "dask": []}
        for _ in range(args.repeat):  # alternated, so that a busy moment of the machine hits both alike
            runs["local"].append(measure("local pool", [args.ddtriage, "scan", fleet, "--jobs", str(args.jobs),
                                                        *common, "--output", out["local"]], out["local"]))
            runs["dask"].append(measure(f"dask local:{args.jobs}", [args.ddtriage, "scan", fleet, "--dask",
                                                                    f"local:{args.jobs}", *common, "--output",
                                                                    out["dask"]], out["dask"]))
        local, dask = (min(runs[k], key=lambda r: r["seconds"]) for k in ("local", "dask"))
        slices = [bundles[i::args.parts] for i in range(args.parts)]
        parts, t0 = [], time.perf_counter()
        for i, piece in enumerate(slices):
            parts.append(os.path.join(tmp, f"part-{i:02d}.parquet"))
            measure(f"part {i}", [args.ddtriage, "scan", *piece, "--jobs", str(args.jobs), "--fail-on", "never",
                                  "--quiet", "--output", f"parquet:{parts[-1]}"], parts[-1])
        parts_seconds = time.perf_counter() - t0
        merge = measure("merge", [args.ddtriage, "merge", *parts, *common, "--output", out["merge"]], out["merge"])
        with open(out["local"], "rb") as a, open(out["dask"], "rb") as b, open(out["merge"], "rb") as c:
            local_bytes = a.read()
            same_dask, same_merge = local_bytes == b.read(), local_bytes == c.read()
        text = os.path.join(tmp, "local.txt")
        measure("text", [args.ddtriage, "merge", *parts, "--fail-on", "never", "--quiet", "-o", text], text)
        with open(text, encoding="utf-8") as f:
            first_screen = "".join(f.readline() for _ in range(12))

    mb = (local["inputs"].get("bytes") or 0) / 1e6
    overhead = dask["seconds"] / local["seconds"] - 1
    print(f"\nFleet: {len(bundles)} bundles, {mb:,.0f} MB of log, {local['findings']:,} findings, "
          f"{args.jobs} jobs\n")
    print(f"{'case':<18} {'seconds':>8} {'MB/s':>8} {'bundles/s':>10} {'peak MiB':>9} {'tree MiB':>9}")
    for row in (local, dask):
        print(f"{row['name']:<18} {row['seconds']:>8.2f} {mb / row['seconds']:>8.0f} "
              f"{len(bundles) / row['seconds']:>10.1f} {row['max_single_mib']:>9.0f} {row['tree_sum_mib']:>9.0f}")
    print(f"{'parts (' + str(args.parts) + ' scans)':<18} {parts_seconds:>8.2f} {mb / parts_seconds:>8.0f} "
          f"{len(bundles) / parts_seconds:>10.1f}")
    print(f"{'merge':<18} {merge['seconds']:>8.2f} {'':>8} {len(bundles) / merge['seconds']:>10.1f} "
          f"{merge['max_single_mib']:>9.0f} {merge['tree_sum_mib']:>9.0f}")
    print("\nFirst screen of the merged text report:\n" + first_screen)
    checks = [
        ("dask report byte-identical to the local pool's", same_dask),
        ("merged report byte-identical to the local pool's", same_merge),
        (f"Dask overhead {overhead:+.1%} <= {DASK_OVERHEAD_MAX:.0%}", overhead <= DASK_OVERHEAD_MAX),
        (f"local scan peak RSS {local['max_single_mib']:.0f} MiB <= {RSS_MAX_MIB} MiB",
         local["max_single_mib"] <= RSS_MAX_MIB),
        (f"first screen names failures recurring across all {len(bundles)} bundles",
         f"Recurring across {len(bundles):,} bundles" in first_screen),
    ]
    for what, ok in checks:
        print(f"  {'met    ' if ok else 'NOT met'}  {what}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
