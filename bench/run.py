#!/usr/bin/env python3
"""Throughput benchmark: ddtriage vs cat / grep / rg on a synthetic CANN host plog.

    python3 bench/run.py                      # 1 GiB, sparse and dense, median of 3
    python3 bench/run.py --size 64M --repeat 1
    python3 bench/run.py --density dense --ddtriage /path/to/ddtriage --keep

For each density it generates (bench/gen_plog.py) or reuses a plog in
bench/.cache/, warms the page cache, then times (wall clock, median of --repeat):
  cat FILE > /dev/null
  grep -E -c PATTERN FILE
  rg -c PATTERN FILE                          (if rg is on PATH)
  ddtriage scan FILE --format json --output /dev/null --fail-on never
PATTERN is the same set of things ddtriage looks for (gen_plog.BENCH_PATTERN).
One extra ddtriage run writes its JSON to a temp file, under /usr/bin/time -v
(or a getrusage wrapper) for its peak RSS; its `findings` count is checked
against the number of code-bearing lines the generator planted.

Compare ratios measured in one run, not absolute MB/s across machines
(shared/perf.md). MB = 10^6 bytes. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import gen_plog  # noqa: E402

PATTERN = gen_plog.BENCH_PATTERN
DEFAULT_CACHE = os.path.join(HERE, ".cache")
DEFAULT_DDTRIAGE = ".venv/bin/ddtriage"

# Run the C tools in the C locale: no multibyte handling, the fastest grep
# (the file is pure ASCII, so results are identical).
C_ENV = dict(os.environ, LC_ALL="C")


def loud(msg: str) -> None:
    bar = "!" * 78
    print(f"\n{bar}\n{msg}\n{bar}\n", flush=True)


def human_size(n: int) -> str:
    for unit, mult in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n % mult == 0:
            return f"{n // mult}{unit}"
    return str(n)


# ---------------------------------------------------------------------------
# Inputs

def ensure_plog(cache: str, size: int, density: str, seed: int) -> tuple[str, dict, bool]:
    """-> (path, expected, generated_now). Reuses a cached file if its sidecar matches."""
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"plog-{human_size(size)}-{density}-s{seed}.log")
    side = path + ".expected.json"
    try:
        with open(side) as f:
            exp = json.load(f)
        if (exp.get("generator_version") == gen_plog.GENERATOR_VERSION
                and exp.get("size_requested") == size and exp.get("density") == density
                and exp.get("seed") == seed and os.path.getsize(path) == exp.get("bytes")):
            print(f"reusing {os.path.relpath(path)} ({exp['lines']:,} lines, "
                  f"{exp['planted']:,} planted)", flush=True)
            return path, exp, False
    except (OSError, ValueError):
        pass
    free = shutil.disk_usage(cache).free
    if free < size + (256 << 20):
        raise SystemExit(f"not enough disk space in {cache}: {free >> 20} MiB free, need {size >> 20} MiB")
    print(f"generating {os.path.relpath(path)} ({human_size(size)}, {density}) ...", end=" ", flush=True)
    t = time.perf_counter()
    exp = gen_plog.generate(path, size, density, seed, quiet=True)
    print(f"{time.perf_counter() - t:.1f} s, {exp['lines']:,} lines, {exp['planted']:,} planted", flush=True)
    return path, exp, True


def warm(path: str) -> None:
    with open(path, "rb", buffering=0) as f:
        while f.read(16 << 20):
            pass


# ---------------------------------------------------------------------------
# Measurement

class RunFailed(Exception):
    pass


def run_once(cmd: list[str], timeout: float, ok_rc=(0,), capture=False, env=None) -> tuple[float, str]:
    t = time.perf_counter()
    try:
        p = subprocess.run(cmd, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE if capture else subprocess.DEVNULL,
                           stderr=subprocess.PIPE, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"timed out after {timeout:.0f} s: {' '.join(cmd)}")
    dt = time.perf_counter() - t
    if p.returncode not in ok_rc:
        err = p.stderr.decode(errors="replace").strip()[-1500:]
        raise RunFailed(f"exit status {p.returncode}: {' '.join(cmd)}\n{err}")
    return dt, (p.stdout.decode(errors="replace") if capture else "")


def timed(cmd, repeat, timeout, ok_rc=(0,), capture=False, env=None):
    """-> (median seconds, all seconds, stdout of the last run)."""
    times, out = [], ""
    for _ in range(repeat):
        dt, out = run_once(cmd, timeout, ok_rc, capture, env)
        times.append(dt)
    return statistics.median(times), times, out


def parse_count(out: str) -> int | None:
    out = out.strip()
    if not out:
        return 0  # rg -c prints nothing when there is no match
    try:
        return int(out.splitlines()[-1].rsplit(":", 1)[-1])
    except ValueError:
        return None


RSS_WRAPPER = (
    "import resource, subprocess, sys\n"
    "rc = subprocess.call(sys.argv[1:])\n"
    "sys.stderr.write('\\nMaximum resident set size (kbytes): %d\\n' % "
    "resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
    "sys.exit(rc)\n"
)


def ddtriage_check_run(dd: str, path: str, timeout: float) -> dict:
    """One ddtriage run with JSON to a temp file, under /usr/bin/time -v or a getrusage wrapper.

    -> {seconds, rc, rss_kib, rss_via, findings, findings_note, stderr_tail}
    """
    fd, out_json = tempfile.mkstemp(prefix="ddtriage-bench-", suffix=".json")
    os.close(fd)
    inner = [dd, "scan", path, "--format", "json", "--output", out_json, "--fail-on", "never"]
    if os.access("/usr/bin/time", os.X_OK):
        cmd, via = ["/usr/bin/time", "-v"] + inner, "/usr/bin/time -v"
    else:
        cmd, via = [sys.executable, "-c", RSS_WRAPPER] + inner, "getrusage(RUSAGE_CHILDREN)"
    res = {"rss_via": via, "findings": None, "findings_note": "", "rss_kib": None}
    try:
        t = time.perf_counter()
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, timeout=timeout)
        except subprocess.TimeoutExpired:
            res.update(seconds=None, rc=None, stderr_tail=f"timed out after {timeout:.0f} s")
            return res
        res["seconds"] = time.perf_counter() - t
        res["rc"] = p.returncode
        err = p.stderr.decode(errors="replace")
        m = re.findall(r"Maximum resident set size \(kbytes\): (\d+)", err)
        if m:
            res["rss_kib"] = int(m[-1])
        # ddtriage's own stderr, without /usr/bin/time's report
        own = err.split("\tCommand being timed:")[0] if "\tCommand being timed:" in err else err
        res["stderr_tail"] = own.strip()[-1500:]
        raw = b""
        try:
            with open(out_json, "rb") as f:
                raw = f.read()
            doc = json.loads(raw)
        except (OSError, ValueError) as e:
            res["findings_note"] = f"could not read ddtriage JSON output: {e} {raw[:200]!r}"
            return res
        findings = doc.get("findings") if isinstance(doc, dict) else doc if isinstance(doc, list) else None
        if isinstance(findings, list):
            res["findings"] = len(findings)
            counts = [f.get(k) for f in findings if isinstance(f, dict)
                      for k in ("count", "occurrences") if isinstance(f.get(k), int)]
            if counts:
                res["findings_note"] = f"sum of per-finding count fields: {sum(counts):,}"
            if not isinstance(doc, dict):
                res["findings_note"] += " (top level is a list, not an object with 'findings')"
        else:
            keys = list(doc)[:12] if isinstance(doc, dict) else type(doc).__name__
            res["findings_note"] = f"no 'findings' list in ddtriage JSON (top level: {keys})"
        return res
    finally:
        try:
            os.unlink(out_json)
        except OSError:
            pass


def tool_version(cmd: list[str]) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=20)
        return (p.stdout or p.stderr).decode(errors="replace").splitlines()[0].strip()
    except (OSError, subprocess.SubprocessError, IndexError):
        return "?"


def resolve_ddtriage(arg: str | None) -> str | None:
    cand = arg or DEFAULT_DDTRIAGE
    for p in ([cand] if os.path.isabs(cand) else [cand, os.path.join(ROOT, cand)]):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return os.path.abspath(p)
    if arg is None:
        w = shutil.which("ddtriage")
        if w:
            return w
    return None


# ---------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=gen_plog.parse_size, default=gen_plog.parse_size("1G"),
                    help="plog size per density, e.g. 64M, 1G (default 1G)")
    ap.add_argument("--density", choices=["both", "sparse", "dense"], default="both",
                    help="sparse: 1 code line per 2,000; dense: 1 per 20 (default both)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per measurement; the median is reported")
    ap.add_argument("--ddtriage", default=None,
                    help=f"ddtriage executable (default {DEFAULT_DDTRIAGE}, then ddtriage on PATH)")
    ap.add_argument("--keep", action="store_true",
                    help="keep the plogs generated by this run in the cache for later runs "
                         "(default: delete them at the end; files found already cached are always kept)")
    ap.add_argument("--seed", type=int, default=gen_plog.DEFAULT_SEED)
    ap.add_argument("--cache-dir", default=DEFAULT_CACHE, help="where plogs are generated (default bench/.cache)")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds allowed per command run (default 1800)")
    ap.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    ap.add_argument("--strict", action="store_true",
                    help="exit 1 if ddtriage is missing, fails, or finds fewer hits than planted")
    a = ap.parse_args(argv)
    if a.repeat < 1:
        ap.error("--repeat must be >= 1")

    densities = ["sparse", "dense"] if a.density == "both" else [a.density]
    dd = resolve_ddtriage(a.ddtriage)
    rg = shutil.which("rg")
    problems: list[str] = []

    print(f"ddtriage bench: {human_size(a.size)} synthetic plog per density, warm page cache, "
          f"median of {a.repeat}, MB = 10^6 bytes")
    print(f"host: {os.cpu_count()} CPUs, {platform.system()} {platform.release()} {platform.machine()}, "
          f"Python {platform.python_version()}")
    print(f"grep: {tool_version(['grep', '--version'])}; rg: "
          f"{tool_version([rg, '--version']) if rg else 'not installed'}")
    print(f"pattern: {PATTERN}")
    if not rg:
        print("NOTE: rg (ripgrep) is not on PATH, skipping it. Install with: apt-get install ripgrep")
    if dd:
        print(f"ddtriage: {dd}")
    else:
        where = a.ddtriage or f"{DEFAULT_DDTRIAGE} (or ddtriage on PATH)"
        msg = (f"NOTE: ddtriage executable not found at {where}; measuring cat/grep/rg only. "
               f"Set up the venv (pip install -e .) or pass --ddtriage PATH.")
        print(msg)
        if a.ddtriage or a.strict:
            problems.append(msg)
    try:
        avail = int(re.search(r"MemAvailable:\s+(\d+)", open("/proc/meminfo").read()).group(1)) << 10
        if a.size * 1.2 > avail:
            print(f"WARNING: {human_size(a.size)} may not stay in the page cache "
                  f"({avail >> 20} MiB available); numbers will include disk reads")
    except (OSError, AttributeError):
        pass
    print(flush=True)

    results: dict[str, dict] = {}
    generated: list[str] = []
    try:
        for dens in densities:
            path, exp, new = ensure_plog(a.cache_dir, a.size, dens, a.seed)
            if new:
                generated.append(path)
            nbytes = exp["bytes"]
            r = results[dens] = {"bytes": nbytes, "lines": exp["lines"], "planted": exp["planted"],
                                 "planted_specific": exp["planted_specific"], "tools": {}}
            warm(path)
            warm(path)

            def measure(name, cmd, capture=False, ok_rc=(0,), env=None):
                print(f"  [{dens}] {name} ...", end=" ", flush=True)
                try:
                    med, all_t, out = timed(cmd, a.repeat, a.timeout, ok_rc, capture, env)
                except RunFailed as e:
                    print("FAILED")
                    problems.append(f"[{dens}] {name}: {e}")
                    r["tools"][name] = {"error": str(e)}
                    return None
                rec = {"seconds": med, "runs": all_t, "mb_s": nbytes / med / 1e6}
                if capture:
                    rec["count"] = parse_count(out)
                r["tools"][name] = rec
                print(f"{med:.3f} s ({rec['mb_s']:,.0f} MB/s)"
                      + (f", count {rec['count']:,}" if capture and rec["count"] is not None else ""), flush=True)
                return rec

            measure("cat", ["cat", path], env=C_ENV)
            g = measure("grep", ["grep", "-E", "-c", PATTERN, path], capture=True, ok_rc=(0, 1), env=C_ENV)
            rr = measure("rg", [rg, "--no-config", "-c", PATTERN, path], capture=True, ok_rc=(0, 1)) if rg else None
            for name, rec in (("grep", g), ("rg", rr)):
                if rec and rec.get("count") != exp["planted"]:
                    problems.append(f"[{dens}] {name} counted {rec.get('count')} lines but the generator "
                                    f"planted {exp['planted']}: generator and pattern disagree")

            if dd:
                print(f"  [{dens}] ddtriage check run (JSON + peak RSS) ...", end=" ", flush=True)
                chk = ddtriage_check_run(dd, path, a.timeout)
                r["check"] = chk
                if chk.get("rc") != 0:
                    print("FAILED")
                    problems.append(f"[{dens}] ddtriage check run: exit status {chk.get('rc')}\n"
                                    f"{chk.get('stderr_tail', '')}")
                else:
                    rss = f"{chk['rss_kib'] / 1024:.0f} MiB" if chk.get("rss_kib") else "?"
                    print(f"{chk['seconds']:.3f} s, peak RSS {rss}, findings {chk['findings']}", flush=True)
                    f = chk["findings"]
                    if f is None:
                        problems.append(f"[{dens}] ddtriage findings not counted: {chk['findings_note']}")
                    elif f < exp["planted"]:
                        problems.append(
                            f"[{dens}] ddtriage MISSED HITS: {f:,} findings < {exp['planted']:,} planted "
                            f"code-bearing lines ({exp['planted_specific']:,} specific + "
                            f"{exp['planted'] - exp['planted_specific']:,} generic 'ErrorNo: 4294967295(failed)' "
                            f"echoes). {chk['findings_note']}".rstrip())
                if chk.get("rc") == 0:
                    measure("ddtriage", [dd, "scan", path, "--format", "json", "--output", "/dev/null",
                                         "--fail-on", "never"])
    finally:
        if not a.keep:
            for p in generated:
                for q in (p, p + ".expected.json"):
                    try:
                        os.unlink(q)
                    except OSError:
                        pass
        elif generated:
            print(f"kept {len(generated)} generated plog(s) in {os.path.relpath(a.cache_dir)}")

    # ---------------------------------------------------------------- table
    def cell(dens, tool, key):
        rec = results.get(dens, {}).get("tools", {}).get(tool)
        if not rec or "error" in rec:
            return "failed" if rec else "-"
        return f"{rec[key]:,.0f}" if key == "mb_s" else f"{rec[key]:.3f}"

    labels = {"cat": "cat > /dev/null", "grep": "grep -E -c", "rg": "rg -c",
              "ddtriage": "ddtriage scan --format json"}
    w0 = 30
    head = f"{'tool':<{w0}}" + "".join(f"{d + ' MB/s':>14}{d + ' s':>12}" for d in densities)
    print("\n" + head)
    print("-" * len(head))
    for tool in ("cat", "grep", "rg", "ddtriage"):
        if tool == "rg" and not rg:
            print(f"{'rg -c':<{w0}}  not installed (apt-get install ripgrep)")
            continue
        if tool == "ddtriage" and not dd:
            print(f"{labels[tool]:<{w0}}  not found (no ddtriage executable)")
            continue
        print(f"{labels[tool]:<{w0}}" + "".join(f"{cell(d, tool, 'mb_s'):>14}{cell(d, tool, 'seconds'):>12}"
                                               for d in densities))
    for base in ("grep", "rg"):
        row, any_ = f"{'ddtriage / ' + base + ' throughput':<{w0}}", False
        for d in densities:
            t = results.get(d, {}).get("tools", {})
            x, y = t.get("ddtriage"), t.get(base)
            if x and y and "mb_s" in x and "mb_s" in y:
                ratio = x["mb_s"] / y["mb_s"]
                results[d][f"ratio_ddtriage_{base}"] = ratio
                row += f"{(f'{ratio:.2f}' if ratio >= 0.1 else f'{ratio:.3f}'):>13}x{'':>12}"
                any_ = True
            else:
                row += f"{'-':>14}{'':>12}"
        if any_:
            print(row)
    if dd:
        row = f"{'ddtriage peak RSS':<{w0}}"
        for d in densities:
            k = results.get(d, {}).get("check", {}).get("rss_kib")
            row += f"{(f'{k / 1024:,.0f} MiB' if k else '-'):>14}{'':>12}"
        via = next((results[d]["check"]["rss_via"] for d in densities if "check" in results.get(d, {})), "")
        print(row + (f"  ({via}; largest single process)" if via else ""))
    print("(cat > /dev/null can skip the copy on recent coreutils/kernels: an upper bound, not a read rate)")
    print()
    for d in densities:
        r = results.get(d)
        if not r:
            continue
        t = r["tools"]
        findings = r.get("check", {}).get("findings")
        ok = findings is not None and findings >= r["planted"]
        def n(v):
            return f"{v:,}" if isinstance(v, int) else "-"
        print(f"hits [{d}]: planted {r['planted']:,} ({r['planted_specific']:,} specific), "
              f"grep {n(t.get('grep', {}).get('count'))}, rg {n(t.get('rg', {}).get('count'))}, "
              f"ddtriage findings {n(findings)}"
              + ("  OK" if ok else ("  MISMATCH" if dd else "")))

    if a.json:
        with open(a.json, "w") as f:
            json.dump({"size": a.size, "repeat": a.repeat, "pattern": PATTERN, "ddtriage": dd,
                       "rg": rg, "results": results, "problems": problems}, f, indent=2)
            f.write("\n")
    if problems:
        loud("PROBLEMS:\n" + "\n".join(f"- {p}" for p in problems))
        return 1 if a.strict else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
