"""Start-up (issue #17): `ddtriage --help` lists the commands without importing them, `explain`
and a small scan import only what they use. The import checks run in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from importlib import import_module

import click
import pytest
from analyzer.cli import base, cli
from click.testing import CliRunner


def test_the_listed_help_of_each_command_is_its_own():
    """`COMMANDS` (what --help lists) says what each command's docstring says, and no command is missing."""
    for name in base.COMMANDS:
        import_module(f"analyzer.cli.{name}")
    assert sorted(cli.commands) == sorted(base.COMMANDS)
    for name, listed in base.COMMANDS.items():
        real = cli.commands[name]
        assert real.short_help is None and not real.hidden and not real.deprecated, name
        assert (real.help or "").partition("\n\n")[0].split() == listed.split(), name
        stand_in = click.Command(name, help=listed)
        for limit in (2, 10, 30, 45, 67, 200):
            assert stand_in.get_short_help_str(limit) == real.get_short_help_str(limit), (name, limit)


@pytest.mark.parametrize("args", [["--help"], ["scan", "--help"], ["rules", "--help"], ["sacn"]])
def test_help_is_the_same_with_every_command_loaded(args):
    """The lazy listing and the full one print the same bytes (a fresh process has none loaded)."""
    probe = ("import sys\nfrom analyzer.cli import cli\n"
             "if sys.argv[1] == 'all':\n    [cli.get_command(None, n) for n in cli.list_commands(None)]\n"
             "cli.main(sys.argv[2:], prog_name='ddtriage')\n")
    outs = [subprocess.run([sys.executable, "-c", probe, which, *args], capture_output=True, text=True)
            for which in ("lazy", "all")]
    assert outs[0].returncode == outs[1].returncode
    assert outs[0].stdout == outs[1].stdout and outs[0].stderr == outs[1].stderr
    assert outs[0].stdout or outs[0].stderr


def test_a_command_runs_when_loaded_on_demand():
    result = CliRunner().invoke(cli, ["explain", "0x5010B001", "--format", "json"])
    assert result.exit_code == 0 and "LLM_" in result.output


def _loaded_by(*args: str, cwd=None) -> set[str]:
    """The modules a fresh `ddtriage ARGS` has imported when it exits (its output discarded)."""
    probe = ("import sys\nfrom analyzer.cli import main\nsys.argv = ['ddtriage', *sys.argv[1:]]\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\nfinally:\n"
             "    sys.stdout = sys.__stdout__\n    print('\\nMODULES', ' '.join(sorted(sys.modules)))\n")
    out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True, cwd=cwd)
    return set(out.stdout.rsplit("\nMODULES ", 1)[1].split())


def _under(loaded: set[str], *packages: str) -> set[str]:
    return {m for m in loaded if m in packages or m.startswith(tuple(p + "." for p in packages))}


def test_help_imports_no_command_and_none_of_the_engine(tmp_path):
    loaded = _loaded_by("--help", cwd=tmp_path)
    assert _under(loaded, "analyzer.knowledge", "analyzer.run", "analyzer.detect", "analyzer.scan",
                  "analyzer.inputs", "analyzer.diagnose", "analyzer.writers") == set()
    assert {m for m in loaded if m.startswith("analyzer.cli.")} == {"analyzer.cli.base"}
    assert not {"yaml", "regex", "pathspec", "hyperscan", "ddtriage_core", "multiprocessing", "pandas"} & loaded


def test_explain_imports_the_rules_only(tmp_path):
    """`explain` loads the rule tables, from the disk cache once it holds them: no PyYAML, no regex
    compiled, no engine, no writer."""
    _loaded_by("explain", "0x5010B001", cwd=tmp_path)  # fills the cache (the suite's own folder)
    loaded = _loaded_by("explain", "0x5010B001", cwd=tmp_path)
    assert _under(loaded, "analyzer.run", "analyzer.writers", "analyzer.detect", "analyzer.scan",
                  "analyzer.inputs", "analyzer.diagnose") == set()
    assert {m for m in loaded if m.startswith("analyzer.cli.")} <= {"analyzer.cli.base", "analyzer.cli.explain",
                                                                     "analyzer.cli.settings"}
    assert not {"yaml", "regex", "pathspec", "hyperscan", "ddtriage_core", "multiprocessing", "pandas"} & loaded


def test_a_small_scan_imports_no_pool_no_globs_no_yaml_and_one_writer(tmp_path):
    log = tmp_path / "one.log"
    log.write_text("[ERROR] GE(1,python3):2025-11-10-15:36:33.000.001 [a.cc:1]2 LinkClusters: ErrorNo: "
                   "1343270913(request wait to be processed timeout!) failed\n")
    args = ("scan", str(log), "--format", "json", "--output", str(tmp_path / "r.json"), "--fail-on", "never")
    _loaded_by(*args, cwd=tmp_path)
    loaded = _loaded_by(*args, cwd=tmp_path)
    assert "analyzer.writers.json_report" in loaded
    assert {m for m in loaded if m.startswith("analyzer.writers.")} <= {
        "analyzer.writers.json_report", "analyzer.writers.common", "analyzer.writers.safe"}
    assert not {"yaml", "pathspec", "multiprocessing", "concurrent.futures.process", "analyzer.run.mining",
                "analyzer.run.dask_cluster", "pandas", "pyarrow"} & loaded
