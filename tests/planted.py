"""Shared pieces of the second hostile-input pass (issue #18): real-shaped code lines to plant in
hostile inputs, and a scan in this process (click's runner) that returns the JSON report."""

from __future__ import annotations

import json
import os

CODE_LINE = ("[ERROR] LLMDATADIST(1234,python):2025-11-12-10:00:{s:02d}.123.456 [llm_datadist.cc:100] "
             "PullKvCache failed, ret = 0x5010B001 mark-{n}")


def planted(n: int) -> bytes:
    """Line `n` of a log: a PullKvCache failure whose text carries `mark-n`, so a lost line shows."""
    return (CODE_LINE.format(s=n % 60, n=n) + "\n").encode()


def scan(*args: str | os.PathLike[str]) -> tuple[int, dict, str]:
    """`ddtriage scan ARGS --format json --jobs 1` in this process: exit code, report, stderr."""
    from analyzer.cli import cli
    from click.testing import CliRunner

    result = CliRunner().invoke(cli, ["scan", *map(os.fspath, args), "--format", "json", "--jobs", "1"],
                                catch_exceptions=False)
    return result.exit_code, json.loads(result.stdout) if result.stdout.strip() else {}, result.stderr


def marks(report: dict) -> list[int]:
    """The `mark-N` numbers of the planted findings a report holds, sorted."""
    return sorted(int(f["text"].rsplit("mark-", 1)[1].split()[0]) for f in report.get("findings", [])
                  if "mark-" in f["text"])


def reasons(report: dict, key: str = "skipped") -> list[str]:
    """`source: reason` of every skipped input (or note, with key="notes") of a report."""
    field = "reason" if key == "skipped" else "note"
    return [f"{s['source']}: {s[field]}" for s in report.get("inputs", {}).get(key, [])]
