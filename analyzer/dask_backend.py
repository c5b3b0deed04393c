"""Running the work units on a Dask distributed cluster (`ddtriage scan --dask ADDRESS`).

Stage: parallel (another back end). The units are `parallel.plan_units`'s, planned for the
cluster's worker threads; each runs `parallel.run_unit` on a worker, and the results come back
in plan order, so `parallel.merge` and everything after it see exactly what the local pool gives:
the report is byte-identical.

- `ADDRESS` is `tcp://host:port` (a running `dask scheduler`) or `local[:N]` (a `LocalCluster` of
  N worker processes, one thread each; N defaults to the CPU count).
- The engine factory is scattered to the workers once; each worker thread builds its engine on
  its first unit and keeps it for the rest of the run (`_engine_for`), never one per task.
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
import os
import pickle
import sys
import threading
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import TYPE_CHECKING, Any

from .errors import InputError
from .parallel import EngineFactory, UnitResult, WorkUnit, cpu_count, run_unit
from .progress import Progress

if TYPE_CHECKING:
    from distributed import Client, Future

    from .engine import Engine

CONNECT_SECONDS = 30  # how long to wait for a scheduler before giving up


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
        from distributed import Client, LocalCluster
    except ImportError:
        raise InputError("--dask needs dask[distributed]: pip install 'ddtriage[fleet]'") from None
    where, workers = parse_address(address)
    if where == "local":
        import dask

        # Dask starts workers with MALLOC_TRIM_THRESHOLD_=65536, which turns off glibc's dynamic
        # mmap threshold: every block the scanner reads is then a fresh mmap, and the scan runs
        # at half speed (measured: 4.7 s -> 9.4 s). Our workers start without it.
        environ = {k: v for k, v in dask.config.get("distributed.nanny.pre-spawn-environ", {}).items()
                   if k != "MALLOC_TRIM_THRESHOLD_"}
        with dask.config.set({"distributed.nanny.pre-spawn-environ": environ}):
            cluster = LocalCluster(n_workers=workers or cpu_count(), threads_per_worker=1, processes=True,
                                   dashboard_address=":0", memory_limit=0, silence_logs=logging.CRITICAL)
        try:
            with Client(cluster) as client:
                yield client
        finally:
            cluster.close()
        return
    try:
        client = Client(where, timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError) as exc:
        raise InputError(f"--dask {address}: cannot reach the scheduler: {exc}") from None
    with client:
        yield client


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

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def run_units(self, units: list[WorkUnit], make_engine: EngineFactory, progress: Progress,
                  spill_dir: str | None = None) -> Iterator[UnitResult]:
        """Every unit's result, in unit order, as soon as it and those before it are done;
        progress as units finish in any order. `spill_dir` is this machine's: workers keep their
        runs in memory and the store spills them here."""
        from distributed import as_completed

        if any(s.is_stdin for u in units for s in u.sources):
            raise InputError("--dask cannot read standard input: pass files, folders or URLs")
        if not units:
            return
        token = uuid.uuid4().hex  # this run: its engine is built once per worker thread
        factory = self.client.scatter(pickle.dumps(make_engine), broadcast=True, hash=False)
        futures = self.client.map(_run_on_worker, units, factory=factory, token=token, pure=False,
                                  key=[f"ddtriage-unit-{i}-{token}" for i in range(len(units))])
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
                    yield done.pop(ready).result()
                    ready += 1
        finally:
            for future in futures:
                future.release()
        if ready != len(units):
            raise InputError(f"the cluster returned no result for {units[ready].source.name}")


_LOCAL = threading.local()  # per worker thread: (token, engine)
ENGINES_BUILT = 0  # engines built in this process (the tests check: once per worker thread)


def _engine_for(factory: bytes, token: str) -> Engine:
    global ENGINES_BUILT
    cached: tuple[str, Engine] | None = getattr(_LOCAL, "engine", None)
    if cached is None or cached[0] != token:
        _undo_malloc_trim()
        make_engine: Any = pickle.loads(factory)
        cached = (token, make_engine())
        _LOCAL.engine = cached
        ENGINES_BUILT += 1
    return cached[1]


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


def _run_on_worker(unit: WorkUnit, factory: bytes, token: str) -> UnitResult:
    """One unit, on a Dask worker, with this worker thread's engine for this run; its runs stay
    in memory (the client's spill folder is not on this machine)."""
    return run_unit(_engine_for(factory, token), unit, None)
