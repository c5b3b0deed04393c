"""Stage: context. Which API returned a code, and on what evidence.
"""

import pytest
from analyzer import analyze_text


def last(findings):
    return findings[-1]


@pytest.mark.parametrize("text,api,evidence", [
    ("[ERROR] GE(4811,python3):2025-11-12-03:40:02.123.456 [llm_link_manager.cc:412]4811 LinkClusters: "
     "ErrorNo: 1343270921(local cluster link with remote cluster failed!) [GE][MODULE]Failed", "LinkLlmClusters", "func"),
    ("[ERROR] GE(4811, python3) :2025-11-12 03:40:02.123.456 [llm_datadist.cc:12]4811 pullkvcache : ret = 0x5010B002",
     "PullKvCache", "func"),
    ("ERR0R] GE(377,ker_DP8_EP8):2025-11-12-03:40:02.123.456 [llm_datadist.cc:12]377 PULLKVBLOCKS: ErrorNo: 1343270913(x)",
     "PullKvBlocks", "func"),
    ("llm_datadist.status.LLMException: [pull_blocks] failed, error code is LLMStatusCode.LLM_PARAM_INVALID, details.",
     "PullKvBlocks", "tag"),
    ("[ERROR] LLM_DATADIST(4811,python3):2025-11-12 03:40:02.123 [llm_datadist.py:88]140001 "
     "[LLMDataDist.init] failed, error code is LLMStatusCode.LLM_FEATURE_NOT_ENABLED", "Initialize", "tag"),
    ("got LLM_NOT_YET_LINK (0x5010b007) at every layer's PushKvBlocks", "PushKvBlocks", "message"),
    ("Initialize failed, ret = 1343270917", "Initialize", "message"),
])
def test_same_line_evidence(rules, text, api, evidence):
    f = last(analyze_text(text, rules))
    assert (f.api, f.api_evidence) == (api, evidence)


def test_traceback_frames_give_the_innermost_api(rules):
    text = "\n".join([
        "Traceback (most recent call last):",
        '  File "/opt/connector.py", line 311, in start_load_kv',
        "    self._pull(req)",
        '  File "/opt/llm_datadist/v2/cache_manager.py", line 402, in pull_blocks',
        "    raise LLMException(status)",
        "llm_datadist.status.LLMException: error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT",
    ])
    f = last(analyze_text(text, rules))
    assert (f.api, f.api_evidence, f.api_line) == ("PullKvBlocks", "traceback", 4)
    assert f.action == "relink"


def test_interleaved_vllm_workers_keep_their_own_traceback(rules):
    text = "\n".join([
        "(Worker_TP0 pid=100) ERROR 11-12 03:40:02 [worker.py:1] Traceback (most recent call last):",
        "(Worker_TP1 pid=101) ERROR 11-12 03:40:02 [worker.py:1] Traceback (most recent call last):",
        '(Worker_TP0 pid=100) ERROR 11-12 03:40:02 [worker.py:1]   File "/x.py", line 3, in link_clusters',
        '(Worker_TP1 pid=101) ERROR 11-12 03:40:02 [worker.py:1]   File "/y.py", line 9, in pull_blocks',
        "(Worker_TP0 pid=100) ERROR 11-12 03:40:02 [worker.py:1] LLMException: error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT",
        "(Worker_TP1 pid=101) ERROR 11-12 03:40:02 [worker.py:1] LLMException: error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT",
    ])
    a, b = analyze_text(text, rules)[-2:]
    assert (a.pid, a.api, a.action) == ("100", "LinkLlmClusters", "retry")
    assert (b.pid, b.api, b.action) == ("101", "PullKvBlocks", "relink")


def test_nearest_earlier_line_of_same_thread(rules):
    text = "\n".join([
        "[INFO] GE(5569,python3):2025-11-12-03:40:06.000.001 [llm_datadist.cc:500]5571 PullKvBlocks: start req 7",
        "[INFO] GE(5569,python3):2025-11-12-03:40:06.000.002 [llm_datadist.cc:500]5572 LinkClusters: other thread",
        "[ERROR] GE(5569,python3):2025-11-12-03:40:06.100.200 [data_cache_engine.cc:510]5571 Process: ErrorNo: 1343270914(kv cache not exit!)",
    ])
    f = last(analyze_text(text, rules))
    assert (f.api, f.api_evidence, f.api_line) == ("PullKvBlocks", "nearby", 1)


def test_no_api_when_nothing_says_so(rules):
    f = last(analyze_text("something returned 0x5010B009", rules))
    assert f.api is None and f.api_evidence is None
    assert f.rule == "default-link-failed"


def test_generic_failure_needs_an_llm_datadist_context(rules):
    graph = ("[ERROR] GE(900,python3):2025-11-12-03:40:01.000.001 [graph_builder.cc:77]901 BuildGraph: "
             "ErrorNo: 4294967295(failed) [GE][MODULE]build graph failed")
    assert analyze_text(graph, rules) == []
    echo = "\n".join([
        "[ERROR] GE(5569,python3):2025-11-12-03:40:06.1 [data_cache_engine.cc:510]5571 Process: ErrorNo: 1343270914(kv cache not exit!)",
        "[ERROR] GE(5569,python3):2025-11-12-03:40:06.2 [x.cc:1]5571 Run: ErrorNo: 4294967295(failed)",
    ])
    f = last(analyze_text(echo, rules))
    assert f.name == "LLM_FAILED" and f.generic


def test_flattened_plog_records_take_their_own_func(rules):
    text = ("[ERROR] GE(1,p):2025-11-12-03:40:02.1 [a.cc:1]1 LinkClusters: ErrorNo: 1343270921(x) "
            "[ERROR] GE(1,p):2025-11-12-03:40:02.2 [b.cc:2]1 PullKvBlocks: ErrorNo: 1343270913(y)")
    by_code = {f.name: f.api for f in analyze_text(text, rules)}
    assert by_code == {"LLM_LINK_FAILED": "LinkLlmClusters", "LLM_WAIT_PROC_TIMEOUT": "PullKvBlocks"}


@pytest.mark.parametrize("line", [
    "[ERROR] GE(900,python3):2025-11-12-03:40:01.0 [graph_manager.cc:120]901 Initialize: ErrorNo: 4294967295(failed) graph manager initialize failed",
    "[ERROR] GE(900,python3):2025-11-12-03:40:01.0 [ge_api.cc:12]901 GEInitialize: ErrorNo: 4294967295(failed) Initialize GE failed",
])
def test_graph_engine_failures_named_like_apis_are_not_findings(rules, line):
    assert analyze_text(line, rules) == []


def test_generic_failure_not_tied_by_a_nearby_line(rules):
    text = "\n".join([
        "[INFO] HCCL(900,python3):2025-11-12-03:40:01.0 [hccl_comm.cc:120][901][Init]comm init success",
        "[ERROR] GE(900,python3):2025-11-12-03:40:01.1 [graph_builder.cc:77]901 BuildGraph: ErrorNo: 4294967295(failed)",
    ])
    assert analyze_text(text, rules) == []


def test_generic_policy_keeps_echoes_only_soon_after_in_the_same_thread(rules):
    from analyzer.core.headers import parse_header
    from analyzer.detect.context import API_LOOKBACK_LINES, ECHO_SECONDS, ApiContext, ApiResolver, GenericPolicy

    def header(pid, second):
        return parse_header(f"[ERROR] GE({pid},p):2025-11-12-03:40:{second:06.3f} [x.cc:1]{pid} Run: failed")

    policy = GenericPolicy(ApiResolver(rules.apis))
    nothing = ApiContext(None, None, None)
    assert not policy.keeps(nothing, "Run: failed", 10, 1000, header(7, 5))  # no specific code before it
    policy.note_specific(10, 1000, header(7, 5))
    assert policy.keeps(nothing, "Run: failed", 11, 1100, header(7, 5 + ECHO_SECONDS / 2))
    assert not policy.keeps(nothing, "Run: failed", 11, 1100, header(7, 5 + ECHO_SECONDS * 2))  # too late
    assert not policy.keeps(nothing, "Run: failed", 10 + API_LOOKBACK_LINES + 1, 1100, header(7, 5))  # too far
    assert not policy.keeps(nothing, "Run: failed", 11, 1100, header(8, 5))  # another process
    assert policy.keeps(nothing, "Run: failed in llm_datadist.cc", 99, 9999, header(8, 5))  # names LLM-DataDist
    assert policy.keeps(ApiContext("PullKvBlocks", "func", None), "Run: failed", 99, 9999, header(8, 5))
    assert not policy.keeps(ApiContext("PullKvBlocks", "nearby", 98), "Run: failed", 99, 9999, header(8, 5))
