"""The Dask back end's own costs (issue #12, review D8, D19): `--dask local:N` starts its workers by
forking this process (ddtriage and Dask already imported), they spill their findings to the
client's store folder as the local pool's workers do (no findings pickled over the wire), Ctrl-C
ends the scan at once with one line, and a scheduler that refuses connections is an error at once,
not after the 30 s connect timeout."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.run import store as store_module
from click.testing import CliRunner

from hostile import FINDING, ROOT
from test_dask import free_port

distributed = pytest.importorskip("distributed")
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
