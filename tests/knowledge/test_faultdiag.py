"""`ddtriage rules export --format ascend-fd`: the knowledge as a MindCluster FaultDiag custom
fault-entity file, checked against a schema written from FaultDiag's documentation and loader,
and loaded by FaultDiag's own `update_entity` (vendored under tests/data/ascend_fd/)."""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from analyzer.cli import cli
from analyzer.knowledge.faultdiag import chinese, clean, export_faultdiag
from analyzer.knowledge.rules import RuleSet
from click.testing import CliRunner

TESTS = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((TESTS / "schemas" / "ascend-fd-custom-entity.schema.json").read_text(encoding="utf-8"))
VENDORED = TESTS / "data" / "ascend_fd"
ORIGIN_CODES = set((VENDORED / "origin-codes.txt").read_text(encoding="utf-8").split())


@pytest.fixture(scope="module")
def exported() -> dict:
    return export_faultdiag(RuleSet.load(lang="en"), RuleSet.load(lang="zh"))


def test_export_validates_against_the_schema(exported) -> None:
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.Draft202012Validator(SCHEMA).validate(exported)


def test_the_schema_rejects_what_faultdiag_rejects(exported) -> None:
    validator = jsonschema.Draft202012Validator(SCHEMA)
    entry = exported["LLMDD_5010B009"]
    for broken in ({"bad code": entry}, {"x" * 51: entry},
                   {"LLMDD_X": {**entry, "attribute.cause_en": "链接失败"}},  # Chinese only in _zh fields
                   {"LLMDD_X": {**entry, "attribute.class": ""}},
                   {"LLMDD_X": {**entry, "source_file": "|".join(["CANN_Plog"] * 11)}},
                   {"LLMDD_X": {**entry, "regex.in": [["a"], "b"]}},
                   {"LLMDD_X": {k: v for k, v in entry.items() if k != "regex.in"}}):
        assert not validator.is_valid(broken), list(broken)[0]
    assert not validator.is_valid({f"C{i}": entry for i in range(1001)})


def test_entries_chains_and_limits(exported) -> None:
    assert 50 <= len(exported) <= 1000
    assert not set(exported) & ORIGIN_CODES  # none is one of FaultDiag's own codes
    for code, entity in exported.items():
        for edge in entity.get("rule", []):
            assert edge["dst_code"] in exported and edge["dst_code"] != code
    link = exported["LLMDD_5010B009"]
    assert (link["attribute.class"], link["attribute.component"], link["attribute.module"]) == (
        "Software", "CANN", "LLM-DataDist")
    assert ["1343270921"] in link["regex.in"] and ["LLMStatusCode.LLM_LINK_FAILED"] in link["regex.in"]
    assert link["source_file"] == "CANN_Plog|TrainLog"
    assert "LLMDD_4294967295" not in exported and "LLMDD_FFFFFFFF" not in exported  # the generic failure
    # fault chains: a neighbour error -> the LLM-DataDist entries it leads to
    assert exported["LLMDD_NB_socket_111"]["rule"] == [{"dst_code": "LLMDD_link-failed-connection-refused"}]
    assert exported["LLMDD_NB_runtime_507046"]["rule"] == [{"dst_code": "LLMDD_5010B01A"}]  # -> LLM_TIMEOUT
    transfer = exported["LLMDD_wait-timeout-transfer"]
    assert ["PullKvBlocks", "1343270913"] in transfer["regex.in"]  # AND: the API and the code on one line
    assert ["pull_blocks", "LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT"] in transfer["regex.in"]
    assert "Connection refused" in {k for g in exported["LLMDD_NB_socket_111"]["regex.in"] for k in g}


def test_faultdiag_loads_the_export_with_its_own_checks(exported, tmp_path, monkeypatch) -> None:
    """FaultDiag's `update_entity` (what `ascend-fd entity --update FILE` runs) adds every entry."""
    kg = tmp_path / "kg-config.json"
    kg.write_text(json.dumps({"knowledge-repository": {c: {} for c in sorted(ORIGIN_CODES)}}), encoding="utf-8")
    monkeypatch.setenv("DDTRIAGE_TEST_FD_KG_CONF", str(kg))
    monkeypatch.setenv("DDTRIAGE_TEST_FD_USER_CONF", str(tmp_path / "custom-ascend-kg-config.json"))
    monkeypatch.syspath_prepend(str(VENDORED))
    try:
        update = importlib.import_module("ascend_fd.pkg.customize.custom_entity.custom_update")
        loaded: dict = {}
        update.update_entity(sdk_entity=exported, output_dict=loaded)
        assert sorted(loaded["knowledge-repository"]) == sorted(exported)
        added = loaded["knowledge-repository"]["LLMDD_5010B009"]
        assert added["attribute"]["cause_en"] == exported["LLMDD_5010B009"]["attribute.cause_en"]
        # and it refuses what it should: a code with a space, a chain to nowhere
        bad: dict = {}
        update.update_entity(sdk_entity={"bad code": exported["LLMDD_5010B009"],
                                         "LLMDD_ok": {**exported["LLMDD_5010B009"], "rule": [{"dst_code": "nowhere"}]},
                                         "LLMDD_fine": exported["LLMDD_5010B009"]}, output_dict=bad)
        assert sorted(bad["knowledge-repository"]) == ["LLMDD_fine"]
    finally:
        for name in [n for n in sys.modules if n == "ascend_fd" or n.startswith("ascend_fd.")]:
            del sys.modules[name]


@dataclass
class _Entry:
    meaning: str
    codes: dict


def test_chinese_text_from_the_entry_loaded_in_chinese(exported) -> None:
    assert chinese(_Entry("建链失败", {"111": "连接被拒绝"}), "meaning") == "建链失败"
    assert chinese(_Entry("建链失败", {"111": "连接被拒绝"}), "codes", "111") == "连接被拒绝"
    assert chinese(None, "meaning") is None
    zh = json.dumps(exported["LLMDD_5010B001"], ensure_ascii=False)
    assert "处理超时" in zh  # the official Chinese name of LLM_WAIT_PROC_TIMEOUT, from the catalog's meaning_zh
    assert clean("a \u2192 b \u2014 c \u00e9", zh=False) == "a -> b - c"
    assert clean("建链失败（对端）\u00e9", zh=True) == "建链失败（对端）"


def test_cli_export_and_a_bad_output_path(tmp_path) -> None:
    out = tmp_path / "ddtriage-fd.json"
    result = CliRunner().invoke(cli, ["rules", "export", "--format", "ascend-fd", "-o", str(out)])
    assert result.exit_code == 0, result.stderr
    assert json.loads(out.read_text(encoding="utf-8")) == export_faultdiag(RuleSet.load(lang="en"),
                                                                           RuleSet.load(lang="zh"))
    assert f"ascend-fd entity --update {out}" in result.stdout
    result = CliRunner().invoke(cli, ["rules", "export", "-o", str(tmp_path / "no" / "such" / "x.json")])
    assert result.exit_code == 2 and "cannot write" in result.stderr and "Traceback" not in result.stderr
