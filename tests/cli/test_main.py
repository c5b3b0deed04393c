"""Hostile conditions around the process: Ctrl-C, SIGTERM, a reader that goes away, closed
standard streams, absurd option values, internal errors. Exit 1 means findings and nothing else.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hostile import FINDING, ROOT, ddtriage, one_line_error, run_cli


def _children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found.update(int(x) for x in task.read_text().split())
    return found


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _start_blocked(tmp_path: Path, jobs: int) -> tuple[subprocess.Popen, set[int]]:
    """A scan stuck on two FIFOs that nobody writes (a real log between them makes each its own work
    unit), with its workers (when jobs > 1) started."""
    os.mkfifo(tmp_path / "a.log")
    (tmp_path / "b.log").write_text((FINDING + "\n") * 10_000)
    os.mkfifo(tmp_path / "c.log")
    proc = subprocess.Popen([sys.executable, "-m", "analyzer", "scan", *(str(tmp_path / n) for n in ("a.log", "b.log", "c.log")),
                             "--jobs", str(jobs)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            # As from a terminal: a test run started in the background (`pytest &`)
                            # has SIGINT ignored, and a child inherits that.
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    workers: set[int] = set()
    deadline = time.monotonic() + (20 if jobs > 1 else 1.5)
    while time.monotonic() < deadline:  # wait for the scan to be under way
        workers = {p for p in _children(proc.pid) if _alive(p)}
        if jobs > 1 and len(workers) >= 2:
            break
        time.sleep(0.05)
    assert jobs == 1 or len(workers) >= 2, "the workers did not start"
    time.sleep(0.3)
    return proc, workers


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
@pytest.mark.parametrize(("jobs", "how", "code", "word"), [
    (1, "ctrl-c", 130, b"interrupted"), (2, "ctrl-c", 130, b"interrupted"), (2, "sigterm", 143, b"terminated")])
def test_interrupt_exits_at_once_and_stops_the_workers(tmp_path, jobs, how, code, word):
    proc, workers = _start_blocked(tmp_path, jobs)
    assert proc.poll() is None
    start = time.monotonic()
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal does: the whole process group
    else:
        os.kill(proc.pid, signal.SIGTERM)  # only the main process
    try:
        _, err = proc.communicate(timeout=10)
    finally:
        os.killpg(proc.pid, signal.SIGKILL) if proc.poll() is None else None
    assert time.monotonic() - start < 1.5
    assert proc.returncode == code, err
    assert word in err and b"Traceback" not in err, err
    time.sleep(0.2)
    assert not [p for p in workers if _alive(p)], "workers left running"


@pytest.fixture
def log(tmp_path):
    path = tmp_path / "app.log"
    path.write_text((FINDING + "\n") * 2000)
    return path


@pytest.mark.parametrize("fmt", ["text", "json", "markdown", "sarif", "junit", "github", "gitlab"])
def test_broken_pipe_keeps_the_findings_code_in_every_format(log, fmt):
    proc = subprocess.Popen([sys.executable, "-m", "analyzer", "scan", str(log), "--format", fmt],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stdout.close()  # the reader goes away before the report is written (`| head` done)
    _, err = proc.communicate(timeout=60)  # not stderr.read(): a child that hangs fails the test
    assert proc.returncode == 1, err  # the code it would have had: findings, not 141
    assert err == b"", err


@pytest.mark.parametrize("args", [["explain", "0x5010B001"], ["rules", "list"]])
def test_broken_pipe_in_other_commands(args):
    proc = subprocess.Popen([sys.executable, "-m", "analyzer", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    proc.stdout.close()
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert err == b""


def test_closed_stdout_and_stdin_are_one_line_errors(log, tmp_path):
    closed_out = ddtriage("scan", log, preexec_fn=lambda: os.close(1))
    assert closed_out.returncode == 2
    assert "standard output is closed" in one_line_error(closed_out.stderr)
    out = tmp_path / "report.txt"
    to_file = ddtriage("scan", log, "-o", out, preexec_fn=lambda: os.close(1))
    assert to_file.returncode == 1, to_file.stderr
    assert out.read_text().startswith("ddtriage: 2,000 findings")
    closed_in = ddtriage("scan", "-", stdin=subprocess.DEVNULL, preexec_fn=lambda: os.close(0))
    assert closed_in.returncode == 2
    assert "standard input is closed" in one_line_error(closed_in.stderr)


@pytest.mark.parametrize("option", [["--max-bytes", "inf"], ["--max-bytes", "nan"], ["--max-bytes", "1e400"],
                                    ["--max-ratio", "nan"], ["--max-ratio", "inf"], ["--max-ratio", "0.5"]])
def test_option_values_must_be_finite_and_positive(log, option):
    result = run_cli("scan", log, *option)
    assert result.returncode == 2
    assert b"Traceback" not in result.stderr and b"Invalid value" in result.stderr, result.stderr


@pytest.mark.parametrize("missing", ["no\tsuch.log", "x" * 300 + ".log", b"no-\xff\xfe-such.log"])
def test_a_missing_path_is_a_usage_error_whatever_its_name(log, missing):
    result = run_cli("scan", log, missing)
    assert result.returncode == 2, result.stderr  # not 1, though the other path has findings
    assert b"ddtriage: error:" in result.stderr and b"Traceback" not in result.stderr


BOOM = ("import sys; import analyzer.detect.engine as e\n"
        "def boom(*a, **k): raise RuntimeError('kaboom')\n"
        "e.Engine.scan_source = boom\n"
        "from analyzer.cli import main; sys.argv[0] = 'ddtriage'; main()\n")


def test_internal_error_is_one_line_and_exit_2_with_traceback_under_debug(log):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    plain = subprocess.run([sys.executable, "-c", BOOM, "scan", str(log), "--jobs", "1"], capture_output=True,
                           env=env, timeout=60)
    assert plain.returncode == 2
    assert "internal error: RuntimeError: kaboom" in one_line_error(plain.stderr)
    debug = subprocess.run([sys.executable, "-c", BOOM, "--debug", "scan", str(log), "--jobs", "1"],
                           capture_output=True, env=env, timeout=60)
    assert debug.returncode == 2
    assert b"Traceback" in debug.stderr and b"kaboom" in debug.stderr


def test_jobs_above_the_cpu_count_are_capped_with_a_note(log):
    cpus = len(os.sched_getaffinity(0))
    result = run_cli("scan", log, "--jobs", "256")
    assert result.returncode == 1
    assert f"note: --jobs 256 is more than the {cpus} CPUs".encode() in result.stderr
    assert f"using {cpus}".encode() in result.stderr
