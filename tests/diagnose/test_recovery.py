"""Recovered or ongoing (issue #19, item 2): a burst recovers only on a later proof of the same link
on the same node; an incident only when all its bursts do; reports list what is still broken
first; `--fail-on ongoing` gates on what did not recover, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.core.observations import Proof
from analyzer.diagnose.recovery import mark_bursts, recovered_after
from analyzer.diagnose.summary import Burst, BurstLead, Recovery
from click.testing import CliRunner

LINK = "[INFO] GE(6120,python3):2025-11-12-03:41:{s} [llm_link_manager.cc:230]6178 LinkClusters: link cluster {c}, remote {a}"
FAIL = ("[ERROR] GE(6120,python3):2025-11-12-03:41:{s} [llm_link_manager.cc:412]6178 LinkClusters: ErrorNo: 1343270921"
        "(local cluster link with remote cluster failed!) [GE][MODULE]Failed to link clusters, index = 0, cluster_id = {c}")
OK = "[INFO] GE(6120,python3):2025-11-12-03:41:{s} [llm_link_manager.cc:244]6178 LinkClusters: link cluster {c} success, cost 49 ms"


def burst(node: str = "n1", peers=(("2", "10.0.1.11:26000"),), first: str = "2025-11-12T03:41:31.010",
          last: str = "2025-11-12T03:41:31.010", pid: str = "6120", code: str = "0x5010B009",
          api: str = "LinkLlmClusters") -> Burst:
    lead = BurstLead(9, first, None, code, None, api, "func", True, "r", "check-network", "", "text")
    return Burst("plog-6120.log", node, "host", pid, 9, 9, first, last, 1, False, lead, 0, (), (), peers=peers)


def proof(ts: str | None = "2025-11-12T03:41:33.061", node: str = "n1", clusters=("2",), addrs=(), pid: str = "6120",
          line: int = 17, kind: str = "link-success") -> Proof:
    return Proof("plog-6120.log", line, ts, node, kind, pid, clusters, addrs, "link cluster 2 success")


@pytest.mark.parametrize("b,p,state", [
    (burst(), proof(), "recovered"),  # same cluster, later
    (burst(peers=((None, "10.0.1.11:26000"),)), proof(clusters=(), addrs=("10.0.1.11",)), "recovered"),  # ip
    (burst(), proof(clusters=("6",)), "ongoing"),  # another link
    (burst(), proof(node="n2"), "ongoing"),  # another node
    (burst(), proof(ts="2025-11-12T03:41:30.000"), "ongoing"),  # before the failure
    (burst(last="2025-11-12T03:41:33"), proof(ts="2025-11-12T03:41:33.500"), "ongoing"),  # a whole second: maybe later
    (burst(peers=()), proof(clusters=(), pid="6120"), "recovered"),  # no peer: its own process relinked
    (burst(peers=()), proof(clusters=(), pid="7001"), "ongoing"),
    (burst(code="0x5010B005", api="RegisterKvCache"), proof(), "ongoing"),  # nothing heals a parameter error
    (burst(first=None, last=None), proof(ts=None, line=30), "recovered"),  # untimed: a later line of the log
    (burst(first=None, last=None), proof(ts=None, line=5), "ongoing"),
])
def test_a_burst_recovers_on_a_later_proof_of_its_own_link(rules, b: Burst, p: Proof, state: str) -> None:
    (got,) = mark_bursts([b], [p], rules.recovery)
    assert got.state == state
    assert (got.recovery is not None) == (state == "recovered")


def test_the_recovery_is_the_first_fitting_proof_and_how_long_it_took(rules) -> None:
    later, first = proof(ts="2025-11-12T03:41:40.000", line=40), proof(ts="2025-11-12T03:41:33.061")
    (got,) = mark_bursts([burst()], [later, proof(clusters=("6",), line=20), first], rules.recovery)
    assert got.recovery is not None and got.recovery.line == 17
    assert got.recovery.seconds == pytest.approx(2.051)
    assert recovered_after(got.recovery) == "2.1 s"
    assert recovered_after(Recovery("x", 1, None, None, "p", "", 0.09)) == "90 ms"
    assert recovered_after(Recovery("x", 1, None, None, "p", "", 185.0)) == "3 min 5 s"


def log(path: Path, *lines: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def scan(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["scan", *args], catch_exceptions=False)
    return result.exit_code, result.stdout


@pytest.fixture(scope="module")
def two_links(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """node-a relinks cluster 2 a minute after it failed; node-b's cluster 6 never comes back (a
    success on cluster 2 is no proof for it)."""
    root = tmp_path_factory.mktemp("links")
    log(root / "node-a" / "plog-6120_20251112034130118.log",
        LINK.format(s="31.002.305", c=2, a="10.0.1.11:26000"), FAIL.format(s="31.010.004", c=2),
        LINK.format(s="59.012.180", c=2, a="10.0.1.11:26000"), OK.format(s="59.061.902", c=2))
    log(root / "node-b" / "plog-6120_20251112034130118.log",
        LINK.format(s="45.002.305", c=6, a="10.0.1.11:26006"), FAIL.format(s="45.010.004", c=6),
        LINK.format(s="46.012.180", c=2, a="10.0.1.11:26000"), OK.format(s="46.061.902", c=2))
    return root


def test_reports_say_what_is_still_broken_first(two_links: Path) -> None:
    code, text = scan(str(two_links), "--format", "json")
    incidents = json.loads(text)["summary"]["incidents"]
    assert [(i["nodes"], i["state"]) for i in incidents] == [(["node-b"], "ongoing"), (["node-a"], "recovered")]
    assert incidents[1]["recovery"]["line"] == 4 and incidents[1]["recovery"]["proof"] == "link-success"
    assert incidents[1]["recovery"]["seconds"] == pytest.approx(28.052)
    _, text = scan(str(two_links))
    lines = text.splitlines()
    assert lines[2] == "Incidents: 2 (1 ongoing, 1 recovered), still broken first"
    assert lines[3].startswith(" 1. node-b  ongoing,")
    assert "recovered 28.1 s after its first error (03:41:59.061, link-success)" in text


def test_fail_on_ongoing_gates_only_on_what_did_not_recover(two_links: Path) -> None:
    assert scan(str(two_links / "node-a"), "--fail-on", "ongoing")[0] == 0
    assert scan(str(two_links / "node-a"))[0] == 1  # the default gate is unchanged
    assert scan(str(two_links), "--fail-on", "ongoing")[0] == 1
