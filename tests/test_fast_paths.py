"""The scan's fast paths give what the straightforward path gives, report for report.

The prefilter's second tier sends lines that hold link-fact literals only down a cheap path (no
code search, no neighbour families, no finding context). Here every corpus with hand-written
answer keys, the sample logs and a generated connector log full of fact lines are scanned both
ways; the JSON reports (findings, link facts, related errors, incidents) must be identical.
"""

from __future__ import annotations

import sys
from functools import partial
from pathlib import Path

import pytest
from analyzer.detect.engine import Engine
from analyzer.run import api
from analyzer.writers import render_report

ROOT = Path(__file__).resolve().parent.parent
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
    for path in files:
        lines += path.read_bytes().decode("utf-8", "replace").splitlines()
    with_facts = 0
    for line in lines:
        expected = matcher.find_plainly(line)
        assert matcher.find(line) == expected, line
        with_facts += bool(expected)
    assert with_facts > 1000  # the lines did hold facts
