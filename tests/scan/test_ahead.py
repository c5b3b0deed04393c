"""scan.ahead: an iterator made ahead in a thread gives the same items, errors and cleanup."""

from __future__ import annotations

import gc
import random
import sys
import threading
import time

import pytest
from analyzer.scan.ahead import Ahead


def _slow(items: list[int], seed: int):
    rng = random.Random(seed)
    for item in items:
        time.sleep(rng.random() / 2000)
        yield item


def test_the_items_come_in_order_whatever_the_timing() -> None:
    for seed in range(5):
        items = list(range(200))
        rng = random.Random(seed)
        got = []
        for item in Ahead(_slow(items, seed)):
            time.sleep(rng.random() / 2000)
            got.append(item)
        assert got == items


def test_an_error_is_raised_after_the_items_before_it() -> None:
    def failing():
        yield 1
        yield 2
        raise OSError(5, "Input/output error")

    ahead = Ahead(failing())
    assert next(ahead) == 1
    assert next(ahead) == 2
    with pytest.raises(OSError, match="Input/output"):
        next(ahead)
    with pytest.raises(StopIteration):
        next(ahead)


def test_closing_early_stops_the_thread_and_runs_the_generators_cleanup() -> None:
    cleaned = threading.Event()
    made = []

    def endless():
        try:
            n = 0
            while True:
                made.append(n)
                yield n
                n += 1
        finally:
            cleaned.set()

    ahead = Ahead(endless())
    assert [next(ahead) for _ in range(3)] == [0, 1, 2]
    ahead.close()
    assert cleaned.is_set()
    assert not any(t.name == "ddtriage-scan-ahead" and t.is_alive() for t in threading.enumerate())
    assert len(made) <= 3 + 2  # bounded: at most one waiting and one being made when it stopped
    with pytest.raises(StopIteration):
        next(ahead)


def test_the_switch_interval_is_restored_when_the_last_one_ends() -> None:
    before = sys.getswitchinterval()
    one, two = Ahead(iter(range(3))), Ahead(iter(range(3)))
    assert sys.getswitchinterval() < before
    assert list(one) == [0, 1, 2]
    assert sys.getswitchinterval() < before  # the other still runs
    two.close()
    assert sys.getswitchinterval() == before


def test_one_let_go_of_without_close_stops_its_thread_when_collected() -> None:
    """A consumer that stops early and drops the iterator (an error elsewhere) leaves no thread
    running and no switch interval changed for the rest of the process."""
    before = sys.getswitchinterval()
    cleaned = threading.Event()

    def endless():
        try:
            n = 0
            while True:
                yield n
                n += 1
        finally:
            cleaned.set()

    ahead = Ahead(endless())
    assert next(ahead) == 0
    thread = ahead._thread
    del ahead
    gc.collect()
    thread.join(5)
    assert not thread.is_alive()
    assert cleaned.is_set()
    assert sys.getswitchinterval() == before


def test_a_stream_of_one_block_starts_no_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    # every member of a zip of 20,000 small logs started a thread and waited for it: --jobs 2 (where
    # the runner scans ahead) took 19 s against 3 s at --jobs 1
    import io

    from analyzer.detect.patterns import BASE_LITERALS
    from analyzer.scan import ahead, blocks

    if blocks._core is None:
        pytest.skip("the compiled core scans ahead; it is not installed")
    started = []
    real = ahead.Ahead.__init__

    def counted(self, items, depth=ahead.DEPTH):
        started.append(1)
        real(self, items, depth)

    monkeypatch.setattr(ahead.Ahead, "__init__", counted)
    monkeypatch.setattr(blocks, "SCAN_AHEAD", True)
    prefilter = blocks.Prefilter(BASE_LITERALS)
    line = b"[ERROR] GE(7,python3):2025-11-12-03:40:05.101.002 [a.cc:1]7 F: ErrorNo: 1343270913(x)\n"

    def scanned(data: bytes) -> int:
        found = blocks.scan_stream(io.BytesIO(data), prefilter, blocks.ScanCounts(), block_size=4096, engine="rust")
        return len(list(found))

    assert scanned(line * 3) == 3 and started == []  # one block, then the end
    assert scanned(line * 2000) == 2000 and started == [1]  # many blocks: scanned ahead
