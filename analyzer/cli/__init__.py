"""The `ddtriage` command: parse options, call the library, pick a writer, map errors to exits.

One module per command, imported when that command runs (`base.LazyGroup`: `--help` imports none);
`base` holds the group, the exit codes and the shared option types.
Exit codes: 0 no finding reaches --fail-on; 1 one does; 2 usage, rule, input or internal error;
130 interrupted; 143 terminated (SIGTERM). A broken pipe on standard output changes no exit code.
"""

from __future__ import annotations

import errno
import gc
import signal
import sys
from contextlib import suppress
from types import FrameType

import click

from .base import (
    DEBUG,
    EXIT_CLEAN,
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    ClosedStream,
    PipeGuard,
    cli,
    quiet_broken_pipe,
    warn,
)

__all__ = ["EXIT_CLEAN", "EXIT_ERROR", "EXIT_FINDINGS", "EXIT_INTERRUPTED",
           "EXIT_TERMINATED", "Terminated", "cli", "main"]


class Terminated(BaseException):
    """SIGTERM arrived: unwind like Ctrl-C (worker pools are shut down on the way out)."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated()


def main() -> None:
    """Console-script entry point: every way out of the command is mapped to one exit code and at
    most one line on stderr (a traceback only with --debug)."""
    signal.signal(signal.SIGTERM, _on_sigterm)
    # A scan allocates many short-lived tuples and few cycles: collecting the young generation every
    # 700 allocations (the default) cost a tenth of a sparse scan's CPU, mostly walking the rules.
    gc.set_threshold(20_000, 50, 100)
    sys.stdout = ClosedStream("output") if sys.stdout is None else PipeGuard(sys.stdout)
    DEBUG["on"] = "--debug" in sys.argv[1:2]
    try:
        code = cli(standalone_mode=False)
        sys.stdout.flush()  # a reader that went away shows here, not at exit
    except SystemExit as exc:
        code = exc.code
        try:
            sys.stdout.flush()
        except BrokenPipeError:
            quiet_broken_pipe()
        except (OSError, ValueError):
            pass
    except BrokenPipeError:  # a write past the guard; scan and merge catch theirs, so this ended an
        quiet_broken_pipe()  # informational command, whose code would have been 0
        code = EXIT_CLEAN
    except click.exceptions.Abort as exc:  # click turns Ctrl-C (and EOF at a prompt) into Abort
        interrupted = isinstance(exc.__context__, KeyboardInterrupt)
        warn("error", "interrupted" if interrupted else "aborted")
        code = EXIT_INTERRUPTED if interrupted else EXIT_ERROR
    except click.ClickException as exc:  # usage errors
        with suppress(OSError, ValueError):
            exc.show()
        code = EXIT_ERROR
    except KeyboardInterrupt:
        warn("error", "interrupted")
        code = EXIT_INTERRUPTED
    except Terminated:
        warn("error", "terminated")
        code = EXIT_TERMINATED
    except OSError as exc:
        if exc.errno == errno.EPIPE:
            quiet_broken_pipe()
            code = EXIT_CLEAN
        else:
            warn("error", exc.strerror or str(exc))
            code = EXIT_ERROR
    except Exception as exc:  # noqa: BLE001 - the one place an unexpected error becomes exit 2
        if DEBUG["on"]:
            import traceback

            traceback.print_exc()
        warn("error", f"internal error: {type(exc).__name__}: {exc} (run `ddtriage --debug ...` for the traceback)")
        code = EXIT_ERROR
    sys.exit(_flushed(code))


def _flushed(code: object) -> int:
    """The exit status for `code` (a SystemExit code), after flushing what can be flushed, so that
    nothing is left to fail at interpreter exit."""
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except BrokenPipeError:
            if stream is sys.stdout:
                quiet_broken_pipe()
        except (OSError, ValueError):
            pass
    if code is None:
        return EXIT_CLEAN
    if isinstance(code, int):
        return code
    return EXIT_ERROR
