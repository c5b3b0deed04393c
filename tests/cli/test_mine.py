"""`ddtriage mine` through the command line: the sample logs and the test corpora give draft
families that `ddtriage rules check` proves, and bad input gets one line."""

from __future__ import annotations

import json
from pathlib import Path

from analyzer.cli import cli
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_mine_sample_logs_and_corpora_writes_drafts_rules_check_proves(tmp_path: Path) -> None:
    drafts = tmp_path / "drafts"
    corpora = (str(ROOT / "sample_logs"), str(ROOT / "tests" / "data"))
    code, out, err = run("mine", *corpora, "--top", "25", "--draft-rules", str(drafts), "--format", "json", "-q")
    assert code == 0, err
    listed = json.loads(out)["templates"]
    drafted = {t["id"] for t in listed if t["drafted"]}
    assert len(listed) == 25 and len(drafted) >= 20 and (drafts / "neighbours.yaml").is_file()
    code, out, err = run("rules", "check", str(drafts))
    assert code == 0, err
    # the drafts are in effect when the folder is given as --rules: their lines are explained now
    code, out, _ = run("mine", *corpora, "--rules", str(drafts), "--format", "json", "--top", "1000")
    assert code == 0
    left = {t["id"] for t in json.loads(out)["templates"]}
    assert left and not left & drafted


def test_mine_json_and_the_time_options() -> None:
    code, out, _ = run("mine", str(ROOT / "sample_logs"), "--format", "json", "--top", "3",
                       "--since", "2025-11-12 03:40:30", "--until", "2025-11-12 03:40:30")
    assert code == 0
    report = json.loads(out)
    assert [t["template"] for t in report["templates"]] == [
        "Heartbeat lost heartbeat from <IP> for <N> times",
        "ra_peer_heartbeat_check peer <IP> heartbeat lost <N> times"]
    assert report["templates"][0]["nodes"] == ["prompt-node-1"]
    assert report["templates"][0]["seconds_to_incident"] == 0.0


def test_mine_bad_input_is_one_line(tmp_path: Path) -> None:
    code, _, err = run("mine", str(tmp_path / "nope.log"))
    assert code == 2 and err.count("\n") <= 2 and "nope.log" in err and "Traceback" not in err
    blocker = tmp_path / "file"
    blocker.write_text("x")
    code, _, err = run("mine", str(ROOT / "sample_logs"), "--draft-rules", str(blocker / "sub"))
    assert code == 2 and "Traceback" not in err and str(blocker / "sub") in err
    code, _, err = run("mine", str(ROOT / "sample_logs"), "--since", "2025-11-13", "--until", "2025-11-12")
    assert code == 2 and "--since is later than --until" in err
    code, _, err = run("mine", "-")
    assert code == 2 and "standard input" in err and err.count("\n") == 1


def test_scan_unexplained_lists_templates_near_each_incident(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code, _, err = run("scan", str(ROOT / "sample_logs"), "--unexplained", "-q", "-o", str(report),
                       "-o", str(tmp_path / "r.md"), "-o", str(tmp_path / "r.txt"))
    assert code == 1, err  # findings
    rows = json.loads(report.read_text(encoding="utf-8"))["unexplained"]
    heartbeat = [r for r in rows if r["template"] == "Heartbeat lost heartbeat from <IP> for <N> times"]
    assert heartbeat and heartbeat[0]["incident"] == 3 and heartbeat[0]["nodes"] == ["prompt-node-1"]
    assert heartbeat[0]["line"] == 106 and heartbeat[0]["source"].endswith("plog-4811_20251112034001123.log")
    assert {r["incident"] for r in rows} <= {1, 2, 3, 4, 5} and all(r["count"] >= 1 for r in rows)
    assert "Unexplained errors near the incidents" in (tmp_path / "r.txt").read_text(encoding="utf-8")
    md = (tmp_path / "r.md").read_text(encoding="utf-8")
    assert "## Unexplained errors near the incidents" in md and "<details>" in md
    # without the flag the reports do not change (and nothing more is read)
    code, _, _ = run("scan", str(ROOT / "sample_logs"), "-q", "-o", str(report))
    assert "unexplained" not in json.loads(report.read_text(encoding="utf-8"))
