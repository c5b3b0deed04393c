"""How bench/run.py runs commands: wall time, exit status, peak memory of a process tree.

Two runners:
- run_tool(): a C tool (cat, grep, rg, a gzip|grep pipeline), stdout to a file: GNU grep
  writing to /dev/null stops at the first match (shared/perf.md), so it never does.
- run_monitored(): ddtriage. Started in its own session; one thread blocks in os.wait4 (exact
  end time, and the kernel's ru_maxrss), the calling thread samples /proc every 50 ms for the
  process tree (ddtriage forks worker processes) and enforces a wall-clock limit and a limit on
  the tree's total RSS by killing the whole process group.

Memory figures of a monitored run (KiB):
- max_single: ru_maxrss from wait4. Linux reports the larger of the process's own peak and the
  peak of every descendant it reaped, i.e. the largest single process in the tree (what
  /usr/bin/time -v prints). Exact, not sampled.
- main_hwm: the main process's VmHWM (its own peak), last value read before it exited.
- worker_hwm: the largest VmHWM read from any descendant (sampled: a worker living < 50 ms
  can be missed, and its last 50 ms are not seen).
- tree_sum: the largest sum of VmRSS over the tree at one sample (forked workers share pages
  with their parent, so this counts shared pages more than once).
Only the standard library is used.
"""

from __future__ import annotations

import contextlib
import os
import re
import resource
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field

POLL_S = 0.05
_FINDINGS_HEAD = re.compile(rb'^    "findings": (\d+),?$')


@dataclass
class Run:
    """One command run."""
    cmd: list[str]
    seconds: float | None = None        # None when it did not finish (timeout, killed)
    cpu: float | None = None            # user + system seconds of the process and its descendants
    rc: int | None = None
    stdout: str = ""                    # run_tool only
    stderr_tail: str = ""
    killed: str = ""                    # why the bench killed it, if it did
    max_single_kib: int | None = None   # run_monitored only, see the module docstring
    main_hwm_kib: int | None = None
    worker_hwm_kib: int | None = None
    workers_seen: int = 0
    tree_sum_kib: int | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.rc == 0 and not self.killed


def run_tool(cmd: list[str], timeout: float, env: dict | None = None, ok_rc: tuple[int, ...] = (0,)) -> Run:
    """Run a C tool with stdout to a temporary file; stdout is read back into Run.stdout."""
    run = Run(cmd)
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        try:
            p = subprocess.run(cmd, stdin=subprocess.DEVNULL, stdout=out, stderr=err, timeout=timeout, env=env)
        except subprocess.TimeoutExpired:
            run.killed = f"timed out after {timeout:.0f} s"
            return run
        run.seconds = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        run.cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        run.rc = 0 if p.returncode in ok_rc else p.returncode
        out.seek(0)
        run.stdout = out.read().decode(errors="replace")
        err.seek(0)
        run.stderr_tail = err.read().decode(errors="replace").strip()[-1500:]
    return run


def _children(pid: int) -> list[int]:
    """Direct children of pid, from /proc/PID/task/*/children (Linux >= 3.5)."""
    kids: list[int] = []
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return kids
    for tid in tids:
        try:
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                kids.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            pass
    return kids


def _mem_kib(pid: int) -> tuple[int, int] | None:
    """-> (VmRSS, VmHWM) of pid in KiB, None if it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            text = f.read()
    except OSError:
        return None
    rss = re.search(r"^VmRSS:\s+(\d+)", text, re.M)
    hwm = re.search(r"^VmHWM:\s+(\d+)", text, re.M)
    if not rss or not hwm:
        return None  # a zombie has no memory lines
    return int(rss.group(1)), int(hwm.group(1))


def run_monitored(cmd: list[str], timeout: float, rss_cap_kib: int, env: dict | None = None) -> Run:
    """Run cmd (stdout discarded), watching its process tree; see the module docstring."""
    run = Run(cmd)
    err = tempfile.TemporaryFile()  # noqa: SIM115 - closed after the run
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                         start_new_session=True, env=env)
    done = threading.Event()
    result: dict = {}

    def reap() -> None:
        _, status, usage = os.wait4(p.pid, 0)
        result.update(end=time.perf_counter(), status=status, maxrss=usage.ru_maxrss,
                      cpu=usage.ru_utime + usage.ru_stime)
        done.set()

    waiter = threading.Thread(target=reap, daemon=True)
    waiter.start()
    worker_hwm: dict[int, int] = {}
    main_hwm = tree_sum = 0
    while not done.wait(POLL_S):
        total = 0
        seen = [p.pid]
        i = 0
        while i < len(seen):
            seen.extend(_children(seen[i]))
            i += 1
        for pid in seen:
            mem = _mem_kib(pid)
            if mem is None:
                continue
            total += mem[0]
            if pid == p.pid:
                main_hwm = max(main_hwm, mem[1])
            else:
                worker_hwm[pid] = max(worker_hwm.get(pid, 0), mem[1])
        tree_sum = max(tree_sum, total)
        elapsed = time.perf_counter() - t0
        if elapsed > timeout:
            run.killed = f"killed after {timeout:.0f} s (time limit)"
        elif total > rss_cap_kib:
            run.killed = f"killed at {total / 1024:,.0f} MiB tree RSS (limit {rss_cap_kib / 1024:,.0f} MiB)"
        if run.killed:
            with contextlib.suppress(OSError):
                os.killpg(p.pid, signal.SIGKILL)
            done.wait()
            break
    waiter.join()
    p.returncode = os.waitstatus_to_exitcode(result["status"])  # reaped by us, tell Popen
    run.rc = p.returncode
    if not run.killed:
        run.seconds = result["end"] - t0
    run.cpu = result["cpu"]
    run.max_single_kib = result["maxrss"]
    run.main_hwm_kib = main_hwm or None
    run.worker_hwm_kib = max(worker_hwm.values()) if worker_hwm else None
    run.workers_seen = len(worker_hwm)
    run.tree_sum_kib = tree_sum or None
    err.seek(0)
    run.stderr_tail = err.read().decode(errors="replace").strip()[-1500:]
    err.close()
    return run


def findings_in_report(path: str) -> int | None:
    """summary.findings of a ddtriage JSON report, read from the head of the file only.

    The report starts with "inputs" then "summary", whose first key is "findings" (4 spaces in);
    the findings list that follows can be hundreds of MB, so it is never parsed.
    """
    try:
        with open(path, "rb") as f:
            in_summary = False
            for n, line in enumerate(f):
                if line.startswith(b'  "summary"'):
                    in_summary = True
                elif in_summary:
                    m = _FINDINGS_HEAD.match(line.rstrip(b"\r\n"))
                    return int(m.group(1)) if m else None
                if n > 10_000 or line.startswith(b'  "findings"'):
                    return None
    except OSError:
        return None
    return None
