"""The compiled core's tests: they compare the Rust engine with the Python one, so they skip
(with the reason) where the core is not installed, except under CI or DDTRIAGE_REQUIRE_CORE,
where `make install` built it and its absence is a failure (test_core_installed)."""

from __future__ import annotations

import importlib.util
import os

import pytest

HAVE_CORE = importlib.util.find_spec("ddtriage_core") is not None
REQUIRE_CORE = bool(os.environ.get("CI") or os.environ.get("DDTRIAGE_REQUIRE_CORE"))

needs_core = pytest.mark.skipif(not HAVE_CORE, reason="the compiled core (ddtriage_core) is not installed: "
                                "`make install` or `pip install ./core` builds it")
