"""The command line as users run it: exit codes, formats, bad input, determinism.

Fixes from the first review of the CI gate (issue #11): exit codes on a closed pipe, output names
that ask for no known format, ddtriage's own files never scanned as logs, related errors in the CI
formats, inputs read with a caveat kept apart from skipped ones. Everything through the real command (folded from test_ci_review_fixes.py, the review of the CI gate (issue #11)).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

from hostile import ROOT

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
                          capture_output=True, text=True, timeout=120)
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


SAMPLES = ROOT / "sample_logs"


def _pipeline(script: str) -> subprocess.CompletedProcess:
    """`script` in bash with pipefail, `ddtriage` being this checkout's command."""
    prelude = f'ddtriage() {{ "{sys.executable}" -m analyzer "$@"; }}\n'
    return subprocess.run(["bash", "--noprofile", "--norc", "-o", "pipefail", "-c", prelude + script],
                          capture_output=True, cwd=ROOT, timeout=120, env={**os.environ, "PYTHONPATH": str(ROOT)})


@pytest.mark.parametrize("repeat", range(4))  # racy by nature: head may leave before or after the write
def test_a_reader_that_leaves_early_does_not_change_the_exit_code(repeat):
    explain = _pipeline("ddtriage explain 0x5010B001 | head -c1")
    assert explain.returncode == 0, explain.stderr
    assert explain.stderr == b""
    scan = _pipeline("ddtriage scan sample_logs --no-pager | head -1")
    assert scan.returncode == 1, scan.stderr  # sample_logs has findings: the --fail-on code, never 141
    assert scan.stderr == b"" and len(scan.stdout.splitlines()) == 1
    never = _pipeline("ddtriage scan sample_logs --fail-on never --format json | head -c1")
    assert never.returncode == 0, never.stderr


def _scan(*args: str, cwd=None) -> subprocess.CompletedProcess:
    """`ddtriage scan ARGS` through click's runner (no process is under test here), shaped as a
    finished process."""
    with contextlib.chdir(cwd or ROOT):
        result = CliRunner().invoke(cli, ["scan", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    return subprocess.CompletedProcess(["ddtriage", "scan", *args], result.exit_code, result.stdout, result.stderr)


def _usage_line(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("name", ["r.unknownext", "report.2025", "notes.docx"])
def test_an_output_name_that_names_no_format_is_a_usage_error(tmp_path, name):
    out = tmp_path / name
    line = _usage_line(_scan(str(SAMPLES), "-q", "-o", str(out)))
    assert "cannot tell the format from the name" in line and "sarif" in line and "junit" in line, line
    assert not out.exists()
    # --format says what to write: then the name is the user's business
    given = _scan(str(SAMPLES), "-q", "--format", "json", "-o", str(out))
    assert given.returncode == 1, given.stderr
    assert out.read_text().startswith("{")


def test_an_unknown_format_prefix_is_a_usage_error(tmp_path):
    line = _usage_line(_scan(str(SAMPLES), "-q", "-o", f"htlm:{tmp_path / 'r.html'}"))
    assert "unknown format 'htlm'" in line and "markdown" in line, line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["report.html", "report.HTM"])
def test_an_html_name_gets_the_html_report_never_text(tmp_path, name):
    out = tmp_path / name
    result = _scan(str(SAMPLES), "-q", "-o", str(out))
    assert result.returncode == 1, result.stderr
    head = out.read_text()[:200].lower()
    assert head.startswith("<!doctype html"), head
    line = _usage_line(_scan(str(SAMPLES), "-q", "--format", "text", "-o", str(tmp_path / "t.html")))
    assert "gets the HTML report, not text" in line, line
    assert not (tmp_path / "t.html").exists()


# -- ddtriage's own files are never logs (review D10) ----------------------------------------------

CI_LOG = (  # two findings: LLM_LINK_FAILED from LinkLlmClusters, LLM_WAIT_PROC_TIMEOUT from PullKvBlocks
    "E20251112 03:40:06.327589    63 llm_data_dist_transfer.cpp:75] LinkLlmClusters failed, ret = 5010b009\n"
    "[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:812]5571 PullKvBlocks: "
    "ErrorNo: 1343270913(request wait to be processed timeout!)\n"
)


@pytest.fixture
def ci(tmp_path):
    folder = tmp_path / "ci2"
    folder.mkdir()
    (folder / "app.log").write_text(CI_LOG)
    return folder


def test_a_baseline_written_into_the_scanned_folder_follows_the_output_rule(ci):
    written = _scan(str(ci), "-q", "--write-baseline", str(ci / "new-base.json"))  # written, left out (#18)
    assert written.returncode == 1, written.stderr
    assert (ci / "new-base.json").exists()
    again = _scan(str(ci), "-q", "--write-baseline", str(ci / "new-base.json"), "--baseline", str(ci / "new-base.json"))
    assert again.returncode == 0, again.stderr  # every finding known; the baseline itself is not read as a log
    line = _usage_line(_scan(str(ci), "--write-baseline", str(ci / "app.log")))
    assert "it is the input" in line and "the baseline would overwrite the log" in line, line
    assert (ci / "app.log").read_text() == CI_LOG
    line = _usage_line(_scan(str(ci), "--suppressions", str(ci / "app.log")))
    assert "--suppressions" in line and "it is the input" in line, line
    ok = _scan(str(ci), "-q", "--write-baseline", str(ci.parent / "base.json"))  # outside: fine
    assert ok.returncode == 1, ok.stderr


@pytest.mark.parametrize("fmt", ["json", "sarif", "junit", "markdown", "text", "github", "gitlab", "csv", "jsonl",
                                 "html", "baseline"])
def test_a_report_or_baseline_left_in_the_folder_is_not_read_as_a_log(ci, fmt):
    out = ci.parent / f"report-{fmt}"
    if fmt == "baseline":
        made = _scan(str(ci), "-q", "--write-baseline", str(out))
    else:
        made = _scan(str(ci), "-q", "--format", fmt, "-o", str(out))
    assert made.returncode == 1, made.stderr
    (ci / out.name).write_bytes(out.read_bytes())  # then copied next to the logs (an artifact download)
    again = _scan(str(ci), "--format", "json", "--fail-on", "never")
    assert again.returncode == 0, again.stderr
    import json

    doc = json.loads(again.stdout)
    assert doc["summary"]["findings"] == 2, doc["summary"]  # the two of app.log, none from the report
    assert doc["inputs"]["files"] == 1 and doc["inputs"]["skipped"] == []
    [note] = doc["inputs"]["notes"]
    assert note["source"].endswith(out.name) and "(its own output), not a log: left out" in note["note"], note
    assert f"{out.name}: a ddtriage" in again.stderr


def test_a_log_that_merely_mentions_ddtriage_is_read(ci):
    (ci / "other.log").write_text('{"tool": "other"}\nddtriage: ran\n' + CI_LOG)
    doc = __import__("json").loads(_scan(str(ci), "--format", "json").stdout)
    assert doc["summary"]["findings"] == 4 and "notes" not in doc["inputs"]


# -- read in full with a caveat: a note, not a skip (review D18) ------------------------------------

def test_inputs_read_with_a_caveat_are_notes_and_do_not_fail_strict(tmp_path):
    import json
    import zipfile

    bzh = tmp_path / "bzh.log"
    bzh.write_bytes(b"BZh91AY&SY this is not bzip\n" + CI_LOG.encode())
    bad = tmp_path / "badcrc.zip"
    with zipfile.ZipFile(bad, "w") as archive:
        archive.writestr("node-1/app.log", CI_LOG)
    data = bytearray(bad.read_bytes())
    crc = zipfile.ZipFile(bad).getinfo("node-1/app.log").CRC.to_bytes(4, "little")
    for at in (data.find(crc), data.rfind(crc)):  # local and central header
        data[at] ^= 0xFF
    bad.write_bytes(bytes(data))
    result = _scan(str(bzh), str(bad), "--strict", "--format", "json")
    assert result.returncode == 1, result.stderr  # findings; nothing skipped, so --strict has no say
    doc = json.loads(result.stdout)
    assert doc["summary"]["findings"] == 4 and doc["inputs"]["skipped"] == []
    notes = {n["source"].rsplit("/", 1)[-1]: n["note"] for n in doc["inputs"]["notes"]}
    assert "read as plain text" in notes["bzh.log"]
    assert "CRC mismatch" in notes["app.log"] and "the data was kept" in notes["app.log"]
    text = _scan(str(bzh), str(bad), "-q", "--no-pager").stdout
    assert "2 notes on inputs" in text and "skipped" not in text
    md = _scan(str(bzh), str(bad), "-q", "--format", "markdown").stdout
    assert "## Notes on inputs" in md and "Skipped inputs" not in md
    # data really not read still fails --strict
    (tmp_path / "enc.gz").write_bytes(b"\x1f\x8b\x08\x00junk")
    assert _scan(str(tmp_path / "enc.gz"), str(bzh), "-q", "--strict").returncode == 2


# -- related (neighbour-only) errors in the CI formats (review D24) ---------------------------------

NEIGHBOURS_ONLY = (  # a HCCL timeout (cann EI0006 + hccl 9), runtime 507046, HIXL 103901, MindIE: no LLM-DataDist code
    "[ERROR] HCCL(377,ker):2025-11-12-03:40:05.501.002 [hccl_comm.cc:99] [60][HcclCommPrepare] ret[9] timeout, EI0006\n"
    "[ERROR] RUNTIME(377,ker):2025-11-12-03:40:06.501.002 [stream.cc:99]60 StreamSync: runtime result = 507046\n"
    "[ERROR] HIXL(1,python3):2025-11-12-03:40:05.000.000 [hixl.cc:10]2 Transfer: ErrorNo: 103901() transfer failed\n"
    "[2025-11-12 03:40:09.000] [377] [377] [llm] [ERROR] [pd_link.cpp:88] : [MIE05E010019] pull kv failed\n"
)
RELATED = {("cann", "EI0006", 1), ("hccl", "9", 1), ("runtime", "507046", 2), ("hixl", "103901", 3),
           ("mindie", "MIE05E010019", 4)}


@pytest.fixture
def neighbours(tmp_path):
    path = tmp_path / "node-7" / "app.log"
    path.parent.mkdir()
    path.write_text(NEIGHBOURS_ONLY)
    return path


@pytest.mark.parametrize("fail_on", ["any", "related"])
def test_related_errors_show_in_every_ci_format(neighbours, fail_on, tmp_path):
    import json
    import re
    from xml.etree import ElementTree

    out = tmp_path / "out"
    out.mkdir()
    names = {"github": "a.github.txt", "junit": "j.xml", "gitlab": "g.gitlab.json", "sarif": "s.sarif"}
    result = _scan(str(neighbours), "-q", "--fail-on", fail_on, *[x for fmt, n in names.items()
                                                                  for x in ("-o", f"{fmt}:{out / n}")])
    assert result.returncode == (1 if fail_on == "related" else 0), result.stderr
    failing = fail_on == "related"
    # GitHub: one annotation each, on its file and line, at the level of the gate
    commands = [ln for ln in (out / names["github"]).read_text().splitlines() if ln.startswith("::")]
    got = set()
    for ln in commands:
        m = re.match(r"::(\w+) file=[^,]*app\.log,line=(\d+),title=ddtriage%3A related (\S+) error (\S+)", ln)
        assert m and m.group(1) == ("error" if failing else "warning"), ln
        got.add((m.group(3), m.group(4), int(m.group(2))))
    assert got == RELATED and len(commands) == 5
    # JUnit: a test case each; failures only when they fail the gate, else passing with system-out
    suite = ElementTree.parse(out / names["junit"]).getroot()
    cases = [c for c in suite.iter("testcase") if c.get("classname", "").startswith("related-")]
    assert sorted(c.get("classname") for c in cases) == sorted(f"related-{f}" for f, _, _ in RELATED)
    assert all((c.find("failure") is not None) == failing for c in cases)
    assert all(c.find("system-out") is not None for c in cases if not failing)
    assert int(suite.get("failures")) == (5 if failing else 0)
    # GitLab: an issue each, unique fingerprints, minor (major when they fail the gate)
    issues = json.loads((out / names["gitlab"]).read_text())
    assert {(i["check_name"], i["location"]["lines"]["begin"]) for i in issues} == \
        {(f"related-{f}", n) for f, _, n in RELATED}
    assert len({i["fingerprint"] for i in issues}) == 5
    assert {i["severity"] for i in issues} == {"major" if failing else "minor"}
    # SARIF: a result each, under its family's rule, with a fingerprint
    run = json.loads((out / names["sarif"]).read_text())["runs"][0]
    rules = run["tool"]["driver"]["rules"]
    assert {(r["properties"]["family"], r["properties"]["code"], r["locations"][0]["physicalLocation"]["region"]
             ["startLine"]) for r in run["results"]} == RELATED
    assert all(rules[r["ruleIndex"]]["id"] == r["ruleId"] == f"related-{r['properties']['family']}"
               for r in run["results"])
    assert len({r["partialFingerprints"]["ddtriage/v1"] for r in run["results"]}) == 5
