"""The bundle dimension (issue #12): every finding names its bundle, the summary counts per
bundle and groups each failure across bundles, lists are bounded, and --node names the node of
a scan on the machine itself. Expected values are worked out from the generated fleet's recipe
(tests/fleetgen.py), not read off the tool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

from fleetgen import SAMPLES, make_fleet

PLOG = "decode-node-2/ascend/log/debug/plog/plog-5569_20251112034002789.log"


def scan_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["scan", *args, "--format", "json", "--fail-on", "never", "--quiet"],
                                catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory) -> Path:
    return make_fleet(tmp_path_factory.mktemp("fleet"), nodes=12, big_copies=3)


def test_each_entry_of_a_folder_is_a_bundle(fleet, monkeypatch):
    monkeypatch.chdir(fleet.parent)
    report = scan_json("fleet", "--jobs", "1")
    bundles = {f["bundle"] for f in report["findings"]}
    # 12 generated nodes (4 .tar.gz, 4 .zip, 4 folders) and the big node's folder.
    expected = {f"fleet/{'decode' if i % 2 else 'prompt'}-node-{i}" + {0: ".tar.gz", 1: ".zip", 2: ""}[i % 3]
                for i in range(1, 13)} | {"fleet/big-node-0"}
    assert bundles == expected
    for f in report["findings"]:
        assert f["source"].startswith(f["bundle"] + ("/" if not f["bundle"].endswith((".zip", ".gz")) else "!"))
    rows = report["summary"]["bundles"]
    assert {r["bundle"] for r in rows} == expected and report["summary"]["more_bundles"] == 0
    assert sum(r["findings"] for r in rows) == len(report["findings"])
    # Every decode node logs sample_logs' decode failures: 6 decode bundles + the big node.
    row = next(r for r in report["summary"]["fingerprints"] if r["name"] == "LLM_WAIT_PROC_TIMEOUT"
               and r["api"] == "PullKvBlocks" and "plog" in r["first_at"])
    assert row["bundles"] == 7 and row["nodes"] == 7
    assert row["first_seen"].startswith("2025-11-12T03:10:") and row["last_seen"].startswith("2025-11-12T03:21:")
    assert row["node_names"] == sorted(["big-node-0"] + [f"decode-node-{i}" for i in (1, 3, 5, 7, 9, 11)])


def test_a_file_given_is_its_own_bundle_and_the_text_report_shows_recurring_after_the_incidents(fleet, monkeypatch):
    monkeypatch.chdir(fleet.parent)
    report = scan_json("fleet/decode-node-3.tar.gz", "fleet/decode-node-5")
    assert {f["bundle"] for f in report["findings"]} == {"fleet/decode-node-3.tar.gz", "fleet/decode-node-5"}
    text = CliRunner().invoke(cli, ["scan", "fleet", "--fail-on", "never", "--quiet"]).stdout
    lines = text.splitlines()
    assert lines[3].startswith("Incidents: ")  # the first screen is the diagnosis (issue 22), the tables follow
    start = next(i for i, line in enumerate(lines) if line.startswith("Recurring across 13 bundles and 13 nodes:"))
    assert any("7     7" in line and "LLM_WAIT_PROC_TIMEOUT" in line for line in lines[start:start + 12])


def test_summary_lists_are_bounded(tmp_path, monkeypatch):
    # One node folder with 14 copies of a plog: its node row lists 10 sources and counts 4 more.
    plog = (SAMPLES / PLOG).read_bytes()
    folder = tmp_path / "node-9" / "ascend" / "log" / "debug" / "plog"
    folder.mkdir(parents=True)
    for i in range(14):
        (folder / f"plog-{100 + i}_20251112034002789.log").write_bytes(plog)
    monkeypatch.chdir(tmp_path)
    summary = scan_json("node-9")["summary"]
    (node,) = summary["nodes"]
    assert len(node["sources"]) == 10 and node["more_sources"] == 4
    assert node["sources"][0] == "node-9/ascend/log/debug/plog/plog-100_20251112034002789.log"
    assert all(len(r["sources"]) <= 10 and r["more_sources"] == max(0, 14 - 10) for r in summary["codes"])


def test_node_names_a_local_log_tree(tmp_path, monkeypatch):
    local = tmp_path / "root" / "ascend" / "log" / "debug" / "plog"
    local.mkdir(parents=True)
    shutil.copy(SAMPLES / PLOG, local)
    monkeypatch.chdir(tmp_path / "root")
    plain = scan_json("ascend/log")
    assert {f["node"] for f in plain["findings"]} == {None}
    named = scan_json("ascend/log", "--node", "host-7")
    assert {(f["node"], f["bundle"]) for f in named["findings"]} == {("host-7", "ascend/log")}
    assert [n["node"] for n in named["summary"]["nodes"]] == ["host-7"]
    # An explicit --node beats what a folder above ascend/log seems to say (review D14: on a node
    # that folder is a home folder or a mount point); without it, the folder names the node.
    monkeypatch.chdir(SAMPLES.parent)
    named = scan_json("sample_logs/decode-node-2", "--node", "host-7")
    assert {f["node"] for f in named["findings"]} == {"host-7"}
    kept = scan_json("sample_logs/decode-node-2")
    assert {f["node"] for f in kept["findings"]} == {"decode-node-2"}
