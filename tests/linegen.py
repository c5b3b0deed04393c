"""Generated log lines for the twin tests of the engine in the compiled core: record headers of
every format `parse_header` knows (as printed and damaged), and what follows them (codes in each
form, API spellings, neighbour errors, facts, proofs, traceback lines, and what only Python reads).
"""

from __future__ import annotations

from analyzer.inputs import YearHint

# Record headers of every format `parse_header` knows, as printed and damaged.
HEADS = [
    "[ERROR] GE(6120,python3):2025-11-12-03:42:00.001.000 [llm_datadist.cc:561]6190 PullKvBlocks: ",
    "[ERROR] GE(6120,python3):2025-11-12-03:42:00.5 [llm_datadist.cc:561]6191 Func: ",
    "[INFO] HCCL(6120,python3):2025-11-12-03:42:01.001.000 [transport_manager.cc:859] [6133][HCCL_TRACE]Link: ",
    "[ERROR] HCCP(6120,python3):2025-11-12-03:42:01.002 [ra.c:1] tid:77,ra_connect(12) : ",
    "[ERROR] DRV(6120,python3):2025-11-12-03:42:01.003 [drv.c:1][ascend][curpid: 6120, 6188][drv]",
    "  [WARNING] RUNTIME( 12 ,p):2025-11-12 03:42:02,7 ",
    "[ERROR] GE(7001,python3):2025-11-12T03:42:03 [llm_datadist.cc:1]7002 LinkLlmClusters: ",
    "[ERROR] GE(6120,python3):2025-13-45-99:99:99.001.000 [x.cc:1]6190 F: ",
    "(Worker_TP0 pid=5566) ERROR 11-12 03:42:05 [llmdatadist_connector_v1.py:212] ",
    "(EngineCore_DP0 pid=1) (Worker pid=9) WARNING 12-31 23:59:59.123 [c.py:1] ",
    "INFO 01-01 00:00:01 [c.py:1] ",
    "(Worker_TP0 pid=5566) ",
    "E20251112 03:42:06.327589 280651 llm_data_dist.cpp:118] ",
    "E1112 03:42:07.1 280651 llm_data_dist.cpp:118] ",
    "[ERROR] 2025-11-12-03:42:08.123 (PID:3301, Device:0, RankID:-1) ",
    "[2025-11-13 10:02:09.887+08:00] [9120] [9121] [llm_backend] [ERROR] [llm_manager.cpp:212] : ",
    "2025-11-12 03:42:10,456 - llm_datadist - ERROR - ",
    "",
    "    ",
]
# What follows a header: codes in each form, API spellings, neighbour errors, facts, proofs,
# traceback lines, and what only Python reads.
BODIES = [
    "PullKvBlocks failed, ret = 1343270913", "ret = 0x5010B009", "LLM_WAIT_PROC_TIMEOUT", "ret = -1",
    "status code is 4294967295", "<LLMStatusCode.LLM_KV_CACHE_NOT_EXIST: 1343270926>", "rets=[0, 1343270921",
    "ErrorNo: 1343270913(request wait to be processed timeout!)", "ret = 5010b009", " llm_datadist.cc failed ret=-1",
    "pull_blocks failed", "[pull_kv] ", "[LinkClusters]", "_link_clusters ", "Initialize  LlmDataDist", "copy_cache",
    "call hccl op failed, hcclRet -> 9", "HCCL_E_TIMEOUT", "rtDeviceInit failed, ret = 207001",
    "connect failed, errno = 111", ", remote_cluster_id = 3", ", remote_ip = 10.1.0.3, port = 26000",
    ", req_id = 4242", ", device_id = 2", "role = Prompt, cluster_id = 2", "link cluster 6 success",
    "link clusters success, remote cluster id = 4", "Pull cache success, req_id = 7",
    "Traceback (most recent call last):", '  File "/x/llm_datadist.py", line 3, in pull_blocks',
    '  File "/x/c.py", line 9, in _pull_kv', "    raise LLMException(ret)", "    ^^^^^^^^", "llm_datadist.LLMException",
    "Ascend-cann-toolkit 8.3.RC1", " 本地", "\r", "\t", "\x00", "\x1b[31m", " x", "; " + "y" * 700,
]
YEARS = [None, YearHint(2025), YearHint(2025, near="11-12"), YearHint(2025, True, "03-01"), YearHint(2026, True, "01-02")]


def stream(lines: list[tuple[str, list[str]]], crlf: bool = False) -> bytes:
    """The bytes of a log of (header, bodies) lines."""
    end = "\r\n" if crlf else "\n"
    return "".join(h + "".join(b) + end for h, b in lines).encode("utf-8")
