"""The demo bundle against its own answer key (tests/data/sample_logs.md, written with the logs):
every planted finding with its API, nothing on the negative lines, nothing unplanned."""

import re
from pathlib import Path

import pytest
from analyzer import analyze

ROOT = Path(__file__).resolve().parent.parent
KEY = (ROOT / "tests" / "data" / "sample_logs.md").read_text()
ALIASES = dict(re.findall(r"^\| (\S+) \| `([^`]+)` \|", KEY, re.M))
PLANTED = [(ALIASES[a], int(n), api.strip().split(" ")[0])
           for a, n, api in re.findall(r"^\| ([A-Za-z-]+):(\d+) \| [^|]+ \| ([^|]+) \|", KEY, re.M)
           if a in ALIASES and "|" not in api]
NEGATIVES = [(ALIASES[a], int(n)) for cell in re.findall(r"^\| ((?:[A-Za-z-]+:\d+(?:–\d+)?(?:, )?)+) \| [^|]+\|$", KEY, re.M)
             for a, n in re.findall(r"([A-Za-z-]+):(\d+)", cell) if a in ALIASES]
# Where domain.md §4 puts two APIs in one row, the key accepts either member.
ROW_MATES = {"PullKvCache": "PullKvBlocks", "PushKvCache": "PushKvBlocks", "CopyKvCache": "CopyKvBlocks",
             "Initialize": "Finalize", "AllocateCache": "DeallocateCache"}
ROW_MATES.update({v: k for k, v in ROW_MATES.items()})


@pytest.fixture(scope="module")
def found(rules):
    result = analyze([str(ROOT / "sample_logs")], rules=rules)
    by_line = {}
    for f in result.findings:
        rel = str(Path(f.source).relative_to(ROOT / "sample_logs"))
        by_line.setdefault((rel, f.line), []).append(f)
    return by_line


def test_key_was_parsed():
    assert len(PLANTED) >= 60 and len(NEGATIVES) >= 20


@pytest.mark.parametrize("path,line,api", PLANTED, ids=[f"{Path(p).name}:{n}" for p, n, _ in PLANTED])
def test_planted_finding(found, path, line, api):
    findings = found.get((path, line))
    assert findings, "missed"
    expected = None if api == "none" else api
    assert any(f.api in (expected, ROW_MATES.get(expected)) for f in findings), [(f.name, f.api) for f in findings]


@pytest.mark.parametrize("path,line", NEGATIVES, ids=[f"{Path(p).name}:{n}" for p, n in NEGATIVES])
def test_negative_line(found, path, line):
    assert (path, line) not in found


def test_nothing_unplanned(found):
    planted = {(p, n) for p, n, _ in PLANTED}
    assert sorted(k for k in found if k not in planted) == []


def test_every_code_appears(found):
    names = {f.name for fs in found.values() for f in fs}
    assert len(names - {None}) == 29 and None in names  # 28 + LLM_FAILED, and unknown codes
