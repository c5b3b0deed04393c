"""`ddtriage merge` never counts a part twice (review D7): the same part given twice (a shell glob
that picks it again, a link to it), or a part whose every finding was merged already (the JSON and
the Parquet report of one scan, a part of a part), is left out with a one-line warning, and the
result equals a direct scan byte for byte; a part that repeats only some of the logs merged before
is refused (its input counts cannot be split), with a one-line error."""

from __future__ import annotations

from pathlib import Path

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[1]
COMMON = ["--format", "json", "--fail-on", "never"]


@pytest.fixture
def parts(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    for name, target in (("d2.json", "sample_logs/decode-node-2"), ("d2.parquet", "sample_logs/decode-node-2"),
                         ("all.json", "sample_logs")):
        result = CliRunner().invoke(cli, ["scan", target, "--quiet", "--fail-on", "never", "-o", str(tmp_path / name)])
        assert result.exit_code == 0, result.stderr
    (tmp_path / "again.json").symlink_to(tmp_path / "d2.json")
    return tmp_path


def merge(*paths: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["merge", *map(str, paths), *COMMON])
    return result.exit_code, result.stdout, result.stderr


def test_a_part_given_twice_is_read_once(parts):
    direct = (parts / "d2.json").read_text()
    for twice in ("d2.json", "again.json"):
        code, out, err = merge(parts / "d2.json", parts / twice)
        assert code == 0 and out == direct
        assert err == f"ddtriage: warning: {parts / twice}: given again (as {parts / 'd2.json'}); read once\n"


def test_a_part_whose_findings_were_all_merged_is_left_out(parts):
    code, out, err = merge(parts / "d2.json", parts / "d2.parquet")  # two reports of one scan
    assert code == 0 and out == (parts / "d2.json").read_text()
    assert err == (f"ddtriage: warning: {parts / 'd2.parquet'}: every finding in it was merged already "
                   f"from {parts / 'd2.json'}; left out\n")
    code, out, err = merge(parts / "all.json", parts / "d2.json")  # a part of a part
    assert code == 0 and out == (parts / "all.json").read_text()
    assert err.count("\n") == 1 and "d2.json: every finding in it was merged already from" in err


def test_a_part_that_repeats_some_merged_logs_is_refused(parts):
    code, out, err = merge(parts / "d2.json", parts / "all.json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"ddtriage: error: {parts / 'all.json'}: its findings in ")
    assert err.endswith(f"were merged already from {parts / 'd2.json'}: the same log scanned twice; "
                        "merge each log's scan once\n")
