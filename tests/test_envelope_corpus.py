"""The held-out envelope corpus (tests/data/envelopes/, issue #9) against its hand-written key,
through the real CLI. The key is data written apart from the code: this test only reads it."""

import json
from pathlib import Path

import pytest
import yaml
from analyzer.cli import cli
from analyzer.core.serial import finding_dict
from click.testing import CliRunner

CORPUS = Path(__file__).parent / "data" / "envelopes"
KEY = yaml.safe_load((CORPUS / "expected.yaml").read_text(encoding="utf-8"))
NODES = {"prefill-0": "prefill-node-1", "decode-0": "decode-node-2"}

# Files whose text carries no zone at all: their zone is the documented clock of where they were
# written (corpus README): decode-node-2 and the Kibana browser are in Asia/Shanghai.
ZONE_FROM_README = {
    "syslog/decode-node-2.messages": "Asia/Shanghai",
    "terminal/decode-0.typescript": "Asia/Shanghai",
    "csv/kibana-discover.csv": "Asia/Shanghai",
}


def scan_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["scan", "-q", "--format", "json", *args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("entry", KEY["files"], ids=[f["path"].split("/")[0] + ":" + f["path"].rsplit("/", 1)[-1]
                                                     for f in KEY["files"]])
def test_corpus_file_matches_the_answer_key(entry):
    args = [str(CORPUS / entry["path"])]
    zone = ZONE_FROM_README.get(entry["path"])
    if zone:
        args += ["--tz", zone]
    report = scan_json(*args)
    got = sorted((f["line"], f["code"]) for f in report["findings"])
    want = sorted((line, KEY["findings"][fid]["code"]) for fid, line in entry["findings"].items())
    assert got == want, entry["path"]
    names = entry.get("names") or {}
    roles = [r for r in ("pod", "container", "node") if r in names or (r == "pod" and "container_name" in names)]

    def expected(fid: str, line: int) -> tuple:
        truth = KEY["findings"][fid]
        idents = []
        for role in roles:
            value = names.get(role, names.get("container_name"))
            if value == "per-line":
                value = NODES[truth["pod"]] if role == "node" else truth["pod"]
            idents.append(value)
        when = truth["local_time"] if entry["envelope"] == "none" else truth["utc"]
        return (line, truth["code"], truth["name"], truth["api"], truth["action"], when, "line", *idents)

    want_full = sorted(expected(fid, line) for fid, line in entry["findings"].items())
    got_full = sorted((f["line"], f["code"], f["name"], f["api"], f["action"], f["timestamp"], f["time_source"],
                       *(f[r] for r in roles)) for f in report["findings"])
    assert got_full == want_full, entry["path"]
    for finding in report["findings"]:
        if entry["envelope"] != "none":
            assert finding["envelope"] == entry["envelope"].replace("kubectl-prefix-timestamps", "kubectl-prefix")
        assert "\x1b" not in finding["text"] and "#033" not in finding["text"] and '\\"' not in finding["text"]


def test_no_finding_on_a_negative_line():
    for entry in KEY["files"]:
        report = scan_json(str(CORPUS / entry["path"]))
        lines = {f["line"] for f in report["findings"]}
        for fid, line in entry["negatives"].items():
            if line not in set(entry["findings"].values()):  # one-line _search: every id is on line 1
                assert line not in lines, (entry["path"], fid)


def test_the_stdlib_prefilter_finds_the_same_as_hyperscan():
    from analyzer.run.api import Options, analyze

    paths = [str(CORPUS / entry["path"]) for entry in KEY["files"]]
    runs = [[finding_dict(f) for f in analyze(paths, options=Options(prefilter=engine)).findings]
            for engine in ("find", "auto")]
    assert runs[0] == runs[1] and len(runs[0]) == sum(len(e["findings"]) for e in KEY["files"])
