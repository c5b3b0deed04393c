"""The Dask back end (issue #12): a scan on a LocalCluster and on a real `dask scheduler` with two
`dask worker` processes (started here on 127.0.0.1, random free ports, always torn down) gives
the local pool's report byte for byte; a worker killed mid-scan loses nothing; fsspec URLs
(`memory://`, `file://`) scan like paths.

The fleet: 21 generated nodes (collector .tar.gz bundles, zips, folders) and one node with a big
plain plog, which is split into byte ranges (SPLIT_MIN_BYTES is lowered here, in the process that
plans the units, for the local pool and the Dask client alike).

The Dask back end's own costs (issue #12, review D8, D19): `--dask local:N` starts its workers by
forking this process (ddtriage and Dask already imported), they spill their findings to the
client's store folder as the local pool's workers do (no findings pickled over the wire), Ctrl-C
ends the scan at once with one line, and a scheduler that refuses connections is an error at once,
not after the 30 s connect timeout (folded from test_dask_local.py).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.inputs import iter_sources
from analyzer.run import parallel
from analyzer.run import store as store_module
from click.testing import CliRunner

from fleetgen import SAMPLES, make_fleet
from hostile import FINDING, ROOT

distributed = pytest.importorskip("distributed")
TESTS = Path(__file__).resolve().parents[1]
DASK = shutil.which("dask", path=str(Path(sys.executable).parent)) or "dask"


def scan(*args: str) -> str:
    result = CliRunner().invoke(cli, ["scan", *args, "--format", "json", "--fail-on", "never", "--quiet"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def dask_cluster(workers: int = 2, env: dict[str, str] | None = None) -> Iterator[tuple[str, list[subprocess.Popen]]]:
    """A `dask scheduler` and `workers` one-thread `dask worker` processes (no nanny, so a killed
    worker stays dead) on 127.0.0.1; yields the scheduler address and the worker processes."""
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "PYTHONPATH": str(TESTS), **(env or {})}
    procs = [subprocess.Popen([DASK, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        for _ in range(workers):
            procs.append(subprocess.Popen(
                [DASK, "worker", address, "--nthreads", "1", "--no-nanny", "--no-dashboard", "--host", "127.0.0.1",
                 "--preload", "slowfs"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        with distributed.Client(address, timeout=30) as client:
            client.wait_for_workers(workers, timeout=60)
        yield address, procs[1:]
    finally:
        for proc in reversed(procs):
            proc.kill()
            proc.wait(timeout=30)


class SharedCluster:
    """One `dask_cluster(2)` for the module's tests (its workers open `slow://` files after 4 s;
    only the killed-worker test names one), started on first use and again when a test killed
    one of its workers."""

    def __init__(self) -> None:
        self._context = None
        self.address, self.workers = "", []

    def get(self) -> tuple[str, list[subprocess.Popen]]:
        if self._context is None or any(w.poll() is not None for w in self.workers):
            self.close()
            self._context = dask_cluster(2, env={"DDTRIAGE_SLOW_OPEN": "4"})
            self.address, self.workers = self._context.__enter__()
        return self.address, self.workers

    def close(self) -> None:
        if self._context is not None:
            context, self._context = self._context, None
            context.__exit__(None, None, None)


@pytest.fixture(scope="module")
def cluster() -> Iterator[SharedCluster]:
    shared = SharedCluster()
    yield shared
    shared.close()


NODES = 21  # generated nodes; with big-node-0, NODES + 1 bundles


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    return make_fleet(tmp_path_factory.mktemp("dask"), nodes=NODES, big_copies=60)


@pytest.fixture
def split_big(monkeypatch):
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1 << 20)


def test_local_pool_localcluster_a_real_scheduler_and_merge_give_one_report(fleet, split_big, monkeypatch, tmp_path,
                                                                           cluster):
    monkeypatch.chdir(fleet.parent)
    sources = list(iter_sources(["fleet"], []))
    units = parallel.plan_units(sources, 2)
    ranges = [u for u in units if u.end is not None]
    assert len(sources) > 35 and len(ranges) == 2 and ranges[0].source.name.endswith("plog-7777_20251112034002789.log")
    local = scan("fleet", "--jobs", "2")
    report = json.loads(local)
    assert len({f["bundle"] for f in report["findings"]}) == NODES + 1 == len({f["node"] for f in report["findings"]})
    assert scan("fleet", "--jobs", "1") == local
    # Map here, reduce there: one part per four bundles (JSON and Parquet), merged (parts of one
    # bundle each: tests/run/test_merge_parts.py).
    parts = []
    bundles = sorted(f"fleet/{p.name}" for p in fleet.iterdir())
    for i in range(0, len(bundles), 4):
        fmt = ("json", "parquet")[i // 4 % 2]
        parts.append(str(tmp_path / f"{i:02d}.{fmt}"))
        scan(*bundles[i:i + 4], "--jobs", "1", "--output", f"{fmt}:{parts[-1]}")  # jobs equivalence: above
    assert len(parts) == 6
    assert sum(Path(p).read_bytes().startswith(b"PAR1") for p in parts) == len(parts) // 2
    merged = CliRunner().invoke(cli, ["merge", *parts, "--format", "json", "--fail-on", "never"])
    assert merged.exit_code == 0 and merged.stdout == local
    assert scan("fleet", "--dask", "local:2") == local
    address, _ = cluster.get()
    with distributed.Client(address) as client:
        from analyzer.run import dask_cluster as dask_backend

        def counts() -> tuple[dict, dict]:
            return (client.run(lambda: dask_backend.ENGINES_BUILT),
                    client.run(lambda dask_worker: dask_worker.state.executed_count))

        built_before, ran_before = counts()  # the cluster is the module's: this scan's own counts
        assert scan("fleet", "--dask", address) == local
        built, ran = counts()
        built = {w: n - built_before.get(w, 0) for w, n in built.items()}
        ran = {w: n - ran_before.get(w, 0) for w, n in ran.items()}
    # Each worker built one engine for the whole scan, however many units it ran.
    assert set(built.values()) <= {0, 1} and sum(built.values()) >= 1, built
    assert sum(ran.values()) >= 7 and max(ran.values()) >= 4, ran  # many units, one engine a worker


def test_a_worker_killed_mid_scan_loses_nothing(fleet, tmp_path, monkeypatch, cluster):
    import slowfs  # noqa: F401 - slow:// in this process too, for the report expected

    monkeypatch.chdir(fleet.parent)
    slow = f"slow://{fleet.parent}/fleet/decode-node-3.tar.gz"  # first in the plan, 4 s to open
    args = [slow, "fleet", "--format", "json", "--fail-on", "never", "--quiet"]
    runner = [sys.executable, "-c", "import sys, slowfs; from analyzer.cli import main; sys.argv[0] = 'ddtriage'; main()",
              "scan"]
    env = {**os.environ, "PYTHONPATH": str(TESTS), "DDTRIAGE_SLOW_OPEN": "0"}
    monkeypatch.setenv("DDTRIAGE_SLOW_OPEN", "0")
    # The report expected, in this process (no fork: Dask's threads run here; --jobs 2 gives the
    # same report, asserted above).
    expected = CliRunner().invoke(cli, ["scan", *args, "--jobs", "1"], catch_exceptions=False).stdout_bytes
    address, workers = cluster.get()  # its workers open slow:// files after 4 s
    out = tmp_path / "report.json"
    scan_proc = subprocess.Popen([*runner, *args, "--dask", address, "--output", str(out)], env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    with distributed.Client(address) as client:
        victim = None
        deadline = time.monotonic() + 30
        while victim is None and time.monotonic() < deadline:
            for worker, keys in client.processing().items():
                if any(str(k).startswith("ddtriage-unit-0-") for k in keys):
                    victim = worker
            time.sleep(0.05)
        assert victim, "the slow unit never started"
        pid = client.run(os.getpid, workers=[victim])[victim]
    assert pid in {w.pid for w in workers}
    os.kill(pid, signal.SIGKILL)
    _, err = scan_proc.communicate(timeout=60)
    assert scan_proc.returncode == 0, err.decode()
    assert [w.poll() is not None for w in workers].count(True) == 1  # the victim stayed dead
    assert out.read_bytes() == expected
    assert any(f["source"].startswith(slow + "!") for f in json.loads(expected)["findings"])


def test_fsspec_urls_scan_like_paths(tmp_path, monkeypatch):
    import fsspec

    monkeypatch.chdir(SAMPLES.parent)
    fs = fsspec.filesystem("memory")
    for path in sorted(SAMPLES.rglob("*")):
        if path.is_file():
            fs.pipe(f"/t12/{path.relative_to(SAMPLES.parent)}", path.read_bytes())
    by_path = json.loads(scan("sample_logs", "--jobs", "1"))
    for url in ("memory://t12/sample_logs", f"file://{SAMPLES}"):
        by_url = json.loads(scan(url, "--jobs", "1"))
        prefix = url.rstrip("/") + "/"
        # The same findings, named by the URL: sample_logs/x -> URL/x.
        renamed = [{**f, "source": f["source"].replace(prefix, "sample_logs/", 1),
                    "bundle": f["bundle"].replace(prefix, "sample_logs/", 1)} for f in by_url["findings"]]
        assert renamed == by_path["findings"]
        assert by_url["inputs"]["files"] == by_path["inputs"]["files"] == 8
    missing = CliRunner().invoke(cli, ["scan", "memory://t12/nothing-here"])
    assert missing.exit_code == 2
    assert missing.stderr == "ddtriage: error: memory://t12/nothing-here: no such file or directory\n"
    # file:// URLs work on a cluster too (memory:// lives in one process).
    assert scan(f"file://{SAMPLES}", "--dask", "local:2") == scan(f"file://{SAMPLES}", "--jobs", "2")


def test_bad_dask_addresses_are_one_line_errors(monkeypatch):
    from analyzer.run import dask_cluster as dask_backend

    monkeypatch.setattr(dask_backend, "CONNECT_SECONDS", 2)
    for address, says in (("local:0", "local:N"), ("somewhere", "tcp://host:port"),
                          (f"tcp://127.0.0.1:{free_port()}", "cannot reach the scheduler")):
        result = CliRunner().invoke(cli, ["scan", str(SAMPLES), "--dask", address])
        assert result.exit_code == 2 and says in result.stderr and "Traceback" not in result.stderr


def test_local_workers_start_without_dasks_malloc_trim_threshold(monkeypatch):
    # Dask's MALLOC_TRIM_THRESHOLD_=65536 halves the scanner's speed (a fresh mmap per block).
    from analyzer.run import dask_cluster as dask_backend

    monkeypatch.delenv("MALLOC_TRIM_THRESHOLD_", raising=False)
    with dask_backend.connect("local:1") as client:
        env = client.run(lambda: (os.environ.get("MALLOC_TRIM_THRESHOLD_"), os.environ.get("OMP_NUM_THREADS")))
    assert list(env.values()) == [(None, "1")]  # Dask's other settings stay


distributed_local = pytest.importorskip("distributed")
LINUX = sys.platform.startswith("linux") and Path("/proc/self/task").exists()


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found.update(int(x) for x in task.read_text().split())
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_refused_scheduler_is_a_one_line_error_at_once():
    port = free_port()  # nothing listens there: connecting is refused at once
    start = time.monotonic()
    result = CliRunner().invoke(cli, ["scan", str(ROOT / "sample_logs"), "--dask", f"tcp://127.0.0.1:{port}"])
    took = time.monotonic() - start
    assert result.exit_code == 2
    assert result.stderr == (f"ddtriage: error: --dask tcp://127.0.0.1:{port}: cannot reach the scheduler: "
                             "Connection refused\n")
    assert took < 5, f"{took:.1f} s"  # the client alone retries for 30 s
    no_port = CliRunner().invoke(cli, ["scan", str(ROOT / "sample_logs"), "--dask", "tcp://127.0.0.1"])
    assert no_port.exit_code == 2
    assert no_port.stderr == "ddtriage: error: --dask tcp://127.0.0.1: expected tcp://host:port of a Dask scheduler\n"


@pytest.mark.skipif(not LINUX, reason="workers are forked on Linux only")
def test_local_workers_are_forked_from_the_client(monkeypatch):
    from analyzer.run import dask_cluster as dask_backend

    # Set here, after import: a forked worker has it, a spawned one (a fresh interpreter) does not.
    monkeypatch.setattr(dask_backend, "FORK_MARK", "set in the client", raising=False)
    with dask_backend.connect("local:2") as client:
        marks = client.run(getattr, dask_backend, "FORK_MARK", None)
        handlers = client.run(signal.getsignal, signal.SIGINT)
    assert list(marks.values()) == ["set in the client"] * 2
    assert list(handlers.values()) == [signal.SIG_IGN] * 2  # Ctrl-C is the client's to act on


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_local_worker_logs_nothing_so_a_stream_held_at_the_fork_cannot_hang_it(monkeypatch):
    """The CI hang of 2026-12-05: LocalCluster's nanny forks a worker from one of Dask's threads
    while another thread of the parent is writing a log record; the child inherits the stream's
    lock held (fork resets a handler's lock, not its stream's), and its first log line never
    returns. Here a thread is stuck writing to a full pipe (it holds the stream's lock) across a
    fork made as `_local_cluster` makes them: the child must log and exit at once."""
    from analyzer.run import dask_cluster as dask_backend

    read_end, write_end = os.pipe()
    stream = open(write_end, "w", encoding="utf-8")  # noqa: SIM115 - closed below, after the writer
    logger = logging.getLogger("ddtriage-test-forked-worker")
    handler = logging.StreamHandler(stream)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    writer = threading.Thread(target=stream.write, args=("x" * (1 << 20),), daemon=True)
    writer.start()  # more than a pipe holds: it blocks inside the write, holding the stream's lock
    time.sleep(0.3)
    monkeypatch.setitem(dask_backend._STOPPING, "on", True)  # a LocalCluster of ours is starting
    pid = os.fork()
    if pid == 0:  # the worker
        try:
            logger.info("Start worker at tcp://127.0.0.1:1")
        finally:
            os._exit(0)
    try:
        deadline, done = time.monotonic() + 15, 0
        while not done and time.monotonic() < deadline:
            done, _ = os.waitpid(pid, os.WNOHANG)
            time.sleep(0.01)
        if not done:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    finally:
        logger.removeHandler(handler)
        os.set_blocking(read_end, False)
        while writer.is_alive():  # let the writer finish (never a blocking read: it may be done)
            with suppress(BlockingIOError):
                os.read(read_end, 1 << 16)
            time.sleep(0.001)
        os.close(read_end)
        with suppress(OSError):
            stream.close()  # what it still buffers goes nowhere
    assert done, "the forked worker hung in its first log line"


def test_local_workers_run_no_profiler_that_nothing_reads():
    import dask
    from analyzer.run import dask_cluster as dask_backend

    with dask_backend.connect("local:2") as client:
        profiling = client.run(dask.config.get, "distributed.worker.profile.enabled")
        ticks = client.run(dask.config.get, "distributed.admin.tick.interval")
    assert list(profiling.values()) == [False] * 2 and list(ticks.values()) == ["1s"] * 2


def test_local_workers_spill_to_the_clients_store_like_the_local_pool(tmp_path, monkeypatch):
    for name in ("a.log", "b.log"):
        (tmp_path / name).write_text((FINDING + "\n") * 6000)  # more than a run keeps in memory
    arrived: list[tuple[bool, int]] = []
    add = store_module.FindingStore.add

    def spy(self, runs):
        runs = list(runs)
        arrived.extend((run.path is not None, run.count) for run in runs)
        return add(self, runs)

    args = ["scan", str(tmp_path), "--format", "json", "--fail-on", "never", "--quiet"]
    local = CliRunner().invoke(cli, [*args, "--jobs", "2"], catch_exceptions=False)  # the pool first: it forks
    monkeypatch.setattr(store_module.FindingStore, "add", spy)
    dask = CliRunner().invoke(cli, [*args, "--dask", "local:2"], catch_exceptions=False)
    assert dask.exit_code == 0, dask.stderr
    assert dask.stdout == local.stdout
    # 12,000 findings came back as spill files in the client's store folder, not pickled objects.
    assert sum(count for _, count in arrived) == 12000
    assert all(spilled for spilled, _ in arrived), arrived


HCCL = ("[ERROR] HCCL({pid},python3):2025-11-12-03:{m:02d}:{s:02d}.000.000 [hccl_comm.cc:655] [{pid}][HcclCommPrepare] "
        "call trace: hcclRet -> 9, rank = {s}\n")


def test_what_cannot_make_the_cut_stays_in_dask_workers_too(tmp_path, monkeypatch):
    """Each worker thread cuts what it sends back of a run as a pool worker does (the related
    errors past the cap, the bursts past the summary's): the report is the pool's all the same."""
    import random

    from analyzer.core import observations
    from analyzer.core.observations import Observed
    from analyzer.diagnose import bursts

    monkeypatch.setattr(observations, "MAX_RELATED", 7)  # set before the fork: the workers have it
    monkeypatch.setattr(parallel, "MAX_BURSTS", 3)
    monkeypatch.setattr(bursts, "MAX_BURSTS", 3)
    paths = []
    for i in range(24):
        log = tmp_path / f"node-{i % 3}" / "ascend" / "log" / "debug" / "plog" / f"plog-{5000 + i}_20251112030000000.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        log.write_text("".join(HCCL.format(pid=5000 + i, m=59 - i, s=k) for k in range(5)) + FINDING + "\n")
        paths.append(str(log))
    random.Random(3).shuffle(paths)  # input order is not report order
    arrived: list[int] = []
    add = Observed.add

    def spy(self, other):
        arrived.append(len(other.related))
        return add(self, other)

    local = scan(*paths, "--jobs", "2")
    monkeypatch.setattr(Observed, "add", spy)
    assert scan(*paths, "--dask", "local:2") == local
    assert len(json.loads(local)["related"]) == 7
    assert 7 <= sum(arrived) < 120  # of 120 related errors, most stayed in the workers


def test_local_workers_inflate_in_their_own_thread_like_the_pools(tmp_path):
    from analyzer.core.progress import Progress
    from analyzer.inputs import iter_sources, unpack
    from analyzer.knowledge.rules import RuleSet
    from analyzer.run import dask_cluster as dask_backend
    from analyzer.run.api import Options
    from analyzer.run.parallel import plan_units

    (tmp_path / "a.log").write_text(FINDING + "\n")
    units = plan_units(list(iter_sources([str(tmp_path)], [])), 2)
    with dask_backend.DaskRunner("local:2") as runner:
        list(runner.run_units(units, Options().engine_factory(RuleSet.load()), Progress()))
        ahead = runner.client.run(getattr, unpack, "READ_AHEAD")
    # No read-ahead thread beside a busy worker (it only competes for the CPU), whatever the client does.
    assert False in ahead.values() and unpack.READ_AHEAD


def _start_blocked(tmp_path: Path, *extra: str) -> tuple[subprocess.Popen, set[int]]:
    """A --dask local:2 scan stuck on two FIFOs that nobody writes, its two workers started."""
    os.mkfifo(tmp_path / "a.log")
    (tmp_path / "b.log").write_text((FINDING + "\n") * 10_000)
    os.mkfifo(tmp_path / "c.log")
    proc = subprocess.Popen([sys.executable, "-m", "analyzer", "scan", *(str(tmp_path / n) for n in ("a.log", "b.log", "c.log")),
                             "--dask", "local:2", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT), "PYTHONFAULTHANDLER": "1"},
                            # As from a terminal: a test run started in the background (`pytest &`)
                            # has SIGINT ignored, and a child inherits that.
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: set[int] = set()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(workers) < 2:
        workers = {p for p in _children(proc.pid) if _alive(p)}
        time.sleep(0.05)
    assert len(workers) >= 2, "the workers did not start"
    time.sleep(1.0)  # the units are handed out and block on the FIFOs
    return proc, workers


@pytest.mark.skipif(not LINUX, reason="needs Linux /proc")
@pytest.mark.parametrize(("how", "code", "line"), [("ctrl-c", 130, b"ddtriage: error: interrupted\n"),
                                                   ("sigterm", 143, b"ddtriage: error: terminated\n")])
def test_interrupt_under_dask_local_exits_at_once_with_one_line(tmp_path, how, code, line):
    proc, workers = _start_blocked(tmp_path)
    assert proc.poll() is None
    start = time.monotonic()
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does: the whole process group
    else:
        os.kill(proc.pid, signal.SIGTERM)  # only the main process
    try:
        _, err = proc.communicate(timeout=15)
    except subprocess.TimeoutExpired:  # where it hangs: every thread's stack (PYTHONFAULTHANDLER)
        alive = {p: _alive(p) for p in workers}
        os.kill(proc.pid, signal.SIGABRT)
        _, err = proc.communicate(timeout=15)
        pytest.fail(f"no exit 15 s after the signal (exit {proc.returncode}; workers alive {alive}):\n{err.decode()}")
    finally:
        os.killpg(proc.pid, signal.SIGKILL) if proc.poll() is None else None
    took = time.monotonic() - start
    assert proc.returncode == code, err
    # One line (after click's newline that ends the ^C): nothing from the cluster, the workers or Dask's exit handlers.
    assert err.lstrip(b"\n") == line, err.decode()
    assert took < 3, f"{took:.1f} s"  # ~0.2 s on an idle machine; 4 s and tracebacks before (review D19)
    time.sleep(0.2)
    assert not [p for p in workers if _alive(p)], "workers left running"


def test_each_units_result_is_released_once_taken(tmp_path, monkeypatch):
    """A unit's future was released only when the run ended: every worker held every finished
    unit's result (its tally, up to FINGERPRINT_CAP rows with their findings) to the end, 241-332
    MiB per worker on a storm of distinct messages. Now each is released as its result is taken."""
    from distributed import Future

    for i in range(6):
        (tmp_path / f"node-{i}").mkdir()
        (tmp_path / f"node-{i}" / "plog.log").write_text((FINDING + "\n") * 3)
    calls: list[tuple[str, str]] = []
    result, release = Future.result, Future.release

    def spy_result(self, *a, **k):
        calls.append(("result", self.key))
        return result(self, *a, **k)

    def spy_release(self, *a, **k):
        calls.append(("release", self.key))
        return release(self, *a, **k)

    monkeypatch.setattr(Future, "result", spy_result)
    monkeypatch.setattr(Future, "release", spy_release)
    scan(str(tmp_path), "--dask", "local:2")
    units = [key for what, key in calls if what == "result" and str(key).startswith("ddtriage-unit-")]
    assert len(units) >= 2
    for key in units:
        at = calls.index(("result", key))
        assert calls[at + 1] == ("release", key), calls
