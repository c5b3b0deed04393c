"""The bundle dimension (issue #12): every finding names its bundle, the summary counts per
bundle and groups each failure across bundles, lists are bounded, and --node names the node of
a scan on the machine itself. Expected values are worked out from the generated fleet's recipe
(tests/fleetgen.py), not read off the tool.

Fleets built in the test, one rule of incident grouping at a time (analyzer/incidents.py):
links join nodes, time alone joins only nodes without link facts, unrelated pairs stay apart, a
storm continues its incident, the lead may sit on the other node and comes from the lower level (folded from test_fleets_generated.py).

The "Recurring across bundles" table names the recurring failures first (review D15): wrappers
log the generic LLM_FAILED after every specific code (domain.md §5), once per API, so ranked by
spread alone its echoes filled the first screen and pushed the failure they echo below the cut.
Specific codes come first; the generic echoes are ranked after them, and the text report folds
them into one counted line (folded from test_recurring_first_screen.py, review D15 (recurring failures on the first screen)).
"""

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
    # The first screen is the diagnosis (issue 22): the failure most bundles share (one line
    # under the header, issue 12), then the incidents; the tables follow.
    lead = " ".join(line.strip() for line in lines[lines.index("") - 2:lines.index("")])
    assert lead.startswith("Recurring across 13 bundles and 13 nodes: LLM_WAIT_PROC_TIMEOUT (0x5010B001) from "), lead
    assert lines[lines.index("") + 1].startswith("Incidents: ")
    start = next(i for i, line in enumerate(lines) if line.startswith("Recurring across 13 bundles and 13 nodes:")
                 and "more than one bundle" in line)
    failures = int(lines[start].split(": ")[1].split()[0])  # "... nodes: 50 failures in more than one bundle"
    assert lead.endswith(f"in 7 bundles, and {failures - 1} more; the table below"), lead
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


def test_only_the_fingerprints_shown_are_templated(tmp_path, monkeypatch):
    # 120 distinct failures (one line each): the summary shows ROW_LIMIT and counts the rest; a
    # message template is made for the rows shown only (a storm of distinct ones made one each)
    import analyzer.diagnose.fleet as fleet_mod
    from analyzer.diagnose.summary import ROW_LIMIT

    made = []
    real = fleet_mod.message_template
    monkeypatch.setattr(fleet_mod, "message_template", lambda text: made.append(text) or real(text))
    lines = [f"[ERROR] GE(7,python3):2025-11-12-03:40:{i % 60:02d}.000.000 [m{i}.cc:1]7 Step{chr(65 + i % 26)}"
             f"{'x' * (i // 26)}: ErrorNo: 1343270913(request wait to be processed timeout!)\n" for i in range(120)]
    (tmp_path / "plog-7.log").write_text("".join(lines))
    monkeypatch.chdir(tmp_path)
    summary = scan_json("plog-7.log", "--jobs", "1")["summary"]
    shown = len(summary["fingerprints"])
    assert shown == ROW_LIMIT and summary["more_fingerprints"] == 120 - ROW_LIMIT
    assert len(made) == shown


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


def plog(module: str, pid: int, ts: str, where: str, tid: int, text: str, level: str = "ERROR") -> str:
    """One CANN plog line at 2025-11-12 `ts` (hh:mm:ss.mmm.uuu)."""
    return f"[{level}] {module}({pid},python3):2025-11-12-{ts} [{where}]{tid} {text}\n"


def write_node(root: Path, node: str, pid: int, run: str, debug: str) -> None:
    folder = root / node / "ascend" / "log"
    for kind, text in (("run", run), ("debug", debug)):
        (folder / kind / "plog").mkdir(parents=True, exist_ok=True)
        (folder / kind / "plog" / f"plog-{pid}_20251112034000000.log").write_text(text, encoding="utf-8")


def prompt_init(pid: int, cluster: int, ip: str, port: int) -> str:
    return (plog("GE", pid, "03:39:50.100.000", "llm_datadist.cc:233", pid,
                 f"Initialize: llm datadist init success, role = Prompt, cluster_id = {cluster}, device_id = 0", "INFO")
            + plog("GE", pid, "03:39:50.200.000", "msg_handler_plugin.cc:142", pid,
                   f"StartListen: listen on {ip}:{port} success", "INFO"))


def decode_init(pid: int, cluster: int, ip: str, remote_cluster: int, remote: str) -> str:
    return (plog("GE", pid, "03:39:51.100.000", "llm_datadist.cc:233", pid,
                 f"Initialize: llm datadist init success, role = Decoder, cluster_id = {cluster}, device_id = 0", "INFO")
            + plog("GE", pid, "03:39:58.000.000", "llm_link_manager.cc:301", pid + 1,
                   f"LinkLlmClusters: local cluster id = {cluster}, remote cluster id = {remote_cluster}, "
                   f"local ip = {ip}, remote ip info = {remote}", "INFO"))


def pull_timeout(pid: int, ts: str, req: int, remote_cluster: int) -> str:
    return plog("GE", pid, ts, "llm_datadist.cc:812", pid + 1,
                f"PullKvBlocks: ErrorNo: 1343270913(request wait to be processed timeout!) [GE][MODULE]pull blocks "
                f"timeout, req_id = {req}, remote cluster id = {remote_cluster}")


def not_linked(pid: int, ts: str, req: int) -> str:
    return plog("GE", pid, ts, "llm_datadist.cc:812", pid + 1,
                f"PullKvBlocks: ErrorNo: 1343270919(local cluster is not linked with remote cluster!) [GE][MODULE]"
                f"pull blocks failed, req_id = {req}")


def hccl_timeout(pid: int, ts: str) -> str:
    return plog("HCCL", pid, ts, "hccl_comm.cc:655", pid + 2, "[HcclCommPrepare] call trace: hcclRet -> 9")


def incidents_of(root: Path) -> list[dict]:
    result = CliRunner().invoke(cli, ["scan", str(root), "--format", "json", "--quiet", "--jobs", "1"],
                                catch_exceptions=False)
    return json.loads(result.stdout)["summary"]["incidents"]


def two_pairs(root: Path, second_pair_linked_to_first: bool = False) -> None:
    """P1 (cluster 1, 10.0.0.1:26000) <- D1 and P2 (cluster 1 too!, 10.0.0.3:26000) <- D2, all failing
    within the same 100 ms."""
    write_node(root, "p1", 100, prompt_init(100, 1, "10.0.0.1", 26000), hccl_timeout(100, "03:40:01.100.000"))
    write_node(root, "d1", 200, decode_init(200, 5, "10.0.0.2", 1, "10.0.0.1:26000"),
               pull_timeout(200, "03:40:01.150.000", 7, 1))
    target = "10.0.0.1:26000" if second_pair_linked_to_first else "10.0.0.3:26000"
    write_node(root, "p2", 300, prompt_init(300, 1, "10.0.0.3", 26000), hccl_timeout(300, "03:40:01.120.000"))
    write_node(root, "d2", 400, decode_init(400, 6, "10.0.0.4", 1, target),
               pull_timeout(400, "03:40:01.160.000", 8, 1))


def test_concurrent_unrelated_pairs_stay_apart(tmp_path):
    two_pairs(tmp_path)
    incidents = incidents_of(tmp_path)
    assert sorted(tuple(i["nodes"]) for i in incidents) == [("d1", "p1"), ("d2", "p2")]
    leads = {tuple(i["nodes"]): (i["lead"]["node"], i["lead"]["family"], i["lead"]["code"]) for i in incidents}
    # The lead is the lower-level error on the *other* node, before the decoder's timeout.
    assert leads[("d1", "p1")] == ("p1", "hccl", "9")
    assert leads[("d2", "p2")] == ("p2", "hccl", "9")


def test_a_link_to_the_same_prompt_joins_the_pairs(tmp_path):
    two_pairs(tmp_path, second_pair_linked_to_first=True)
    nodes = sorted(tuple(i["nodes"]) for i in incidents_of(tmp_path))
    assert ("d1", "d2", "p1") in nodes  # both decoders link to p1; p2 is not linked to anyone failing
    assert all("p2" not in n or n == ("p2",) for n in nodes)


def test_time_alone_joins_nodes_without_link_facts(tmp_path):
    for node, pid, ts in (("a", 10, "03:40:01.100.000"), ("b", 20, "03:40:01.300.000")):
        (tmp_path / node).mkdir()
        (tmp_path / node / "app.log").write_text(pull_timeout(pid, ts, 1, 1).replace(", remote cluster id = 1", ""))
    (tmp_path / "c").mkdir()  # much later: its own incident
    (tmp_path / "c" / "app.log").write_text(pull_timeout(30, "03:45:00.000.000", 1, 1)
                                            .replace(", remote cluster id = 1", ""))
    nodes = sorted(tuple(i["nodes"]) for i in incidents_of(tmp_path))
    assert nodes == [("a", "b"), ("c",)]


def test_time_alone_never_joins_nodes_that_have_link_facts(tmp_path):
    write_node(tmp_path, "p1", 100, prompt_init(100, 1, "10.0.0.1", 26000), not_linked(100, "03:40:01.100.000", 3))
    write_node(tmp_path, "d9", 900, decode_init(900, 9, "10.0.0.9", 4, "10.0.0.44:26000"),
               pull_timeout(900, "03:40:01.150.000", 7, 4))
    assert sorted(tuple(i["nodes"]) for i in incidents_of(tmp_path)) == [("d9",), ("p1",)]


def test_a_storm_continues_its_incident_and_a_new_failure_does_not(tmp_path):
    debug = not_linked(200, "03:40:01.100.000", 1) + not_linked(200, "03:40:05.100.000", 2)  # same failure, later
    debug += pull_timeout(200, "03:41:30.000.000", 3, 1)  # another failure, much later
    write_node(tmp_path, "d1", 200, decode_init(200, 5, "10.0.0.2", 1, "10.0.0.1:26000"), debug)
    incidents = incidents_of(tmp_path)
    assert [(i["findings"], i["lead"]["code"]) for i in sorted(incidents, key=lambda i: i["start"])] == \
        [(2, "0x5010B007"), (1, "0x5010B001")]


def test_shared_req_ids_join_nodes_and_are_told(tmp_path):
    # No addresses or cluster ids: only req_id 4242 ties the decoder's failure to the prompt's.
    (tmp_path / "pp").mkdir()
    (tmp_path / "dd").mkdir()
    (tmp_path / "pp" / "app.log").write_text(
        plog("GE", 1, "03:40:01.100.000", "x.cc:1", 2, "Process: role = Prompt", "INFO")
        + plog("GE", 1, "03:40:01.200.000", "data_cache_engine.cc:431", 2,
               "FindCacheEntry: ErrorNo: 1343270914(kv cache not exit!) cache entry not found, req_id = 4242"))
    (tmp_path / "dd" / "app.log").write_text(
        plog("GE", 5, "03:40:01.000.000", "x.cc:1", 6, "Process: role = Decoder", "INFO")
        + pull_timeout(5, "03:40:01.210.000", 4242, 3))
    (only,) = incidents_of(tmp_path)
    assert only["nodes"] == ["dd", "pp"] and "4242" in only["story"]


APIS = ("PullKvBlocks", "LinkClusters", "PushKvBlocks", "AllocateCache", "UnlinkClusters", "SetRole",
        "PullKvCache", "PushKvCache")  # 8 echoing APIs: as many rows as the first screen shows


def _fleet(root: Path) -> Path:
    """Three nodes, each: one LLM_TIMEOUT from PushKvBlocks, then two generic echoes from each of 8 APIs."""
    for node in ("node-a", "node-b", "node-c"):
        folder = root / "fleet" / node / "ascend" / "log" / "debug" / "plog"
        folder.mkdir(parents=True)
        lines = ["[ERROR] GE(5569,python3):2025-11-12-03:40:05.100.000 [llm_datadist.cc:549]5650 PushKvBlocks: "
                 "ErrorNo: 1343270938(transfer timeout!) [GE][MODULE]PushKvBlocks failed, req_id = 7"]
        for i, api in enumerate(api for api in APIS for _ in range(2)):
            lines.append(f"[ERROR] GE(5569,python3):2025-11-12-03:40:05.{201 + i}.000 [llm_datadist.cc:549]5650 "
                         f"{api}: ErrorNo: 4294967295(failed) [GE][MODULE]{api} failed")
        (folder / "plog-5569_20251112034002789.log").write_text("\n".join(lines) + "\n")
    return root / "fleet"


def _scan(fleet: Path, fmt: str) -> str:
    result = CliRunner().invoke(cli, ["scan", str(fleet), "--format", fmt, "--fail-on", "never", "--no-pager"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_text_first_screen_names_the_specific_failure_and_counts_the_echoes(tmp_path):
    text = _scan(_fleet(tmp_path), "text").splitlines()
    assert " ".join(line.strip() for line in text[2:4]) == (  # under the header: the specific failure, no echo
        "Recurring across 3 bundles and 3 nodes: LLM_TIMEOUT (0x5010B01A) from PushKvBlocks in 3 bundles; "
        "the table below")
    start = next(i for i, line in enumerate(text) if line.startswith("Recurring across") and "more than" in line)
    assert text[start] == "Recurring across 3 bundles and 3 nodes: 1 failure in more than one bundle"
    assert text[start + 2].split() == ["3", "3", "3", "LLM_TIMEOUT", "(0x5010B01A)", "from", "PushKvBlocks", "->",
                                       "relink"]
    section = text[start:text.index("", start)]
    assert not [line for line in section if "LLM_FAILED" in line and "echoes" not in line]
    folded = " ".join(line.strip() for line in section[section.index(next(x for x in section if "+ " in x)):])
    assert folded == "+ 48 generic LLM_FAILED (0xFFFFFFFF) echoes of these from 8 APIs, in up to 3 bundles"


def test_markdown_and_json_rank_the_specific_failure_before_its_echoes(tmp_path):
    fleet = _fleet(tmp_path)
    markdown = _scan(fleet, "markdown").splitlines()
    start = markdown.index("## Recurring across 3 bundles and 3 nodes")
    rows = markdown[start + 4:markdown.index("", start + 4)]
    assert "LLM_TIMEOUT (0x5010B01A) | PushKvBlocks | relink" in rows[0]
    assert len(rows) == 9 and all("LLM_FAILED" in row for row in rows[1:])
    prints = json.loads(_scan(fleet, "json"))["summary"]["fingerprints"]
    assert [(p["name"], p["generic"]) for p in prints[:2]] == [("LLM_TIMEOUT", False), ("LLM_FAILED", True)]
    assert [p["findings"] for p in prints] == [3] + [6] * 8
