"""Selection like ripgrep's, through the real CLI: gitignore globs (`*` stays in a name, `**`
crosses folders, `!` negates), hidden files skipped unless --hidden or named, and the same
selection on disk and inside archives.
"""

import json
import os
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.inputs import iter_sources
from analyzer.inputs.selection import Selection
from click.testing import CliRunner

from bundles import tar_bytes

ROOT = Path(__file__).resolve().parents[2]
PLOG = b"[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm.cc:1]5571 PullKvBlocks: ErrorNo: 1343270913(x)\n"
TREE = {
    "node-a/app.log": PLOG,
    "node-a/ascend/log/debug/plog/plog-1.log": PLOG,
    "node-b/app.log": PLOG,
    "node-b/ascend/log/debug/plog/plog-2.log.1": PLOG,
    "node-c/app.log": PLOG,
}


def run(*args):
    result = CliRunner().invoke(cli, [str(a) for a in args], catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def read(*args):
    code, out, err = run("scan", *args, "--format", "json", "--fail-on", "never", "--allow-empty", "-q")
    assert code == 0, err
    return json.loads(out)


def tails(report, root):
    """The part of each finding's name below `root` (a folder, or an archive's `!`)."""
    out = set()
    for f in report["findings"]:
        name = f["source"]
        out.add(name.split("!", 1)[1] if "!" in name else os.path.relpath(name, root))
    return out


@pytest.fixture
def layouts(tmp_path):
    """The same tree as a folder and as a tar archive."""
    folder = tmp_path / "logs"
    for rel, data in TREE.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_bytes(data)
    (tmp_path / "logs.tar").write_bytes(tar_bytes(TREE))
    return folder, tmp_path / "logs.tar"


@pytest.mark.parametrize("globs, expected", [
    (["--include", "node-a/*.log"], {"node-a/app.log"}),                     # * does not cross /
    (["--include", "node-a/**/*.log"], {"node-a/app.log", "node-a/ascend/log/debug/plog/plog-1.log"}),
    (["--include", "plog/*"], {"node-a/ascend/log/debug/plog/plog-1.log", "node-b/ascend/log/debug/plog/plog-2.log.1"}),
    (["--include", "*.log"], set(TREE)),                                     # .log.1 rotation counts
    (["--exclude", "node-*", "--exclude", "!node-b"], {"node-b/app.log", "node-b/ascend/log/debug/plog/plog-2.log.1"}),
    (["--exclude", "ascend"], {"node-a/app.log", "node-b/app.log", "node-c/app.log"}),  # a folder prunes its tree
    (["--include", "**/debug/**", "--exclude", "node-b"], {"node-a/ascend/log/debug/plog/plog-1.log"}),
])
def test_globs_select_the_same_on_disk_and_in_archives(layouts, globs, expected):
    folder, archive = layouts
    assert tails(read(folder, *globs), folder) == expected
    assert tails(read(archive, *globs), archive) == expected


def test_dot_slash_paths_and_a_hidden_glob_do_not_exclude_everything(layouts, monkeypatch):
    folder, _ = layouts
    monkeypatch.chdir(folder.parent)
    report = read("./logs", "--exclude", ".*")
    assert report["inputs"]["files"] == len(TREE)
    report = read("../" + folder.parent.name + "/logs", "--exclude", ".*")
    assert report["inputs"]["files"] == len(TREE)


def test_hidden_files_are_skipped_unless_hidden_or_named(tmp_path):
    (tmp_path / "logs" / ".venv" / "lib").mkdir(parents=True)
    (tmp_path / "logs" / ".venv" / "lib" / "vendored.log").write_bytes(PLOG)
    (tmp_path / "logs" / ".last.log").write_bytes(PLOG)
    (tmp_path / "logs" / "app.log").write_bytes(PLOG)
    (tmp_path / "bundle.tar").write_bytes(tar_bytes({"n/.cache/x.log": PLOG, "n/app.log": PLOG}))
    assert read(tmp_path / "logs")["inputs"]["files"] == 1
    assert read(tmp_path / "logs", "--hidden")["inputs"]["files"] == 3
    assert read(tmp_path / "logs" / ".last.log")["inputs"]["files"] == 1  # named explicitly
    assert read(tmp_path / "logs" / ".venv")["inputs"]["files"] == 1  # a hidden folder named explicitly
    assert [f["source"].split("!")[1] for f in read(tmp_path / "bundle.tar")["findings"]] == ["n/app.log"]
    assert len(read(tmp_path / "bundle.tar", "--hidden")["findings"]) == 2


def test_scan_of_the_project_checkout_reads_no_venv(monkeypatch):
    monkeypatch.chdir(ROOT)
    names = [s.name.removeprefix("./") for s in iter_sources(["."], [], Selection())]
    assert names and not [n for n in names if "/." in n or n.startswith(".")]  # .venv (make install), .git
    assert any(n.endswith("sample_logs/decode-node-2/vllm_worker.log") for n in names)


def test_a_checkout_like_folder_scans_only_its_logs(tmp_path, monkeypatch):
    for rel in (".venv/lib/python3.11/site-packages/llm_datadist/test.log", ".pytest_cache/v/cache/lastfailed",
                ".git/logs/HEAD", "logs/run.log"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(PLOG)
    monkeypatch.chdir(tmp_path)
    code, out, err = run("scan", ".", "--format", "json", "-q")
    assert code == 1 and [f["source"] for f in json.loads(out)["findings"]] == ["./logs/run.log"]


def test_a_broken_glob_is_one_line_exit_2(tmp_path):
    code, out, err = run("scan", tmp_path, "--include", "\\")
    assert code == 2 and out == "" and err.startswith("ddtriage: error: glob '\\\\'") and err.count("\n") == 1
