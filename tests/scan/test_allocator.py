"""`blocks.tune_allocator`: malloc keeps a scan's freed blocks (under the core), once per process,
and never against thresholds the environment sets itself."""

from __future__ import annotations

import os

import pytest
from analyzer.scan import blocks


class _Core:
    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []

    def tune_allocator(self, mmap: int, trim: int) -> bool:
        self.calls.append((mmap, trim))
        return True


@pytest.fixture
def fake_core(monkeypatch: pytest.MonkeyPatch) -> _Core:
    core = _Core()
    monkeypatch.setattr(blocks, "_core", core)
    monkeypatch.setattr(blocks, "ENGINE", "rust")
    monkeypatch.setattr(blocks, "_tuned", False)
    for key in [k for k in os.environ if k.startswith("MALLOC_")] + ["GLIBC_TUNABLES"]:
        monkeypatch.delenv(key, raising=False)
    return core


def test_tuned_once_per_process(fake_core: _Core) -> None:
    blocks.tune_allocator()
    blocks.tune_allocator()
    assert fake_core.calls == [(blocks.HEAP_BLOCKS, blocks.HEAP_KEPT)]
    assert blocks.HEAP_BLOCKS >= 2 * blocks.BLOCK_SIZE  # a block with its history and pending line stays below it


@pytest.mark.parametrize("name, value", [("GLIBC_TUNABLES", "glibc.malloc.trim_threshold=1048576"),
                                         ("MALLOC_MMAP_THRESHOLD_", "131072")])
def test_the_environment_wins(fake_core: _Core, monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    blocks.tune_allocator()
    assert fake_core.calls == []


def test_other_tunables_do_not_stop_it(fake_core: _Core, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=512")
    blocks.tune_allocator()
    assert len(fake_core.calls) == 1


def test_python_engine_leaves_malloc_alone(fake_core: _Core, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(blocks, "ENGINE", "python")
    blocks.tune_allocator()
    assert fake_core.calls == []


def test_the_core_sets_glibc_thresholds() -> None:
    core = pytest.importorskip("ddtriage_core")
    import platform
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("mallopt is glibc's")
    assert core.tune_allocator(blocks.HEAP_BLOCKS, blocks.HEAP_KEPT) is True
    assert core.tune_allocator(1 << 40, 1) is False  # past what mallopt takes: refused, not wrapped


@pytest.mark.parametrize("user", [None, "1"])
def test_the_cores_allocator_gives_pages_back_unless_the_user_says_otherwise(user: str | None) -> None:
    # mimalloc's defaults (huge pages, freed pages kept 10 ms) held a 10,000-file scan's parent at
    # 174 MiB, not 123; the settings are read as the core loads, so they are set before it is imported
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith("MIMALLOC_")} | {"DDTRIAGE_ENGINE": "auto"}
    if user is not None:
        env["MIMALLOC_ALLOW_THP"] = user
    code = ("import os; from analyzer.scan import blocks; "
            "print(blocks.ENGINE, os.environ.get('MIMALLOC_ALLOW_THP'), os.environ.get('MIMALLOC_PURGE_DELAY'))")
    engine, thp, purge = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                                        check=True).stdout.split()
    if engine != "rust":
        pytest.skip("the compiled core is not installed")
    assert (thp, purge) == (user or "0", "0")
