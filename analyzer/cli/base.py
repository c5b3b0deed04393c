"""Shared pieces of the `ddtriage` command: the group, exit codes, option types, error exits.

Exit codes: 0 no finding reaches --fail-on; 1 one does; 2 usage, rule, input or internal error;
130 interrupted (Ctrl-C); 143 terminated. A reader of the output that went away (`| head`) changes
nothing: the command exits as if its output had been read (never 141, never a traceback).
"""

from __future__ import annotations

import errno
import io
import math
import os
import re
import sys
from collections.abc import Callable
from datetime import datetime, timedelta, tzinfo
from importlib import import_module
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from ..core.errors import DDTriageError

if TYPE_CHECKING:
    from ..knowledge.rules import RuleSet

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = 130, 143
MISSING = "no such file or directory"

rules_option = click.option(
    "--rules", "rules_dirs", multiple=True, type=click.Path(file_okay=False, path_type=Path),
    help="Extra rules directory (repeatable); its rules add to or override the built-in ones.")


def redact_options(command: Callable[..., Any]) -> Callable[..., Any]:
    """`--redact` and `--redact-key KEY` (scan, merge, show)."""
    command = click.option("--redact-key", metavar="KEY", default=None,
                           help="Redact with tokens that are a keyed hash of each value (implies --redact): "
                                "stable across runs, so two redacted reports compare.")(command)
    return click.option("--redact", is_flag=True,
                        help="Replace addresses, host/node, pod and container names and ids, home-folder user "
                             "names and request ids with pseudonyms (ip-3, node-2), the same in every format; "
                             "the analysis is done on the real values first.")(command)


lang_option = click.option(
    "--lang", type=click.Choice(["en", "zh"]), default=None,
    help="Language of the report's and explain's text: en or zh (default: the config file's `lang`, else zh "
         "when LC_ALL/LC_MESSAGES/LANG is zh_*, else en). JSON keys and ids stay English.")


def resolve_lang(lang: str | None) -> str:
    """--lang, else the config file's `lang`, else the locale's (zh for zh_*, else en)."""
    if lang:
        return lang
    ctx = click.get_current_context(silent=True)
    config = ctx.find_root().obj if ctx is not None else None
    chosen = getattr(config, "values", {}).get("lang")
    if chosen:
        return str(chosen)
    from ..knowledge.messages import lang_from_env

    return lang_from_env()


def load_rules(rules_dirs: tuple[Path, ...] | list[Path], lang: str | None = None) -> RuleSet:
    """Built-in rules plus the --rules directories, their text in the run's language."""
    from ..knowledge.rules import RuleSet

    return RuleSet.load(list(rules_dirs), lang=resolve_lang(lang))


def warn(level: str, message: str) -> None:
    """One line on stderr (`ddtriage: LEVEL: message`), made safe for a terminal."""
    from ..writers.safe import terminal

    if sys.stderr is not None:
        click.echo(f"ddtriage: {level}: {terminal(message)}", err=True)


def fail(message: str) -> NoReturn:
    """A one-line error on stderr, exit 2."""
    warn("error", message)
    sys.exit(EXIT_ERROR)


class ClosedStream(io.TextIOBase):
    """Stands in for a standard stream that was closed before start (`>&-`): using it is an error."""

    def __init__(self, which: str) -> None:
        self.which = which

    def write(self, text: str) -> int:
        raise OSError(errno.EBADF, f"standard {self.which} is closed")

    def fileno(self) -> int:
        raise OSError(errno.EBADF, f"standard {self.which} is closed")


class PipeGuard(io.TextIOBase):
    """Standard output on which a broken pipe is not an error: the write that finds it sends the rest
    to /dev/null, so every command and format ends with the exit code it would have had (click would
    otherwise exit 1, the findings code; a shell would report 141)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return int(self._stream.write(text))
        except BrokenPipeError:
            quiet_broken_pipe()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            quiet_broken_pipe()

    @property
    def encoding(self) -> Any:  # type: ignore[override]  # TextIOBase has its own, None: click would rewrap
        return self._stream.encoding

    @property
    def errors(self) -> Any:  # type: ignore[override]
        return self._stream.errors

    def isatty(self) -> bool:
        return bool(self._stream.isatty())

    def fileno(self) -> int:
        return int(self._stream.fileno())

    def __getattr__(self, name: str) -> Any:  # buffer, ...
        return getattr(self._stream, name)


DEBUG = {"on": False}  # --debug: an internal error shows its traceback


def _version(ctx: click.Context, asked: bool) -> None:
    """`ddtriage --version`: the package's version and the engine (the core is imported only here)."""
    if not asked or ctx.resilient_parsing:
        return
    from importlib.metadata import version

    from ..scan.blocks import engine_name

    click.echo(f"{ctx.find_root().info_name}, version {version('ddtriage')}, engine {engine_name()}")
    ctx.exit()


# Each command (its module in this package, of the same name) with the first paragraph of its help,
# the line `ddtriage --help` lists: the list costs no import of a command's module, nor of what it
# imports (the rules, the engine, the writers). tests/cli/test_startup.py holds each line to its command.
COMMANDS = {
    "config": "Print the effective scan settings and where each came from (config file or default). "
              "Flags given to `ddtriage scan` win over both.",
    "explain": "Explain CODE (hex, decimal, C++ or Python name): meaning and every context remedy.",
    "merge": "Merge PARTS (JSON, JSONL or Parquet reports of `ddtriage scan`) into one report.",
    "mine": "Cluster the ERROR and WARNING lines of PATHS that no code, family or rule explains.",
    "rules": "List, check or export remedy rules.",
    "scan": "Scan PATHS (files, folders, archives, - for stdin) and write a triage report.",
    "show": "Print lines of a log: WHERE is `PATH:LINE`, `PATH:FIRST-LAST` or `PATH`, where PATH may name an "
            "archive member as reports do: 'bundle.tar.gz!node-2/plog.tar.gz!plog-1.log:61-62'.",
    "watch": "Follow PATHS (folders, files, or - for a stream such as `kubectl logs -f`) as they are "
             "written: appended lines, new files and folders, rotations, truncations, deletions.",
}


class LazyGroup(click.Group):
    """The `ddtriage` group: a command's module is imported when the command runs or shows its own
    help (it registers itself with `@cli.command`); the group's help lists them from `COMMANDS`."""

    _listing = False  # within format_commands: stand-ins with the listed help, nothing imported

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*COMMANDS, *self.commands})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        command = self.commands.get(cmd_name)
        if command is None and cmd_name in COMMANDS:
            if self._listing:
                return click.Command(cmd_name, help=COMMANDS[cmd_name])
            import_module(f"{__package__}.{cmd_name}")
            command = self.commands.get(cmd_name)
        return command

    def resolve_command(self, ctx: click.Context, args: list[str]) -> tuple[str | None, click.Command | None,
                                                                          list[str]]:
        if args and args[0] not in COMMANDS:  # not a command: click suggests the close names it has loaded
            for name in COMMANDS:
                self.get_command(ctx, name)
        return super().resolve_command(ctx, args)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--version", is_flag=True, expose_value=False, is_eager=True, callback=lambda c, p, v: _version(c, v),
              help="Show the version and which scan engine runs, and exit.")
@click.option("--config", "config_file", metavar="FILE", type=click.Path(dir_okay=False, path_type=Path),
              help="Settings file (default: .ddtriage.toml or pyproject.toml [tool.ddtriage], from here upwards).")
@click.option("--debug", is_flag=True, help="On an internal error, show the traceback (before the command).")
@click.pass_context
def cli(ctx: click.Context, config_file: Path | None, debug: bool) -> None:
    """Triage LLM-DataDist failures in CANN host/device logs and application logs."""
    from .settings import find_config, load_config

    DEBUG["on"] = debug or DEBUG["on"]
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
        # An offset is kept: the bound is compared in UTC (core.times.TimeWindow).
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
        from ..core.times import parse_tz

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
            number = float(text) * scale
            size = int(number) if math.isfinite(number) and number < 2 ** 63 else 0
        except ValueError:
            size = 0
        if size <= 0:
            self.fail(f"{value!r} is not a size like 512M or 50G", param, ctx)
        return size


class FiniteRange(click.FloatRange):
    """`click.FloatRange` that refuses `nan` too (every comparison with it is false, so the range let it by)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class Ratio(click.ParamType):
    """A finite number of at least 1 (`nan` and `inf` are refused)."""

    name = "RATIO"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = math.nan
        if not math.isfinite(number) or number < 1:
            self.fail(f"{value!r} is not a finite number of at least 1", param, ctx)
        return number


def quiet_broken_pipe() -> None:
    """The reader went away (`| head`): standard output goes to /dev/null from here on, quietly, and
    the command carries on to the exit code it would have had, had its output been read (0 for
    explain, rules, config, show; the --fail-on code for scan and merge). One rule for every command,
    so `set -o pipefail` scripts see 0/1/2 only."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # what is still buffered, and every later write, lands there
        os.close(devnull)
    except (OSError, AttributeError, ValueError):
        pass

