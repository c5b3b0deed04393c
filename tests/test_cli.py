"""The command line as users run it: exit codes, formats, bad input, determinism."""

import json
import subprocess
import sys

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

PULL_TIMEOUT = ("[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:812]5571 PullKvBlocks: "
                "ErrorNo: 1343270913(request wait to be processed timeout!) [GE][MODULE]pull blocks timeout\n")
RECOVERABLE = "[ERROR] GE(1,p):2025-11-12-03:40:05.1 [llm.cc:1]2 LinkClusters: ErrorNo: 1343270925(link is current processing, try again later!)\n"


def run(*args, input=None):
    result = CliRunner().invoke(cli, list(args), input=input, catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def logs(tmp_path):
    (tmp_path / "a.log").write_text("noise\n" + PULL_TIMEOUT)
    (tmp_path / "b.log").write_text(RECOVERABLE)
    (tmp_path / "clean.log").write_text("nothing to see\nLLM_SUCCESS\n")
    return tmp_path


def test_exit_codes_follow_fail_on(logs):
    assert run("scan", str(logs / "clean.log"))[0] == 0
    assert run("scan", str(logs / "b.log"))[0] == 1
    assert run("scan", str(logs / "b.log"), "--fail-on", "unrecoverable")[0] == 0
    assert run("scan", str(logs / "a.log"), "--fail-on", "unrecoverable")[0] == 1
    assert run("scan", str(logs / "a.log"), "--fail-on", "never")[0] == 0
    assert run("scan", str(logs), "--format", "yaml")[0] == 2


def test_json_report_shape(logs):
    code, out, _ = run("scan", str(logs), "--format", "json")
    assert code == 1
    report = json.loads(out)
    assert report["inputs"]["files"] == 3 and report["inputs"]["lines"] == 5
    f = report["findings"][0]
    for key in ("source", "line", "timestamp", "code", "name", "api", "api_evidence", "recoverable",
                "rule", "action", "remedy", "text"):
        assert key in f
    assert (f["source"], f["line"], f["code"], f["api"], f["action"]) == (
        str(logs / "a.log"), 2, "0x5010B001", "PullKvBlocks", "relink")
    assert f["timestamp"] == "2025-11-12T03:40:05.101002"


def test_missing_path_is_named_and_the_rest_still_scanned(logs):
    code, out, err = run("scan", str(logs / "nope.log"), str(logs / "a.log"), "--format", "json")
    assert code == 2
    assert err.strip() == f"ddtriage: error: {logs / 'nope.log'}: no such file or directory"
    report = json.loads(out)
    assert len(report["findings"]) == 1
    assert report["inputs"]["skipped"] == [{"source": str(logs / "nope.log"), "reason": "no such file or directory"}]


def test_stdin_and_output_file(logs, tmp_path):
    out_file = tmp_path / "report.md"
    code, out, _ = run("scan", "-", "--format", "markdown", "--output", str(out_file), input=PULL_TIMEOUT)
    assert code == 1 and out == ""
    text = out_file.read_text()
    assert "LLM_WAIT_PROC_TIMEOUT" in text and "relink" in text and "`-:1`" in text


def test_reports_are_byte_identical_between_runs(logs):
    for fmt in ("text", "markdown", "json"):
        assert run("scan", str(logs), "--format", fmt)[1] == run("scan", str(logs), "--format", fmt)[1]


def test_text_report_fits_80_columns(logs):
    out = run("scan", str(logs))[1]
    assert "relink" in out
    assert max(len(line) for line in out.splitlines()) <= 80


def test_binary_junk_and_bad_bytes(tmp_path):
    junk = tmp_path / "junk.bin"
    junk.write_bytes(bytes(range(256)) * 400 + b"\n\xff\xfe ret = 0x5010B009 \x00\x00\n")
    code, out, err = run("scan", str(junk), "--format", "json")
    assert code == 1 and err == ""
    assert [f["line"] for f in json.loads(out)["findings"]] == [402]


def test_unreadable_file_is_skipped_with_reason(logs, monkeypatch):
    import builtins

    import analyzer.inputs.sources

    def deny(path, mode="r", *args, **kwargs):  # root can read anything; simulate EACCES
        if str(path).endswith("a.log"):
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(path, mode, *args, **kwargs)

    monkeypatch.setattr(analyzer.inputs.sources, "open", deny, raising=False)
    code, out, err = run("scan", str(logs), "--format", "json")
    assert err.strip() == f"ddtriage: warning: {logs / 'a.log'}: Permission denied"
    report = json.loads(out)
    assert report["inputs"]["skipped"] == [{"source": str(logs / "a.log"), "reason": "Permission denied"}]
    assert [f["source"] for f in report["findings"]] == [str(logs / "b.log")]
    assert code == 1


def test_symlink_loop_survived(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "x.log").write_text(RECOVERABLE)
    (tmp_path / "d" / "loop").symlink_to(tmp_path / "d")
    (tmp_path / "d" / "dangling").symlink_to(tmp_path / "missing")
    code, out, err = run("scan", str(tmp_path), "--format", "json")
    report = json.loads(out)
    assert len(report["findings"]) == 1
    assert "broken symlink" in err


def test_explain():
    code, out, _ = run("explain", "1343270913")
    assert code == 0
    assert "LLM_WAIT_PROC_TIMEOUT" in out and "wait-timeout-transfer" in out and "relink" in out
    assert run("explain", "LLM_SEQ_LENOVERLIMIT")[1].startswith("0x5010B011")
    info = json.loads(run("explain", "0x5010b0a3", "--format", "json")[1])
    assert info["name"] is None and info["rules"][0]["id"] == "unknown-code"
    code, out, _ = run("explain", "507046")  # a neighbour code: explained as such, never as LLM-DataDist
    assert code == 0 and out.startswith("runtime 507046") and "stream sync timeout" in out
    code, _, err = run("explain", "5070466")
    assert code == 2 and "not an LLM-DataDist status code" in err


def test_rules_list_and_check(tmp_path):
    code, out, _ = run("rules", "list")
    assert code == 0 and "wait-timeout-transfer" in out
    assert run("rules", "check")[0] == 0
    (tmp_path / "bad.yaml").write_text("rules:\n  - id: Bad Id\n")
    code, _, err = run("rules", "check", str(tmp_path))
    assert code == 2 and "bad.yaml: rule #1: `id` must be" in err and "Traceback" not in err
    code, _, err = run("scan", "-", "--rules", str(tmp_path), input="x\n")
    assert code == 2 and err.count("\n") == 1


def test_real_console_script(logs):
    proc = subprocess.run([sys.executable, "-m", "analyzer", "scan", str(logs / "a.log"), "--format", "json"],
                          capture_output=True, text=True)
    assert proc.returncode == 1
    assert json.loads(proc.stdout)["findings"][0]["action"] == "relink"


def test_library_call(logs):
    from analyzer import analyze

    result = analyze([str(logs)])
    assert [f.action for f in result.findings] == ["relink", "retry-later"]
    assert result.summary.bursts[0].lead.api == "PullKvBlocks"
    assert result.inputs.files == 3


def test_until_is_inclusive_to_its_precision(tmp_path):
    log = tmp_path / "a.log"
    log.write_text(PULL_TIMEOUT)  # 2025-11-12 03:40:05.101
    def count(*args):
        return len(json.loads(run("scan", str(log), "--format", "json", *args)[1])["findings"])
    assert count("--since", "2025-11-12", "--until", "2025-11-12") == 1
    assert count("--until", "2025-11-12 03:40") == 1
    assert count("--until", "2025-11-12 03:40:05") == 1
    assert count("--until", "2025-11-12 03:40:04") == 0
    assert count("--since", "2025-11-12T03:40:05.2") == 0
    assert run("scan", str(log), "--max-bytes", "-5")[0] == 2


def test_own_report_is_not_scanned_next_time(logs):
    out = logs / "report.txt"
    first = run("scan", str(logs), "--output", str(out))  # inside the scanned folder: written, left out
    second = run("scan", str(logs), "--output", str(out))  # the report of the first run is not read
    third = run("scan", str(logs), "--output", str(out), "--exclude", "report.txt")
    assert first[0] == second[0] == third[0] == 1
    assert out.read_text().splitlines()[0].startswith("ddtriage: 2 findings")
