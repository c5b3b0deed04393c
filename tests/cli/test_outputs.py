"""Issue #18, the output rule: a report (or baseline) inside the folder it scans is written and left
out of the scan, on a node (`~/ascend/log/triage.json`) as in CI (`scan logs/ -o logs/ddtriage.sarif`);
it is refused only when that file exists and is not a ddtriage report: writing would overwrite an
input. The refusal names the file and what to do.
"""

from __future__ import annotations

import json
import os

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

from planted import marks, planted


def _run(*args: str | os.PathLike[str]):
    return CliRunner().invoke(cli, ["scan", *map(os.fspath, args), "--jobs", "1"], catch_exceptions=False)


@pytest.fixture
def bundle(tmp_path):
    root = tmp_path / "bundle"
    (root / "node-1").mkdir(parents=True)
    (root / "node-1" / "app.log").write_bytes(planted(1) + planted(2))
    return root


@pytest.mark.parametrize("name", ["triage.html", "ddtriage.sarif", "triage.json", "node-1/report.md", "r.txt",
                                  "junit:j.xml", "gitlab:gl.json", "csv:f.csv", "jsonl:f.jsonl"])
def test_report_inside_the_scanned_folder_is_written_and_left_out(bundle, name):
    prefix, _, file = name.rpartition(":")
    target = bundle / file
    for _ in range(2):  # the second run finds the first one's report in the folder
        result = _run(bundle, "-o", f"{prefix}:{target}" if prefix else target, "--format", "json",
                      "-o", "json:-")
        assert result.exit_code == 1, result.stderr
        report = json.loads(result.stdout)
        assert marks(report) == [1, 2]
        assert report["inputs"]["files"] == 1 and report["inputs"]["skipped"] == []
        assert target.stat().st_size > 0


def test_baseline_inside_the_scanned_folder_follows_the_same_rule(bundle):
    base = bundle / "ddtriage-baseline.json"
    first = _run(bundle, "--write-baseline", base, "-q")
    assert first.exit_code == 1, first.stderr
    again = _run(bundle, "--baseline", base, "--write-baseline", base, "--format", "json")
    assert again.exit_code == 0, again.stderr  # all known; the baseline was not read as a log
    assert json.loads(again.stdout)["inputs"]["files"] == 1


@pytest.mark.parametrize("option", ["-o", "--write-baseline"])
def test_existing_log_inside_the_scanned_folder_is_refused(bundle, option):
    log = bundle / "node-1" / "app.log"
    before = log.read_bytes()
    result = _run(bundle, option, log if option == "--write-baseline" else f"text:{log}")
    assert result.exit_code == 2
    error = [x for x in result.stderr.splitlines() if x.startswith("ddtriage: error:")]
    assert len(error) == 1, result.stderr
    assert str(log) in error[0] and "not a ddtriage report" in error[0], error
    assert "elsewhere" in error[0] or "another name" in error[0], error  # what to do
    assert log.read_bytes() == before


def test_existing_file_that_is_not_a_report_is_refused_even_if_it_holds_no_code(bundle):
    notes = bundle / "notes.md"
    notes.write_text("# my notes\n")
    result = _run(bundle, "-o", notes)
    assert result.exit_code == 2
    assert f"it is the input {notes} (in the scanned folder {bundle}), not a ddtriage report" in result.stderr
    assert notes.read_text() == "# my notes\n"


@pytest.mark.parametrize("args, message", [
    (["-o", "html:"], "-o html:: no file after the format; write html:FILE (html:- for standard output)"),
    (["-o", "r.json", "-o", "sarif:./r.json"], "-o ./r.json: given more than once (as r.json)"),
    (["--write-baseline", "-"], "a baseline is written to a file; name one"),
])
def test_an_output_that_is_no_file_or_the_same_file_twice_is_a_usage_error(bundle, tmp_path, monkeypatch, args, message):
    # `-o html:` once wrote a text report into a file named `html:`, two spellings of one file let the
    # last report win, and `--write-baseline -` wrote a file named `-`
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(cli, ["scan", str(bundle), *args], catch_exceptions=False)
    assert result.exit_code == 2 and message in result.stderr, result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bundle"]  # nothing written
