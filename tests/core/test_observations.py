"""Which related errors are kept past the cap does not depend on how the inputs were cut: a direct
scan, a scan at any --jobs and a `merge` of parts cut across the inputs keep the same ones (the
first in report order). The fleet bench found the merge of 10 interleaved parts of 500 bundles
keeping other related errors (and so other incidents) than the direct scan.

A node's link facts are bounded (the fleet bench's noise gave each node hundreds of random
addresses, 100 MiB over 500 nodes) and which values are kept does not depend on the order they
came in, nor on how the lines were cut into units or parts (folded from test_nodefacts_bound.py, the 500-bundle fleet bench (link-fact sets bounded)).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from analyzer.core import observations as observed
from analyzer.core.observations import MAX_VALUES, NodeFacts
from analyzer.run import api
from analyzer.run.merge_parts import merge_parts
from analyzer.writers import render_report

HCCL = ("[ERROR] HCCL({pid},python3):2025-11-12-03:40:{s:02d}.000.000 [hccl_comm.cc:655] [{pid}][HcclCommPrepare] "
        "call trace: hcclRet -> 9, rank = {i}\n")


def _bundles(root: Path) -> list[str]:
    paths = []
    for n in range(6):
        log = root / f"node-{n}" / "ascend" / "log" / "debug" / "plog" / f"plog-{100 + n}_20251112034000000.log"
        log.parent.mkdir(parents=True)
        log.write_text("".join(HCCL.format(pid=100 + n, s=i % 60, i=i) for i in range(40)))
        paths.append(str(root / f"node-{n}"))
    return paths


def test_the_related_errors_kept_past_the_cap_do_not_depend_on_the_cut(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observed, "MAX_RELATED", 50)  # 240 related errors in all: most are only counted
    bundles = _bundles(tmp_path)
    direct = api.analyze(list(reversed(bundles)), jobs=1)  # input order is not report order
    kept = [(e.source, e.line) for e in direct.related]
    assert len(kept) == 50 and kept == sorted(kept) and "node-0" in kept[0][0]
    assert render_report("json", api.analyze(bundles, jobs=2)) == render_report("json", direct)
    parts = []
    for i in range(2):  # parts cut across the inputs, as the fleet bench cuts them
        part = tmp_path / f"part-{i}.json"
        part.write_text(render_report("json", api.analyze(bundles[i::2], jobs=1)))
        parts.append(str(part))
    merged = merge_parts(parts)
    assert [(e.source, e.line) for e in merged.related] == kept


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


def test_request_ids_past_the_cap_and_the_sets_as_read_do_not_depend_on_order_or_cut() -> None:
    # 3,000 request ids on one node: the 2,000 kept (the shortest, then by text) and every set as
    # the incidents read it (settled) are the same in any order, cut or trim timing; `07` and `7`
    # are two values in a total order (a tie used to fall to a set's iteration order).
    lines = [[("req_id", f"r{(i * 7919) % 3000}"), ("listen", f"10.1.0.{i % 200}:{2000 + i}"),
              ("device", f"{i % 90:02d}" if i % 7 else str(i % 90))] for i in range(3000)]
    orders = [lines, lines[::-1], random.Random(11).sample(lines, len(lines))]
    settled = []
    for k, order in enumerate(orders):
        whole = observed.Observed()
        parts = [observed.Observed() for _ in range(k + 1)]
        for i, facts in enumerate(order):
            parts[i % len(parts)].note_facts("n", facts, "7")
        for part in parts:
            whole.add(part)
        node = whole.settle()["n"]
        settled.append((sorted(node.listen), sorted(node.devices), sorted(node.req_ids), node.to_dict("n")))
    assert settled[0] == settled[1] == settled[2]
    listen, devices, req_ids, d = settled[0]
    assert len(listen) == MAX_VALUES and len(req_ids) == observed.MAX_REQ_IDS
    assert d["req_ids"][:3] == ["r0", "r1", "r2"] and "r1999" in req_ids and "r2000" not in req_ids
    assert d["devices"][:4] == ["0", "00", "01", "1"]
