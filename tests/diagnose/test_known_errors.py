"""Known errors through the real CLI: --write-baseline / --baseline on the baseline corpus (answer
key tests/data/baseline/expected.yaml, written by hand), and suppressions files.
"""

import json
from pathlib import Path

import pytest
import yaml
from analyzer.cli import cli
from click.testing import CliRunner

DATA = Path(__file__).parents[1] / "data" / "baseline"
KEY = yaml.safe_load((DATA / "expected.yaml").read_text())


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def where(f):
    return (str(Path(f["source"]).relative_to(DATA)), f["line"], f["code"], f["api"])


def key(entries):
    return sorted((e["file"], e["line"], e["code"], e["api"]) for e in entries)


@pytest.fixture
def baseline1(tmp_path):
    path = tmp_path / "run1.baseline.json"
    code, _, err = run("scan", DATA / "run1", "--write-baseline", path, "-q", "--format", "json")
    assert code == 1, err
    return path


def test_baseline_from_run1_reports_only_the_new_finding_of_run2(baseline1):
    code, out, err = run("scan", DATA / "run2", "--baseline", baseline1, "--format", "json", "-q")
    assert code == 1, err
    report = json.loads(out)
    new = [f for f in report["findings"] if f["baseline"] == "new"]
    known = [f for f in report["findings"] if f["baseline"] == "known"]
    assert key(KEY["new"]) == sorted(where(f) for f in new)
    assert key(KEY["moved"]) == sorted(where(f) for f in known)
    assert report["baseline"]["new"] == 1 and report["baseline"]["known"] == len(KEY["moved"])
    assert report["baseline"]["gone"] == KEY["gone"] == []
    assert report["summary"]["findings"] == 1  # the summary and the gate count only what is new
    assert new[0]["name"] == KEY["new"][0]["name"]


def test_the_other_way_round_nothing_is_new_and_link_busy_is_gone(tmp_path):
    path = tmp_path / "run2.baseline.json"
    run("scan", DATA / "run2", "--write-baseline", path, "-q")
    code, out, err = run("scan", DATA / "run1", "--baseline", path, "--format", "json", "-q")
    assert code == 0, err  # nothing new: the gate passes
    report = json.loads(out)
    assert [g["name"] for g in report["baseline"]["gone"]] == ["LLM_LINK_BUSY"]
    assert all(f["baseline"] == "known" for f in report["findings"])
    code, text, _ = run("scan", DATA / "run1", "--baseline", path)
    text = " ".join(text.split())  # the report wraps at 80 columns, where depends on the path's length
    assert code == 0 and "0 new, 9 known (not reported), 1 gone" in text
    assert "gone: LLM_LINK_BUSY from PullKvBlocks" in text


def test_baseline_is_deterministic_and_other_formats_show_only_new(baseline1, tmp_path):
    again = tmp_path / "again.json"
    run("scan", DATA / "run1", "--write-baseline", again, "-q")
    assert again.read_bytes() == baseline1.read_bytes()
    code, out, _ = run("scan", DATA / "run2", "--baseline", baseline1, "--format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    assert code == 1 and [r["properties"]["code"] for r in results] == ["0x5010B01B"]


def test_a_bad_baseline_is_one_line_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    code, out, err = run("scan", DATA / "run2", "--baseline", bad)
    assert code == 2 and out == "" and err.startswith(f"ddtriage: error: {bad}: not a ddtriage baseline")
    code, _, err = run("scan", DATA / "run2", "--baseline", tmp_path / "none.json")
    assert code == 2 and "cannot read baseline" in err and err.count("\n") == 1


def write_suppressions(tmp_path, entries):
    path = tmp_path / "suppressions.yaml"
    path.write_text(yaml.safe_dump({"suppressions": entries}))
    return path


def test_suppressions_hide_by_rule_code_or_fingerprint_and_say_why(tmp_path):
    findings = json.loads(run("scan", DATA / "run2", "--format", "json")[1])["findings"]
    busy = next(f for f in findings if f["code"] == "0x5010B01B")
    path = write_suppressions(tmp_path, [
        {"fingerprint": busy["fingerprint"], "reason": "link busy under the soak test (TICKET-7)", "expires": "2999-01-01"},
        {"code": "LLM_LINK_FAILED", "reason": "peer restarts nightly"},
        {"rule": "default-already-link", "code": "0x5010B008", "reason": "reconnect is harmless"},
    ])
    code, out, err = run("scan", DATA / "run2", "--suppressions", path, "--format", "json")
    assert err == ""
    report = json.loads(out)
    hidden = {(f["code"], f["suppressed_by"]["entry"], f["suppressed_by"]["reason"]) for f in report["suppressed"]}
    assert hidden == {("0x5010B01B", 1, "link busy under the soak test (TICKET-7)"),
                      ("0x5010B009", 2, "peer restarts nightly"), ("0x5010B008", 3, "reconnect is harmless")}
    assert len(report["suppressed"]) == 4  # LLM_LINK_FAILED twice (plog and per-cluster rets)
    assert len(report["findings"]) == len(findings) - 4 and code == 1
    assert not {f["code"] for f in report["findings"]} & {"0x5010B01B", "0x5010B009", "0x5010B008"}
    _, text, _ = run("scan", DATA / "run2", "--suppressions", path)
    assert "#2 (code 0x5010B009) hid 2 findings: peer restarts nightly" in text
    assert "(until 2999-01-01)" in text


def test_an_expired_suppression_warns_and_hides_nothing(tmp_path):
    path = write_suppressions(tmp_path, [{"rule": "pull-blocks-retryable", "reason": "old ticket", "expires": "2020-01-31"}])
    code, out, err = run("scan", DATA / "run2", "--suppressions", path, "--format", "json")
    assert "suppression #1 (rule pull-blocks-retryable) expired on 2020-01-31" in err and err.count("\n") == 1
    report = json.loads(out)
    assert report["suppressed"] == [] and report["expired_suppressions"][0]["expires"] == "2020-01-31"
    assert any(f["code"] == "0x5010B01B" for f in report["findings"])


@pytest.mark.parametrize("entry, message", [
    ({"rule": "x"}, "suppression #1: needs a `reason`"),
    ({"reason": "why"}, "suppression #1: needs a `rule`, `code` or `fingerprint`"),
    ({"code": "LLM_NOPE", "reason": "why"}, "suppression #1: code: unknown code 'LLM_NOPE'"),
    ({"rule": "x", "reason": "why", "expires": "soon"}, "expires: 'soon' is not a date"),
    ({"rule": "x", "reason": "why", "owner": "me"}, "unknown field(s): owner"),
])
def test_malformed_suppressions_name_the_entry(tmp_path, entry, message):
    path = write_suppressions(tmp_path, [entry])
    code, out, err = run("scan", DATA / "run2", "--suppressions", path)
    assert code == 2 and out == "" and message in err and err.count("\n") == 1


def test_sarif_marks_new_results_and_carries_suppressions_with_their_reason(baseline1, tmp_path):
    import jsonschema
    schema = json.loads((Path(__file__).parents[1] / "schemas" / "sarif-schema-2.1.0.json").read_text())
    path = write_suppressions(tmp_path, [{"code": "LLM_LINK_FAILED", "reason": "peer restarts nightly"}])
    code, out, _ = run("scan", DATA / "run2", "--suppressions", path, "--format", "sarif")
    log = json.loads(out)
    jsonschema.Draft4Validator(schema).validate(log)
    hidden = [r for r in log["runs"][0]["results"] if r.get("suppressions")]
    assert [r["properties"]["code"] for r in hidden] == ["0x5010B009", "0x5010B009"]
    assert hidden[0]["suppressions"][0]["justification"] == "#1 (code 0x5010B009): peer restarts nightly"
    findings = [r for r in log["runs"][0]["results"] if not r["properties"].get("related")]
    assert len(findings) == 10  # the 8 findings left, and the 2 hidden ones (related errors apart)
    code, out, _ = run("scan", DATA / "run2", "--baseline", baseline1, "--format", "sarif")
    log = json.loads(out)
    jsonschema.Draft4Validator(schema).validate(log)
    assert [r["baselineState"] for r in log["runs"][0]["results"]] == ["new"]
