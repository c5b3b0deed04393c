"""Stage: inputs (naming). Node, log kind, device and pid read off a log's name.

`--node NAME` names the node of everything a scan reads whose node would come from its path
(review D14): on the node itself, `~/ascend/log` sits under a home folder or a mount point, which
is not a node, and per-node parts of a fleet must not collapse into the user's name. A host named
by an envelope still wins (folded from test_node_option.py, review D14 (--node)).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.inputs import layout_of
from click.testing import CliRunner


@pytest.mark.parametrize("name,node,kind,device,pid", [
    ("bundle.tar.gz!node-2/device_log.tar.gz!device-3/device-41_20251112034001456.log", "node-2", "device", "3", "41"),
    ("sample_logs/prompt-node-1/ascend/log/debug/plog/plog-4811_20251112034001123.log", "prompt-node-1", "host", None, "4811"),
    ("sample_logs/decode-node-2/vllm_worker.log", "decode-node-2", "application", None, None),
    ("worker-10.0.0.7.tar.gz!root/ascend/log/debug/plog/plog-1_2.log", "worker-10.0.0.7", "host", None, "1"),
    ("node-7.tar.gz!plog.tar.gz!plog/plog-1_20251112034001123.log", "node-7", "host", None, "1"),
    ("node-7.tgz!run/plog/plog-1_2.log.1.gz", "node-7", "host", None, "1"),
    ("/var/log/ascend/log/debug/device-0/device-12_20250101.log", None, "device", "0", "12"),
    ("/root/ascend/log/debug/plog/plog-1_20250101.log", None, "host", None, "1"),
    ("a.log", None, "application", None, None),
    ("worker-3.tar.gz!home/alice/ascend/log/run/plog/plog-1_2.log", "worker-3", "host", None, "1"),
    ("mn.tar.gz!node-2/home/hw/ascend/log/debug/plog/plog-1_2.log", "node-2", "host", None, "1"),
    ("mn/node-1/home/hw/ascend/log/debug/plog/plog-1_2.log", "node-1", "host", None, "1"),
    ("/home/alice/ascend/log/debug/plog/plog-1_2.log", "alice", "host", None, "1"),
])
def test_layout(name, node, kind, device, pid):
    got = layout_of(name)
    assert (got.node, got.kind, got.device, got.pid) == (node, kind, device, pid)


SAMPLES = Path(__file__).resolve().parents[2] / "sample_logs"
PLOG = "decode-node-2/ascend/log/debug/plog/plog-5569_20251112034002789.log"


def test_node_names_what_a_home_folder_or_mount_point_holds(tmp_path, monkeypatch):
    for root in ("home/aiuser", "mnt/nvme0"):
        plog = tmp_path / root / "ascend/log/debug/plog"
        plog.mkdir(parents=True)
        shutil.copy(SAMPLES / PLOG, plog)
    monkeypatch.chdir(tmp_path)
    for root in ("home/aiuser", "mnt/nvme0"):
        result = CliRunner().invoke(cli, ["scan", f"{root}/ascend/log", "--node", "prefill-node-7", "--format", "json",
                                          "--fail-on", "never"])
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert {f["node"] for f in report["findings"]} == {"prefill-node-7"}, root
        assert [n["node"] for n in report["summary"]["nodes"]] == ["prefill-node-7"]
