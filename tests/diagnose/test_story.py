"""The story's tools through the CLI: `ddtriage show` (archives too), `-C N`, colour, the pager,
`explain` of neighbour codes, paths that keep node and file name, and the link-fact examples.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

import pytest
from analyzer import load_rules
from analyzer.cli import cli
from analyzer.cli.scan import page
from analyzer.writers.common import short_source
from click.testing import CliRunner

from bundles import tar_bytes

ROOT = Path(__file__).resolve().parents[2]
D_PLOG = "sample_logs/decode-node-2/ascend/log/debug/plog/plog-5569_20251112034002789.log"


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_show_prints_a_range_of_a_plain_file(in_root):
    code, out, _ = run("show", f"{D_PLOG}:28-29")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 2
    assert lines[0].split()[0] == "28" and "connect to 10.0.1.11:26006 failed, errno 111" in lines[0]
    assert lines[1].split()[0] == "29" and "hcclRet -> 19" in lines[1]
    code, out, _ = run("show", f"{D_PLOG}:28", "-C", "1")
    assert [ln[:7].strip(" >") for ln in out.splitlines()] == ["27", "28", "29"]
    assert out.splitlines()[1].startswith(">")


def test_show_reads_members_of_nested_archives(tmp_path):
    inner = gzip.compress(tar_bytes({"debug/plog/plog-1.log": b"first\nsecond\nthird [ERROR] x\nfourth\n"}), mtime=0)
    (tmp_path / "bundle.tar.gz").write_bytes(gzip.compress(tar_bytes({"node-2/plog.tar.gz": inner}), mtime=0))
    name = f"{tmp_path}/bundle.tar.gz!node-2/plog.tar.gz!debug/plog/plog-1.log"
    code, out, _ = run("show", f"{name}:2-3")
    assert code == 0 and [ln.split(None, 1)[1] for ln in out.splitlines()] == ["second", "third [ERROR] x"]
    code, _, err = run("show", f"{tmp_path}/bundle.tar.gz!node-2/nothing.log:1")
    assert code == 2 and "no such file or archive member" in err
    code, _, err = run("show", f"{name}:5-2")
    assert code == 2 and "FIRST-LAST" in err


def test_context_lines_around_each_lead(in_root):
    code, out, _ = run("scan", "sample_logs", "-C", "2", "--quiet", "--fail-on", "never")
    head = out.split("Related errors")[0]
    assert code == 0
    assert ">    28  03:40:02.949" in head and "    27  03:40:02.948  link cluster 6, remote 10.0.1.11:26006" in head
    _, md, _ = run("scan", "sample_logs", "-C", "2", "--quiet", "--format", "markdown")
    block = md.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    assert [ln[:7].strip(" >") for ln in block] == ["26", "27", "28", "29", "30"]
    assert block[2].startswith(">") and "Connection refused" in block[2]


def test_colour_only_when_asked_for_or_on_a_terminal(in_root):
    _, plain, _ = run("scan", "sample_logs", "--quiet")
    _, coloured, _ = run("scan", "sample_logs", "--quiet", "--color", "always")
    assert "\x1b[" not in plain and "\x1b[1;35mcheck-network\x1b[0m" in coloured
    assert run("scan", "sample_logs", "--quiet", "--color", "never")[1] == plain


def test_the_pager_gets_the_whole_report(tmp_path, monkeypatch):
    target = tmp_path / "paged.txt"
    monkeypatch.setenv("DDTRIAGE_PAGER", f"{sys.executable} -c \"import sys; open(r'{target}', 'w').write("
                                         f"sys.stdin.read())\"")
    page("line one\nline two\n")
    assert target.read_text() == "line one\nline two\n"
    monkeypatch.setenv("DDTRIAGE_PAGER", "/no/such/pager")
    page("still printed\n")  # no pager: printed as it is, no traceback


@pytest.mark.parametrize("token,family,code,meaning", [
    ("EI0006", "cann", "EI0006", "HCCL socket timeout"),
    ("507046", "runtime", "507046", "stream sync timeout"),
    ("hccl 9", "hccl", "9", "HCCL timeout"),
    ("103901", "hixl", "103901", "HIXL transfer timeout"),
    ("MIE05E010019", "mindie", "MIE05E010019", "P/D link or pull_kv failed"),
    ("socket 111", "socket", "111", "connection refused"),
])
def test_explain_neighbour_codes(token, family, code, meaning):
    status, out, _ = run("explain", token)
    first, *rest = out.splitlines()
    assert status == 0 and first.startswith(f"{family} {code} ")
    assert f"meaning:     {meaning}" in rest and any(line.startswith("remedy:") for line in rest)


def test_llm_failed_remedy_says_where_to_look():
    _, out, _ = run("explain", "LLM_FAILED")
    assert "plog of the same process" in out and "just before" in out


def test_short_paths_keep_node_and_file_name():
    name = "bundles/2025-11-12/fleet-a/decode-node-2/ascend/log/debug/plog/plog-5569_20251112034002789.log"
    short = short_source(name, 60, "decode-node-2")
    assert "decode-node-2" in short and short.endswith("/plog-5569_20251112034002789.log") and len(short) <= 60
    tiny = short_source(name, 20, "decode-node-2")  # too narrow: node and file are still whole
    assert "decode-node-2" in tiny and tiny.endswith("plog-5569_20251112034002789.log")
    member = "b.tar.gz!node-7/plog.tar.gz!debug/plog/plog-1_20251112.log"
    assert short_source(member, 40, "node-7") == "b.tar.gz!node-7/…/plog-1_20251112.log"
    assert short_source(member, 52, "node-7") == "b.tar.gz!node-7/…!debug/plog/plog-1_20251112.log"


def facts_examples() -> list[tuple[str, str, str]]:
    rules = load_rules()
    return [(kind.id, line, value) for kind in rules.linkfacts.kinds for line, value in kind.match]


@pytest.mark.parametrize("kind,line,value", facts_examples())
def test_link_fact_examples(kind, line, value):
    assert dict(load_rules().linkfacts.find(line)).get(kind) == value


def test_rules_check_proves_link_fact_examples(tmp_path):
    import shutil

    from analyzer.knowledge.rules import BUILTIN_RULES_DIR

    assert run("rules", "check")[0] == 0
    broken = tmp_path / "rules"
    broken.mkdir()
    text = (BUILTIN_RULES_DIR / "linkfacts.yaml").read_text()
    (broken / "linkfacts.yaml").write_text(text.replace('local cluster id = 10, remote cluster id = 2, local ip = '
                                                        '10.2.0.2", "10"]', 'local cluster id = 10, remote cluster '
                                                        'id = 2, local ip = 10.2.0.2", "11"]', 1))
    shutil.copy(BUILTIN_RULES_DIR / "neighbours.yaml", broken / "neighbours.yaml")
    code, _, err = run("rules", "check", str(broken))
    assert code == 2 and "fact local_cluster: example should give '11' but gave '10'" in err



def test_facts_printed_on_every_request_never_make_a_line_a_candidate():
    from analyzer.detect.engine import Engine

    prefilter = Engine(load_rules(), prefilter_engine="find").prefilter
    literals = set(prefilter.literals) | set(prefilter.fact_literals)
    assert b"req_id" not in literals and b"luster" not in literals and b"remote" not in literals
    assert b"remote ip info" in literals and b"isten" in literals and b"CANN" in literals
