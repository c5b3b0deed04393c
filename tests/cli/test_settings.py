"""Config files through the real CLI: found from the current folder upwards, flags win, paths
relative to the file, `ddtriage config` shows each setting and where it came from.
"""

import json
from pathlib import Path

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

RUN1 = Path(__file__).parents[1] / "data" / "baseline" / "run1"


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A checkout with its config at the top and the logs in a folder below; run from `sub/`."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "pyproject.toml").write_text("[project]\nname = 'other'\n")  # no [tool.ddtriage]: passed over
    monkeypatch.chdir(tmp_path / "sub")
    return tmp_path


def test_config_is_found_upwards_and_flags_win(project):
    (project / ".ddtriage.toml").write_text('fail-on = "never"\ninclude = ["vllm_*.log"]\n')
    code, out, _ = run("scan", RUN1, "--format", "json")
    report = json.loads(out)
    assert code == 0  # fail-on = never from the config
    assert {Path(f["source"]).name for f in report["findings"]} == {"vllm_decode.log"}
    code, out, _ = run("scan", RUN1, "--format", "json", "--fail-on", "any", "--include", "plog-*")
    assert code == 1  # flags win, and a flag list replaces the config's list
    assert {Path(f["source"]).name for f in json.loads(out)["findings"]} == {
        "plog-2210_20251112090001417.log", "plog-3320_20251112085958002.log"}


def test_pyproject_table_paths_relative_to_the_file_and_the_config_command(project):
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.ddtriage]\nfail-on = "unrecoverable"\n'
        'outputs = ["reports/f.sarif", "gitlab:reports/gl.json"]\nbaseline = "ci/base.json"\n')
    (project / "reports").mkdir()
    code, out, err = run("config")
    assert code == 0, err
    lines = {ln.split("=")[0].strip(): ln for ln in out.splitlines() if not ln.startswith("#")}
    assert out.splitlines()[0] == f"# config: {project / 'pyproject.toml'} [tool.ddtriage]"
    from analyzer.scan.blocks import engine_name

    assert out.splitlines()[1].startswith(f"# engine: {engine_name()} (DDTRIAGE_ENGINE=")  # issue #17
    assert '"unrecoverable"' in lines["fail-on"] and lines["fail-on"].endswith(f"# from {project / 'pyproject.toml'}")
    assert '["../reports/f.sarif", "gitlab:../reports/gl.json"]' in lines["outputs"]
    assert lines["include"].endswith("# default") and "[]" in lines["include"]
    # first run records the baseline the config names; the second reports nothing new
    code, out, err = run("scan", RUN1, "--write-baseline", project / "ci" / "base.json", "-q")
    assert (project / "ci").exists() is False and code == 2 and "cannot write baseline" in err
    (project / "ci").mkdir()
    code, out, err = run("scan", RUN1, "--write-baseline", project / "ci" / "base.json", "-q")
    assert code == 1 and out == "", err  # the config's outputs replace stdout; a relink is not recoverable
    sarif = json.loads((project / "reports" / "f.sarif").read_text())
    assert len([r for r in sarif["runs"][0]["results"] if not r["properties"].get("related")]) == 9
    issues = json.loads((project / "reports" / "gl.json").read_text())
    assert len([i for i in issues if not i["check_name"].startswith("related-")]) == 9  # related errors apart
    code, _, _ = run("scan", RUN1, "-q")
    assert code == 0 and json.loads((project / "reports" / "f.sarif").read_text())["runs"][0]["results"] == []


@pytest.mark.parametrize("text, message", [
    ('fail-on = "sometimes"\n', "fail-on: must be one of related, any, unrecoverable, ongoing, never"),
    ('exclude = "*.log"\n', "exclude: must be a list of strings"),
    ('colour = true\n', "unknown setting(s): colour"),
    ('fail-on = \n', "not valid TOML"),
])
def test_a_bad_config_is_one_line_naming_file_and_key(project, text, message):
    (project / ".ddtriage.toml").write_text(text)
    code, out, err = run("scan", RUN1)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith(f"ddtriage: error: {project / '.ddtriage.toml'}") and message in err


def test_explicit_config_file_and_none_found(project, tmp_path):
    code, out, _ = run("config")
    assert code == 0 and out.startswith("# no config file")
    other = tmp_path / "elsewhere.toml"
    other.write_text('exclude = ["node-b"]\n')
    code, out, _ = run("--config", other, "scan", RUN1, "--format", "json")
    assert {f["node"] for f in json.loads(out)["findings"]} == {"node-a"}


def test_config_rules_dirs_are_relative_to_the_file(project):
    rules = project / "ci" / "rules"
    rules.mkdir(parents=True)
    (rules / "mine.yaml").write_text(
        "rules:\n  - id: my-pull-timeout\n    match: {codes: [LLM_WAIT_PROC_TIMEOUT], apis: [PullKvBlocks]}\n"
        "    action: retry\n    remedy: Retry it here.\n"
        "    examples: {match: ['[pull_blocks] failed, error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT']}\n")
    (project / ".ddtriage.toml").write_text('rules = ["ci/rules"]\n')
    _, out, _ = run("config")
    assert '["../ci/rules"]' in out
    code, out, err = run("scan", RUN1, "--format", "json")
    assert code == 1, err
    assert [f["rule"] for f in json.loads(out)["findings"] if f["code"] == "0x5010B001"] == ["my-pull-timeout"]


@pytest.mark.parametrize("value", ["related", "any", "unrecoverable", "ongoing", "never"])
def test_every_fail_on_the_option_takes_the_config_and_each_command_take(project, value):
    # the config once refused `related`, merge refused it too, and watch refused `ongoing`: four lists
    (project / ".ddtriage.toml").write_text(f'fail-on = "{value}"\n')
    code, _, err = run("scan", RUN1, "--format", "json")
    assert code == (0 if value == "never" else 1), err
    assert run("config")[0] == 0
    report = project / "r.json"
    run("scan", RUN1, "--format", "json", "-o", report)
    merged = CliRunner().invoke(cli, ["merge", str(report), "--fail-on", value, "-q", "--format", "json"])
    assert merged.exit_code == (0 if value == "never" else 1), merged.output
    watched = CliRunner().invoke(cli, ["watch", "-", "--fail-on", value, "--format", "lines"], input="")
    assert watched.exit_code == 0, watched.output  # an empty stream: nothing to fail on


def test_a_zone_the_config_file_names_is_checked_there(project):
    # `ddtriage config` showed it as valid, and scan then blamed a --tz never given
    (project / ".ddtriage.toml").write_text('tz = "Mars/Olympus"\n')
    for args in (("config",), ("scan", RUN1, "-q")):
        code, _, err = run(*args)
        assert code == 2 and err.startswith("ddtriage: error: ") and ".ddtriage.toml: tz: 'Mars/Olympus' is not a zone" in err
        assert "--tz" not in err
