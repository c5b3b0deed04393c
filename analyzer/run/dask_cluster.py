"""Running the work units on a Dask distributed cluster (`ddtriage scan --dask ADDRESS`).

Stage: run (another back end). The units are `parallel.plan_units`'s, planned for the
cluster's worker threads; each runs `parallel.run_unit` on a worker, and the results come back
in plan order, so `parallel.merge_results` and everything after it see exactly what the local pool gives:
the report is byte-identical.

- `ADDRESS` is `tcp://host:port` (a running `dask scheduler`) or `local[:N]` (a `LocalCluster` of
  N worker processes, one thread each; N defaults to the CPU count).
- The engine factory is scattered to the workers once; each worker thread builds its engine on
  its first unit and keeps it for the rest of the run (`_engine_for`), never one per task, with
  its `parallel.ProcessCut`: what cannot make the report's cut stays in the worker, as in the pool.
- A worker that dies mid-task: the scheduler hands its units to another worker (Dask's own
  bookkeeping). Each unit is one keyed future, so a unit's result is taken once: nothing is lost
  or counted twice.
- Inputs must be readable where the workers run: a shared filesystem, or fsspec URLs.

Workers are best started one thread each (`dask worker ADDRESS --nthreads 1 --nworkers N`): the
scan is CPU-bound Python, so threads of one process would share one core.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import pickle
import signal
import socket
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ..core.errors import InputError
from ..core.progress import Progress
from ..inputs import unpack
from .parallel import EngineFactory, ProcessCut, UnitResult, WorkUnit, _die_with_parent, cpu_count, run_unit

if TYPE_CHECKING:
    from distributed import Client, Future

    from ..detect.engine import Engine

CONNECT_SECONDS = 30  # how long to wait for a scheduler before giving up
CLOSE_SECONDS = 2  # how long a normal close may wait for the local workers to stop
EXIT_SECONDS = 2  # after Ctrl-C or SIGTERM, the process ends within this, whatever Dask still waits for
# Our own local cluster has no dashboard, so nothing reads what a worker's statistical profiler
# samples of every thread every 10 ms, nor the event-loop latency each process measures every
# 20 ms; both take the GIL from the scanning thread (a 500-bundle fleet: ~1 s of 20).
QUIET_CLUSTER = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s"}
_STOPPING = {"on": False}  # forked local workers ignore Ctrl-C (set while a LocalCluster of ours runs)


def parse_address(address: str) -> tuple[str, int | None]:
    """`("local", N or None)` for `local[:N]`, else `(address, None)` for a scheduler URL."""
    text = address.strip()
    if text == "local" or text.startswith("local:"):
        count = text[6:]
        if count and (not count.isdigit() or int(count) < 1):
            raise InputError(f"--dask {address}: expected local or local:N with N a positive number of workers")
        return "local", int(count) if count else None
    if "://" not in text:
        raise InputError(f"--dask {address}: expected tcp://host:port of a Dask scheduler, or local[:N]")
    return text, None


@contextmanager
def connect(address: str) -> Iterator[Client]:
    """A client of the cluster at `address`, closed (and a LocalCluster stopped) on exit."""
    try:
        from distributed import Client
    except ImportError:
        raise InputError("--dask needs dask[distributed]: pip install 'ddtriage[fleet]'") from None
    where, workers = parse_address(address)
    if where == "local":
        with _local_cluster(workers or cpu_count()) as client:
            yield client
        return
    _probe(address, where)
    try:
        with _signals_to_this_thread():
            client = Client(where, timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError, ValueError) as exc:
        raise InputError(f"--dask {address}: cannot reach the scheduler: {exc}") from None
    try:
        with client:
            yield client
    except BaseException:
        _silence()  # Ctrl-C: the client's own complaints about the cut connection are noise
        raise


def _probe(address: str, where: str) -> None:
    """Fail at once on a scheduler address that refuses connections or names no host (the client
    itself would retry for CONNECT_SECONDS)."""
    parts = urlsplit(where)
    if parts.scheme not in ("tcp", "tls"):
        return  # another transport (ws://, ucx://, inproc://): the client knows how to reach it
    try:
        port = parts.port
    except ValueError:
        port = None
    if not parts.hostname or port is None:
        raise InputError(f"--dask {address}: expected {parts.scheme}://host:port of a Dask scheduler")
    try:
        socket.create_connection((parts.hostname, port), timeout=CONNECT_SECONDS).close()
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        raise InputError(f"--dask {address}: cannot reach the scheduler: {reason}") from None


@contextmanager
def _local_cluster(workers: int) -> Iterator[Client]:
    """A LocalCluster of `workers` one-thread worker processes and its client.

    Start-up is most of Dask's cost on one machine, so the workers are forked from this process
    (Linux), not spawned: they start in ~0.1 s instead of ~1 s, with ddtriage and Dask already
    imported, and glibc's malloc settings of this process (Dask's pre-spawn
    MALLOC_TRIM_THRESHOLD_=65536 turns off the dynamic mmap threshold: every block the scanner
    reads is then a fresh mmap, and the scan runs at half speed). The workers
    ignore Ctrl-C: this process decides, and on an interrupt kills them instead of waiting."""
    import dask
    from distributed import Client, LocalCluster, SpecCluster, Status

    environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ", {}).items()
               if k != "MALLOC_TRIM_THRESHOLD_"}
    method = dask.config.get("distributed.worker.multiprocessing-method")
    method = "fork" if sys.platform.startswith("linux") else method  # fork is unsafe on macOS
    before = {p.pid for p in multiprocessing.active_children()}
    clusters = {id(c) for c in SpecCluster._instances}
    # Kept for the cluster's whole life: a worker that dies is restarted the same way.
    with dask.config.set({"distributed.nanny.pre-spawn-environ": environ,
                          "distributed.worker.multiprocessing-method": method, **QUIET_CLUSTER}):
        client = None
        try:
            _STOPPING["on"] = True
            # ":0": the scheduler's HTTP server (health, metrics; no dashboard without bokeh) on a free
            # port; the default 8787 warns on stderr whenever another cluster holds it.
            with _signals_to_this_thread():
                cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                       dashboard_address=":0", memory_limit=0, silence_logs=logging.CRITICAL)
                client = Client(cluster)
            yield client
        except BaseException as exc:
            # Ctrl-C, SIGTERM or an error: the workers are killed first, then the client and the
            # cluster (also one half started) closed without the graceful wait.
            if not isinstance(exc, Exception):
                _exit_soon(exc)
            _silence()
            _kill_new_children(before)
            with suppress(BaseException):
                if client is not None:
                    client.close(timeout=CLOSE_SECONDS)
            for started in [c for c in SpecCluster._instances if id(c) not in clusters]:
                with suppress(BaseException):
                    started.close(timeout=CLOSE_SECONDS)
                started.status = Status.closed  # nothing left for Dask's own close at exit
            raise
        finally:
            _STOPPING["on"] = False
        client.close(timeout=CLOSE_SECONDS)
        cluster.close(timeout=CLOSE_SECONDS)


def _exit_soon(exc: BaseException) -> None:
    """After an interrupt, end this process within EXIT_SECONDS whatever a thread of Dask still
    waits for at exit, with the interrupt's exit status (130 Ctrl-C, 143 SIGTERM)."""
    code = 130 if isinstance(exc, KeyboardInterrupt) else 143 if type(exc).__name__ == "Terminated" else 2

    def stop() -> None:
        for stream in (sys.stdout, sys.stderr):
            with suppress(Exception):
                stream.flush()
        os._exit(code)

    timer = threading.Timer(EXIT_SECONDS, stop)
    timer.daemon = True
    timer.start()


@contextmanager
def _signals_to_this_thread() -> Iterator[None]:
    """Dask's threads started inside are born with Ctrl-C and SIGTERM blocked, so the kernel hands
    those signals to this (the main) thread: one taken by a Dask thread would leave this thread
    asleep in a wait of up to 10 s before Python runs the handler. A signal that arrives inside
    is delivered at the end."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not threading.main_thread():
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _kill_new_children(before: set[int | None]) -> None:
    """SIGKILL the worker processes started since `before` (the pids of the children then)."""
    for process in multiprocessing.active_children():
        if process.pid not in before:
            with suppress(OSError, ValueError, AttributeError):
                process.kill()


def _silence() -> None:
    """Quiet Dask, Tornado and asyncio for the rest of this process: a cluster torn down on Ctrl-C
    logs every connection it loses, and the user asked for one line."""
    for name in ("distributed", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


def _after_fork_in_child() -> None:
    """In a forked local worker: Ctrl-C reaches the whole process group, but only the parent acts
    on it; SIGTERM (the nanny stopping it) just ends it; it dies with its parent. It logs nothing:
    the nanny forks it from one of Dask's threads while others of the parent may be writing a log
    record, and the stream's own lock (which, unlike the handler's, fork does not reset) is then
    held for ever in the child, whose first log line (`Start worker at ...`) hung the worker and
    the cluster's start (seen under pytest, whose log handler takes every record). A local
    worker's logs are silenced anyway; its errors reach the parent with its results."""
    if not _STOPPING["on"]:
        return
    _STOPPING["on"] = False
    logging.disable(logging.CRITICAL)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})  # forked by a thread born with it blocked
    _die_with_parent()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class DaskRunner:
    """A connection to a Dask cluster that runs work units: `with DaskRunner(address) as runner:`
    `runner.slots` worker threads to plan for, `runner.run_units(...)` as `parallel.run_units`."""

    def __init__(self, address: str) -> None:
        self.address = address
        self.slots = 1
        self._stack = ExitStack()

    def __enter__(self) -> DaskRunner:
        try:
            self.client = self._stack.enter_context(connect(self.address))
            self.client.wait_for_workers(1, timeout=CONNECT_SECONDS)
        except BaseException:
            self._stack.close()
            raise
        self.slots = sum(self.client.nthreads().values()) or 1
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stack.__exit__(*exc)  # not close(): an interrupt must reach connect(), which then kills, not waits

    def run_units(self, units: list[WorkUnit], make_engine: EngineFactory, progress: Progress,
                  spill_dir: str | None = None) -> Iterator[UnitResult]:
        """Every unit's result, in unit order, as soon as it and those before it are done;
        progress as units finish in any order. `spill_dir` is the store's folder on this machine:
        workers that can write there spill their runs to it, as the local pool's do; the others
        send their runs back in memory and the store spills them there."""
        from distributed import as_completed

        if any(s.is_stdin for u in units for s in u.sources):
            raise InputError("--dask cannot read standard input: pass files, folders or URLs")
        if not units:
            return
        token = uuid.uuid4().hex  # this run: its engine is built once per worker thread
        factory = self.client.scatter(pickle.dumps(make_engine), broadcast=True, hash=False)
        futures = self.client.map(_run_on_worker, units, factory=factory, token=token, spill_dir=spill_dir,
                                  pure=False, key=[f"ddtriage-unit-{i}-{token}" for i in range(len(units))])
        index = {f.key: i for i, f in enumerate(futures)}
        done: dict[int, Future] = {}
        ready = 0
        try:
            for future in as_completed(futures):
                i = index[future.key]
                done[i] = future
                progress.advance(units[i].size)
                for _ in range(len(units[i].sources) if units[i].ends_source else 0):
                    progress.file_done()
                while ready in done:  # each unit's result is taken exactly once, in plan order
                    future = done.pop(ready)
                    result = future.result()
                    future.release()  # else its worker holds every finished unit's result to the end
                    yield result
                    ready += 1
        finally:
            for future in futures:
                future.release()
        if ready != len(units):
            raise InputError(f"the cluster returned no result for {units[ready].source.name}")


_LOCAL = threading.local()  # per worker thread: (token, engine, cut)
ENGINES_BUILT = 0  # engines built in this process (the tests check: once per worker thread)


def _engine_for(factory: bytes, token: str) -> tuple[Engine, ProcessCut]:
    """This worker thread's engine for the run `token`, and what the thread has sent back of it."""
    global ENGINES_BUILT
    cached: tuple[str, Engine, ProcessCut] | None = getattr(_LOCAL, "engine", None)
    if cached is None or cached[0] != token:
        _undo_malloc_trim()
        # As in the local pool's workers: each worker thread keeps a CPU busy, so a thread that
        # inflates a .gz ahead would only compete with it (a fleet of .tar.gz: ~+15% time).
        unpack.READ_AHEAD = False
        make_engine: Any = pickle.loads(factory)
        cached = (token, make_engine(), ProcessCut())
        _LOCAL.engine = cached
        ENGINES_BUILT += 1
    return cached[1], cached[2]


def _undo_malloc_trim() -> None:
    """On a worker started with Dask's MALLOC_TRIM_THRESHOLD_ (a `dask worker` with a nanny),
    give glibc back thresholds that keep the scanner's block buffers on the heap instead of a
    fresh mmap per block (the default's dynamic threshold would grow to the same)."""
    if "MALLOC_TRIM_THRESHOLD_" not in os.environ or not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: the largest the dynamic threshold reaches
        libc.mallopt(-1, 64 << 20)  # M_TRIM_THRESHOLD: twice that, as glibc's dynamic rule keeps it
    except (OSError, AttributeError):
        pass  # not glibc: nothing to undo


def _run_on_worker(unit: WorkUnit, factory: bytes, token: str, spill_dir: str | None = None) -> UnitResult:
    """One unit, on a Dask worker, with this worker thread's engine for this run. Its runs are
    spilled to the client's spill folder when this worker can write there (a local cluster, or a
    shared filesystem: the folder's name is random, so seeing it means sharing it), else they
    travel back in memory."""
    shared = spill_dir if spill_dir and os.path.isdir(spill_dir) and os.access(spill_dir, os.W_OK | os.X_OK) else None
    engine, cut = _engine_for(factory, token)
    return run_unit(engine, unit, shared, cut)
