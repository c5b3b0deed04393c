"""`--node NAME` names the node of everything a scan reads whose node would come from its path
(review D14): on the node itself, `~/ascend/log` sits under a home folder or a mount point, which
is not a node, and per-node parts of a fleet must not collapse into the user's name. A host named
by an envelope still wins."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from analyzer.cli import cli
from click.testing import CliRunner

SAMPLES = Path(__file__).resolve().parents[1] / "sample_logs"
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
