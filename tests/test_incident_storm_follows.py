"""The pulls that fail after a link failed belong to the link's incident (review D23)."""

from pathlib import Path

from analyzer import analyze

FLEET = Path(__file__).parent / "data" / "fleets" / "oom-storm"


def test_not_yet_link_storm_after_a_failed_link_joins_its_incident():
    result = analyze([str(FLEET)])
    incidents = result.summary.incidents
    assert [i.nodes for i in incidents] == [("decode-node-2", "prompt-node-1"), ("decode-node-9",)]
    first = incidents[0]
    assert first.lead.code == "207001" and first.lead.node == "prompt-node-1"
    assert first.findings == 42
    assert "LLM_NOT_YET_LINK" in first.story
    assert incidents[1].lead.code == "EI0006"
