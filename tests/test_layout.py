"""Stage: inputs (naming). Node, log kind, device and pid read off a log's name."""

import pytest
from analyzer.inputs import layout_of


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
