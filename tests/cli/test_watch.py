"""`ddtriage watch`: a real process following a tree that another keeps changing (issue #19's
Done-when), and the command's options through click's runner."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.inputs.own import own_document
from analyzer.run.api import analyze
from analyzer.writers import write_report
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"
LATENCY = 1.0  # seconds from a line's write to its event (issue #19)


def planted(n: int) -> str:
    """A plog line of LLM_LINK_FAILED from LinkClusters, told apart by `index = n`."""
    return (f"[ERROR] GE(100,python3):2025-11-12-03:40:{n:02d}.000.000 [llm_link_manager.cc:210]100 "
            f"LinkClusters: ErrorNo: 1343270921(local cluster link with remote cluster failed!) "
            f"[GE][MODULE]Failed to link clusters, index = {n}\n")


def plog(tree: Path, node: str, pid: int) -> Path:
    path = tree / node / "ascend/log/debug/plog" / f"plog-{pid}_20251112034000000.log"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


class Watch:
    """A `ddtriage watch` process and the events file it writes."""

    def __init__(self, tree: Path, work: Path) -> None:
        self.events = work / "events.jsonl"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "analyzer", "watch", str(tree), "--format", "lines", "--state",
             str(work / "state.json"), "-o", f"jsonl:{self.events}", "-o", str(work / "final.json")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
        self.seen = len(self.read()) if self.events.exists() else 0  # a restart appends
        self.wait_for(lambda e: e["kind"] == "watch", 20)  # started (imports, rules, the first walk)

    def read(self) -> list[dict]:
        with open(self.events, encoding="utf-8") as handle:
            return [json.loads(line) for line in handle if line.endswith("\n")]

    def wait_for(self, wanted, timeout: float = 5.0) -> float:
        """Seconds until an event past those seen so far satisfies `wanted`."""
        start = time.monotonic()
        while time.monotonic() - start < timeout:
            if self.events.exists():
                events = self.read()
                if any(wanted(e) for e in events[self.seen:]):
                    return time.monotonic() - start
            assert self.proc.poll() is None, self.proc.stderr.read().decode() if self.proc.stderr else ""
            time.sleep(0.01)
        raise AssertionError("no such event in time")


def index_of(event: dict) -> int | None:
    text = event.get("text", "")
    return int(text.rsplit("index = ", 1)[1]) if event["kind"] == "finding" and "index = " in text else None


def test_watch_follows_a_changing_tree_across_a_restart(tmp_path):
    """Appends, a new plog, a rotation, a truncation, a deletion, a new node folder; then watch is
    killed (SIGKILL), lines are written while it is down, and it restarts from --state. Every
    planted line is reported once, within a second; the final report is a scan's."""
    tree, work = tmp_path / "tree", tmp_path / "work"
    work.mkdir()
    first = plog(tree, "node-1", 100)
    first.write_text(planted(1))  # there before watch starts
    watch = Watch(tree, work)
    latencies: dict[int, float] = {}

    def plant(n: int, path: Path, mode: str = "a") -> None:
        with open(path, mode, encoding="utf-8") as handle:
            handle.write(planted(n))
        latencies[n] = watch.wait_for(lambda e: index_of(e) == n)

    watch.wait_for(lambda e: index_of(e) == 1)
    plant(2, first)  # an append
    second = plog(tree, "node-1", 101)
    plant(3, second)  # a new plog file
    os.rename(second, f"{second}.1")  # a rotation: the old file moves, a new one starts
    plant(4, second)
    plant(5, first, mode="w")  # a truncation in place, then the process writes on
    Path(f"{second}.1").unlink()  # a deletion
    plant(6, plog(tree, "node-2", 200))  # a new node folder
    deadline = time.monotonic() + 5
    while "node-2" not in (work / "state.json").read_text() and time.monotonic() < deadline:
        time.sleep(0.01)  # the state is saved right after the events
    watch.proc.kill()
    watch.proc.wait()
    with open(second, "a", encoding="utf-8") as handle:  # while watch is down
        handle.write(planted(7))
    plog(tree, "node-3", 300).write_text(planted(8))
    watch = Watch(tree, work)
    watch.wait_for(lambda e: index_of(e) == 8)
    watch.wait_for(lambda e: index_of(e) == 7)
    watch.proc.send_signal(signal.SIGTERM)
    assert watch.proc.wait(10) == 1  # findings: scan's exit code
    reported = sorted(n for n in map(index_of, watch.read()) if n is not None)
    assert reported == [1, 2, 3, 4, 5, 6, 7, 8]  # each once, across the restart
    assert max(latencies.values()) <= LATENCY, latencies
    assert [e["kind"] for e in watch.read()].count("note") == 1  # the truncation
    final = json.loads((work / "final.json").read_text())
    out = io.StringIO()
    write_report("json", analyze([str(tree)]), out)
    scanned = json.loads(out.getvalue())
    assert final["findings"] == scanned["findings"]
    assert final["summary"]["incidents"] == scanned["summary"]["incidents"]
    assert final == scanned


def test_the_final_report_follows_changes_that_bring_no_finding(tmp_path):
    """Lines without a code appended, a file renamed, another deleted: no event, but the final
    report is a scan of the tree as it is (it kept the files, names and line counts of before)."""
    tree, work = tmp_path / "tree", tmp_path / "work"
    work.mkdir()
    first, second, third = plog(tree, "node-1", 100), plog(tree, "node-1", 101), plog(tree, "node-1", 102)
    for n, path in enumerate((first, second, third), 1):
        path.write_text(planted(n))
    watch = Watch(tree, work)
    watch.wait_for(lambda e: index_of(e) == 3)
    with open(first, "a", encoding="utf-8") as handle:
        handle.write("[INFO] GE(100,python3):2025-11-12-03:41:00.000.000 [a.cc:1]100 Run: step 1\n" * 3)
    os.rename(second, f"{second}.1")
    third.unlink()
    deadline = time.monotonic() + 10  # the state is saved when the analysis is concluded again
    state = work / "state.json"
    while not (state.exists() and f"{second.name}.1" in state.read_text()) and time.monotonic() < deadline:
        time.sleep(0.02)
    watch.proc.send_signal(signal.SIGTERM)
    assert watch.proc.wait(10) == 1
    out = io.StringIO()
    write_report("json", analyze([str(tree)]), out)
    final = json.loads((work / "final.json").read_text())
    assert final["inputs"]["files"] == 2 and final == json.loads(out.getvalue())


def test_standard_input_gives_events_then_the_final_report(tmp_path):
    data = (SAMPLES / "decode-node-2" / "vllm_worker.log").read_bytes()
    runner = CliRunner()
    result = runner.invoke(cli, ["watch", "-", "--format", "jsonl", "-o", str(tmp_path / "final.json")], input=data)
    assert result.exit_code == 1, result.output
    events = [json.loads(line) for line in result.stdout.splitlines()]
    assert events[0] == {"kind": "watch", "tool": "ddtriage", "paths": ["-"], "resumed": False}
    assert own_document(result.stdout.encode()) == "watch event stream"  # a later scan leaves it out
    kinds = {e["kind"] for e in events}
    assert {"finding", "incident"} <= kinds
    findings = [e for e in events if e["kind"] == "finding"]
    assert {e["log_kind"] for e in findings} == {"application"}
    scanned = runner.invoke(cli, ["scan", "-", "--format", "json", "--fail-on", "never"], input=data)
    assert json.loads((tmp_path / "final.json").read_text()) == json.loads(scanned.stdout)
    assert len(findings) == len(json.loads(scanned.stdout)["findings"])


def test_lines_view_names_each_event(tmp_path):
    result = CliRunner().invoke(cli, ["watch", "-", "--format", "lines", "--fail-on", "never"],
                                input=planted(3).encode())
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0] == "watch: watching -"
    assert lines[1] == "finding: - -:1 0x5010B009 LLM_LINK_FAILED LinkLlmClusters -> check-network"
    assert lines[2].startswith("incident: new inc-")


@pytest.mark.parametrize(("args", "message"), [
    (["-", "sample_logs"], "- (standard input) is watched alone"),
    (["sample_logs", "-o", "-"], "watch writes its final reports to files"),
    (["-", "--state", "s.json"], "--state keeps offsets in files; a stream has none"),
    (["sample_logs", "--state", "sample_logs/prompt-node-1/cpp_app.log"],
     "--state sample_logs/prompt-node-1/cpp_app.log: it is the input"),
])
def test_usage_errors_are_one_line(args, message, in_root):
    result = CliRunner().invoke(cli, ["watch", *args])
    assert result.exit_code == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_bad_state_file_is_one_line_naming_it(tmp_path):
    state = tmp_path / "state.json"
    state.write_text("not json")
    result = CliRunner().invoke(cli, ["watch", str(tmp_path / "logs"), "--state", str(state)])
    assert result.exit_code == 2
    assert f"{state}: unusable watch state" in result.stderr


def test_the_live_view_lists_the_incidents_most_severe_first(rules):
    """What the terminal shows (rich), drawn from a follower's analysis of the sample logs."""
    from analyzer.cli.watch import _render
    from analyzer.run.api import Options
    from analyzer.run.watch import Follower, stable_id
    from rich.console import Console

    follower = Follower([str(SAMPLES)], Options().engine_factory(rules)())
    follower.sync(final=True)
    analysis = follower.analysis()
    console = Console(file=io.StringIO(), width=160, color_system=None)
    console.print(_render(follower, analysis, ["finding: the last line"]))
    shown = console.file.getvalue()
    assert "8 files · 66 findings · 13 related errors · 6 incidents" in shown
    ids = [stable_id(i, analysis) for i in analysis.summary.incidents]
    assert [shown.index(i) for i in ids] == sorted(shown.index(i) for i in ids)  # in the report's order
    assert "connection refused (socket)" in shown and shown.rstrip().endswith("finding: the last line")


def test_watch_writes_its_final_report_in_the_language_asked_for(tmp_path):
    """`--lang zh` (issue #20) reaches watch's final reports as it reaches scan's."""
    from analyzer.cli import cli
    from click.testing import CliRunner

    report = tmp_path / "final.md"
    log = (ROOT / "sample_logs" / "decode-node-2" / "vllm_worker.log").read_text()
    result = CliRunner().invoke(cli, ["watch", "-", "--lang", "zh", "-o", f"markdown:{report}", "--format", "lines",
                                      "--fail-on", "never", "-q"], input=log)
    assert result.exit_code == 0, result.output
    assert "## 事件" in report.read_text(encoding="utf-8")
