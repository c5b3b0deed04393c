"""`run.memory`: freed heap pages go back to the system, and nothing breaks where that cannot be done."""

from __future__ import annotations

import ctypes.util
import platform
import sys

import pytest
from analyzer.run import memory


def _rss_kib() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4


@pytest.mark.skipif(not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
                    reason="malloc_trim is glibc's")
def test_freed_small_blocks_go_back_to_the_system() -> None:
    # Many small blocks (below glibc's mmap threshold, so in the heap), freed all but the last:
    # the heap's top cannot shrink past the survivor, only malloc_trim hands the pages back.
    blocks = [ctypes.create_string_buffer(64 * 1024) for _ in range(1600)]  # ~100 MiB
    keep = blocks[-1]
    del blocks
    before = _rss_kib()
    memory.give_back_freed()
    assert memory._trim is not None
    assert before - _rss_kib() > 50 * 1024
    del keep


def test_without_malloc_trim_it_does_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memory, "_looked", False)
    monkeypatch.setattr(ctypes.util, "find_library", lambda name: "/no/such/libc.so")
    memory.give_back_freed()  # no error
    assert memory._trim is None
    monkeypatch.setattr(memory, "_looked", True)
