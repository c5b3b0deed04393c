"""Stage: triage. Counts by code x API, bursts with their lead and echoes, severe first.
"""

from analyzer import analyze_text
from analyzer.diagnose.summary import AlsoCode, Summary
from analyzer.diagnose.tally import summarize

BURSTS = "\n".join([
    "[ERROR] GE(1,p):2025-11-12-03:40:05.100.000 [llm_datadist.cc:8]2 LinkClusters: ErrorNo: 1343270913(request wait to be processed timeout!)",
    "[ERROR] GE(1,p):2025-11-12-03:40:05.200.000 [llm_datadist.cc:9]2 LinkClusters: ErrorNo: 4294967295(failed)",
    "[ERROR] GE(1,p):2025-11-12-03:40:05.300.000 [llm_datadist.cc:9]2 LinkLlmClusters: ErrorNo: 4294967295(failed)",
    "[INFO] GE(1,p):2025-11-12-03:41:00.000.000 [llm_datadist.cc:9]2 Heartbeat: ok",
    "[ERROR] GE(1,p):2025-11-12-03:41:05.100.000 [llm_datadist.cc:8]2 PullKvBlocks: ErrorNo: 1343270913(request wait to be processed timeout!)",
    "[ERROR] GE(1,p):2025-11-12-03:41:05.200.000 [llm_datadist.cc:8]2 PullKvBlocks: ErrorNo: 1343270914(kv cache not exit!)",
])


def test_bursts_leads_and_echoes(rules):
    findings = analyze_text(BURSTS, rules)
    summary = summarize(findings)
    assert summary.findings == 5
    first, second = summary.bursts
    # The burst holding a specific code that is not recoverable (a transfer timeout: relink)
    # comes first even though it is later; LLM_FAILED echoes do not make a burst severe.
    assert first.lead.api == "PullKvBlocks" and first.lead.action == "relink"
    assert first.also == (AlsoCode(code="0x5010B002", name="LLM_KV_CACHE_NOT_EXIST", api="PullKvBlocks",
                                   line=6, action="check-cache", recoverable=True),)
    assert second.lead.name == "LLM_WAIT_PROC_TIMEOUT" and second.lead.action == "retry"
    assert second.echoes == 2 and (second.first_line, second.last_line) == (1, 3)


def test_counts_by_code_and_api(rules):
    summary = summarize(analyze_text(BURSTS, rules))
    rows = {(r.name, r.api): r for r in summary.codes}
    assert rows[("LLM_FAILED", "LinkLlmClusters")].count == 2
    assert rows[("LLM_FAILED", "LinkLlmClusters")].first_seen == "2025-11-12T03:40:05.200000"
    assert rows[("LLM_FAILED", "LinkLlmClusters")].last_seen == "2025-11-12T03:40:05.300000"
    assert rows[("LLM_WAIT_PROC_TIMEOUT", "PullKvBlocks")].action == "relink"
    assert summary.unrecoverable == 3  # two LLM_FAILED + the transfer timeout


def test_empty_summary(rules):
    assert summarize([]) == Summary()
    assert Summary().to_dict() == {"findings": 0, "unrecoverable": 0, "unknown_codes": 0, "codes": [], "actions": [],
                                   "nodes": [], "bursts": [], "bundles": [], "more_bundles": 0,
                                   "fingerprints": [], "more_fingerprints": 0, "incidents": []}


# --- a file's byte ranges: their tallies, extended in order, equal one tally of every finding ---------

import itertools  # noqa: E402
import random  # noqa: E402

import analyzer.diagnose.bursts as bursts_mod  # noqa: E402
from analyzer.core.records import Finding, shifted  # noqa: E402
from analyzer.diagnose.tally import Tally  # noqa: E402
from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_CODES = [("0x5010B001", "LLM_WAIT_PROC_TIMEOUT", False, "retry"), ("0x5010B002", "LLM_KV_CACHE_NOT_EXIST", False,
          "check-cache"), ("0xFFFFFFFF", "LLM_FAILED", True, "collect-logs"), ("0x5010B009", None, False, "relink")]

_STEP = st.tuples(st.integers(0, 70), st.sampled_from(["11", "12", "13"]), st.sampled_from([None, "a", "b"]),
                  st.integers(0, 3), st.integers(0, 4000), st.booleans(), st.sampled_from([None, "n1", "n2"]),
                  st.sampled_from(["", "fp1", "fp2", "fp3"]), st.booleans())


def _findings(steps) -> list[Finding]:
    """One source's findings in report order, from hypothesis steps: line jumps (0: the same
    line, another code), threads, codes, times (ms) and what bursts and links read."""
    out: list[Finding] = []
    line, ms = 1, 0
    for jump, pid, tid, c, dt, stamped, node, fp, linked in steps:
        code, name, generic, action = _CODES[c]
        if jump == 0 and out and out[-1].line == line and out[-1].code >= code:
            jump = 1  # one finding per code per line, codes in order on a line
        line += jump
        ms += dt
        stamp = f"2025-11-12T03:{40 + ms // 60000 % 20:02d}:{ms // 1000 % 60:02d}.{ms % 1000:03d}000"
        out.append(Finding(
            source="big.log", line=line, timestamp=stamp if stamped else None, code=code, name=name,
            api="PullKvBlocks" if c % 2 else None, api_evidence=None, api_line=line - 1 if c == 1 else None,
            recoverable=True if action == "retry" else None, rule=f"r{c}", action=action, text=f"t{c}",
            form="hex", pid=pid, tid=tid, generic=generic, node=node, kind="host", fingerprint=fp,
            causes=((line - 2, "runtime", "507046", "m"),) if c == 1 else (), time_hint=None if stamped else stamp,
            link=(("req_id", f"q{c}"),) if linked else ()))
    return out


def _ranges_tally(findings: list[Finding], cuts: list[int]) -> Tally | None:
    """What merge_results makes of a file cut before the lines `cuts`: each range tallied on its
    own lines (1 = its first), then extended in order; None where a range could not be."""
    whole = Tally()
    bounds = [1, *sorted(set(cuts)), 1 << 40]
    for start, end in zip(bounds, bounds[1:], strict=False):
        mine = [f for f in findings if start <= f.line < end]
        part = Tally(range_part=True)
        for f in mine:
            part.add(shifted(f, -(start - 1)))
        if not whole.extend(part, start - 1, iter(mine)):
            return None
    return whole


@settings(max_examples=300, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=120), st.lists(st.integers(2, 3000), max_size=4), st.integers(1, 6))
# Found by hypothesis: a thread's first burst ends on the line where its next one begins (two
# records of one flattened line, 2.001 s apart); `first_ends` once held the line only, so the range's
# first findings were fed twice.
@example(steps=[(0, "11", None, 0, 0, False, None, "", False), (0, "11", None, 0, 0, True, None, "", False),
                (0, "11", None, 1, 2001, True, None, "", False)], cuts=[], cap=1)
def test_range_tallies_extended_equal_one_tally(steps, cuts, cap):
    findings = _findings(steps)
    old_cap = bursts_mod.MAX_BURSTS
    bursts_mod.MAX_BURSTS = cap  # the kept bursts' cut falls inside what the ranges hold
    try:
        one = Tally()
        for f in findings:
            one.add(f)
        merged = _ranges_tally(findings, cuts)
        if merged is None:  # bursts of two threads began on one line: the caller counts again
            starts = [(f.line, bursts_mod.thread_of(f)) for f in findings]
            assert len({line for line, _ in starts}) < len(starts)
            return
        assert merged.summary() == one.summary()
        assert merged.whole
        # the bursts' keys too (the thread's burst numbers only break ties the summary never shows)
        assert [k for k, _ in merged.bursts.bursts] == [k for k, _ in one.bursts.bursts]
        assert {g: a.key for g, a in merged.bursts.groups.items()} == {g: a.key for g, a in one.bursts.groups.items()}
    finally:
        bursts_mod.MAX_BURSTS = old_cap


@settings(max_examples=200, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=120), st.lists(st.integers(1, 119), max_size=6), st.integers(1, 4))
def test_tallies_of_sources_merged_equal_one_tally(steps, cuts, cap):
    """Sources tallied apart and merged (a unit's, a fleet's units) give the one tally's summary,
    the kept bursts cut at a cap the merges cross (trimmed lazily)."""
    findings = _findings(steps)
    bounds = [0, *sorted(set(cuts)), len(findings)]
    sources = [[f._replace(source=f"s{9 - i}.log") for f in findings[a:b]]  # sources in any order
               for i, (a, b) in enumerate(itertools.pairwise(bounds))]
    old_cap = bursts_mod.MAX_BURSTS
    bursts_mod.MAX_BURSTS = cap
    try:
        one, merged = Tally(), Tally()
        for part_findings in sources:
            part = Tally()
            for f in part_findings:
                one.add(f)
                part.add(f)
            merged.merge(part)
        assert merged.summary() == one.summary()
    finally:
        bursts_mod.MAX_BURSTS = old_cap


def _eager(tally: Tally) -> Tally:
    """`tally` building every burst it closes, as before `Bursts._keep_open` skipped some."""
    b = tally.bursts
    b._keep_open = lambda key, burst: bursts_mod.Bursts.keep(b, key, burst.close())  # type: ignore[method-assign]
    return tally


@settings(max_examples=200, deadline=None)
@given(st.lists(_STEP, min_size=1, max_size=120), st.lists(st.integers(1, 119), max_size=6), st.integers(1, 4),
       st.booleans())
def test_bursts_past_the_kept_ones_are_counted_as_if_built(steps, cuts, cap, back_in_time):
    """A burst closed once the kept ones were trimmed, past them and not its group's first, is
    counted but not built: the summary (bursts, groups, counts) is the one of building it. Sources
    in time order or against it (later bursts then come first in the report)."""
    findings = _findings(steps)
    bounds = [0, *sorted(set(cuts)), len(findings)]
    sources = [[f._replace(source=f"s{9 - i}.log") for f in findings[a:b]]
               for i, (a, b) in enumerate(itertools.pairwise(bounds))]
    findings = [f for source in (sources[::-1] if back_in_time else sources) for f in source]
    old_cap = bursts_mod.MAX_BURSTS
    bursts_mod.MAX_BURSTS = cap
    try:
        lazy, eager = Tally(), _eager(Tally())
        for f in findings:
            lazy.add(f)
            eager.add(f)
        assert lazy.summary() == eager.summary()
    finally:
        bursts_mod.MAX_BURSTS = old_cap


def test_a_burst_between_the_kept_ones_is_built(monkeypatch):
    """Two kept: b.log's bursts at 3, 9, 12 and 15 s are trimmed to those at 3 and 9 s; a.log's at
    6 s, of the same group but not its first, comes after and must take the place of the one at 9 s."""
    monkeypatch.setattr(bursts_mod, "MAX_BURSTS", 2)
    found = _findings([(60, "11", None, 0, 3000, True, None, "", False) for _ in range(5)])
    report = [f._replace(source="b.log") for k, f in enumerate(found) if k != 1] + [found[1]._replace(source="a.log")]
    lazy, eager = Tally(), _eager(Tally())
    for f in report:
        lazy.add(f)
        eager.add(f)
    summary = lazy.summary()
    assert summary == eager.summary()
    assert [(b.source, b.first_seen) for b in summary.bursts] == [
        ("b.log", "2025-11-12T03:40:03.000000"), ("a.log", "2025-11-12T03:40:06.000000")]


def test_a_storm_builds_few_of_its_bursts(monkeypatch):
    """Not a test the eager tracker passes: of 600 bursts in time order with two kept, only those
    kept before the first trim and the groups' first ones are built."""
    monkeypatch.setattr(bursts_mod, "MAX_BURSTS", 2)
    built = []
    close = bursts_mod._OpenBurst.close
    monkeypatch.setattr(bursts_mod._OpenBurst, "close", lambda self: built.append(1) or close(self))
    steps = [(60, "11", None, k % 2, 3000, True, None, "", False) for k in range(600)]
    lazy, eager = Tally(), _eager(Tally())
    for f in _findings(steps):
        lazy.add(f)
    n_lazy = len(built)
    for f in _findings(steps):
        eager.add(f)
    assert lazy.summary() == eager.summary()
    assert lazy.summary().burst_count == 600
    assert len(built) - n_lazy == 600 and n_lazy <= 6


def test_range_tallies_merge_a_storm_cut_anywhere():
    """A storm of one thread's burst across every cut, and many threads' bursts, each line one thread."""
    rnd = random.Random(7)
    steps = [(rnd.choice([1, 1, 2, 60]), rnd.choice("123"), None, rnd.randrange(4), rnd.choice([5, 10, 3000]),
              rnd.random() < 0.9, "n1", rnd.choice(["a", "b"]), rnd.random() < 0.3) for _ in range(1500)]
    findings = _findings(steps)
    one = Tally()
    for f in findings:
        one.add(f)
    for _ in range(12):
        cuts = rnd.sample(range(2, findings[-1].line), rnd.randrange(1, 6))
        merged = _ranges_tally(findings, cuts)
        assert merged is not None  # no line holds two threads' findings here
        assert merged.summary() == one.summary()


# --- a storm of distinct messages: rows kept for the smallest fingerprints only ----------------

def _distinct_storm(root, bundles: int = 2, messages: int = 90) -> None:
    """`messages` distinct messages per bundle (a word of letters no mask touches), message i
    logged i % 3 + 1 times, and one message repeated 40 times in every bundle."""
    import string

    def word(i: int) -> str:
        letters = string.ascii_lowercase
        return letters[i % 26] + letters[i // 26 % 26] + letters[i // 676 % 26] + "q"

    head = "[ERROR] GE(61,python3):2025-11-12-03:40:{s:02d}.{ms:03d}.000 [llm_datadist.cc:8]62 PullKvBlocks: "
    for b in range(bundles):
        lines = []
        for i in range(messages):
            for k in range(i % 3 + 1):
                lines.append(head.format(s=i % 60, ms=k) + f"pull blocks for session {word(b * 1000 + i)} failed, "
                             "ErrorNo: 1343270913(request wait to be processed timeout!)\n")
        lines += [head.format(s=59, ms=k) + "pull blocks failed, ErrorNo: 1343270913(timeout!)\n" for k in range(40)]
        (root / f"node-{b}").mkdir()
        (root / f"node-{b}" / "plog-61_20251112034000000.log").write_text("".join(lines))


def test_a_storm_of_distinct_messages_keeps_the_rows_of_the_smallest_fingerprints(tmp_path, monkeypatch):
    """With rows kept for 25 fingerprints: the folded rows and the failures across bundles are
    those of the 25 smallest fingerprints, each counted whole (counted here from the findings);
    every finding is still in the codes table; the same under either engine and at --jobs 1 or 2."""
    from collections import Counter as Counts

    from analyzer.diagnose import summary as summary_module
    from analyzer.run import api
    from analyzer.scan import blocks
    from analyzer.writers import render_report

    _distinct_storm(tmp_path)
    monkeypatch.setattr(summary_module, "FINGERPRINT_CAP", 25)
    reports = {}
    for engine in ("python", "rust") if blocks._core is not None else ("python",):
        monkeypatch.setattr(blocks, "ENGINE", engine)
        for jobs in (1, 2):
            result = api.analyze([str(tmp_path)], jobs=jobs)
            reports[engine, jobs] = (render_report("json", result), render_report("text", result))
    assert len(set(reports.values())) == 1, list(reports)

    findings = list(result.findings)
    s = result.summary
    assert s.findings == len(findings) == 2 * (30 * (1 + 2 + 3) + 40)
    assert sum(r.count for r in s.codes) == s.findings
    assert s.sampled_fingerprints == 25
    smallest = sorted({f.fingerprint for f in findings})[:25]
    per_row = Counts((f.fingerprint, f.node) for f in findings if f.fingerprint in smallest)
    assert {(r.fingerprint, r.node): r.count for r in s.folded} == per_row
    assert {r.fingerprint for r in s.fingerprints} == set(smallest)
    assert {r.fingerprint: r.findings for r in s.fingerprints} == Counts(
        f.fingerprint for f in findings if f.fingerprint in smallest)
    assert all(b.more_failures and b.failures == 2 for b in s.bundles)  # 91 distinct in each (cap 25 // 10)
    text = " ".join(reports["python", 1][1].split())  # unwrapped
    assert text.count("the rows are those of the 25 smallest fingerprints") == 2  # findings, failures across bundles
    assert "at least 2 failures" in text


def test_a_storm_under_the_cap_lists_every_fingerprint(tmp_path):
    from analyzer.run import api

    _distinct_storm(tmp_path, bundles=1, messages=30)
    s = api.analyze([str(tmp_path)], jobs=1).summary
    assert s.sampled_fingerprints == 0 and len(s.folded) == 31 and len(s.fingerprints) == 31
    assert "sampled_fingerprints" not in s.to_dict() and "more_failures" not in s.bundles[0].to_dict()


def test_a_storm_of_distinct_messages_is_bounded_in_memory(tmp_path):
    """60,000 findings, each its own fingerprint (a word no mask touches): every row and its
    example finding was kept, 235 MiB under the core (Python's: 190); now those of 10,000."""
    import random
    import string
    from pathlib import Path

    import pytest
    from analyzer.scan import blocks

    from hostile import FINDING, peak_mib

    if not Path("/proc/self/status").exists():
        pytest.skip("needs Linux /proc")
    rng = random.Random(7)
    storm = tmp_path / "storm.log"
    storm.write_text("".join(f"{FINDING} session {''.join(rng.choices(string.ascii_lowercase, k=10))}\n"
                             for _ in range(60_000)))
    env = {"DDTRIAGE_ENGINE": "rust" if blocks._core is not None else "python"}
    peak = peak_mib(tmp_path, "scan", str(storm), "-q", "-j1", "--fail-on", "never", "-o", str(tmp_path / "r.json"),
                    env=env)
    assert peak < 130, f"peak RSS {peak:.0f} MiB"


def test_the_same_distinct_messages_on_many_nodes_keep_at_most_twice_the_cap_in_rows(tmp_path, monkeypatch):
    """Folded rows are per fingerprint and node: 15 messages on each of 4 nodes are 60 rows. With
    a cap of 10 (20 rows), the rows are those of the 5 smallest fingerprints, 4 nodes each."""
    from collections import Counter as Counts

    from analyzer.diagnose import summary as summary_module
    from analyzer.run import api
    from analyzer.scan import blocks
    from analyzer.writers import render_report

    head = "[ERROR] GE(61,python3):2025-11-12-03:40:{s:02d}.000.000 [llm_datadist.cc:8]62 PullKvBlocks: "
    words = ["session" + "".join(chr(ord("g") + (i >> k) % 20) for k in (0, 2, 4)) for i in range(15)]
    for node in range(4):
        (tmp_path / f"node-{node}").mkdir()
        (tmp_path / f"node-{node}" / "plog-61_20251112034000000.log").write_text("".join(
            head.format(s=i) + f"pull {w} failed, ErrorNo: 1343270913(timeout!)\n" for i, w in enumerate(words)))
    monkeypatch.setattr(summary_module, "FINGERPRINT_CAP", 10)
    reports = set()
    for engine in ("python", "rust") if blocks._core is not None else ("python",):
        monkeypatch.setattr(blocks, "ENGINE", engine)
        for jobs in (1, 2):
            result = api.analyze([str(tmp_path)], jobs=jobs)
            reports.add((render_report("json", result), render_report("markdown", result)))
    assert len(reports) == 1
    findings, s = list(result.findings), result.summary
    smallest = sorted({f.fingerprint for f in findings})[:5]
    assert len({f.fingerprint for f in findings}) == 15 and s.sampled_fingerprints == 5
    assert Counts((r.fingerprint, r.node) for r in s.folded) == Counts(
        (f.fingerprint, f.node) for f in findings if f.fingerprint in smallest)
    assert {r.fingerprint: (r.bundles, r.findings) for r in s.fingerprints} == dict.fromkeys(smallest, (4, 4))
