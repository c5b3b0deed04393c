"""The compiled core's tests compare the Rust engine with the Python one, so they skip (with the
reason) where the core is not installed; but where `make install` ran (CI, or DDTRIAGE_REQUIRE_CORE
set) the core must be there, or the twin tests would all skip and prove nothing."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys

import pytest
from analyzer.scan import blocks as scanner

# Self-contained (no conftest import): these modules work in pytest's prepend and importlib modes.
HAVE_CORE = importlib.util.find_spec("ddtriage_core") is not None
REQUIRE_CORE = bool(os.environ.get("CI") or os.environ.get("DDTRIAGE_REQUIRE_CORE"))


def test_core_installed() -> None:
    if not REQUIRE_CORE:
        pytest.skip("neither CI nor DDTRIAGE_REQUIRE_CORE is set: the core is optional here")
    assert HAVE_CORE, "CI/DDTRIAGE_REQUIRE_CORE is set but ddtriage_core does not import (make install builds it)"
    assert scanner.ENGINE == "rust" or scanner.ENGINE == "python"  # DDTRIAGE_ENGINE may pin python


def test_engine_choice_is_named_and_a_missing_core_is_one_line() -> None:
    code = "from analyzer.scan import blocks as scanner; print(scanner.engine_name())"
    env = {"DDTRIAGE_ENGINE": "python", "PATH": ""}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "python"
    bad = subprocess.run([sys.executable, "-c", code], env={"DDTRIAGE_ENGINE": "fast"}, capture_output=True,
                         text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "DDTRIAGE_ENGINE=fast" in bad.stderr
    # The core made unimportable: `rust` fails in one line, no traceback; `auto` falls back.
    hide = "import sys; sys.modules['ddtriage_core'] = None; "
    gone = subprocess.run([sys.executable, "-c", hide + code], env={"DDTRIAGE_ENGINE": "rust"},
                          capture_output=True, text=True)
    assert gone.returncode == 2 and gone.stderr.count("\n") == 1 and "Traceback" not in gone.stderr
    assert "compiled core is not installed" in gone.stderr
    auto = subprocess.run([sys.executable, "-c", hide + code], env={"DDTRIAGE_ENGINE": "auto"},
                          capture_output=True, text=True, check=True)
    assert auto.stdout.strip() == "python"


def test_version_names_the_engine() -> None:
    from analyzer.cli import cli
    from click.testing import CliRunner

    out = CliRunner().invoke(cli, ["--version"]).output
    assert out.startswith("cli, version ") or out.startswith("ddtriage, version ")
    assert f"engine {scanner.engine_name()}" in out
