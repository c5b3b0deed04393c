"""The proofs of recovery (`analyzer/data/recovery.yaml`): every example proven, each proof apart
from the others, and a malformed table refused with its file and reason."""

from __future__ import annotations

from pathlib import Path

import pytest
from analyzer.core.errors import RuleError
from analyzer.knowledge.recovery import RecoveryTable, peer_text
from analyzer.knowledge.rules import BUILTIN_RULES_DIR, RuleSet
from analyzer.run.rulecheck import check_examples

EXAMPLES = [(p.id, line, peer) for p in RuleSet.load().recovery.proofs for line, peer in p.match]
COUNTER = [(p.id, line) for p in RuleSet.load().recovery.proofs for line in p.no_match]


@pytest.mark.parametrize("proof,line,peer", EXAMPLES, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(EXAMPLES)])
def test_each_match_example_is_its_proof_and_names_its_peer(rules, proof: str, line: str, peer: str) -> None:
    assert rules.recovery.find(line) == proof
    assert rules.recovery.maybe_in(line.encode())  # a line read is tested for it
    kind = rules.recovery.by_id[proof]
    if kind.scan is None:  # and the scanner's prefilter reads the line for it
        assert any(lit in line.encode() for lit in rules.recovery.raw_literals)
    assert peer_text(rules.linkfacts.find(line)) == peer


@pytest.mark.parametrize("proof,line", COUNTER, ids=[f"{p}-no-{i}" for i, (p, _) in enumerate(COUNTER)])
def test_each_no_match_example_proves_nothing(rules, proof: str, line: str) -> None:
    assert rules.recovery.find(line) is None


def test_failure_kinds_come_from_the_lead_api_or_code(rules) -> None:
    kinds = rules.recovery.kinds_of
    assert kinds("0x5010B009", "LinkLlmClusters") == {"link"}
    assert kinds("0x5010B001", "PullKvBlocks") == {"transfer", "timeout"}
    assert kinds("0x5010B005", "RegisterKvCache") == frozenset()  # a parameter error: nothing heals it
    assert kinds("0x5010B007", None) == {"link"}


def test_a_proof_printed_on_every_request_is_no_reason_to_read_a_line(rules) -> None:
    """A log of per-request INFO successes scanned 15x slower when each was read (measured)."""
    assert rules.recovery.by_id["transfer-success"].scan == ()
    assert not any(lit in b"PullKvBlocks: PullKvBlocks success, req_id = 3107" for lit in rules.recovery.raw_literals)


def test_rules_check_proves_the_table_and_catches_a_wrong_example(tmp_path: Path) -> None:
    assert check_examples(RuleSet.load()) == []
    broken = tmp_path / "rules"
    broken.mkdir()
    text = (BUILTIN_RULES_DIR / "recovery.yaml").read_text()
    (broken / "recovery.yaml").write_text(text.replace('link cluster 2 success, cost 49 ms", "cluster 2"]',
                                                       'link cluster 2 success, cost 49 ms", "cluster 3"]'))
    problems = check_examples(RuleSet.load([broken]))
    assert len(problems) == 1 and "proof link-success: example should name peer 'cluster 3'" in problems[0]


@pytest.mark.parametrize("yaml,reason", [
    ("failures: {link: {codes: [LLM_LINK_FAILED]}}\nproofs: [{id: x, heals: [link], literals: [abc], "
     "patterns: ['a(']}]\n", "proof x: pattern 'a('"),
    ("failures: {link: {codes: [LLM_NOPE]}}\n", "failure link: codes: unknown code 'LLM_NOPE'"),
    ("failures: {link: {apis: [LinkLlmClusters]}}\nproofs: [{id: x, heals: [reboot], literals: [abc], "
     "patterns: [abc]}]\n", "proof x: `heals` must list failure kinds (link)"),
    ("proofs: [{id: Bad_Id}]\n", "proof Bad_Id: must be a mapping whose `id` is lower-case words"),
    ("what: 1\n", "expected a mapping with `failures` and `proofs` only"),
])
def test_a_malformed_table_is_one_located_error(tmp_path: Path, yaml: str, reason: str) -> None:
    path = tmp_path / "recovery.yaml"
    path.write_text(yaml)
    rules = RuleSet.load()
    with pytest.raises(RuleError) as err:
        RecoveryTable.load(path, rules.catalog, rules.apis)
    assert str(err.value).startswith(str(path)) and reason in str(err.value)


# -- the compiled core's screen (issue #17): a line it calls no proof is none ------------------------

PROOF_PIECES = ["link cluster", "link clusters success", "link_clusters success", "link success", " success",
                "Successfully build link", " with cluster", "connect to remote engine ", "10.3.0.5:27000",
                "rets", "rets=[", "<LLMStatusCode.LLM_SUCCESS: 0>", "LLM_SUCCESS", "0", ", ", "]", "LinkClusters",
                "link_clusters", "PullKvBlocks", "pull_blocks", "Blocks success", "Cache success", "PullKvCache",
                " 2", " ", "LINK", "Link", "_", "\t", "\r", "\u00e9", "\x1b[0m"]


def _core_screen(rules):
    core = pytest.importorskip("ddtriage_core", reason="the compiled core is not installed")
    return core.Facts(list(rules.linkfacts.core_table()), list(rules.recovery.core_table()), None)


@pytest.mark.parametrize("proof,line,peer", EXAMPLES, ids=[f"{p}-{i}" for i, (p, _, _) in enumerate(EXAMPLES)])
def test_the_core_never_screens_out_an_example(rules, proof: str, line: str, peer: str) -> None:
    assert _core_screen(rules).maybe_proof(line.encode())


def test_the_core_screen_agrees_with_find_on_generated_lines(rules) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    screen = _core_screen(rules)

    @settings(max_examples=150, deadline=None)
    @given(st.lists(st.one_of(st.sampled_from(PROOF_PIECES), st.text(max_size=4)), max_size=16))
    def check(parts: list[str]) -> None:
        line = "".join(parts).replace("\n", " ")
        raw = line.encode("utf-8", "surrogatepass")
        plain = all(0x20 <= b < 0x7F or b == 9 for b in raw.rstrip(b"\r"))
        if plain and not screen.maybe_proof(raw):  # the core is asked only about plain ASCII lines
            assert rules.recovery.find(line.rstrip("\r")) is None, line

    check()
