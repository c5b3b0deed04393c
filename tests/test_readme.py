"""The CI recipes run as their CI would run them: each file is parsed, the ddtriage command lines
it shows are run by bash (with the installed `ddtriage` on PATH) against sample_logs/ or the
baseline corpus, and the reports each CI reads are checked against their schemas.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import xmlschema
import yaml

ROOT = Path(__file__).resolve().parent.parent
SCHEMAS = Path(__file__).parent / "schemas"
BASELINE = ROOT / "tests" / "data" / "baseline"
EXPR = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")


def bash(script, cwd, **env):
    """Run a CI step's script as GitHub/GitLab/Jenkins would: bash, -e, ddtriage on PATH."""
    full = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **env)
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script], cwd=cwd, env=full,
                          capture_output=True, text=True, timeout=300)


def junit_ok(path):
    xmlschema.XMLSchema(SCHEMAS / "junit-10.xsd").validate(str(path))


def sarif_ok(path):
    jsonschema.Draft4Validator(json.loads((SCHEMAS / "sarif-schema-2.1.0.json").read_text())).validate(
        json.loads(Path(path).read_text()))


# --- GitHub: action.yml and the example workflow -----------------------------------------------

def load_action():
    return yaml.safe_load((ROOT / "action.yml").read_text())


def run_action(with_, cwd):
    """The composite action's steps with these inputs (its install step is checked, not run: the
    package under test is already installed)."""
    action = load_action()
    inputs = {k: str(v.get("default", "")) for k, v in action["inputs"].items()} | with_
    install, scan = action["runs"]["steps"]
    assert action["runs"]["using"] == "composite"
    assert 'pip install --quiet "$GITHUB_ACTION_PATH"' in install["run"] and (ROOT / "pyproject.toml").is_file()
    env = {k: EXPR.sub(lambda m: inputs[m.group(1)], v) for k, v in scan["env"].items()}
    summary = cwd / "step_summary.md"
    summary.write_text("")
    result = bash(scan["run"], cwd, GITHUB_STEP_SUMMARY=str(summary), **env)
    return result, summary


def workflow_step():
    flow = yaml.safe_load((ROOT / "recipes" / "github-workflow.yml").read_text())
    steps = flow["jobs"]["pd-test"]["steps"]
    ours = next(s for s in steps if s.get("uses", "").split("@")[0].endswith("/ddtriage"))
    upload = next(s for s in steps if s.get("uses", "").startswith("github/codeql-action/upload-sarif"))
    return ours, upload


def test_workflow_uses_only_inputs_the_action_declares():
    ours, upload = workflow_step()
    action = load_action()
    assert set(ours["with"]) <= set(action["inputs"])
    assert [k for k, v in action["inputs"].items() if v.get("required")] == ["paths"]
    assert upload["with"]["sarif_file"] == ours["with"]["sarif"]


def test_action_on_sample_logs_annotates_summarises_and_fails(tmp_path):
    ours, _ = workflow_step()
    with_ = {k: str(v) for k, v in ours["with"].items() if k != "baseline"} | {"paths": str(ROOT / "sample_logs")}
    result, summary = run_action(with_, tmp_path)
    assert result.returncode == 1, result.stderr  # fail-on unrecoverable: sample_logs has relinks
    commands = [ln for ln in result.stdout.splitlines() if ln.startswith("::")]
    assert sum(ln.startswith("::error ") for ln in commands) == 10
    assert all(re.match(r"::(error|warning) (file=[^,]+,line=\d+,)?title=", ln) for ln in commands)
    text = summary.read_text()
    assert text.startswith("## ddtriage") and len(text.encode()) < 1024 * 1024
    sarif_ok(tmp_path / ours["with"]["sarif"])


def test_action_with_the_workflow_baseline_reports_only_the_new_finding(tmp_path):
    ours, _ = workflow_step()
    base = tmp_path / ours["with"]["baseline"]
    base.parent.mkdir(parents=True)
    made = bash(f'ddtriage scan "{BASELINE / "run1"}" -q --fail-on never -o /dev/null --format json '
                f'--write-baseline "{base}"', tmp_path)
    assert made.returncode == 0, made.stderr
    with_ = {k: str(v) for k, v in ours["with"].items()} | {"paths": str(BASELINE / "run2")}
    result, summary = run_action(with_, tmp_path)
    assert result.returncode == 0, result.stderr  # the new LLM_LINK_BUSY is recoverable
    commands = [ln for ln in result.stdout.splitlines() if ln.startswith("::")]
    assert len(commands) == 1 and commands[0].startswith("::warning file=") and "LLM_LINK_BUSY" in commands[0]
    assert ",line=11," in commands[0]
    results = json.loads((tmp_path / "ddtriage.sarif").read_text())["runs"][0]["results"]
    assert [r["properties"]["name"] for r in results] == ["LLM_LINK_BUSY"]


def test_action_on_an_empty_folder_fails_with_exit_2(tmp_path):
    (tmp_path / "logs").mkdir()
    result, _ = run_action({"paths": str(tmp_path / "logs")}, tmp_path)
    assert result.returncode == 2 and "nothing was scanned" in result.stderr


# --- GitLab ------------------------------------------------------------------------------------

def test_gitlab_job_template_writes_the_reports_gitlab_reads(tmp_path):
    job = yaml.safe_load((ROOT / "recipes" / "gitlab-ci.yml").read_text())["ddtriage"]
    install, *scans = job["script"]
    assert install.startswith("python3 -m pip install") and '"$DDTRIAGE_PACKAGE"' in install
    assert scans and all(s.startswith("ddtriage ") for s in scans)
    env = {k: str(v) for k, v in job["variables"].items()} | {"DDTRIAGE_LOGS": str(ROOT / "sample_logs")}
    result = bash("\n".join(scans), tmp_path, **env)
    assert result.returncode == 1, result.stderr  # the job fails on unrecoverable findings ...
    assert job["artifacts"]["when"] == "always"  # ... and still hands its reports to GitLab
    reports = job["artifacts"]["reports"]
    junit_ok(tmp_path / reports["junit"])
    issues = json.loads((tmp_path / reports["codequality"]).read_text())
    jsonschema.Draft7Validator(json.loads((SCHEMAS / "gitlab-codequality.schema.json").read_text())).validate(issues)
    assert len({i["fingerprint"] for i in issues}) == len(issues) > 0
    for path in job["artifacts"]["paths"]:
        assert (tmp_path / path).read_text().startswith("# ddtriage report")


# --- Jenkins -----------------------------------------------------------------------------------

def jenkins():
    text = (ROOT / "recipes" / "Jenkinsfile").read_text()
    scans = re.findall(r"script: '(ddtriage scan [^']*)'", text)
    junit = re.search(r"junit testResults: '([^']+)'", text).group(1)
    archived = re.search(r"archiveArtifacts artifacts: '([^']+)'", text).group(1)
    logs = re.search(r"DDTRIAGE_LOGS = '([^']+)'", text).group(1)
    return scans, junit, archived, logs


@pytest.mark.parametrize("logs, rc", [(ROOT / "sample_logs", 1), (BASELINE / "run2" / "node-b", 0), (None, 2)])
def test_jenkins_junit_step_reads_what_the_scan_wrote(tmp_path, logs, rc):
    scans, junit, archived, default_logs = jenkins()
    assert len(scans) == 1 and default_logs == "test-logs/"
    if logs is None:  # nothing to scan: the pipeline's error branch
        (tmp_path / "empty").mkdir()
        logs = tmp_path / "empty"
    result = bash(scans[0], tmp_path, DDTRIAGE_LOGS=str(logs))
    assert result.returncode == rc, result.stderr
    if rc == 2:
        return
    junit_ok(tmp_path / junit)
    cases = xmlschema.XMLSchema(SCHEMAS / "junit-10.xsd").to_dict(str(tmp_path / junit))["testsuite"][0]["testcase"]
    failed = [c for c in cases if "failure" in c]
    assert failed  # both folders have findings: each is a failed test case Jenkins lists
    assert (tmp_path / archived).read_text().startswith("ddtriage: ")


# --- README: the worked example of batch analysis in a notebook (issue #21) ---------------------

def readme_block(after):
    """The first ```python block of README.md after the line that starts with `after`."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.search(r"```python\n(.*?)```", text.split("\n" + after, 1)[1], re.S).group(1)


def test_worked_example_fingerprints_per_minute_and_prompt_led_incidents(tmp_path, monkeypatch, capsys):
    pytest.importorskip("pandas")
    from fleetgen import make_fleet

    make_fleet(tmp_path, nodes=6, big_copies=2)  # tmp_path/fleet/: 3 prompt, 3 decode nodes and big-node-0
    monkeypatch.chdir(tmp_path)
    ns = {}
    exec(compile(readme_block("**Worked example**"), "README.md (worked example)", "exec"), ns)
    ns["result"].close()
    printed = capsys.readouterr().out
    top = ns["top"]
    # The decode side's link failure is logged by every decode node and by the big node's copies.
    # The most widespread failure is the decode side's: every decode node and the big node's copies.
    assert (top.bundles, top.nodes) == (4, 4)
    assert sorted(top.node_names) == ["big-node-0", "decode-node-1", "decode-node-3", "decode-node-5"]
    assert f"{top.fingerprint} {top['name']} from {top.api}: in 4 bundles, on 4 nodes" in printed
    spread = ns["spread"]
    assert int(spread.iloc[0]) == 4 and top.fingerprint in spread[spread == 4].index
    per_minute = ns["per_minute"]
    # fleetgen re-times node i to minute 10 + i; the big node's copies to minutes 10 and 11.
    assert sorted(per_minute.columns) == ["big-node-0", "decode-node-1", "decode-node-3", "decode-node-5",
                                          "prompt-node-2", "prompt-node-4", "prompt-node-6"]
    assert int(per_minute.to_numpy().sum()) == int(ns["findings"]["timestamp"].notna().sum())  # the timed ones
    assert per_minute.loc["2025-11-12 03:13:00+00:00", "decode-node-3"] > 0
    assert per_minute.loc["2025-11-12 03:13:00+00:00", "decode-node-1"] == 0
    prompt_led = ns["prompt_led"]
    assert set(prompt_led["lead_node"]) == {"prompt-node-2", "prompt-node-4", "prompt-node-6"}
    # as in sample_logs (incidents 2, 4 and 5 there), on each prompt node
    assert {"LLM_ENGINE_FINALIZED", "device out of memory", "LLM_PREFIX_NOT_EXIST"} <= set(prompt_led["lead_meaning"])
    assert "prompt-node-4" in printed and "lead_meaning" in printed
