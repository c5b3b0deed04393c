"""Stage: triage. Counts by code x API, bursts with their lead and echoes, severe first.
"""

from analyzer import analyze_text
from analyzer.diagnose.summary import AlsoCode, Summary
from analyzer.diagnose.tally import summarize

BURSTS = "\n".join([
    "[ERROR] GE(1,p):2025-11-12-03:40:05.100.000 [llm_datadist.cc:8]2 LinkClusters: ErrorNo: 1343270913(request wait to be processed timeout!)",
    "[ERROR] GE(1,p):2025-11-12-03:40:05.200.000 [llm_datadist.cc:9]2 LinkClusters: ErrorNo: 4294967295(failed)",
    "[ERROR] GE(1,p):2025-11-12-03:40:05.300.000 [llm_datadist.cc:9]2 LinkLlmClusters: ErrorNo: 4294967295(failed)",
    "[INFO] GE(1,p):2025-11-12-03:41:00.000.000 [llm_datadist.cc:9]2 Heartbeat: ok",
    "[ERROR] GE(1,p):2025-11-12-03:41:05.100.000 [llm_datadist.cc:8]2 PullKvBlocks: ErrorNo: 1343270913(request wait to be processed timeout!)",
    "[ERROR] GE(1,p):2025-11-12-03:41:05.200.000 [llm_datadist.cc:8]2 PullKvBlocks: ErrorNo: 1343270914(kv cache not exit!)",
])


def test_bursts_leads_and_echoes(rules):
    findings = analyze_text(BURSTS, rules)
    summary = summarize(findings)
    assert summary.findings == 5
    first, second = summary.bursts
    # The burst holding a specific code that is not recoverable (a transfer timeout: relink)
    # comes first even though it is later; LLM_FAILED echoes do not make a burst severe.
    assert first.lead.api == "PullKvBlocks" and first.lead.action == "relink"
    assert first.also == (AlsoCode(code="0x5010B002", name="LLM_KV_CACHE_NOT_EXIST", api="PullKvBlocks",
                                   line=6, action="check-cache", recoverable=True),)
    assert second.lead.name == "LLM_WAIT_PROC_TIMEOUT" and second.lead.action == "retry"
    assert second.echoes == 2 and (second.first_line, second.last_line) == (1, 3)


def test_counts_by_code_and_api(rules):
    summary = summarize(analyze_text(BURSTS, rules))
    rows = {(r.name, r.api): r for r in summary.codes}
    assert rows[("LLM_FAILED", "LinkLlmClusters")].count == 2
    assert rows[("LLM_FAILED", "LinkLlmClusters")].first_seen == "2025-11-12T03:40:05.200000"
    assert rows[("LLM_FAILED", "LinkLlmClusters")].last_seen == "2025-11-12T03:40:05.300000"
    assert rows[("LLM_WAIT_PROC_TIMEOUT", "PullKvBlocks")].action == "relink"
    assert summary.unrecoverable == 3  # two LLM_FAILED + the transfer timeout


def test_empty_summary(rules):
    assert summarize([]) == Summary()
    assert Summary().to_dict() == {"findings": 0, "unrecoverable": 0, "unknown_codes": 0, "codes": [], "actions": [],
                                   "nodes": [], "bursts": [], "bundles": [], "more_bundles": 0,
                                   "fingerprints": [], "more_fingerprints": 0, "incidents": []}
