"""detect.observer: a related error past its stream's cap is counted, not built, with the same report."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analyzer.core import observations
from analyzer.detect import observer
from analyzer.run import api
from analyzer.writers import render_report

HCCL = "call hccl op failed, hcclRet -> 9, rank = 1"
CODE = "[pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT"


def _vllm_across_new_year() -> str:
    """Year-less vLLM stamps: neighbour errors in December, then past the cap into January (the
    clock must see the crossing in the lines it only counts), then findings."""
    lines = [f"(W pid=9) ERROR 12-31 23:59:{s:02d} [c.py:1] {HCCL}" for s in range(40, 60)]
    lines += [f"(W pid=9) ERROR 01-01 00:00:{s:02d} [c.py:1] {HCCL}" for s in range(0, 10)]
    lines += ["(W pid=9) ERROR 01-01 00:00:11 [c.py:1] " + CODE, "a line without a stamp, after it: " + HCCL]
    return "\n".join(lines) + "\n"


def _plog_with_two_families_a_line() -> str:
    out = []
    for i in range(60):
        out.append(f"[ERROR] HCCL(77,python3):2025-11-10-15:36:{i:02d}.000.001 [t.cc:1] 78 Run: {HCCL}; "
                   f"connect failed, errno = 111")
        if i % 7 == 0:
            out.append(f"[ERROR] GE(77,python3):2025-11-10-15:36:{i:02d}.500.000 [l.cc:2] 79 Pull: "
                       "PullKvBlocks failed, ret = 0x5010B001")
    return "\n".join(out) + "\n"


def _report(path: Path, count_past_cap: bool, jobs: int, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(observer, "COUNT_PAST_CAP", count_past_cap)
    return render_report("json", api.analyze([str(path)], jobs=jobs))


@pytest.mark.parametrize("cap", [1, 3, 8])
@pytest.mark.parametrize("log", [_vllm_across_new_year, _plog_with_two_families_a_line])
def test_counting_past_the_cap_gives_the_report_building_them_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    cap: int, log) -> None:
    path = tmp_path / "vllm_20251231.log"
    path.write_text(log())
    monkeypatch.setattr(observations, "MAX_RELATED", cap)
    built = _report(path, False, 1, monkeypatch)
    related = json.loads(built)["related"]
    assert len(related) == cap  # the cap was reached: the shortcut had lines to skip
    for jobs in (1, 2):
        assert _report(path, True, jobs, monkeypatch) == built


def test_the_clock_still_rolls_over_in_lines_only_counted(monkeypatch: pytest.MonkeyPatch) -> None:
    """December (noted), then January and July (only counted), then a finding in December: only a
    clock that saw January knows it is the next December (the stream's own times, before a run
    settles guessed years)."""
    import io

    from analyzer.core.records import InputStats
    from analyzer.detect.engine import Engine
    from analyzer.inputs import year_hint
    from analyzer.knowledge.rules import RuleSet

    text = (f"(W pid=9) ERROR 12-31 23:59:00 [c.py:1] {HCCL}\n"
            f"(W pid=9) ERROR 01-01 00:00:01 [c.py:1] {HCCL}\n"
            f"(W pid=9) ERROR 07-01 00:00:01 [c.py:1] {HCCL}\n"
            f"(W pid=9) ERROR 12-01 00:00:01 [c.py:1] {CODE}\n")
    engine = Engine(RuleSet.load())
    monkeypatch.setattr(observations, "MAX_RELATED", 1)

    def stamps(count_past_cap: bool) -> tuple[list, list]:
        monkeypatch.setattr(observer, "COUNT_PAST_CAP", count_past_cap)
        stats = InputStats()
        name = "worker.log"  # with --year 2025: the year the log starts in, New Years counted
        found = engine.scan_leaf(name, io.BytesIO(text.encode()), year_hint(name, None, 2025), stats)
        return [f.timestamp for f in found], [e.timestamp for e in stats.observed.related[:1]]

    assert stamps(True) == stamps(False) == (["2026-12-01T00:00:01"], ["2025-12-31T23:59:00"])


def test_a_long_lines_later_pieces_are_still_built_at_the_cap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A line longer than a block is scanned in pieces of one line number: a later piece may hold
    an error ordered before one already noted on that line (hccl < socket), which the report keeps."""
    from analyzer.scan import blocks

    monkeypatch.setattr(blocks, "MAX_LINE", 1000)
    monkeypatch.setattr(observations, "MAX_RELATED", 3)
    filler = "x" * (2 * blocks.BLOCK_SIZE + 1000)  # past the block that holds its head
    head = "[ERROR] GE(77,python3):2025-11-10-15:36:01.000.001 [t.cc:1] 78 Run: "
    path = tmp_path / "plog-77_20251110153600000.log"
    path.write_text(head + HCCL + "; connect failed, errno = 111\n"
                    + head + "connect failed, errno = 111 " + filler + " " + HCCL + "\n")
    built = _report(path, False, 1, monkeypatch)
    assert [(e["line"], e["family"]) for e in json.loads(built)["related"]] == [(1, "hccl"), (1, "socket"),
                                                                                (2, "hccl")]
    assert _report(path, True, 1, monkeypatch) == built
