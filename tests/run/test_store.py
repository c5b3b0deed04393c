"""Storms: findings spilled to disk and replayed in order, a summary from mergeable aggregates,
folded reports that stay short, JSON Lines, and small files batched into work units.

Spill folders a killed run left behind are removed by the next run; live ones are kept (folded from test_spill_sweep.py).
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import analyzer.run.parallel as parallel
import analyzer.run.store as store_mod
from analyzer import analyze, analyze_text, load_rules
from analyzer.cli import cli
from analyzer.core.records import Finding, shifted
from analyzer.core.records import report_key as sort_key
from analyzer.core.serial import finding_dict
from analyzer.core.times import parse_ts, year_refs
from analyzer.diagnose.tally import Tally, summarize
from analyzer.inputs import iter_sources
from analyzer.run.finish import with_remedies
from analyzer.run.store import SPILL_PREFIX, FindingStore, RunWriter, spill_dir, sweep_spills
from click.testing import CliRunner

from reports import rows

ROOT = Path(__file__).resolve().parents[2]

# One failure logged again and again: numbers, times, request ids and addresses change; the
# message shape does not. Every 7th request also gets a generic LLM_FAILED echo.
STORM_LINE = ("[ERROR] GE(4811,python3):2025-11-12-03:{m:02d}:{s:02d}.{us:06d} [llm_datadist_v2.cc:174]48{t} "
              "PullKvBlocks: call PullKvBlocks failed, ret = 0x5010B001, req_id = {r}, remote 10.0.{a}.{b}:26000")
ECHO_LINE = ("[ERROR] GE(4811,python3):2025-11-12-03:{m:02d}:{s:02d}.{us:06d} [llm_datadist_v2.cc:180]48{t} "
             "PullKvBlocks: ErrorNo: 4294967295(failed) req_id = {r}")
NOISE = "[INFO] RUNTIME(4811,python3):2025-11-12-03:{m:02d}:{s:02d}.{us:06d} [runtime.cc:1]4830 rtMalloc: ok {r}"


def storm_text(n: int, noise: int = 3) -> str:
    rnd = random.Random(7)
    out = []
    for i in range(n):
        when = {"m": 40 + i // 6000, "s": (i // 100) % 60, "us": (i * 37) % 1000000, "t": 12 + i % 4}
        out.append(STORM_LINE.format(r=1000 + i, a=rnd.randrange(256), b=rnd.randrange(256), **when))
        if i % 7 == 0:
            out.append(ECHO_LINE.format(r=1000 + i, **when))
        out += [NOISE.format(r=rnd.randrange(10**6), **when)] * noise
    return "\n".join(out) + "\n"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["scan", *args, "--fail-on", "never"])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result.exit_code, result.stdout


# -- the store ------------------------------------------------------------------------------------

def test_store_spills_and_replays_in_report_order(tmp_path, rules):
    found = analyze_text("\n".join(storm_text(40, noise=0).splitlines()), rules, name="b.log")
    found += analyze_text(storm_text(25, noise=1), rules, name="a.log")
    assert len(found) > 60
    spill = tmp_path / "spill"
    spill.mkdir()
    store = FindingStore(str(spill), budget=10)
    writer = RunWriter(str(spill), chunk=7)
    for f in found:  # b.log before a.log: two runs, out of order, both spilled in chunks
        writer.add(f)
    store.add(writer.finish())
    small = RunWriter()  # a run kept in memory, then spilled by the store past its budget
    small.extend(sorted(analyze_text(storm_text(12, noise=0), rules, name="a.log"), key=sort_key)[:12])
    store.add(small.finish())
    expected = sorted(found + sorted(analyze_text(storm_text(12, noise=0), rules, name="a.log"),
                                     key=sort_key)[:12], key=sort_key)
    assert list(store) == expected
    assert list(store) == expected  # re-iterable
    assert len(store) == len(expected)
    assert any(r.path for r in store.runs) and all(r.items is None for r in store.runs)
    assert os.listdir(spill)
    store.close()
    assert not spill.exists()


def _runs(writer: RunWriter) -> list[tuple]:
    """What a writer's runs hold, their files read back."""
    return [(r.first, r.count, r.guessed, r.chunks, list(r)) for r in writer.finish()]


def test_add_all_writes_the_runs_add_writes(tmp_path, rules):
    found = analyze_text(storm_text(60, noise=0), rules, name="b.log")
    found = [f._replace(year_guessed=i % 5 == 0) for i, f in enumerate(found)]
    found += analyze_text(storm_text(20, noise=0), rules, name="a.log")  # out of order: a new run
    found.insert(10, found[30])  # out of order within a list
    for spill in (None, tmp_path):
        one = RunWriter(spill and str(spill / "one"), chunk=7)
        lists = RunWriter(spill and str(spill / "lists"), chunk=7)
        for d in (spill / "one", spill / "lists") if spill else ():
            d.mkdir()
        rnd = random.Random(3)
        at = 0
        while at < len(found):  # lists of 0 to 12, across chunk ends
            size = rnd.randrange(13)
            for f in found[at:at + size]:
                one.add(f)
            lists.add_all(found[at:at + size])
            at += size
        expected, got = _runs(one), _runs(lists)
        assert got == expected
        assert len(expected) >= 3 and sum(r[2] for r in expected) > 0
        assert (spill is None) == all(not r[3] for r in expected)


def _stored_findings(store: FindingStore) -> list | None:
    """What `FindingStore.stored` gives, shifted as a writer reads it; None where it declines."""
    stored = store.stored(5)
    if stored is None:
        return None
    out = []
    for found, shift in stored:
        assert 0 < len(found) <= 5
        out += [shifted(Finding._make(f), shift) for f in found]
    return out


def test_stored_lists_are_the_findings_raw_gives(tmp_path, rules):
    """Runs that follow one another (byte ranges of a file, shifted; in memory and spilled, given to
    the store in any order) come back as the lists they are stored in, in report order; runs that
    overlap or touch are refused (a writer then reads `raw()`)."""
    found = sorted(analyze_text(storm_text(40, noise=1), rules, name="a.log"), key=sort_key)
    other = sorted(analyze_text(storm_text(9, noise=0), rules, name="b.log"), key=sort_key)
    rnd = random.Random(5)
    for trial in range(40):
        spill = tmp_path / str(trial)
        spill.mkdir()
        cuts = sorted(rnd.sample(range(1, len(found)), rnd.randrange(4)))
        parts, shift = [], 0
        for a, b in zip([0, *cuts], [*cuts, len(found)], strict=True):
            # a byte range's findings, numbered from its own first line, as a worker writes them
            base = found[a - 1].line if a else 0
            shift = base
            writer = RunWriter(str(spill) if rnd.random() < 0.5 else None, chunk=rnd.choice([3, 7, 4096]))
            writer.add_all([shifted(f, -base) for f in found[a:b]])
            runs = writer.finish()
            for run in runs:
                run.shift = shift
            parts += runs
        writer = RunWriter()
        writer.add_all(other)
        parts += writer.finish()
        rnd.shuffle(parts)
        store = FindingStore(str(spill), budget=rnd.choice([0, 10_000]))
        store.add(parts)
        expected = list(store.raw())
        assert expected == sorted(found + other, key=sort_key)
        assert _stored_findings(store) == expected
        store.close()
    # a run that starts where another ends (the same line and code), or inside it: refused
    for overlap in (found[len(found) // 2:], found[-1:]):
        store = FindingStore()
        for part in (found, overlap):
            writer = RunWriter()
            writer.add_all(part)
            store.add(writer.finish())
        assert _stored_findings(store) is None
        assert list(store.raw()) == sorted(found + overlap, key=sort_key)


def test_store_of_a_list_is_sorted_like_the_straightforward_sort(rules):
    found = analyze_text(storm_text(30), rules, name="x.log")
    shuffled = found[:]
    random.Random(1).shuffle(shuffled)
    assert list(FindingStore.of(shuffled)) == sorted(found, key=sort_key)


# -- aggregates -----------------------------------------------------------------------------------

def test_summary_of_two_partial_tallies_equals_the_whole(in_root):
    result = analyze(["sample_logs", "tests/data/fleets"])
    findings = list(result.findings)
    sources = sorted({f.source for f in findings})
    half = set(sources[: len(sources) // 2])
    first, second = Tally(), Tally()
    for f in findings:
        (first if f.source in half else second).add(f)
    first.merge(second)
    texts = result.rule_texts  # a tally counts; the run fills in its bursts' remedies
    assert with_remedies(first.summary(), texts) == result.summary == with_remedies(summarize(findings), texts)


def test_year_refs_two_pass_median_is_the_exact_median():
    rnd = random.Random(3)
    stamps = [datetime(2025, 11, 12, 3, rnd.randrange(60), rnd.randrange(60), rnd.randrange(10**6)).isoformat()
              for _ in range(501)]
    found = analyze_text("[ERROR] x: ErrorNo: 1343270913(request wait to be processed timeout!)")
    findings = [found[0]._replace(timestamp=t, node=("n1" if i % 3 else "n2")) for i, t in enumerate(stamps)]
    refs = year_refs(lambda: findings)
    for node in ("n1", "n2"):
        mine = sorted(f.timestamp for f in findings if f.node == node)
        assert refs.nodes[node] == parse_ts(mine[len(mine) // 2])
    assert refs.overall == parse_ts(sorted(stamps)[len(stamps) // 2])


# -- reports through the CLI ----------------------------------------------------------------------

def test_storm_text_report_is_short_and_leads_with_the_diagnosis(tmp_path):
    path = tmp_path / "plog-4811_20251112034000000.log"
    path.write_text(storm_text(3000))
    _, text = run(str(path))
    lines = text.splitlines()
    assert len(lines) <= 60
    assert lines[0].startswith("ddtriage: 3,429 findings")
    assert lines[3] == "Incidents: 1, all ongoing, most severe first" and "->    relink:" in "\n".join(lines[:24])
    diagnosis = lines.index(next(line for line in lines if line.startswith("Diagnosis:")))
    assert lines[diagnosis + 1].startswith("Storm: 3,429 findings fold into 2 rows")
    assert "LLM_WAIT_PROC_TIMEOUT (0x5010B001) from PullKvBlocks" in lines[diagnosis + 3]
    assert "-> relink [wait-timeout-transfer]" in text.split("By node")[0]
    rows = text.split("Findings by fingerprint and node")[1].splitlines()
    assert [r.split()[:2] for r in rows if r.lstrip().startswith("x")] == [["x3,000", "LLM_WAIT_PROC_TIMEOUT"],
                                                                           ["x429", "LLM_FAILED"]]
    _, md = run(str(path), "--format", "markdown")
    assert "Storm: 3,429 findings fold into 2 rows" in md and md.count("\n| `") == 2


def test_jsonl_is_the_json_findings_one_per_line(tmp_path):
    path = tmp_path / "storm.log"
    path.write_text(storm_text(200))
    _, full = run(str(path), "--format", "json")
    _, lines = run(str(path), "--format", "jsonl")
    findings = json.loads(full)["findings"]
    assert [json.loads(line) for line in lines.splitlines()] == findings
    assert len(findings) == 229 and all(f["fingerprint"] for f in findings)
    assert full.split('"findings": [')[1].count("\n    {") == 229  # still one finding per line in the JSON report


def test_spilled_scan_gives_the_same_reports(tmp_path, monkeypatch):
    path = tmp_path / "storm.log"
    path.write_text(storm_text(500))
    before = {fmt: run(str(path), "--format", fmt, "-j", "1")[1] for fmt in ("json", "text")}
    monkeypatch.setattr(store_mod, "CHUNK", 16)
    monkeypatch.setattr(store_mod, "MEMORY_BUDGET", 20)
    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    for jobs in ("1", "3"):
        assert {fmt: run(str(path), "--format", fmt, "-j", jobs)[1] for fmt in ("json", "text")} == before


def test_small_files_are_batched_and_any_jobs_gives_the_same_report(tmp_path):
    for i in range(60):
        folder = tmp_path / f"node-{i % 3}"
        folder.mkdir(exist_ok=True)
        (folder / f"w{i:02d}.log").write_text(storm_text(3 + i % 5, noise=2))
    sources = list(iter_sources([str(tmp_path)], []))
    units = parallel.plan_units(sources, 2)
    assert 2 <= len(units) < len(sources)
    assert [s for u in units for s in u.sources] == sources  # plan order is input order
    reports = [run(str(tmp_path), "--format", "json", "-j", j)[1] for j in ("1", "2", "4")]
    assert reports[0] == reports[1] == reports[2]
    assert json.loads(reports[0])["inputs"]["files"] == 60


def test_window_replays_the_store(tmp_path):
    path = tmp_path / "storm.log"
    path.write_text(storm_text(700))
    _, everything = run(str(path), "--format", "json")
    _, windowed = run(str(path), "--format", "json", "--since", "2025-11-12 03:40:03", "--until",
                      "2025-11-12 03:40:05")
    kept = [f for f in json.loads(everything)["findings"] if "03:40:03" <= f["timestamp"][11:19] <= "03:40:05"]
    data = json.loads(windowed)
    assert data["findings"] == kept and data["summary"]["findings"] == len(kept)
    assert data["inputs"]["outside_window"] == len(json.loads(everything)["findings"]) - len(kept)


# -- the optimised per-finding path against the straightforward one ------------------------------

ANSWER_KEYS = ["sample_logs", "tests/data/unseen", "tests/data/fleets", "tests/data/envelopes",
               "tests/data/baseline"]


def test_memoised_templates_give_the_findings_of_the_straightforward_path(in_root, monkeypatch):
    """The engine's optimisations (memoised message templates) change nothing: every finding of
    the answer-key corpora is the same as with each template computed from scratch."""
    import analyzer.detect.fingerprint as fp

    fast = rows(analyze(ANSWER_KEYS))
    memo = dict(fp._MEMO)
    assert memo, "the memo was used"
    monkeypatch.setattr(fp, "message_template", fp.mask)
    plain = rows(analyze(ANSWER_KEYS))
    assert fast == plain and len(fast) > 150


def test_template_depends_only_on_which_digits_are_zero():
    """Why the memo is sound: lines with the same memo key (digits as 1, the 0 of `0x` kept apart:
    `0x` starts a hex number, `4x` does not) have one template."""
    from analyzer.detect.fingerprint import _memo_key, mask

    rnd = random.Random(5)
    shapes = ["[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 req_id=cmpl-7f3a9 10.1.0.1:26000 ret = 0x5010B001",
              "(W pid=9) ERROR 11-12 03:50:00 [c.py:1] seq_id: 42 addr 0x7ffd12ab00 code 1343270913",
              "E20251110 15:36:33.3 deadbeef00112233 ids 123e4567-e89b-12d3-a456-426614174000 [::1]:80 a1b2c3d4e5f6",
              "٣٤ Unicode digits 12 stay; 9999999999999 999.999.999.999 task-id=a9:b8"]
    for shape in shapes:
        for _ in range(200):
            other = "".join(rnd.choice("0123456789") if c in "0123456789" else c for c in shape)
            if _memo_key(other) == _memo_key(shape):
                assert mask(other) == mask(shape), (shape, other)
            timestamps_only = shape.replace("03:40:05.101", f"0{rnd.randrange(10)}:{rnd.randrange(10, 60)}:05.0{rnd.randrange(10)}1")
            assert _memo_key(timestamps_only) == _memo_key(shape)  # a storm's changing times share a key
    assert mask("ret = 0x5010B001") != mask("ret = 4x5010B001")
    assert _memo_key("ret = 0x5010B001") != _memo_key("ret = 4x5010B001")


# -- start-up -------------------------------------------------------------------------------------

def test_help_and_explain_do_not_import_the_engine():
    """`ddtriage --help` and `explain` stay fast: no numpy, pandas or scanning engine imported."""
    import subprocess
    import sys

    probe = ("import sys; from analyzer.cli import main; sys.argv = ['ddtriage'] + sys.argv[1:]\n"
             "try:\n    main()\nexcept SystemExit:\n    pass\n"
             "print(sorted(m for m in ('numpy', 'pandas', 'analyzer.detect.engine', 'analyzer.run.api') if m in sys.modules))")
    for args in (["--help"], ["explain", "0x5010B001"]):
        out = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True)
        assert out.stdout.strip().splitlines()[-1] == "[]", (args, out.stdout[-300:])


def test_rules_load_the_same_with_libyaml_and_pure_python(monkeypatch):
    import analyzer.knowledge.catalog as catalog
    import yaml
    from analyzer.knowledge.rules import RuleSet

    for path in sorted(Path(str(catalog.BUILTIN_RULES_DIR)).glob("*.yaml")):
        with open(path, encoding="utf-8") as handle:
            pure = yaml.load(handle, Loader=yaml.SafeLoader)
        assert catalog.read_yaml(path) == pure, path.name
    fast = RuleSet.load()
    monkeypatch.setattr(catalog, "_LOADER", yaml.SafeLoader)
    slow = RuleSet.load()
    assert [r.id for r in fast.rules] == [r.id for r in slow.rules]


def test_fast_json_lines_are_the_bytes_of_json_dumps(in_root):
    from analyzer.core import serial as encode
    from analyzer.core.records import Finding, RuleText

    assert encode.finding_line is encode._fast  # the fast path is in use: it knows every field
    result = analyze(ANSWER_KEYS)
    findings, texts = list(result.findings), result.rule_texts.copy()
    odd = findings[0]._replace(text='quote " back\\slash \t\x01 ünï 中文 \u2028 \ud800', pid=None, node="n\"1",
                               causes=((3, "hccl", "9", "timeout \"x\""),), api_line=0, rule="odd",
                               recoverable=False, known=False, bundle="b!c")
    texts.learn("odd", RuleText('a "quoted" remedy \u2028', ("ref \\ 1", "中文")))
    for f in [*findings, odd, Finding("s", 1, None, "c", None, None, None, None, None, "r", "a", "t", "hex")]:
        assert encode.finding_line(f, texts) == json.dumps(finding_dict(f, texts), ensure_ascii=False)


def test_archive_members_out_of_order_come_back_in_report_order(tmp_path, monkeypatch):
    """A tar lists its members in any order: each becomes a run of its own, spilled, and the store
    merges them back by source, as a sorted list would be."""
    from bundles import tar_bytes

    members = {f"node-1/w{i}.log": storm_text(40 + i, noise=1).encode() for i in (3, 1, 2, 0)}
    (tmp_path / "bundle.tar").write_bytes(tar_bytes(members))
    monkeypatch.setattr(store_mod, "CHUNK", 8)
    monkeypatch.setattr(store_mod, "MEMORY_BUDGET", 0)
    with analyze([str(tmp_path)], jobs=1) as result:
        found = list(result.findings)
        spill = result.findings.spill_dir
        assert len(result.findings.runs) == 3 and os.listdir(spill)  # w3 | w1 w2 | w0
    assert not os.path.exists(spill)  # closed: its temporary files are gone
    assert found == sorted(found, key=sort_key) and len(found) == sum(n + (n + 6) // 7 for n in (40, 41, 42, 43))
    assert [f.source.rsplit("!", 1)[1] for f in found[:1]] == ["node-1/w0.log"]


def test_units_own_tallies_give_the_summary_of_the_findings_read_again(in_root, tmp_path, monkeypatch):
    """Each unit tallies its findings where it finds them; merged, they are the summary of all the
    findings counted in report order (which the store's replay gives), for any batching."""
    from bundles import tar_bytes

    members = {f"node-{i % 2}/w{i}.log": storm_text(30 + i, noise=1).encode() for i in (3, 1, 2, 0)}
    (tmp_path / "bundle.tar").write_bytes(tar_bytes(members))
    for i in range(12):
        (tmp_path / f"node-{i % 3}").mkdir(exist_ok=True)
        (tmp_path / f"node-{i % 3}" / f"app{i}.log").write_text(storm_text(5 + i))
    corpora = [*ANSWER_KEYS, str(tmp_path)]
    replays = []
    real_iter = FindingStore.__iter__

    def counting_iter(self):
        replays.append(1)
        return real_iter(self)
    monkeypatch.setattr(FindingStore, "__iter__", counting_iter)
    real_merge = parallel.merge_results

    def without_tallies(units, results, store=None):
        store, stats, _ = real_merge(units, results, store)
        return store, stats, None
    fast_path = []
    for corpus in corpora:
        replays.clear()
        fast = {jobs: analyze([corpus], jobs=jobs).summary for jobs in (1, 2)}
        fast_path.append(not replays)  # no window, no guessed year: the findings were not read again
        with monkeypatch.context() as patch:
            patch.setattr("analyzer.run.api.merge_results", without_tallies)
            replayed = analyze([corpus], jobs=2).summary
        assert fast[1] == fast[2] == replayed, corpus
        assert replayed.findings and replayed.bursts and replayed.folded
    assert fast_path[-1], fast_path
    # The units' tallies leave out the sources with guessed years (the parent counts those once
    # they are settled): with those sources' stored findings counted, they are the tally of
    # every finding as stored.
    from analyzer.run.api import Options

    left_out = []
    for corpus in corpora:
        sources = list(iter_sources([corpus], []))
        for jobs in (1, 2):
            units = parallel.plan_units(sources, jobs)
            engine = Options().engine_factory(load_rules())()
            store, _, tally = parallel.merge_results(units, (parallel.run_unit(engine, u) for u in units))
            assert tally is not None and not tally.guessed, (corpus, jobs)
            left_out.append(len(tally.untallied))
            skipped, tally.untallied = tally.untallied, set()
            tally.merge(_tally_of(f for f in store.raw() if f.source in skipped))
            assert tally.whole and tally.summary() == summarize(store.raw()), (corpus, jobs)
    assert any(left_out), left_out  # some corpus has year-less stamps whose year was guessed


def _tally_of(findings):
    tally = parallel.Tally()
    for f in findings:
        tally.add(f)
    return tally


def test_a_name_met_twice_falls_back_to_reading_the_findings_again(tmp_path):
    import io
    import tarfile

    one = storm_text(20).encode()

    with tarfile.open(tmp_path / "dup.tar", "w") as tar:  # two members with one name
        for body in (one, storm_text(9).encode()):
            info = tarfile.TarInfo("same.log")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    result = analyze([str(tmp_path / "dup.tar")])
    assert result.summary == with_remedies(summarize(list(result.findings)), result.rule_texts)
    assert result.summary.findings == 23 + 11


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_dead_runs_spill_goes_a_live_ones_stays(tmp_path: Path) -> None:
    dead = tmp_path / f"{SPILL_PREFIX}{_dead_pid()}-abc"
    dead.mkdir()
    (dead / "run-0").write_bytes(b"x" * 1000)
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        live = tmp_path / f"{SPILL_PREFIX}{sleeper.pid}-def"
        live.mkdir()
        other = tmp_path / "ddtriage-something-else"
        other.mkdir()
        assert sweep_spills(str(tmp_path)) == [str(dead)]
        assert not dead.exists() and live.exists() and other.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_new_spill_folder_names_its_process(tmp_path: Path) -> None:
    leftover = tmp_path / f"{SPILL_PREFIX}{_dead_pid()}-zz"
    leftover.mkdir()
    made = spill_dir(str(tmp_path))
    assert Path(made).name.startswith(f"{SPILL_PREFIX}{os.getpid()}-")
    assert not leftover.exists()


def test_a_scan_killed_with_sigkill_leaves_nothing_after_the_next_scan(tmp_path: Path) -> None:
    """A storm scan SIGKILLed mid-way keeps its spill; the next scan (any) removes it."""
    log = tmp_path / "storm.log"
    line = ("[ERROR] GE(4811,python3):2025-11-10-15:36:33.000.283 [llm_datadist.cc:812]4830 PullKvBlocks: "
            "ErrorNo: 1343270913(request wait to be processed timeout!) req_id = {}\n")
    log.write_text("".join(line.format(i) for i in range(60000)))
    spills = tmp_path / "tmp"
    spills.mkdir()
    env = dict(os.environ, TMPDIR=str(spills))
    scan = subprocess.Popen([sys.executable, "-m", "analyzer", "scan", str(log), "-q", "-j1", "--format", "jsonl",
                             "-o", str(tmp_path / "out.jsonl")], env=env)
    spilled = False
    try:
        for _ in range(600):  # wait until it spills
            spilled = any(p.name.startswith(SPILL_PREFIX) and any(p.iterdir()) for p in spills.iterdir())
            if spilled or scan.poll() is not None:
                break
            subprocess.run(["sleep", "0.05"], check=True)
    finally:
        scan.kill()
        scan.wait()
    assert spilled and [p for p in spills.iterdir() if p.name.startswith(SPILL_PREFIX)]  # SIGKILL left it
    subprocess.run([sys.executable, "-m", "analyzer", "explain", "0x5010B001"], env=env, check=True,
                   capture_output=True)  # not a scan: nothing swept yet
    one = tmp_path / "one.log"
    one.write_text(line.format(1))
    subprocess.run([sys.executable, "-m", "analyzer", "scan", str(one), "-q"], env=env, capture_output=True)
    assert not [p for p in spills.iterdir() if p.name.startswith(SPILL_PREFIX)]
