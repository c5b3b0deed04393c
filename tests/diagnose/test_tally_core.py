"""The tally the engine in the compiled core counts (`core/src/tally.rs`, read by `Tally.from_core`)
against `Tally.add` fed the same findings, its reference: every aggregate, whole or a byte range's
(its open bursts, first ends, thread starts), on generated streams; and whole runs, where each
stream's tally comes from the core, against runs where none does."""

from __future__ import annotations

import importlib.util
import io
from collections import Counter
from typing import Any

import pytest
from analyzer.core.records import Finding, InputStats
from analyzer.detect import engine as engine_module
from analyzer.detect.engine import Engine
from analyzer.diagnose import summary
from analyzer.diagnose.bursts import Bursts
from analyzer.diagnose.tally import Tally
from analyzer.knowledge.rules import RuleSet
from analyzer.scan import blocks
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from linegen import BODIES, HEADS, YEARS, stream

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ddtriage_core") is None,
                                reason="the compiled core (ddtriage_core) is not installed")


class Counted:
    """A sink that keeps what the engine in the core hands over."""

    def __init__(self, range_part: bool) -> None:
        self.kept: list[Finding] = []
        self.found: tuple[object, ...] | None = None
        self._range = range_part

    @property
    def range_part(self) -> bool:
        return self._range

    @property
    def fingerprint_cap(self) -> int:
        return summary.FINGERPRINT_CAP

    def keep_all(self, found: list[Finding]) -> None:
        self.kept += found

    def tallied(self, found: tuple[object, ...]) -> None:
        self.found = found

    def core_unit(self) -> Any:
        return None  # each stream's tally handed over (`tallied`)


class UnitCounted(Counted):
    """A sink whose whole sources' tallies the core merges (`ddtriage_core.UnitTally`)."""

    def __init__(self) -> None:
        super().__init__(False)
        self.unit = blocks.new_core_unit(summary.FINGERPRINT_CAP)
        assert self.unit is not None

    def core_unit(self) -> Any:
        return self.unit


def _state(t: Tally) -> str:
    """Everything a tally holds, as text (dicts sorted: their order is no part of the answer)."""
    def plain(x: Any) -> Any:
        if isinstance(x, dict | Counter):
            return sorted(((repr(k), plain(v)) for k, v in x.items()))
        if isinstance(x, set):
            return sorted(map(repr, x))
        if hasattr(x, "__slots__") and not isinstance(x, tuple):
            slots = [s for cls in type(x).__mro__ for s in getattr(cls, "__slots__", ())]
            return {s: plain(getattr(x, s)) for s in slots if s != "__weakref__"}
        if hasattr(x, "__dict__") and not isinstance(x, type):
            return {k: plain(v) for k, v in vars(x).items()}
        if isinstance(x, list):
            return [plain(v) for v in x]
        return x
    b: Bursts = t.bursts
    b.trim()
    return repr({**plain(t), "bursts": plain(b)})


def _tallies(data: bytes, year: Any, range_part: bool, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str, int]:
    monkeypatch.setattr(blocks, "ENGINE", "rust")
    monkeypatch.setattr(engine_module, "CORE_TALLY_MIN", 0)
    engine = Engine(RuleSet.load())
    sink = Counted(range_part)
    engine.scan_leaf("node-1/plog-1.log", io.BytesIO(data), year, InputStats(), counted=sink,
                     year_guessed=bool(year and year.guessed), bundle="b1")
    if sink.found is None:  # no finding: nothing to hand over
        assert not sink.kept
        return "", "", 0
    core = Tally.from_core(sink.found)
    python = Tally(range_part=range_part)
    for f in sink.kept:
        python.add(f)
    if not range_part:
        python.bursts.close_all()
    return _state(core), _state(python), len(sink.kept)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(st.tuples(st.sampled_from(HEADS), st.lists(st.sampled_from(BODIES), min_size=1, max_size=3)),
                      min_size=1, max_size=60),
       year=st.sampled_from(YEARS), range_part=st.booleans())
def test_the_core_tallies_what_python_tallies(monkeypatch: pytest.MonkeyPatch, lines, year, range_part) -> None:
    core, python, _ = _tallies(stream(lines), year, range_part, monkeypatch)
    assert core == python


@pytest.mark.parametrize("range_part", [False, True])
def test_a_storm_of_bursts_by_hand(monkeypatch: pytest.MonkeyPatch, range_part: bool) -> None:
    """Written by hand: two threads interleaved, a line gap past BURST_LINES, a time gap past
    BURST_SECONDS, a generic echo before a specific code (the lead moves), a repeat, another code
    (`also`), a req_id and a peer; more than 2 x MAX_BURSTS bursts (the kept ones trimmed)."""
    head = "[ERROR] GE(61,python3):2025-11-12-{h:02d}:{m:02d}:{s:02d}.{ms:03d}.000 [x.cc:1]{tid} PullKvBlocks: "
    lines, t = [], 0
    for i in range(2200):
        t += 3 if i % 11 == 0 else 1  # a gap past BURST_SECONDS now and then
        h, rest = divmod(t, 3600)
        stamp = {"h": h % 24, "m": rest // 60, "s": rest % 60, "ms": i % 1000}
        lines.append(head.format(**stamp, tid=62) + "ret = -1, llm_datadist\n")
        lines.append(head.format(**stamp, tid=63) + "ret = 1343270913, req_id = 7, remote_cluster_id = 2\n")
        lines.append(head.format(**stamp, tid=62) + "ret = 1343270913 then ret = 0x5010B009\n")
        lines.append("filler\n" * (47 + i % 5))  # around BURST_LINES between a thread's findings
    core, python, n = _tallies("".join(lines).encode(), None, range_part, monkeypatch)
    assert core == python
    assert n > 6000


def test_a_storm_from_as_many_threads_as_findings_is_tallied_in_linear_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each finding from a thread of its own (a pid a line): the core found a thread's open burst,
    start and group by walking them all (30,000 such findings took 33 s to scan, now about 1)."""
    import time

    head = "[ERROR] GE({pid},python3):2025-11-12-03:40:05.{ms:03d}.002 [llm_datadist.cc:8]{pid} PullKvBlocks: "
    data = "".join(head.format(pid=100_000 + i, ms=i % 1000) + "ErrorNo: 1343270913(wait timeout!)\n"
                   for i in range(20_000)).encode()
    monkeypatch.setattr(blocks, "ENGINE", "rust")
    monkeypatch.setattr(engine_module, "CORE_TALLY_MIN", 0)
    engine = Engine(RuleSet.load())
    sink = Counted(True)  # a range's: its first ends and thread starts too
    started = time.perf_counter()
    engine.scan_leaf("node-1/plog-1.log", io.BytesIO(data), None, InputStats(), counted=sink, bundle="b1")
    assert time.perf_counter() - started < 3  # 0.7 s here; walking every thread took 6
    assert sink.found is not None and len(sink.kept) == 20_000
    # the tally itself, against Python's, on a part (the whole one costs seconds in Python alone)
    core, python, n = _tallies(data[:data.index(b"\n", 300_000) + 1], None, True, monkeypatch)
    assert core == python and n > 2_000


@pytest.mark.parametrize("jobs", [1, 2])
def test_runs_read_alike_whoever_tallies(monkeypatch: pytest.MonkeyPatch, tmp_path, jobs: int) -> None:
    """Whole runs (a storm of two threads cut into byte ranges at --jobs 2, a few small files, one
    with a line Python reads): the core's tallies merged and extended give the report Python's give."""
    from analyzer.run import api, parallel
    from analyzer.writers import render_report

    monkeypatch.setattr(blocks, "ENGINE", "rust")
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1 << 16)
    head = "[ERROR] GE(61,python3):2025-11-12-03:{m:02d}:{s:02d}.000.000 [x.cc:1]{tid} PullKvBlocks: "
    big = "".join(head.format(m=(i // 60) % 60, s=i % 60, tid=62 + i % 2) + ("ret = -1, llm_datadist" if i % 3 else
                  f"ret = 1343270913, req_id = {i // 40}") + "\n" + "[INFO] GE(61,p):2025-11-12-03:00:00 x ok\n" * (i % 5)
                  for i in range(3000))
    (tmp_path / "node-1").mkdir()
    (tmp_path / "node-1" / "plog-61_20251112030000000.log").write_text(big)
    for k in range(3):
        (tmp_path / f"node-{k + 2}").mkdir()
        (tmp_path / f"node-{k + 2}" / "plog.log").write_text(big[: 20000 * (k + 1)] + ("本地\n" if k == 1 else ""))
    monkeypatch.setattr(engine_module, "CORE_TALLY_MIN", 0)
    native = render_report("json", api.analyze([str(tmp_path)], jobs=jobs))
    monkeypatch.setattr(blocks, "new_core_unit", lambda cap: None)  # each stream's tally handed over
    assert render_report("json", api.analyze([str(tmp_path)], jobs=jobs)) == native
    monkeypatch.setattr(engine_module, "CORE_TALLY_MIN", 1 << 62)  # never: every finding tallied in Python
    assert render_report("json", api.analyze([str(tmp_path)], jobs=jobs)) == native


def _merged_state(t: Tally) -> tuple[Any, ...]:
    """What a merged tally holds that a report or a later merge reads, its rows in their order (a
    dict's order breaks a sort's ties)."""
    return (t.summary(), t.sources, t.untallied, t.whole, t.guessed, list(t.sure.items()), t.count,
            t.unrecoverable, t.unknown, list(t.actions.items()),
            [(k, a.first, a.action, a.recoverable, a.count, a.first_seen, a.last_seen, a.sources.first,
              a.sources.count) for k, a in t.codes.items()],
            [(k, n.findings, n.unrecoverable, dict(n.kinds), n.sources.first, n.sources.count)
             for k, n in t.nodes.items()],
            [(k, f.first, f.last, f.count, f.first_seen, f.last_seen) for k, f in t.folds.items()],
            [(k, b.findings, b.unrecoverable, b.first, b.last, b.nodes, b.prints) for k, b in t.fleet.bundles.items()],
            [(k, p.example, p.findings, p.first, p.last, p.bundles, p.nodes) for k, p in t.fleet.prints.items()],
            [(k, g.key) for k, g in t.bursts.groups.items()])


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(streams=st.lists(st.tuples(
    st.lists(st.tuples(st.sampled_from(HEADS), st.lists(st.sampled_from(BODIES), min_size=1, max_size=3)),
             min_size=1, max_size=30),
    st.sampled_from(YEARS), st.integers(0, 4)), min_size=1, max_size=6))
def test_the_core_merges_a_units_sources_as_python_does(monkeypatch: pytest.MonkeyPatch, streams) -> None:
    """Several whole sources of one unit (in any order of names, a name now and then twice, some
    with a guessed year): the core's unit tally (`UnitTally`, `Tally.from_core_unit`) is what
    Python's tallies of each give, merged (`Tally.merge`) or left out (`Tally.leave_out`)."""
    _unit_against_python(monkeypatch, streams)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(streams=st.lists(st.tuples(
    st.lists(st.tuples(st.sampled_from(HEADS), st.lists(st.sampled_from(BODIES), min_size=1, max_size=3)),
             min_size=1, max_size=30),
    st.sampled_from(YEARS), st.integers(0, 4)), min_size=1, max_size=6), cap=st.integers(1, 4))
def test_the_core_caps_rows_per_fingerprint_as_python_does(monkeypatch: pytest.MonkeyPatch, streams, cap) -> None:
    """The same with rows kept for a few fingerprints only (`summary.FINGERPRINT_CAP`): each
    source's tally and the unit's keep the rows of the smallest, and say so, as Python's do."""
    monkeypatch.setattr(summary, "FINGERPRINT_CAP", cap)
    _unit_against_python(monkeypatch, streams)


def _unit_against_python(monkeypatch: pytest.MonkeyPatch, streams: list[Any]) -> None:
    monkeypatch.setattr(blocks, "ENGINE", "rust")
    engine = Engine(RuleSet.load())
    sink = UnitCounted()
    reference = Tally()
    for lines, year, name in streams:
        source = f"node-{name % 3}/plog-{name}.log"
        before = len(sink.kept)
        engine.scan_leaf(source, io.BytesIO(stream(lines)), year, InputStats(), counted=sink,
                         year_guessed=bool(year and year.guessed), bundle=f"b{name % 2}")
        part = Tally()
        for f in sink.kept[before:]:
            part.add(f)
        part.bursts.close_all()
        if part.guessed:
            reference.leave_out(source)
        elif part.count:
            reference.merge(part)
    core = Tally.from_core_unit(sink.unit.export())
    assert _merged_state(core) == _merged_state(reference)
    assert sink.unit.export()[4] == 0  # exported once: the unit starts afresh


def test_a_unit_of_many_sources_keeps_its_first_bursts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Written by hand: 300 sources of 8 bursts each, two groups, more than 2 x MAX_BURSTS bursts
    merged (the kept ones trimmed in the core as `Bursts.merge` trims them); names past LIST_LIMIT."""
    monkeypatch.setattr(blocks, "ENGINE", "rust")
    engine = Engine(RuleSet.load())
    sink = UnitCounted()
    reference = Tally()
    head = "[ERROR] GE(61,python3):2025-11-12-{h:02d}:{m:02d}:{s:02d}.000.000 [x.cc:1]62 PullKvBlocks: "
    for k in range(300):
        lines = []
        for b in range(8):
            t = (k * 37 + b * 5) % 86000
            lines.append(head.format(h=t // 3600, m=t // 60 % 60, s=t % 60) +
                         ("ret = 1343270913\n" if b % 2 else "ret = 0x5010B009\n") + "filler\n" * 60)
        source = f"node-{k % 4}/plog-{k:03d}.log"
        before = len(sink.kept)
        engine.scan_leaf(source, io.BytesIO("".join(lines).encode()), None, InputStats(), counted=sink)
        part = Tally()
        for f in sink.kept[before:]:
            part.add(f)
        part.bursts.close_all()
        reference.merge(part)
    core = Tally.from_core_unit(sink.unit.export())
    assert core.bursts.count == 2400 and len(core.summary().bursts) == 1000
    assert _merged_state(core) == _merged_state(reference)
