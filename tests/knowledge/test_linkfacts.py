"""Link facts: where they are read (cost) and whose they are (context), through the CLI.

- D28: busy connector INFO lines (req_id, cluster on every pull) are never matched one by one;
  init lines and the failure's own line are.
- D26: two pods with the same pid (`kubectl logs --prefix`) never share link facts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.knowledge.linkfacts import LinkFactMatcher
from click.testing import CliRunner


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def connector_log(path: Path, pulls: int) -> Path:
    """A decode connector: one init line, `pulls` INFO pulls naming req_id and cluster, one failure."""
    lines = ["(Worker_TP0 pid=7001) INFO 11-12 03:39:55 [llmdatadist_connector_v1.py:212] Init LLMDataDist: "
             "role = LLMRole.DECODER, local cluster_id = 10, device_id = 0"]
    for i in range(pulls):
        lines.append(f"(Worker_TP0 pid=7001) INFO 11-12 03:40:{i % 60:02d} [llmdatadist_connector_v1.py:301] "
                     f"pull_blocks start, req_id={3000 + i}, src_cache_key=BlocksCacheKey(cluster_id=2, model_id=0)")
        lines.append(f"(Worker_TP0 pid=7001) INFO 11-12 03:40:{i % 60:02d} [scheduler.py:88] running 12 reqs")
    lines.append("(Worker_TP0 pid=7001) ERROR 11-12 03:41:00 [llmdatadist_connector_v1.py:330] KV transfer task "
                 "failed: [pull_blocks] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK, req_id = 3999.")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_busy_info_lines_are_not_matched_line_by_line(tmp_path, monkeypatch):
    log = connector_log(tmp_path / "decode.log", 2000)
    calls = []
    real = LinkFactMatcher.find

    def counted(self: LinkFactMatcher, line: str, *args: object) -> list[tuple[str, str]]:
        calls.append(line)
        return real(self, line, *args)

    monkeypatch.setattr(LinkFactMatcher, "find", counted)
    code, out = run("scan", str(log), "-j1", "--format", "json", "--fail-on", "never")
    report = json.loads(out)
    # the init line, the failure and the few lines before it: not the 2,000 pulls
    assert len(calls) < 40, len(calls)
    (finding,) = report["findings"]
    assert finding["link"]["req_id"] == "3999"
    (node,) = report["links"]
    assert node["role"] == "Decoder" and node["clusters"][0]["cluster_id"] == "10"
    assert "3999" in node["req_ids"]


KUBECTL = """\
[pod/prefill-0/vllm] 2025-11-12T03:40:00.000000000Z (Worker pid=1) INFO 11-12 03:40:00 [c.py:1] LLMDataDist init role=prompt, cluster_id=0, listen 10.1.0.1:26000
[pod/decode-0/vllm] 2025-11-12T03:40:00.100000000Z (Worker pid=1) INFO 11-12 03:40:00 [c.py:1] LLMDataDist init role=decoder, cluster_id=1
[pod/decode-0/vllm] 2025-11-12T03:40:01.000000000Z (Worker pid=1) INFO 11-12 03:40:01 [c.py:2] start pull req_id=777 from cluster 0
[pod/prefill-0/vllm] 2025-11-12T03:40:01.100000000Z (Worker pid=1) ERROR 11-12 03:40:01 [c.py:3] llm_datadist.status.LLMException: [allocate_blocks_cache] failed, error code is LLMStatusCode.LLM_DEVICE_OUT_OF_MEMORY, x.
[pod/decode-0/vllm] 2025-11-12T03:40:01.200000000Z (Worker pid=1) ERROR 11-12 03:40:01 [c.py:4] llm_datadist.status.LLMException: [pull_blocks] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK, x.
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_pods_with_the_same_pid_keep_their_own_link_facts(tmp_path, jobs):
    log = tmp_path / "pd.log"
    log.write_text(KUBECTL)
    code, out = run("scan", str(log), "-j", jobs, "--format", "json", "--fail-on", "never")
    by_pod = {f["pod"]: f["link"] for f in json.loads(out)["findings"]}
    assert by_pod["prefill-0"] == {"local_cluster": "0"}  # not decode-0's cluster 1, peer 0 or req 777
    assert by_pod["decode-0"]["local_cluster"] == "1"


def test_the_compiled_screen_is_shared_within_a_thread_never_across_threads():
    """The hyperscan screen is compiled once per process and thread (its scratch space is not
    thread-safe), and a matcher of a rules set loaded again finds the same facts."""
    import threading

    from analyzer.knowledge.linkfacts import _Screen
    from analyzer.knowledge.rules import RuleSet

    pytest.importorskip("hyperscan")
    kinds = RuleSet.load().linkfacts.kinds
    here, again = _Screen.build(kinds), _Screen.build(RuleSet.load().linkfacts.kinds)
    there = []
    worker = threading.Thread(target=lambda: there.append(_Screen.build(kinds)))
    worker.start()
    worker.join()
    assert here.db is again.db and there[0].db is not here.db
    line = "LinkLlmClusters remote ip info = 10.1.0.1:26000, cluster_id = 7"
    assert here.find(line, line.encode()) == there[0].find(line, line.encode()) == [("remote_addr", "10.1.0.1:26000")]
