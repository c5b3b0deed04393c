"""Shared pieces of the hostile-input tests (tests/inputs, tests/cli, tests/writers): running the real command
in a subprocess, and a finding line to plant in hostile inputs. Every hostile fixture is built
inside the tests, small or sparse: a bomb is a highly compressible stream stopped by the guards."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# One finding: LLM_WAIT_PROC_TIMEOUT from PullKvBlocks, in plog form.
FINDING = ("[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:812]5571 PullKvBlocks: "
           "ErrorNo: 1343270913(request wait to be processed timeout!)")
ESCAPES = ("\x1b", "\x07", "\x9b", "\u202e")  # what must never reach a terminal raw


def line(n: int) -> bytes:
    """Line `n` of a log: a finding whose text carries the number, so a lost line shows."""
    return f"{FINDING} line-{n}\n".encode()


def ddtriage(*args: str | os.PathLike[str] | bytes, timeout: float = 60, **kwargs: object) -> subprocess.CompletedProcess:
    """Run the installed command as a user would (`python -m analyzer`), capturing bytes."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "analyzer", *map(_arg, args)], capture_output=True,
                          timeout=timeout, env=env, cwd=kwargs.pop("cwd", None), **kwargs)  # type: ignore[call-overload]


def _arg(value: str | os.PathLike[str] | bytes) -> str | bytes:
    return value if isinstance(value, bytes) else os.fspath(value)


# VmHWM, not getrusage(): ru_maxrss survives exec, so a child of a big pytest process would
# report pytest's own peak.
MEASURED = ("import sys; from analyzer.cli import main; sys.argv[0] = 'ddtriage'; out = sys.argv.pop()\n"
            "try:\n    main()\nfinally:\n"
            "    hwm = [x for x in open('/proc/self/status') if x.startswith('VmHWM:')][0].split()[1]\n"
            "    print(hwm, file=open(out, 'w'))")


def peak_mib(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> float:
    """Peak RSS (MiB) of `ddtriage ARGS` run in its own process (Linux)."""
    where = tmp_path / "peak.txt"
    subprocess.run([sys.executable, "-c", MEASURED, *args, str(where)], check=False, capture_output=True,
                   env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})}, timeout=300)
    return int(where.read_text()) / 1024


def one_line_error(stderr: bytes) -> str:
    """The stderr of a failed run: exactly one `ddtriage: error:` line and no traceback."""
    text = stderr.decode("utf-8", "replace")
    assert "Traceback" not in text, text
    errors = [x for x in text.splitlines() if x.startswith("ddtriage: error:")]
    assert len(errors) == 1, text
    return errors[0]


def scan_json(*args: str | os.PathLike[str]) -> tuple[int, dict, str]:
    """`ddtriage scan ARGS --format json` in this process (click's runner): exit code, report, stderr."""
    import json

    from analyzer.cli import cli
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["scan", *map(os.fspath, args), "--format", "json", "--jobs", "1"],
                                catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout) if result.stdout else {}, result.stderr


def numbers(report: dict) -> list[int]:
    """The `line-N` numbers of the planted findings a report holds, sorted."""
    return sorted(int(f["text"].rsplit("line-", 1)[1].split()[0]) for f in report.get("findings", [])
                  if "line-" in f["text"])


def run_cli(*args: str | os.PathLike[str] | bytes) -> subprocess.CompletedProcess:
    """The command in this process (click's runner, fast), shaped like `ddtriage()`'s result. For
    what does not depend on the process itself (signals, pipes, closed streams)."""
    from analyzer.cli import cli
    from click.testing import CliRunner

    argv = [a.decode("utf-8", "surrogateescape") if isinstance(a, bytes) else os.fspath(a) for a in args]
    result = CliRunner().invoke(cli, argv, catch_exceptions=False)
    return subprocess.CompletedProcess(argv, result.exit_code, result.stdout_bytes, result.stderr_bytes)
