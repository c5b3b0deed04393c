"""Shared fixtures. `--update-golden` rewrites the golden reports instead of comparing."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest
from analyzer import load_rules

ROOT = Path(__file__).resolve().parent.parent

# The report's language follows the locale (zh for zh_*): the suite's expected texts are English, so a
# Chinese desktop's locale must not reach them; tests of the Chinese reports set it themselves.
for _name in ("LC_ALL", "LC_MESSAGES", "LANG"):
    if os.environ.get(_name, "").lower().startswith("zh"):
        os.environ[_name] = "C.UTF-8"


# The disk cache of parsed rules (analyzer/knowledge/diskcache.py) goes to a folder of this run's
# own, never to the user's ~/.cache; subprocesses inherit it. Removed at exit.
_CACHE = tempfile.mkdtemp(prefix="ddtriage-test-cache-")
os.environ["DDTRIAGE_CACHE_DIR"] = _CACHE
os.environ.pop("DDTRIAGE_NO_CACHE", None)
atexit.register(shutil.rmtree, _CACHE, True)


def pytest_addoption(parser):
    parser.addoption("--update-golden", action="store_true", help="rewrite tests/golden/* from sample_logs/")


@pytest.fixture(scope="session")
def rules():
    return load_rules()


@pytest.fixture
def in_root(monkeypatch):
    """Run with the repository root as the working directory (paths in reports are relative)."""
    monkeypatch.chdir(ROOT)
    return ROOT


@pytest.fixture(scope="session")
def update_golden(request):
    return request.config.getoption("--update-golden") or os.environ.get("DDTRIAGE_UPDATE_GOLDEN") == "1"
