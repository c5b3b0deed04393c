"""Bad input a user writes gets one line naming the file (or glob) and the reason, exit 2: never
"internal error". A red-team pass found these reaching the user as internal errors."""

from __future__ import annotations

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

CODE_LINE = ("[ERROR] GE(1234,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:100]1234 PullKvCache: failed, "
             "ret = 0x5010B001\n")


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def log(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.log").write_text(CODE_LINE)
    return "p.log"


def test_an_impossible_date_in_a_suppressions_file(log, tmp_path):
    (tmp_path / "s.yaml").write_text("suppressions:\n  - code: 0x5010B001\n    reason: x\n    expires: 2025-02-30\n")
    result = run("scan", log, "--suppressions", "s.yaml", "-q")
    assert result.exit_code == 2
    assert result.stderr == "ddtriage: error: s.yaml: a value that cannot be read: day is out of range for month\n"


@pytest.mark.parametrize("command", [("scan", "p.log", "--rules", "r", "-q"), ("rules", "check", "r")])
def test_an_impossible_date_in_a_rules_file(log, tmp_path, command):
    (tmp_path / "r").mkdir()
    (tmp_path / "r" / "a.yaml").write_text("rules:\n  - id: x-y\n    description: 2025-02-30\n")
    result = run(*command)
    assert result.exit_code == 2
    assert result.stderr.startswith("ddtriage: error: r/a.yaml: invalid YAML: a value that cannot be read: day is out")
    assert "internal error" not in result.stderr


@pytest.mark.parametrize("option", ["--exclude", "--include"])
def test_a_glob_with_a_backward_range(log, option):
    result = run("scan", log, option, "[z-a]", "-q")
    assert result.exit_code == 2
    assert result.stderr == "ddtriage: error: glob '[z-a]': bad character range z-a\n"


def test_a_glob_with_a_bracket_in_a_set_warns_nothing_raw(log, recwarn):
    # Python's `re` warned (FutureWarning, with ddtriage's own source line) on the `[[` of the translation
    result = run("scan", log, "--include", "[[:alpha:]]", "--fail-on", "never", "--allow-empty")
    assert result.exit_code == 0
    assert not [w for w in recwarn if issubclass(w.category, FutureWarning)]


def test_a_suppression_that_expires_at_a_time_of_day(log, tmp_path):
    # YAML reads it as a datetime, which was compared with today's date: internal TypeError
    (tmp_path / "s.yaml").write_text("suppressions:\n  - code: 0x5010B001\n    reason: x\n    expires: 2020-01-01T10:00:00\n")
    result = run("scan", log, "--suppressions", "s.yaml", "-q")
    assert result.exit_code == 2
    assert result.stderr == "ddtriage: error: s.yaml: suppression #1: expires: must be a date like 2026-03-01\n"


@pytest.mark.parametrize("args", [("mine", ".", "--similarity", "nan"), ("watch", "-", "--interval", "nan")])
def test_nan_is_not_a_number_an_option_takes(log, args):
    result = run(*args)
    assert result.exit_code == 2 and "'nan' is not a finite number" in result.stderr


@pytest.mark.parametrize("code", ["0007BCAD", "0007bcad", "5010B007", "ffffffff"])
def test_explain_takes_hex_without_0x(code):
    # README: hex with or without 0x; only xLLM's 5010b0XX and ffffffff were taken bare
    bare, prefixed = run("explain", code), run("explain", "0x" + code)
    assert bare.exit_code == 0 and bare.stdout == prefixed.stdout


def test_a_suppression_naming_no_rule_loaded(log, tmp_path):
    # accepted silently, it hid nothing (an unknown `code:` was refused already)
    (tmp_path / "s.yaml").write_text("suppressions:\n  - rule: no-such-rule\n    reason: r\n")
    result = run("scan", log, "--suppressions", "s.yaml", "-q")
    assert result.exit_code == 2
    assert result.stderr == ("ddtriage: error: s.yaml: suppression #1: rule: unknown rule 'no-such-rule' "
                             "(no rule loaded has that id)\n")
    (tmp_path / "t.yaml").write_text("suppressions:\n  - rule: default-wait-proc-timeout\n    reason: r\n")
    assert run("scan", log, "--suppressions", "t.yaml", "-q", "--format", "json").exit_code in (0, 1)
