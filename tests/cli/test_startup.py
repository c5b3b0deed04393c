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
