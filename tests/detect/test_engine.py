"""The scan's fast paths give what the straightforward path gives, report for report.

The prefilter's second tier sends lines that hold link-fact literals only down a cheap path (no
code search, no neighbour families, no finding context). Here every corpus with hand-written
answer keys, the sample logs and a generated connector log full of fact lines are scanned both
ways; the JSON reports (findings, link facts, related errors, incidents) must be identical.

The demo bundle against its own answer key (tests/data/sample_logs.md, written with the logs):
every planted finding with its API, nothing on the negative lines, nothing unplanned (folded from test_sample_logs.py).

Logs nobody on the tool side wrote (tests/data/unseen, partly real public excerpts): every
expected finding with its API (and context-dependent action), and nothing else (folded from test_unseen.py).
"""

from __future__ import annotations

import re
import sys
from functools import partial
from pathlib import Path

import pytest
import yaml
from analyzer import analyze
from analyzer.detect.engine import Engine
from analyzer.run import api
from analyzer.scan.blocks import decode
from analyzer.writers import render_report

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ["sample_logs", "tests/data/envelopes", "tests/data/fleets", "tests/data/unseen", "tests/data/baseline"]


def _report(paths: list[str], fact_tier: bool, monkeypatch: pytest.MonkeyPatch) -> str:
    def factory(self: api.Options, rules):  # noqa: ANN001 - the Options method's own signature
        return partial(Engine, rules, limits=self.limits, selection=self.selection, year=self.year, tz=self.tz,
                       prefilter_engine=self.prefilter, node=self.node, fact_tier=fact_tier)

    monkeypatch.setattr(api.Options, "engine_factory", factory)
    return render_report("json", api.analyze(paths, jobs=1))


@pytest.mark.parametrize("corpus", CORPORA)
def test_fact_tier_changes_nothing_on_the_corpora(corpus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = ROOT / corpus
    if not path.exists():
        pytest.skip(f"{corpus} not in this checkout")
    fast = _report([str(path)], True, monkeypatch)
    assert fast == _report([str(path)], False, monkeypatch)
    assert '"findings"' in fast


def test_fact_tier_changes_nothing_on_a_connector_log_full_of_facts(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    import gen_plog

    log = tmp_path / "dense.log"
    gen_plog.generate(str(log), 1 << 20, "dense")
    fast = _report([str(log)], True, monkeypatch)
    assert fast == _report([str(log)], False, monkeypatch)
    assert '"remote_clusters": [' in fast and '"listen": [' in fast  # the fact lines were read


def test_screened_link_facts_equal_the_patterns_alone_on_every_line(tmp_path: Path) -> None:
    """The hyperscan screen only skips patterns that cannot match: on every line of the corpora,
    of the sample logs, of the link-fact examples and of a generated connector log, `find` gives
    what the patterns alone give."""
    from analyzer.knowledge.rules import RuleSet

    sys.path.insert(0, str(ROOT / "bench"))
    import gen_plog

    matcher = RuleSet.load().linkfacts
    log = tmp_path / "dense.log"
    gen_plog.generate(str(log), 1 << 20, "dense")
    lines = [line for kind in matcher.kinds for line, _ in kind.match] + [
        line for kind in matcher.kinds for line in kind.no_match]
    files = [log] + [p for corpus in CORPORA for p in sorted((ROOT / corpus).rglob("*")) if p.is_file()]
    raws = [line.encode() for line in lines]
    for path in files:
        raws += path.read_bytes().split(b"\n")
    core = _core_facts(matcher)
    with_facts = answered = 0
    for raw in raws:
        line = decode(raw)
        expected = matcher.find_plainly(line)
        assert matcher.find(line) == expected, line
        with_facts += bool(expected)
        if core is not None:  # the compiled core's table (issue #17): the same facts, or Python decides
            got = core.find(raw)
            assert got is None or got == expected, raw
            answered += got is not None
    assert with_facts > 1000  # the lines did hold facts
    assert core is None or answered > 0.9 * len(raws)  # and the core answered nearly all of them


def _core_facts(matcher: object) -> object | None:
    try:
        import ddtriage_core
    except ImportError:
        return None
    return ddtriage_core.Facts(list(matcher.core_table()))  # type: ignore[attr-defined]


ROOT = Path(__file__).resolve().parents[2]
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
def sample_found(rules):
    result = analyze([str(ROOT / "sample_logs")], rules=rules)
    by_line = {}
    for f in result.findings:
        rel = str(Path(f.source).relative_to(ROOT / "sample_logs"))
        by_line.setdefault((rel, f.line), []).append(f)
    return by_line


def test_key_was_parsed():
    assert len(PLANTED) >= 60 and len(NEGATIVES) >= 20


@pytest.mark.parametrize("path,line,api", PLANTED, ids=[f"{Path(p).name}:{n}" for p, n, _ in PLANTED])
def test_planted_finding(sample_found, path, line, api):
    findings = sample_found.get((path, line))
    assert findings, "missed"
    expected = None if api == "none" else api
    assert any(f.api in (expected, ROW_MATES.get(expected)) for f in findings), [(f.name, f.api) for f in findings]


@pytest.mark.parametrize("path,line", NEGATIVES, ids=[f"{Path(p).name}:{n}" for p, n in NEGATIVES])
def test_negative_line(sample_found, path, line):
    assert (path, line) not in sample_found


def test_nothing_unplanned(sample_found):
    planted = {(p, n) for p, n, _ in PLANTED}
    assert sorted(k for k in sample_found if k not in planted) == []


def test_every_code_appears(sample_found):
    names = {f.name for fs in sample_found.values() for f in fs}
    assert len(names - {None}) == 29 and None in names  # 28 + LLM_FAILED, and unknown codes


DATA = Path(__file__).parents[1] / "data" / "unseen"
EXPECTED = yaml.safe_load((DATA / "expected.yaml").read_text())


@pytest.fixture(scope="module")
def unseen_found(rules):
    logs = sorted(str(p) for p in DATA.glob("*.log"))
    result = analyze(logs, rules=rules)
    assert not result.inputs.skipped
    return {(Path(f.source).name, f.line, f.code): f for f in result.findings}


@pytest.mark.parametrize("expected", EXPECTED["findings"], ids=lambda e: f"{e['file']}:{e['line']}:{e['code']}")
def test_expected_finding(unseen_found, expected):
    f = unseen_found.get((expected["file"], expected["line"], expected["code"]))
    assert f is not None, "missed"
    assert f.api == expected.get("api")
    if "action" in expected:
        assert f.action == expected["action"]


def test_no_false_findings(unseen_found):
    expected = {(e["file"], e["line"], e["code"]) for e in EXPECTED["findings"]}
    extra = {k: v.text for k, v in unseen_found.items() if k not in expected}
    assert extra == {}


@pytest.mark.parametrize("negative", EXPECTED["negatives"], ids=lambda n: f"{n['file']}:{n['line']}")
def test_negative_lines(unseen_found, negative):
    assert not [k for k in unseen_found if k[0] == negative["file"] and k[1] == negative["line"]]


@pytest.mark.parametrize("engine", ["python", "rust"])
def test_a_line_of_many_codes_costs_linear_time_and_one_finding_a_code(tmp_path: Path, engine: str,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue #17: a line of a million candidate codes took 84 s and gave duplicate findings (one
    per fragment of a line longer than MAX_LINE; the API spellings searched again for every hit).
    Here 40,000 codes among 40,000 API spellings, cut into 16 fragments: each code once, in CPU
    time that grows with the line, not with hits times spellings (that took ~3 s)."""
    import time

    from analyzer.scan import blocks

    if engine == "rust" and blocks._core is None:
        pytest.skip("the compiled core is not installed")
    monkeypatch.setattr(blocks, "ENGINE", engine)
    monkeypatch.setattr(blocks, "MAX_LINE", 64 << 10)
    codes = [f"0x5010B0{i:02X}" for i in range(1, 40)]
    body = " ".join(f"PullKvBlocks ret {codes[i % len(codes)]}" for i in range(40_000))
    log = tmp_path / "storm.log"
    log.write_text("[ERROR] GE(7,python3):2025-11-10-15:36:33.002.062 [llm_datadist.cc:1]8 Pull: " + body + "\n")
    started = time.process_time()
    findings = analyze([str(log)], jobs=1).findings
    elapsed = time.process_time() - started
    assert sorted(f.code for f in findings) == sorted(codes)
    assert {f.line for f in findings} == {1}
    assert elapsed < 2.0, elapsed
