"""Logs nobody on the tool side wrote (tests/data/unseen, partly real public excerpts): every
expected finding with its API (and context-dependent action), and nothing else."""

from pathlib import Path

import pytest
import yaml
from analyzer import analyze

DATA = Path(__file__).parent / "data" / "unseen"
EXPECTED = yaml.safe_load((DATA / "expected.yaml").read_text())


@pytest.fixture(scope="module")
def found(rules):
    logs = sorted(str(p) for p in DATA.glob("*.log"))
    result = analyze(logs, rules=rules)
    assert not result.inputs.skipped
    return {(Path(f.source).name, f.line, f.code): f for f in result.findings}


@pytest.mark.parametrize("expected", EXPECTED["findings"], ids=lambda e: f"{e['file']}:{e['line']}:{e['code']}")
def test_expected_finding(found, expected):
    f = found.get((expected["file"], expected["line"], expected["code"]))
    assert f is not None, "missed"
    assert f.api == expected.get("api")
    if "action" in expected:
        assert f.action == expected["action"]


def test_no_false_findings(found):
    expected = {(e["file"], e["line"], e["code"]) for e in EXPECTED["findings"]}
    extra = {k: v.text for k, v in found.items() if k not in expected}
    assert extra == {}


@pytest.mark.parametrize("negative", EXPECTED["negatives"], ids=lambda n: f"{n['file']}:{n['line']}")
def test_negative_lines(found, negative):
    assert not [k for k in found if k[0] == negative["file"] and k[1] == negative["line"]]
