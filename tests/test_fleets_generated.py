"""Fleets built in the test, one rule of incident grouping at a time (analyzer/incidents.py):
links join nodes, time alone joins only nodes without link facts, unrelated pairs stay apart, a
storm continues its incident, the lead may sit on the other node and comes from the lower level."""

from __future__ import annotations

import json
from pathlib import Path

from analyzer.cli import cli
from click.testing import CliRunner


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
