"""The clusterer of `ddtriage mine` (diagnose/mining.py): masks, merging, the template cap, the
ranking, and its grouping accuracy on hand-labelled Ascend lines beside Drain3's."""

from __future__ import annotations

from pathlib import Path

import pytest
from analyzer.core.headers import parse_header
from analyzer.diagnose.mining import Miner, grouping_accuracy, level_of, mask_text, masked, tokens_of
from drain3 import TemplateMiner
from drain3.template_miner_config import TemplateMinerConfig

LABELLED = Path(__file__).parent.parent / "data" / "mining" / "ascend_lines.tsv"


def _labelled() -> list[tuple[str, str]]:
    rows = []
    for line in LABELLED.read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            label, text = line.split("\t", 1)
            rows.append((label, text))
    return rows


def _message(line: str) -> str:
    """What mine clusters: the header's function name, a space, the text after the header."""
    header = parse_header(line)
    return ((header.func + " ") if header.func else "") + line[header.msg_start:]


@pytest.mark.parametrize("text, masked", [
    ("send to 10.0.1.11:26006 failed", "send to <IP> failed"),
    ("dlopen /usr/local/Ascend/cann-9.1.0/lib64/libhixl.so failed", "dlopen <PATH> failed"),
    ("addr=0x7f3a00001000, size=4096", "addr=<HEX>, size=<N>"),
    ("req_id=cmpl-7f3a-22 at 2025-11-12-03:40:05.101.002", "req_id=<ID> at <TS>"),
])
def test_masks(text: str, masked: str) -> None:
    assert mask_text(text) == masked


def test_memoised_masks_equal_the_plain_ones() -> None:
    """The memo keys on digits made 1 and `0x` marked: every labelled line, and the same lines
    with their digits changed, mask alike both ways."""
    for _, line in _labelled():
        for text in (line, line.translate(str.maketrans("0123456789", "9876543210")), line.replace("0x", "0X")):
            assert mask_text(text) == masked(text), text


def test_lines_of_one_shape_join_one_template() -> None:
    m = Miner()
    a = m.add("ra_socket_send send to 10.0.0.1:16666 failed, sent 12 of 4096 bytes")
    b = m.add("ra_socket_send send to 10.0.0.9:26000 failed, sent 0 of 65536 bytes")
    c = m.add("ra_qp_create qp create failed, dev 3, qp_mode 1, errno 12")
    assert a is b and a is not c
    assert a.text == "ra_socket_send send to <IP> failed, sent <N> of <N> bytes" and a.count == 2
    d = m.add("ra_socket_send send to 10.0.0.9:26000 refused, sent 0 of 65536 bytes")
    assert d is a and a.text == "ra_socket_send send to <IP> <*> sent <N> of <N> bytes"


def test_other_lengths_and_other_first_words_stay_apart() -> None:
    m = Miner()
    one = m.add("LinkClusters link cluster 3 slow: 1200 ms to remote 10.0.0.1:26000")
    two = m.add("UnlinkClusters unlink cluster 3 slow: 1200 ms to remote 10.0.0.1:26000")
    three = m.add("LinkClusters link cluster 3 slow: 1200 ms")
    assert len({one.id, two.id, three.id}) == 3


def test_memory_is_bounded_by_the_template_cap() -> None:
    m = Miner(max_templates=10)
    m.add("often seen thing")
    m.add("often seen thing")
    for i in range(50):
        m.add(f"word{chr(97 + i % 26)}{chr(97 + i // 26)} happened")  # 50 distinct first tokens
    assert len(m.templates()) == 10 and m.dropped == 41 and m.lines == 52
    kept = {t.text for t in m.templates()}
    # the least seen go first, of those the one seen longest ago; a twice-seen template stays
    assert "often seen thing" in kept and "wordxb happened" in kept and "wordpb happened" in kept and "wordob happened" not in kept
    assert len(m._tree[2]) == 9  # the branches of dropped templates went with them


def test_ranking_prefers_near_an_incident_and_many_nodes() -> None:
    incident = (1_000_000.0, 1_000_010.0)
    m = Miner(incidents=[incident])
    for _ in range(5):
        m.add("far away thing failed", node="a", when=1_000_000.0 - 86_400)
        m.add("near thing failed badly", node="a", when=1_000_005.0)
        m.add("spread thing failed over nodes", when=None, node=None)
    for node in "abcd":
        m.add("spread thing failed over nodes", node=node)
    ranked = [t.text for t in m.templates()]
    assert ranked == ["spread thing failed over nodes", "near thing failed badly", "far away thing failed"]
    near = m.templates()[1]
    assert near.nearest == 0.0 and near.count == 5 and near.nodes == {"a"}


@pytest.mark.parametrize("line, level", [
    ("[ERROR] HCCP(1760,hccp_service.bin):2025-11-12-03:40:06.790.330 [ra_peer.c:533]tid:1772,f(533) : x", "ERROR"),
    ("[WARNING] GE(4811,python3):2025-11-12-03:40:02.100.000 [a.cc:1]4811 Init: slow", "WARNING"),
    ("(Worker_DP0 pid=4711) ERROR 09-12 03:40:02 [file.py:581] boom", "ERROR"),
    ("W20251110 15:36:33.327589 280651 file.cpp:75] careful", "WARNING"),
    ("[INFO] GE(4811,python3):2025-11-12-03:40:02.100.000 [a.cc:1]4811 Init: ERROR counters reset", None),
])
def test_level_of_the_header(line: str, level: str | None) -> None:
    assert level_of(line, parse_header(line, 2025).msg_start) == level


def test_grouping_accuracy_is_loghubs() -> None:
    # true groups {0,1} {2,3}: predicted {0,1,2} {3} gets no line right; {0,1} {2} {3} gets two
    assert grouping_accuracy(["a", "a", "b", "b"], [1, 1, 1, 2]) == 0.0
    assert grouping_accuracy(["a", "a", "b", "b"], [1, 1, 2, 3]) == 0.5
    assert grouping_accuracy(["a", "a", "b"], ["x", "x", "y"]) == 1.0


def test_labelled_set_is_big_enough() -> None:
    rows = _labelled()
    assert len(rows) >= 300 and len({label for label, _ in rows}) >= 25
    assert all(level_of(line, parse_header(line, 2025).msg_start) for _, line in rows)


def test_grouping_accuracy_at_least_drain3s() -> None:
    """loghub-2.0's GA on the hand-labelled Ascend lines, ours beside Drain3's with the same masks
    (both are given the masked text, Drain3 with no masking of its own), depth and threshold."""
    rows = _labelled()
    truth = [label for label, _ in rows]
    messages = [_message(line) for _, line in rows]
    ours = Miner(depth=4, similarity=0.5)
    our_groups = [ours.add(m).id for m in messages]
    config = TemplateMinerConfig()
    config.drain_depth, config.drain_sim_th, config.masking_instructions = 4, 0.5, []
    drain = TemplateMiner(config=config)
    their_groups = [drain.add_log_message(" ".join(tokens_of(m)))["cluster_id"] for m in messages]
    ga_ours, ga_drain3 = grouping_accuracy(truth, our_groups), grouping_accuracy(truth, their_groups)
    print(f"GA ours {ga_ours:.4f}, Drain3 {ga_drain3:.4f} on {len(rows)} lines, {len(set(truth))} templates")
    assert ga_ours >= ga_drain3
    assert ga_ours >= 0.9
