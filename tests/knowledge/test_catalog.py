"""Stage: data. The catalog holds every code of domain.md §2 with the right numbers and names.
"""

import pytest
from analyzer.knowledge.catalog import format_code

# (n, C++ name, Python name, plog text) straight from domain.md §2.
TABLE = [
    (1, "LLM_WAIT_PROC_TIMEOUT", "LLM_WAIT_PROCESS_TIMEOUT", "request wait to be processed timeout!"),
    (2, "LLM_KV_CACHE_NOT_EXIST", None, "kv cache not exit!"),
    (3, "LLM_REPEAT_REQUEST", None, "repeat request!"),
    (4, "LLM_REQUEST_ALREADY_COMPLETED", None, "request already complete!"),
    (5, "LLM_PARAM_INVALID", None, "parameter is invalid!"),
    (6, "LLM_ENGINE_FINALIZED", None, "llm engine finalized!"),
    (7, "LLM_NOT_YET_LINK", None, "local cluster is not linked with remote cluster!"),
    (8, "LLM_ALREADY_LINK", None, "local cluster is already linked with remote cluster!"),
    (9, "LLM_LINK_FAILED", None, "local cluster link with remote cluster failed!"),
    (10, "LLM_UNLINK_FAILED", None, "local cluster unlink with remote cluster failed!"),
    (11, "LLM_NOTIFY_PROMPT_UNLINK_FAILED", None, "local cluster notify remote cluster do unlink failed!"),
    (12, "LLM_CLUSTER_NUM_EXCEED_LIMIT", None, "cluster num exceed limit!"),
    (13, "LLM_PROCESSING_LINK", None, "link is current processing, try again later!"),
    (14, "LLM_DEVICE_OUT_OF_MEMORY", None, "device out of memory!"),
    (15, "LLM_PREFIX_ALREADY_EXIST", None, "Prefix has already existed."),
    (16, "LLM_PREFIX_NOT_EXIST", None, "Prefix does not exist."),
    (17, "LLM_SEQ_LEN_OVER_LIMIT", "LLM_SEQ_LENOVERLIMIT", "Sequence length exceed limit."),
    (18, "LLM_NO_FREE_BLOCK", None, "No free block."),
    (19, "LLM_BLOCKS_OUT_OF_MEMORY", None, "Block is out of memory."),
    (20, "LLM_CACHE_INCOMPATIBLE", None, None),
    (21, "LLM_CACHE_KEY_ALREADY_EXIST", None, None),
    (22, "LLM_COPY_CACHE_FAILED", None, None),
    (23, "LLM_CACHE_ID_ALREADY_EXIST", None, None),
    (24, "LLM_EXIST_LINK", None, "Link existed when switching role, unlink before switch."),
    (25, "LLM_FEATURE_NOT_ENABLED", None, "Feature is not enabled."),
    (26, "LLM_TIMEOUT", None, "Process timeout."),
    (27, "LLM_LINK_BUSY", None, "Current link is busy."),
    (28, "LLM_OUT_OF_MEMORY", None, "Out of memory."),
]


@pytest.mark.parametrize("n,name,py_name,text", TABLE, ids=[row[1] for row in TABLE])
def test_every_code_is_in_the_catalog(rules, n, name, py_name, text):
    code = rules.catalog.by_name[name]
    assert code.value == 0x5010B000 + n
    assert code.value == 1343270912 + n  # the decimal CANN host logs print
    assert code.plog_text == text
    if py_name:
        assert code.python_name == py_name
        assert rules.catalog.by_name[py_name] is code


def test_llm_failed_and_lookups(rules):
    cat = rules.catalog
    assert cat.by_name["LLM_FAILED"].value == 0xFFFFFFFF
    assert cat.lookup("4294967295")[1].name == "LLM_FAILED"
    assert cat.lookup("-1")[1].name == "LLM_FAILED"
    assert cat.lookup("0x5010b009")[1].name == "LLM_LINK_FAILED"
    assert cat.lookup("1343270921")[1].name == "LLM_LINK_FAILED"
    assert cat.lookup("LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT")[1].name == "LLM_WAIT_PROC_TIMEOUT"
    assert cat.lookup("0x5010B0A3") == (0x5010B0A3, None)  # unknown member of the family
    assert cat.lookup("507046") is None  # a runtime code, not ours
    assert cat.lookup("LLM_SUCCESS") is None  # success is not a fault
    assert format_code(-1) == "0xFFFFFFFF"


def test_api_spellings_resolve(rules):
    apis = rules.apis
    assert apis.resolve_token("LinkClusters") == "LinkLlmClusters"
    assert apis.resolve_token("PULLKVCACHE") == "PullKvCache"
    assert apis.resolve_token("LLMDataDist.init") == "Initialize"
    assert apis.resolve_token("llm_datadist::LlmDataDist::PullKvBlocks") == "PullKvBlocks"
    assert apis.resolve_token("_pull_blocks") == "PullKvBlocks"
    assert apis.resolve_token("link") == "Link"
    assert apis.resolve_token("Connect") == "LinkLlmClusters"
    assert apis.resolve_token("BuildGraph") is None


def test_a_rules_file_is_parsed_once_per_content_and_each_caller_gets_its_own_copy(tmp_path, monkeypatch):
    import yaml
    from analyzer.knowledge import catalog

    monkeypatch.setenv("DDTRIAGE_CACHE_DIR", str(tmp_path / "cache"))
    parses = []
    real = yaml.load
    monkeypatch.setattr(yaml, "load", lambda *a, **k: parses.append(1) or real(*a, **k))
    path = tmp_path / "r.yaml"
    path.write_text("rules:\n  - id: a-rule\n")
    first = catalog.read_yaml(path)
    first["rules"].append("changed by its caller")
    assert catalog.read_yaml(path) == {"rules": [{"id": "a-rule"}]} and len(parses) == 1
    path.write_text("rules:\n  - id: b-rule\n")  # a changed file is read again
    assert catalog.read_yaml(path) == {"rules": [{"id": "b-rule"}]} and len(parses) == 2
