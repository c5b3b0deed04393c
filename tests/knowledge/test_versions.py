"""Stage: knowledge (versions). CANN's version order (release candidates before their release) and
the version conditions of rules, on versions as real logs print them."""

from __future__ import annotations

import pytest
from analyzer.knowledge.versions import VersionCondition, compare, parse_version

# Each version is older than the next (CANN's scheme: a T build, then RCs, then the release and its patches).
ORDERED = ["8.0.RC3", "8.0.0", "8.1.RC1", "8.2.T10", "8.2.RC1", "8.2.RC2", "8.2.0", "8.2.1", "8.3.RC1.alpha001",
           "8.3.RC1", "8.3.0", "9.0.0", "9.1.0", "10.0.RC1"]


@pytest.mark.parametrize("older,newer", list(zip(ORDERED, ORDERED[1:], strict=False)))
def test_cann_versions_are_ordered_as_cann_numbers_them(older, newer):
    assert compare(older, newer) == -1
    assert compare(newer, older) == 1


def test_the_order_the_issue_names():
    assert compare("8.2.RC1", "8.2.0") < 0 < compare("8.3.RC1", "8.2.0")
    assert compare("8.3.RC1", "8.3.0") < 0
    assert sorted(["8.3.0", "8.3.RC1", "8.2.0", "8.2.RC1"], key=parse_version) == [
        "8.2.RC1", "8.2.0", "8.3.RC1", "8.3.0"]


def test_driver_versions_and_letter_case():
    # npu-smi and the driver print lower-case rc and a build number after it
    assert compare("25.0.rc1", "25.0.RC1") == 0
    assert compare("25.0.rc1", "25.0.rc1.2") == -1 and compare("25.0.rc1.2", "25.0.0") == -1
    assert compare("24.1.rc3", "25.0.rc1.2") == -1


@pytest.mark.parametrize("text", ["latest", "8", "RC1", "", "8.x.1"])
def test_text_that_is_no_version(text):
    assert parse_version(text) is None
    with pytest.raises(ValueError):
        compare(text, "8.2.0")


def test_a_condition_holds_only_on_a_version_it_names():
    gate = VersionCondition.parse({"cann": ">=8.3.RC1"})
    assert gate.holds({"cann": "8.3.RC1"}) and gate.holds({"cann": "9.1.0"})
    assert not gate.holds({"cann": "8.2.0"}) and not gate.holds({"cann": "8.3.RC1.alpha001"})
    assert not gate.holds({}) and not gate.holds({"driver": "25.0.rc1"})  # never named: false
    window = VersionCondition.parse({"cann": ">=8.2.RC1, <8.3.0", "driver": ">=24.1.rc3"})
    assert window.holds({"cann": "8.3.RC1", "driver": "24.1.0"})
    assert not window.holds({"cann": "8.3.0", "driver": "24.1.0"})
    assert not window.holds({"cann": "8.3.RC1", "driver": "24.1.rc2"})
    assert window.describe() == "cann >=8.2.RC1, cann <8.3.0, driver >=24.1.rc3"
    assert VersionCondition.parse({"hixl": "1.0"}).holds({"hixl": "1.0"})  # no operator: equal


@pytest.mark.parametrize("raw,reason", [
    ({"cann": ">= latest"}, "is not a comparison"),
    ({"kernel": ">=5.10.0"}, "unknown version kind 'kernel'"),
    ("cann >= 8.3.RC1", "must map a version kind"),
    ({}, "must map a version kind"),
])
def test_malformed_conditions_say_why(raw, reason):
    with pytest.raises(ValueError, match=reason):
        VersionCondition.parse(raw)
