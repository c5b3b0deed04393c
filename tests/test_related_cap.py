"""Which related errors are kept past the cap does not depend on how the inputs were cut: a direct
scan, a scan at any --jobs and a `merge` of parts cut across the inputs keep the same ones (the
first in report order). The fleet bench found the merge of 10 interleaved parts of 500 bundles
keeping other related errors (and so other incidents) than the direct scan."""

from __future__ import annotations

from pathlib import Path

import pytest
from analyzer.core import observations as observed
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
