"""`ddtriage explain` in English and Chinese: --lang, the locale's default, the config file's `lang`;
where the C++ and Python documentation disagree it shows both. Through click's runner."""

from __future__ import annotations

import json
import re

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

CJK = re.compile(r"[\u4e00-\u9fff]")
# What may stay in Latin letters in a Chinese text: codes, names and ids (API, action, rule, binding),
# log text quoted verbatim (`plog 文本：`), and the technical nouns Chinese documentation keeps.
TERMS = {"Python", "C++", "plog", "Host", "Device", "Prompt", "Decode", "Decoder", "Prefill", "cache", "ID", "KV",
         "CANN", "LLM-DataDist", "HCCL", "timeout"}


def explain(*args: str, env: dict[str, str] | None = None) -> str:
    result = CliRunner().invoke(cli, ["explain", *args], env=env or {}, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def latin_words(text: str, rules) -> set[str]:
    """Words in Latin letters that are none of the ids, names and terms a Chinese text keeps."""
    ids = set(rules.apis.canonical) | {r.id for r in rules.rules} | TERMS
    from analyzer.knowledge.catalog import ACTIONS

    ids |= set(ACTIONS)
    words = set()
    for line in text.splitlines():
        if line.startswith("plog 文本："):
            continue  # the plog's own words, verbatim
        for word in re.findall(r"(?<![\w\-.])[A-Za-z][\w+\-.]*[A-Za-z+]", line):
            if word not in ids and not re.search(r"[_\d.]|^[A-Z]{2,}$", word):
                words.add(word)
    return words


def test_explain_in_chinese_is_wholly_chinese(rules):
    out = explain("0x5010B001", "--lang", "zh")
    assert out.startswith("0x5010B001  1343270913  LLM_WAIT_PROC_TIMEOUT（Python：LLM_WAIT_PROCESS_TIMEOUT）\n")
    assert "含义：      处理超时\n" in out and "可恢复：    是\n" in out
    assert "处理建议，最具体的在前：" in out and "[wait-timeout-transfer] 条件：接口为 PullKvBlocks" in out
    assert "重新建链 (relink)" in out
    assert latin_words(out, rules) == set()


def test_the_locale_chooses_chinese_and_the_flag_wins():
    assert "含义：" in explain("LLM_LINK_FAILED", env={"LANG": "zh_CN.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""})
    assert "meaning:     Link establishment failed" in explain(
        "LLM_LINK_FAILED", "--lang", "en", env={"LANG": "zh_CN.UTF-8"})
    assert "meaning:" in explain("LLM_LINK_FAILED", env={"LANG": "en_US.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""})


def test_the_config_file_sets_the_language(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".ddtriage.toml").write_text('lang = "zh"\n', encoding="utf-8")
    assert "含义：      建链失败" in explain("LLM_LINK_FAILED", env={"LANG": "C.UTF-8"})
    (tmp_path / ".ddtriage.toml").write_text('lang = "fr"\n', encoding="utf-8")
    result = CliRunner().invoke(cli, ["explain", "LLM_LINK_FAILED"])
    assert result.exit_code == 2 and "lang: must be one of en, zh, got 'fr'" in result.output


def test_json_keeps_english_keys_and_ids_and_follows_the_language():
    data = json.loads(explain("0x5010B01A", "--lang", "zh", "--format", "json"))
    assert data["name"] == "LLM_TIMEOUT" and data["meaning"] == "处理超时" and data["lang"] == "zh"
    assert [r["action"] for r in data["rules"]] == ["relink", "collect-logs"]
    assert data["rules"][0]["follows"] == "python" and data["docs_follow"] == "cpp"


@pytest.mark.parametrize("code,cpp,python", [
    ("LLM_TIMEOUT", "C++: no; Not recoverable", "Python: yes; Recoverable: after a transfer API"),
    ("LLM_LINK_BUSY", "C++: yes; Reserved error code", "Python: yes; Returned when unlink and a pull run"),
])
def test_explain_shows_where_the_cpp_and_python_docs_disagree(code, cpp, python):
    out = explain(code)
    assert "the C++ and Python documentation disagree:" in out
    assert f"  - {cpp}" in out and f"  - {python}" in out
    zh = explain(code, "--lang", "zh")
    assert "C++ 与 Python 文档不一致：" in zh and "文档的说法" in zh


def test_a_rule_says_which_binding_it_follows():
    out = explain("LLM_TIMEOUT")
    assert "[timeout-transfer] when API is" in out and "(follows the Python documentation)" in out
    assert "the catalog follows the C++ documentation" in out


@pytest.mark.parametrize("token,family,meaning_zh", [
    ("103903", "hixl", "已经建链"), ("103904", "hixl", "通知失败（预留）"), ("103905", "hixl", "不支持的操作"),
    ("hixl 203900", "hixl", "资源耗尽"),
])
def test_the_rest_of_the_hixl_table(token, family, meaning_zh):
    data = json.loads(explain(token, "--format", "json", "--lang", "zh"))
    assert data["family"] == family and data["meaning"] == meaning_zh
    assert CJK.search(data["remedy"])
    assert json.loads(explain(token, "--format", "json"))["remedy"].isascii()


def test_errors_in_chinese():
    result = CliRunner().invoke(cli, ["explain", "nonsense", "--lang", "zh"])
    assert result.exit_code == 2
    assert "'nonsense' 既不是 LLM-DataDist 状态码" in result.output and "Traceback" not in result.output
