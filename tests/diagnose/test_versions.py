"""Stage: diagnose (versions). Each node's CANN, driver and HIXL versions come from its logs and
are shown per node; the two sides of an incident on different releases, and HIXL's own version
check, are told as causes. Real-shaped P/D logs, written here by hand."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analyzer import analyze, load_rules
from analyzer.writers import markdown, text

PROMPT = """\
[INFO] GE(3301,python3):2025-11-12-03:39:50.100.000 [ge_api.cc:80]3301 GEInitialize: GE init begin, CANN version = {cann}, build = 20250820
[INFO] GE(3301,python3):2025-11-12-03:39:50.902.655 [llm_datadist.cc:233]3301 Initialize: llm datadist init success, role = Prompt, cluster_id = 2, device_id = 0
[INFO] GE(3301,python3):2025-11-12-03:39:51.010.118 [msg_handler_plugin.cc:142]3360 StartListen: listen on 10.1.0.1:26000 success
[ERROR] GE(3301,python3):2025-11-12-03:40:01.210.000 [msg_handler_plugin.cc:301]3360 Connect: ErrorNo: 1343270921(local cluster link with remote cluster failed!) [GE][MODULE]recv link request failed, remote cluster id = 10
"""
DECODE = """\
package_name=Ascend-cann-toolkit version={cann} innerversion=V100R001C23SPC001B230
| npu-smi 25.0.rc1.2                Version: 25.0.rc1.2                                         |
[INFO] GE(5569,python3):2025-11-12-03:39:55.100.000 [llm_datadist.cc:233]5569 Initialize: llm datadist init success, role = Decoder, cluster_id = 10, device_id = 0
[INFO] GE(5569,python3):2025-11-12-03:40:01.100.000 [llm_link_manager.cc:200]5569 LinkLlmClusters: local cluster id = 10, remote cluster id = 2, local ip = 10.2.0.2, remote ip info = 10.1.0.1:26000
{hixl}[ERROR] GE(5569,python3):2025-11-12-03:40:01.300.000 [llm_link_manager.cc:412]5569 LinkClusters: ErrorNo: 1343270921(local cluster link with remote cluster failed!) [GE][MODULE]Failed to link clusters, index = 0, remote cluster id = 2
"""
HIXL = ("[ERROR] HCCL(5569,python3):2025-11-12-03:40:01.250.000 [hixl_engine.cc:155][5569][Connect][HIXL]version in "
        "option:1.1 only support 1.0 and 1.1, local version:1.1, peer version:1.0.\n")
PEER = ("[ERROR] HCCL(5569,python3):2025-11-12-03:40:01.240.000 [hixl_cs_client.cc:233][5569][Connect][HIXL]Failed to "
        "connect peer 10.1.0.1:16666, error msg:Connection refused, errno:111\n")


def bundle(tmp_path: Path, prompt_cann: str, decode_cann: str, hixl: str = "") -> Path:
    for node, body in (("prompt-node-1", PROMPT.format(cann=prompt_cann)),
                       ("decode-node-2", DECODE.format(cann=decode_cann, hixl=hixl))):
        plog = tmp_path / node / "ascend" / "log" / "debug" / "plog"
        plog.mkdir(parents=True)
        (plog / f"plog-{'3301' if 'prompt' in node else '5569'}_20251112033950100.log").write_text(body)
    return tmp_path


def test_versions_per_node_in_every_human_report_and_in_json(tmp_path):
    with analyze([bundle(tmp_path, "8.2.RC1", "8.3.RC1")], jobs=1) as result:
        versions = {node: {k: sorted(v) for k, v in facts.versions.items()} for node, facts in result.links.items()}
        assert versions == {"prompt-node-1": {"cann": ["8.2.RC1"]},
                            "decode-node-2": {"cann": ["8.3.RC1"], "driver": ["25.0.rc1.2"]}}
        report = text.render(result)
        assert "Versions by node\n  decode-node-2: cann 8.3.RC1, driver 25.0.rc1.2\n  prompt-node-1: cann 8.2.RC1" \
            in report
        assert "| decode-node-2 | cann 8.3.RC1, driver 25.0.rc1.2 |" in markdown.render(result)


def test_two_sides_on_different_cann_releases_is_a_likely_cause(tmp_path):
    with analyze([bundle(tmp_path, "8.2.RC1", "8.3.RC1")], jobs=1) as result:
        [incident] = result.summary.incidents
        assert incident.nodes == ("decode-node-2", "prompt-node-1")
        assert ("The two sides run different cann versions (decode-node-2 8.3.RC1, prompt-node-1 8.2.RC1): "
                "a likely cause.") in incident.story


def test_the_same_release_on_both_sides_says_nothing_of_versions(tmp_path):
    with analyze([bundle(tmp_path, "8.3.RC1", "8.3.RC1")], jobs=1) as result:
        [incident] = result.summary.incidents
        assert "versions" not in incident.story


def test_hixl_version_check_is_the_lead_and_the_cause(tmp_path):
    with analyze([bundle(tmp_path, "8.3.RC1", "8.3.RC1", hixl=HIXL)], jobs=1) as result:
        [incident] = result.summary.incidents
        assert (incident.lead.family, incident.lead.code) == ("version", "pd-version-mismatch")
        assert incident.action_word == "fix-params" and "same CANN release" in incident.action
        link_failed = next(f for f in result.findings if f.node == "decode-node-2")
        assert [(c[1], c[2]) for c in link_failed.causes] == [("version", "pd-version-mismatch")]
        assert result.links["decode-node-2"].versions["hixl"] == {"1.1"}


def test_failed_to_connect_peer_is_a_link_fact_and_a_cause(tmp_path):
    with analyze([bundle(tmp_path, "8.3.RC1", "8.3.RC1", hixl=PEER)], jobs=1) as result:
        link_failed = next(f for f in result.findings if f.node == "decode-node-2")
        assert ("socket", "111") in [(c[1], c[2]) for c in link_failed.causes]
        assert ("10.1.0.1:16666") in {addr for _, addr in result.links["decode-node-2"].remote}
        [incident] = result.summary.incidents
        assert (incident.lead.family, incident.lead.code) == ("socket", "111")


def test_the_story_in_chinese(tmp_path):
    with analyze([bundle(tmp_path, "8.2.RC1", "8.3.RC1")], rules=load_rules(lang="zh"), jobs=1) as result:
        [incident] = result.summary.incidents
        assert "两侧运行的 cann 版本不同（decode-node-2 为 8.3.RC1、prompt-node-1 为 8.2.RC1），这很可能是原因。" \
            in incident.story
        data = json.loads(_json(result))
        assert data["summary"]["incidents"][0]["story"] == incident.story  # JSON: English keys, Chinese text
        assert data["findings"][0]["action"] in ("check-network",)


def _json(result) -> str:
    import io

    from analyzer.writers import json_report

    out = io.StringIO()
    json_report.write(result, out)
    return out.getvalue()


@pytest.mark.parametrize("line,kind,value", [
    ("package_name=Ascend-cann-toolkit version=9.0.0 innerversion=V100R001C25SPC001B210", "cann", "9.0.0"),
    ("/usr/local/Ascend/cann-9.1.0/lib64/libhixl.so", "cann", "9.1.0"),
    ("| npu-smi 25.0.rc1.2                Version: 25.0.rc1.2 |", "driver", "25.0.rc1.2"),
    ("[INFO] DRV(5569,python3):2025-11-12-03:39:48.000.000 [ascend][curpid:5569,5569][drv] driver version: 24.1.rc3",
     "driver", "24.1.rc3"),
    ("INFO 11-12 03:39:54 [llmdatadist_connector_v1.py:98] llm_datadist version: 0.0.2", "llm_datadist", "0.0.2"),
])
def test_version_lines_are_link_facts(rules, line, kind, value):
    assert dict(rules.linkfacts.find(line)).get(kind) == value
