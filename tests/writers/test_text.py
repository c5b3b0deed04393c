"""The text report in Chinese: `make demo` under LANG=zh_CN.UTF-8 is wholly Chinese, codes, names,
ids, paths and quoted log text aside; every line fits the width in terminal columns."""

from __future__ import annotations

import re

import pytest
from analyzer.cli import cli
from analyzer.knowledge.catalog import ACTIONS
from analyzer.writers.layout import cols
from click.testing import CliRunner

CJK = re.compile(r"[\u4e00-\u9fff]")
# Latin words a Chinese report keeps: names as logs and documentation print them, and units.
TERMS = {"Func", "Prompt", "Decode", "Decoder", "Prefill", "Host", "Device", "CANN", "HCCL", "HIXL", "HBM", "KV",
         "ID", "IP", "cache", "socket", "rank", "table", "batch", "timeout", "json", "full", "KiB", "MiB", "ms",
         "LLM-DataDist"}


@pytest.fixture(scope="module")
def chinese_demo():
    """`make demo` (`ddtriage scan sample_logs/ --fail-on never`) under a Chinese locale, and with --full."""
    import os

    here = os.getcwd()
    os.chdir(__file__.rsplit("/tests/", 1)[0])
    try:
        env = {"LANG": "zh_CN.UTF-8", "LC_ALL": "", "LC_MESSAGES": ""}
        runs = [CliRunner().invoke(cli, ["scan", "sample_logs/", "--fail-on", "never", *extra], env=env,
                                   catch_exceptions=False) for extra in ([], ["--full", "-C", "2"])]
    finally:
        os.chdir(here)
    assert all(r.exit_code == 0 for r in runs), runs[0].output
    return [r.stdout for r in runs]


def english_words(report: str, rules) -> dict[str, str]:
    """Latin words that are no id, name, code, path or log text, with the line they are on."""
    ids = set(rules.apis.canonical) | set(ACTIONS) | {f.id for f in rules.neighbours.families} | TERMS
    ids |= {"cann", "driver", "hixl", "vllm", "mindie", "xllm"}
    found = {}
    for line in report.splitlines():
        if line.startswith(" " * 10) and not CJK.search(line):
            continue  # the lead's log line, verbatim (and context lines under -C)
        for word in re.findall(r"(?<![\w\-./:\[~])[A-Za-z][\w\-.]*[A-Za-z](?![\w\-./:\]])", line):
            if word not in ids and not re.search(r"[_\d.]|-|^[A-Z]{2,}$|[a-z][A-Z]", word):  # CamelCase: a name
                found[word] = line
    return found


def test_make_demo_in_chinese_is_wholly_chinese(chinese_demo, rules):
    short, full = chinese_demo
    assert short.startswith("ddtriage: 66 条发现（24 条不确定可恢复），共读取 8 个文件、557 行、78.6 KiB\n")
    for heading in ("事件：6 个（5 个未恢复，1 个已恢复），仍未恢复的在前", "相关错误（非 LLM-DataDist）：13 条", "各节点版本",
                    "诊断：34 个突发",
                    "按节点，最严重的在前", "按接口统计的错误码，不可恢复的在前"):
        assert heading in short, heading
    assert "因此：检查网络（check-network）。" in short  # the story ends with the action, in words and id
    assert english_words(short, rules) == {} and english_words(full, rules) == {}


def test_the_same_check_finds_english(rules):
    assert "most" in english_words("Incidents: 5, most severe first", rules)  # the check can fail


def test_chinese_lines_fit_the_width_in_columns(chinese_demo):
    for report in chinese_demo:
        for line in report.splitlines():
            assert cols(line) <= 80, line


def test_cjk_table_columns_align():
    from analyzer.writers.layout import table

    head, rows = table([["3", "未知 0x5010B063", "PullKvBlocks"], ["12", "LLM_TIMEOUT", "PullKvCache"]], 80,
                       header=["次数", "错误码", "接口"], right=(0,))
    lines = head + [r[0] for r in rows]
    assert lines == ["次数  错误码           接口", "   3  未知 0x5010B063  PullKvBlocks", "  12  LLM_TIMEOUT      PullKvCache"]
    starts = {cols(line[:line.index(w)]) for line, w in zip(lines, ["接口", "PullKvBlocks", "PullKvCache"], strict=True)}
    assert starts == {cols("   3  未知 0x5010B063  ")}
