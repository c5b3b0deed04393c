"""The Dask back end (issue #12): a scan on a LocalCluster and on a real `dask scheduler` with two
`dask worker` processes (started here on 127.0.0.1, random free ports, always torn down) gives
the local pool's report byte for byte; a worker killed mid-scan loses nothing; fsspec URLs
(`memory://`, `file://`) scan like paths.

The fleet: 42 generated nodes (collector .tar.gz bundles, zips, folders) and one node with a big
plain plog, which is split into byte ranges (SPLIT_MIN_BYTES is lowered here, in the process that
plans the units, for the local pool and the Dask client alike)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.inputs import iter_sources
from analyzer.run import parallel
from click.testing import CliRunner

from fleetgen import SAMPLES, make_fleet

distributed = pytest.importorskip("distributed")
TESTS = Path(__file__).resolve().parent
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


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    return make_fleet(tmp_path_factory.mktemp("dask"), nodes=42, big_copies=60)


@pytest.fixture
def split_big(monkeypatch):
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1 << 20)


def test_local_pool_localcluster_a_real_scheduler_and_merge_give_one_report(fleet, split_big, monkeypatch, tmp_path):
    monkeypatch.chdir(fleet.parent)
    sources = list(iter_sources(["fleet"], []))
    units = parallel.plan_units(sources, 2)
    ranges = [u for u in units if u.end is not None]
    assert len(sources) > 70 and len(ranges) == 2 and ranges[0].source.name.endswith("plog-7777_20251112034002789.log")
    local = scan("fleet", "--jobs", "2")
    report = json.loads(local)
    assert len({f["bundle"] for f in report["findings"]}) == 43 and len({f["node"] for f in report["findings"]}) == 43
    assert scan("fleet", "--jobs", "1") == local
    # Map here, reduce there: one part per bundle (JSON and Parquet), merged.
    parts = []
    for i, bundle in enumerate(sorted(p.name for p in fleet.iterdir())):
        fmt = ("json", "parquet")[i % 2]
        parts.append(str(tmp_path / f"{i:02d}.{fmt}"))
        scan(f"fleet/{bundle}", "--jobs", "2", "--output", f"{fmt}:{parts[-1]}")
    assert sum(Path(p).read_bytes().startswith(b"PAR1") for p in parts) == len(parts) // 2
    merged = CliRunner().invoke(cli, ["merge", *parts, "--format", "json", "--fail-on", "never"])
    assert merged.exit_code == 0 and merged.stdout == local
    assert scan("fleet", "--dask", "local:2") == local
    with dask_cluster(2) as (address, _):
        assert scan("fleet", "--dask", address) == local
        with distributed.Client(address) as client:
            from analyzer.run import dask_cluster as dask_backend

            built = client.run(lambda: dask_backend.ENGINES_BUILT)
            ran = client.run(lambda dask_worker: dask_worker.state.executed_count)
    # Each worker built one engine for the whole scan, however many units it ran.
    assert set(built.values()) <= {0, 1} and sum(built.values()) >= 1, built
    assert sum(ran.values()) > sum(built.values()) + 5  # many units, two engines


def test_a_worker_killed_mid_scan_loses_nothing(fleet, tmp_path, monkeypatch):
    monkeypatch.chdir(fleet.parent)
    slow = f"slow://{fleet.parent}/fleet/decode-node-3.tar.gz"  # first in the plan, 4 s to open
    args = [slow, "fleet", "--format", "json", "--fail-on", "never", "--quiet"]
    runner = [sys.executable, "-c", "import sys, slowfs; from analyzer.cli import main; sys.argv[0] = 'ddtriage'; main()",
              "scan"]
    env = {**os.environ, "PYTHONPATH": str(TESTS), "DDTRIAGE_SLOW_OPEN": "0"}
    expected = subprocess.run([*runner, *args, "--jobs", "2"], env=env, capture_output=True, check=True).stdout
    with dask_cluster(2, env={"DDTRIAGE_SLOW_OPEN": "4"}) as (address, workers):
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
        assert by_url["inputs"]["files"] == by_path["inputs"]["files"] == 7
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
