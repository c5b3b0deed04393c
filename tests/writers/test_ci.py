"""The CI formats, through the real CLI, validated against their published schemas or their
consumer's documented rules (tests/schemas/README.md), and checked to put every finding on its
file and line. Expected values are read from the JSON report of the same scan, or written here.
"""

import json
import re
from pathlib import Path
from urllib.parse import unquote

import jsonschema
import pytest
import xmlschema
from analyzer.cli import cli
from click.testing import CliRunner

from bundles import collector_bundle

ROOT = Path(__file__).resolve().parents[2]
SCHEMAS = Path(__file__).parents[1] / "schemas"


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def report(fmt, *paths):
    code, out, err = run("scan", *paths, "--format", fmt, "--fail-on", "never", "--jobs", "1")
    assert code == 0, err
    return out


@pytest.fixture(scope="module")
def sarif_schema():
    return json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())


@pytest.fixture(scope="module")
def junit_schema():
    return xmlschema.XMLSchema(SCHEMAS / "junit-10.xsd")


@pytest.fixture(scope="module")
def gitlab_schema():
    return json.loads((SCHEMAS / "gitlab-codequality.schema.json").read_text())


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    """sample_logs/ as findings from the JSON report, plus the same logs packed as bundles."""
    packed = tmp_path_factory.mktemp("bundles")
    for node in ("decode-node-2", "prompt-node-1"):
        (packed / f"{node}.tar.gz").write_bytes(collector_bundle(ROOT / "sample_logs" / node))
    return packed


def findings_of(*paths):
    return json.loads(report("json", *paths))["findings"]


# --- SARIF -----------------------------------------------------------------------------------

def test_sarif_validates_and_puts_every_finding_on_its_file_and_line(in_root, sarif_schema):
    log = json.loads(report("sarif", "sample_logs"))
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    run_ = log["runs"][0]
    rules = run_["tool"]["driver"]["rules"]
    results = [r for r in run_["results"] if not r["properties"].get("related")]  # related errors: their own test
    for r in results:
        rule = rules[r["ruleIndex"]]
        assert rule["id"] == r["ruleId"] and rule["help"]["text"] and rule["properties"]["action"]
    got = sorted((unquote(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]),
                  r["locations"][0]["physicalLocation"]["region"]["startLine"], r["properties"]["code"],
                  r["partialFingerprints"]["ddtriage/v1"], r["level"]) for r in results)
    want = sorted((f["source"], f["line"], f["code"], f["fingerprint"],
                   "warning" if f["recoverable"] is True else "error") for f in findings_of("sample_logs"))
    assert got == want and len(want) == 66
    assert (Path(got[0][0])).is_file()  # a relative URI a code-scanning view resolves in the checkout


def test_sarif_names_archive_members_and_the_validator_can_fail(sample, sarif_schema):
    log = json.loads(report("sarif", sample))
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    uris = {unquote(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]) for r in log["runs"][0]["results"]
            if not r["properties"].get("related")}
    sources = {"file://" + f["source"] for f in findings_of(sample)}
    assert uris == sources
    assert any(u.endswith("decode-node-2.tar.gz!decode-node-2/plog.tar.gz!debug/plog/plog-5569_20251112034002789.log")
               for u in uris)
    broken = json.loads(json.dumps(log))
    broken["runs"][0]["results"][0]["level"] = "fatal"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft4Validator(sarif_schema).validate(broken)


# --- JUnit -----------------------------------------------------------------------------------

def test_junit_validates_with_a_failure_per_group_at_its_file_and_line(in_root, junit_schema):
    xml = report("junit", "sample_logs")
    junit_schema.validate(xml)
    data = junit_schema.to_dict(xml)
    suite = data["testsuite"][0]
    cases = suite["testcase"]
    failed = [c for c in cases if "failure" in c]
    findings = findings_of("sample_logs")
    groups = {}
    for f in findings:
        groups.setdefault((f["fingerprint"], f["source"]), f)  # the first finding of each group
    by_case = {(f["rule"], f"{f['source']}:{f['line']}"): f for f in groups.values()}
    assert sorted((c["@classname"], c["@name"]) for c in failed) == sorted(by_case)
    for c in failed:
        first = by_case[(c["@classname"], c["@name"])]
        assert c["failure"][0]["@message"] == first["remedy"]
        assert c["failure"][0]["@type"] == (first["name"] or first["code"])
    assert int(suite["@failures"]) == len(failed) and int(suite["@tests"]) == len(cases)
    assert any(c["@name"] == "no findings" and "failure" not in c for c in cases)  # rules that passed


def test_junit_survives_control_characters_in_a_log_line(tmp_path, junit_schema):
    (tmp_path / "a.log").write_bytes(b"\x1b[31m[ERROR] GE(1,p):2025-11-12-03:40:05.1 [llm.cc:1]2 PullKvBlocks: "
                                     b"ErrorNo: 1343270913(request wait to be processed timeout!) \x00\x07 <&>\n")
    xml = report("junit", tmp_path)
    junit_schema.validate(xml)
    assert "&lt;&amp;&gt;" in xml


# --- GitHub ----------------------------------------------------------------------------------

ANNOTATION = re.compile(r"^::(error|warning) (?:file=([^,:]*),line=(\d+),)?title=([^,:]*)::(.*)$")


def unescape(text):
    return text.replace("%2C", ",").replace("%3A", ":").replace("%0A", "\n").replace("%0D", "\r").replace("%25", "%")


def test_github_annotations_at_most_ten_per_level_each_on_a_finding(in_root):
    out = report("github", "sample_logs")
    lines = out.splitlines()
    commands = [ln for ln in lines if ln.startswith("::")]
    assert all(ANNOTATION.match(ln) for ln in commands), [ln for ln in commands if not ANNOTATION.match(ln)]
    findings = {}
    for f in findings_of("sample_logs"):
        findings.setdefault((f["source"], f["line"]), []).append(f)
    per_level = {"error": 0, "warning": 0}
    for ln in commands:
        kind, file, line, title, message = ANNOTATION.match(ln).groups()
        per_level[kind] += 1
        if file is None:  # the count of what was left out
            assert re.match(r"\d+ more findings( and \d+ more related errors)? in \d+ more places not annotated",
                            unescape(message))
            continue
        on_line = findings[(unescape(file), int(line))]
        f = next(f for f in on_line if f["code"] in unescape(title))
        assert kind == ("warning" if f["recoverable"] is True else "error")
        assert unescape(title).startswith(f"ddtriage: {f['name'] or 'unknown'}")
    assert per_level == {"error": 10, "warning": 10}  # sample_logs has more of each than GitHub shows
    places = {(f["fingerprint"], f["source"]) for fs in findings.values() for f in fs}
    places |= {(r["family"], r["code"], r["source"]) for r in json.loads(report("json", "sample_logs"))["related"]}
    left = [int(re.search(r"in (\d+) more places", ln).group(1)) for ln in commands if "more places" in ln]
    assert sum(left) + len(commands) - len(left) == len(places)  # every place annotated or counted


def test_github_escapes_properties_and_data():
    from analyzer.writers.github import annotation
    assert annotation("error", "50% done\nnext", "a,b:c.log", 3, "t: x") == \
        "::error file=a%2Cb%3Ac.log,line=3,title=t%3A x::50%25 done%0Anext"


def test_step_summary_stays_under_one_mib_with_bounded_lines(tmp_path):
    """200 bundles' worth: many files with long names and many distinct findings."""
    line = ("[ERROR] GE({pid},python3):2025-11-12-03:40:{s:02d}.101.002 [llm_datadist.cc:812]{pid} {api}: "
            "ErrorNo: {code}(failed) req_id={pid}{n}\n")
    apis = ["PullKvBlocks", "LinkLlmClusters", "PushKvBlocks", "UnlinkLlmClusters"]
    codes = [1343270913, 1343270921, 1343270930, 1343270922, 1343270919, 1343270935]
    logs, whole = tmp_path / "logs", tmp_path / "whole.json"
    for b in range(200):
        d = logs / f"bundle-{b:03d}-{'x' * 120}" / "ascend" / "log" / "debug" / "plog"
        d.mkdir(parents=True)
        body = "".join(line.format(pid=1000 + b, s=n % 60, api=apis[n % 4], code=codes[n % 6], n=n) for n in range(60))
        (d / f"plog-{1000 + b}_20251112034001123.log").write_text(body)
    # One scan: the summary on stdout, and the JSON report beside it (`-o`, the scan runs once).
    code, out, err = run("scan", logs, "--format", "github-summary", "--fail-on", "never", "-o", "-",
                         "-o", f"json:{whole}")
    assert code == 0, err
    assert len(out.encode()) < 1024 * 1024
    assert max(len(ln) for ln in out.splitlines()) <= 2000
    assert out.count("<details>") == out.count("</details>")
    assert "more: see the JSON report" in out  # the overflow is folded and counted, not dropped silently
    summary_json = json.loads(whole.read_text())
    assert len(summary_json["findings"]) == 200 * 60  # 12,000 findings, 12,000 places: most are folded away


# --- GitLab ----------------------------------------------------------------------------------

def test_gitlab_validates_with_unique_fingerprints_on_file_and_line(in_root, gitlab_schema):
    issues = json.loads(report("gitlab", "sample_logs"))
    jsonschema.Draft7Validator(gitlab_schema).validate(issues)
    prints = [i["fingerprint"] for i in issues]
    assert len(set(prints)) == len(prints)
    issues = [i for i in issues if not i["check_name"].startswith("related-")]  # related errors: their own test
    findings = findings_of("sample_logs")
    firsts = {}
    for f in findings:
        firsts.setdefault((f["fingerprint"], f["source"]), f)
    assert sorted((i["location"]["path"], i["location"]["lines"]["begin"]) for i in issues) == \
        sorted((f["source"], f["line"]) for f in firsts.values())
    sev = {(i["location"]["path"], i["location"]["lines"]["begin"], i["check_name"]): i["severity"] for i in issues}
    for f in firsts.values():
        assert sev[(f["source"], f["line"], f["rule"])] == {False: "critical", None: "major", True: "minor"}[f["recoverable"]]


def test_gitlab_fingerprints_survive_a_shifted_rerun():
    """GitLab tells new from fixed by fingerprint: run2 keeps run1's and adds exactly one."""
    base = ROOT / "tests" / "data" / "baseline"
    one = {i["fingerprint"] for i in json.loads(report("gitlab", base / "run1"))}
    two = {i["fingerprint"] for i in json.loads(report("gitlab", base / "run2"))}
    assert one < two and len(two - one) == 1


# --- several outputs, one scan ---------------------------------------------------------------

def test_several_outputs_from_one_scan(in_root, tmp_path, monkeypatch):
    import analyzer.run.api
    calls = []
    real = analyzer.run.api.analyze
    monkeypatch.setattr(analyzer.run.api, "analyze", lambda *a, **k: calls.append(1) or real(*a, **k))
    outs = {"report.txt": "text", "findings.sarif": "sarif", "summary.md": "markdown", "tests.xml": "junit",
            "gl.json": "gitlab"}
    args = [f"-o{tmp_path / n}" if n != "gl.json" else f"-ogitlab:{tmp_path / n}" for n in outs]
    code, out, err = run("scan", "sample_logs", "--fail-on", "never", *args)
    assert (code, out, err) == (0, "", "")
    assert len(calls) == 1
    for n, fmt in outs.items():
        assert (tmp_path / n).read_text() == report(fmt, "sample_logs"), n


def test_format_with_one_output_still_works_and_unclear_names_are_refused(in_root, tmp_path):
    code, _, _ = run("scan", "sample_logs", "--format", "json", "-o", tmp_path / "r.txt", "--fail-on", "never")
    assert code == 0 and json.loads((tmp_path / "r.txt").read_text())["tool"] == "ddtriage"
    code, _, err = run("scan", "sample_logs", "-o", tmp_path / "a.sarif", "-o", tmp_path / "b.out")
    assert code == 2 and "b.out: cannot tell the format" in err and not (tmp_path / "a.sarif").exists()


# --- scanning nothing ------------------------------------------------------------------------

def test_empty_folder_or_empty_selection_fails_the_gate(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    code, out, err = run("scan", empty)
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and "nothing was scanned" in err
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "a.log").write_text("all fine\n")
    code, out, err = run("scan", tmp_path / "logs", "--include", "*.plog")
    assert code == 2 and "1 file or folder left out by --include/--exclude" in err
    assert run("scan", empty, "--allow-empty")[0] == 0
    assert run("scan", tmp_path / "logs")[0] == 0


# --- storms, skipped inputs, known errors, a closed stdout ------------------------------------

def test_a_storm_in_one_file_is_one_group_and_sarif_counts_what_it_leaves_out(tmp_path, sarif_schema):
    line = "[ERROR] GE(77,p):2025-11-12-03:40:{s:02d}.1 [llm.cc:1]78 PullKvBlocks: ErrorNo: 1343270913(x) req_id={n}\n"
    (tmp_path / "storm.log").write_text("".join(line.format(s=n % 60, n=n) for n in range(150)))
    log = json.loads(report("sarif", tmp_path))
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    assert len(log["runs"][0]["results"]) == 100
    notes = [n["message"]["text"] for n in log["runs"][0]["invocations"][0]["toolExecutionNotifications"]]
    assert notes == ["50 more findings not written (SARIF viewers keep 5000; each file lists at most 100 of one "
                     "fingerprint); see the JSON report"]
    issues = json.loads(report("gitlab", tmp_path))
    assert len(issues) == 1 and "(150 times, lines 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 and 140 more)" in issues[0]["description"]
    out = report("github", tmp_path)
    assert out.count("::error ") == 1 and "150 times" in out


def test_skipped_inputs_are_notices_and_take_no_findings_place(tmp_path):
    import gzip
    text = (ROOT / "sample_logs" / "decode-node-2" / "vllm_worker.log").read_bytes()
    (tmp_path / "cut.log.gz").write_bytes(gzip.compress(text, mtime=0)[:2000])
    out = report("github", tmp_path)
    notices = [ln for ln in out.splitlines() if ln.startswith("::notice ")]
    assert len(notices) == 1 and "title=ddtriage%3A skipped " in notices[0] and "cut.log.gz" in notices[0]
    sarif = json.loads(report("sarif", tmp_path))
    assert any("skipped" in n["message"]["text"] for n in sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"])


def test_github_outputs_say_what_the_baseline_hid(tmp_path):
    base = ROOT / "tests" / "data" / "baseline"
    run("scan", base / "run1", "--write-baseline", tmp_path / "b.json", "-q")
    code, out, _ = run("scan", base / "run2", "--baseline", tmp_path / "b.json", "-o", "github:-",
                       "-o", f"github-summary:{tmp_path / 's.md'}")
    assert code == 1
    assert f"ddtriage: baseline {tmp_path / 'b.json'}: 1 new, 9 known (not reported), 0 gone" in out
    assert "- baseline " in (tmp_path / "s.md").read_text()


def test_files_are_written_before_a_closed_stdout(in_root, tmp_path):
    import subprocess
    import sys
    exe = [sys.executable, "-m", "analyzer", "scan", "sample_logs", "--fail-on", "never",
           "-o", "-", "-o", str(tmp_path / "f.sarif")]
    proc = subprocess.Popen(exe, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader went away before the first byte
    proc.wait(timeout=120)
    assert json.loads((tmp_path / "f.sarif").read_text())["runs"][0]["results"]


def test_a_clean_run_is_valid_in_every_ci_format(tmp_path, sarif_schema, junit_schema, gitlab_schema):
    (tmp_path / "ok.log").write_text("[INFO] all links up\nLLM_SUCCESS\n")
    log = json.loads(report("sarif", tmp_path))
    jsonschema.Draft4Validator(sarif_schema).validate(log)
    assert log["runs"][0]["results"] == []
    xml = report("junit", tmp_path)
    junit_schema.validate(xml)
    suite = junit_schema.to_dict(xml)["testsuite"][0]
    assert suite["@failures"] == "0" and int(suite["@tests"]) == len(suite["testcase"]) > 40
    assert json.loads(report("gitlab", tmp_path)) == []
    jsonschema.Draft7Validator(gitlab_schema).validate([])
    assert not [ln for ln in report("github", tmp_path).splitlines() if ln.startswith("::")]
    assert "No LLM-DataDist status codes found." in report("github-summary", tmp_path)
