"""A node's link facts are bounded (the fleet bench's noise gave each node hundreds of random
addresses, 100 MiB over 500 nodes) and which values are kept does not depend on the order they
came in, nor on how the lines were cut into units or parts."""

from __future__ import annotations

import random

from analyzer.core.observations import MAX_VALUES, NodeFacts


def _facts(i: int) -> list[tuple[str, str]]:
    return [("listen", f"10.0.{i // 250}.{i % 250}:26000"), ("remote_ip", f"10.9.{i // 250}.{i % 250}"),
            ("remote_cluster", str(i)), ("device", str(i % 300))]


def test_kept_values_are_bounded_and_the_same_in_any_order_or_cut() -> None:
    lines = [_facts(i) for i in range(3000)]
    one = NodeFacts()
    for facts in lines:
        one.note(facts, "7")
    shuffled = lines[:]
    random.Random(5).shuffle(shuffled)
    left, right = NodeFacts(), NodeFacts()
    for k, facts in enumerate(shuffled):
        (left if k % 3 else right).note(facts, "7")
    left.merge(right)
    assert one.to_dict("n") == left.to_dict("n")
    d = one.to_dict("n")
    assert len(d["listen"]) == len(d["remote_ips"]) == len(d["remote_clusters"]) == MAX_VALUES
    assert d["remote_clusters"][:3] == ["0", "1", "2"]  # the smallest, in number order
