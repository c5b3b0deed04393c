"""Shared pieces of the `ddtriage` command: the group, exit codes, option types, error exits.

Exit codes: 0 no finding reaches --fail-on; 1 one does; 2 usage, rule or input error.
"""

from __future__ import annotations

import re
import sys
from datetime import datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any, NoReturn

import click

from ..errors import DDTriageError
from ..rules import RuleSet

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
MISSING = "no such file or directory"

rules_option = click.option(
    "--rules", "rules_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
    help="Extra rules directory (repeatable); its rules add to or override the built-in ones.")


def load_rules(rules_dirs: tuple[Path, ...] | list[Path]) -> RuleSet:
    """Built-in rules plus the --rules directories."""
    return RuleSet.load(list(rules_dirs))


def fail(message: str) -> NoReturn:
    """A one-line error on stderr, exit 2."""
    click.echo(f"ddtriage: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="ddtriage")
@click.option("--config", "config_file", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
              help="Settings file (default: .ddtriage.toml or pyproject.toml [tool.ddtriage], from here upwards).")
@click.pass_context
def cli(ctx: click.Context, config_file: Path | None) -> None:
    """Triage LLM-DataDist failures in CANN host/device logs and application logs."""
    from ..config import find_config, load_config

    try:
        config = load_config(config_file or find_config())
    except DDTriageError as exc:
        fail(str(exc))
    ctx.obj = config
    ctx.default_map = {"scan": config.scan_defaults()}  # flags given on the command line win


class When(click.ParamType):
    """A point in time: `2025-11-12`, `2025-11-12 03:40`, `2025-11-12T03:40:05.123`, with an
    optional offset (`+08:00`, `Z`). As an end (`--until`) it is inclusive to the precision given:
    `--until 2025-11-12` is the whole day."""

    name = "TIME"

    def __init__(self, end: bool = False) -> None:
        self.end = end

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, datetime):
            return value
        text = value.strip().replace("/", "-")
        try:
            when = datetime.fromisoformat(text)
        except ValueError:
            self.fail(f"{value!r} is not a date/time like 2025-11-12 or 2025-11-12T03:40:05", param, ctx)
        # An offset is kept: the bound is compared in UTC (timepolicy.window_bound).
        if self.end:
            clock = re.sub(r"(?:Z|[+-]\d\d(?::?\d\d)?)$", "", text[10:].lstrip("T "))
            step = {0: timedelta(days=1), 2: timedelta(hours=1), 5: timedelta(minutes=1),
                    8: timedelta(seconds=1)}.get(len(clock))
            if step:
                when += step - timedelta(microseconds=1)
        return when


class Zone(click.ParamType):
    """A time zone: `UTC`, `+08:00`, `-0530` or an IANA name such as `Asia/Shanghai`."""

    name = "ZONE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tzinfo):
            return value
        from ..timepolicy import parse_tz

        try:
            return parse_tz(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


class Size(click.ParamType):
    """A byte count with an optional K/M/G/T suffix (powers of 1024)."""

    name = "SIZE"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, int):
            return value
        text = value.strip().upper().removesuffix("B").removesuffix("I")
        scale = 1
        if text and text[-1] in "KMGT":
            scale = 1024 ** ("KMGT".index(text[-1]) + 1)
            text = text[:-1]
        try:
            size = int(float(text) * scale)
        except ValueError:
            size = 0
        if size <= 0:
            self.fail(f"{value!r} is not a size like 512M or 50G", param, ctx)
        return size



def quiet_broken_pipe() -> None:
    """The reader went away (`| head`): stop without a traceback, as other CLI tools do."""
    import os

    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    sys.exit(EXIT_CLEAN)

