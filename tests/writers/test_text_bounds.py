"""Issue 22: a storm's report fits a screen and reads like a diagnosis.

The inputs here are not the project's own storm generator: a storm of many code x API x node
combinations drawn at random (fixed seed) from the catalog and the API table, a file whose path
names no node, the sample logs and a slice of the dense bench plog. For each, the text report:

- is at most 200 lines by default, and `--full` shows every finding group;
- breaks no identifier (rule id, code name, API name, fingerprint) across lines at 60, 80, 120 and
  200 columns, and no line is wider than the report's width;
- shows every identifier of the groups it lists whole; the groups it leaves out are counted in
  one `… N more (see --format json, or --full)` line;
- says in its first 24 lines how many incidents there are, the most severe one's lead (where) and
  its action;
- never says "(no node)" in a sentence.

The corpus is built and scanned once per session (a few seconds)."""

from __future__ import annotations

import contextlib
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from analyzer import analyze
from analyzer.cli import cli
from analyzer.writers import markdown, render_report, text
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "analyzer" / "data"
WIDTHS = (60, 80, 120, 200)
MAX_LINES = 200
MORE = re.compile(r"… ([\d,]+) more .*\(see --format json, or --full\)")


# -- the storm: codes and APIs from the project's own tables, combined at random -------------------

def _catalog() -> list[tuple[str, int, str | None]]:
    codes = yaml.safe_load((DATA / "catalog.yaml").read_text())["codes"]
    return [(c["name"], int(c["value"]), c.get("plog_text")) for c in codes
            if 0x5010B000 <= int(c["value"]) <= 0x5010B0FF]


def _apis() -> list[str]:
    table = yaml.safe_load((DATA / "apis.yaml").read_text())["apis"]
    return [spelling for entry in table.values() for spelling in entry.get("spellings", [])[:2]]


WORDS = ("phase", "stage", "slot", "step", "ring", "lane", "queue", "pool", "batch", "shard", "tier", "bank")
FILES = ("llm_datadist.cc", "llm_link_manager.cc", "data_transfer_job.cc", "kv_cache_manager.cc", "cache_engine.cc")
NEIGHBOURS = (
    "[ERROR] HCCL({pid},python3):{ts} [hccl_comm.cc:655] [{tid}][HcclCommPrepare] call trace: hcclRet -> 9",
    "[ERROR] RUNTIME({pid},python3):{ts} [stream.cc:1143]{tid} Synchronize: runtime result = 507046",
    "[ERROR] HCCP({pid},python3):{ts} tid:{tid},ra_socket_connect(512) : connect failed, errno:111",
)


def _stamp(t: float) -> str:
    whole = int(t)
    us = int((t - whole) * 1_000_000)
    return f"2025-11-12-{3 + whole // 3600:02d}:{whole // 60 % 60:02d}:{whole % 60:02d}.{us // 1000:03d}.{us % 1000:03d}"


def storm_lines(rnd: random.Random, pid: int, findings: int, combos: list[tuple], start: float) -> Iterator[str]:
    """A plog of `findings` code lines drawn from `combos` (code, API, message word), with lower-level
    errors and noise in between; every 9th code line is followed by its generic echo."""
    t = start
    for i in range(findings):
        t += rnd.random() * 0.01
        ts, tid = _stamp(t), 4000 + rnd.randrange(6)
        (name, value, plog_text), api, word = rnd.choice(combos)
        src = f"{rnd.choice(FILES)}:{rnd.randrange(100, 900)}"
        form = rnd.randrange(3)
        if form == 0 and plog_text:
            msg = f"ErrorNo: {value}({plog_text}) [GE][MODULE]{api} {word} {rnd.randrange(64)} failed"
        elif form == 1:
            msg = f"call {api} failed in {word} {rnd.randrange(64)}, ret = 0x{value:08X}, req_id = {rnd.randrange(10**6)}"
        else:
            msg = f"{word} {rnd.randrange(64)} failed: ret = {value}, remote 10.{rnd.randrange(256)}.0.{rnd.randrange(256)}:26000"
        yield f"[ERROR] GE({pid},python3):{ts} [{src}]{tid} {api}: {msg}"
        if i % 9 == 0:
            yield f"[ERROR] GE({pid},python3):{ts} [llm_datadist.cc:180]{tid} {api}: ErrorNo: 4294967295(failed)"
        if i % 97 == 0:
            yield rnd.choice(NEIGHBOURS).format(pid=pid, ts=ts, tid=tid)
        yield f"[INFO] GE({pid},python3):{ts} [llm_datadist.cc:90]{tid} Heartbeat: ok {rnd.randrange(10**6)}"


def write_storm(root: Path, seed: int = 2222) -> tuple[list[Path], Path]:
    """Twelve nodes in four bundles, each node drawing from its own random set of 40 combinations
    (~21,000 findings), and one log whose path names no node."""
    rnd = random.Random(seed)
    catalog, apis = _catalog(), _apis()
    bundles = []
    for b in range(4):
        bundle = root / "fleet" / f"rack-{b}"
        for n in range(3):
            combos = [(rnd.choice(catalog), rnd.choice(apis), rnd.choice(WORDS)) for _ in range(40)]
            pid = 3000 + 100 * b + n
            folder = bundle / f"worker-{b}{n}" / "ascend" / "log" / "debug" / "plog"
            folder.mkdir(parents=True)
            lines = storm_lines(rnd, pid, 1600, combos, start=rnd.random() * 5)
            (folder / f"plog-{pid}_20251112034000000.log").write_text("\n".join(lines) + "\n")
        bundles.append(bundle)
    lonely = root / "logs" / "plog-777_20251112034000000.log"
    lonely.parent.mkdir(parents=True)
    combos = [(rnd.choice(catalog), rnd.choice(apis), rnd.choice(WORDS)) for _ in range(25)]
    lonely.write_text("\n".join(storm_lines(rnd, 777, 1500, combos, start=1.0)) + "\n")
    return bundles, lonely


def dense_slice(root: Path) -> Path:
    """A slice of the dense bench plog (bench/gen_plog.py, 4 MiB: ~1,000 findings)."""
    out = root / "bench" / "dense-4m.log"
    out.parent.mkdir(parents=True)
    subprocess.run([sys.executable, str(ROOT / "bench" / "gen_plog.py"), "--size", "4M", "--density", "dense",
                    str(out)], check=True, capture_output=True)
    return out


@pytest.fixture(scope="session")
def corpora(tmp_path_factory) -> Iterator[dict]:
    root = tmp_path_factory.mktemp("storm22")
    bundles, lonely = write_storm(root)
    dense = dense_slice(root)
    runs = {}
    # One job each: built on every test worker, and a report does not depend on the jobs (tests/run).
    with contextlib.chdir(root):  # relative names: the lonely log's path names no node at all
        runs["storm"] = analyze([str(b.relative_to(root)) for b in bundles], jobs=1)
        runs["lonely"] = analyze([str(lonely.relative_to(root))], jobs=1)
    with contextlib.chdir(dense.parent):  # a log named alone, as the slice was: no node
        runs["dense"] = analyze([dense.name], jobs=1)
    with contextlib.chdir(ROOT):
        runs["sample_logs"] = analyze(["sample_logs"], jobs=1)
    out = {}
    for name, analysis in runs.items():
        data = json.loads(render_report("json", analysis))
        out[name] = (analysis, data)
    yield out
    for analysis, _ in out.values():
        analysis.close()


CORPORA = ("storm", "lonely", "dense", "sample_logs")


_RENDERED: dict[tuple[int, int, bool], str] = {}


def _render(analysis, width: int = 80, full: bool = False) -> str:
    key = (id(analysis), width, full)
    if key not in _RENDERED:
        analysis.full = full
        try:
            _RENDERED[key] = text.render(analysis, width)
        finally:
            analysis.full = False
    return _RENDERED[key]


def _groups(data: dict) -> set[tuple[str, str | None]]:
    """The finding groups of a JSON report: one per fingerprint and node (the folded rows)."""
    return {(f["fingerprint"], f["node"]) for f in data["findings"]}


def _identifiers(data: dict) -> set[str]:
    ids = set()
    for f in data["findings"]:
        ids |= {f["rule"], f["fingerprint"], f["name"] or f["code"]} | ({f["api"]} if f["api"] else set())
    return ids


def _words(report: str) -> set[str]:
    """The words of a report: an identifier is whole on a line when it is one of them."""
    return set(re.findall(r"[\w-]+", report))


_TAIL = re.compile(r"[\w-]+$")
_HEAD = re.compile(r"^\s*([\w-]+)")


def _broken(report: str, idents: set[str]) -> list[str]:
    """Identifiers cut across two lines: the word that ends one line and the word that starts the
    next join into an identifier that neither holds whole (`[wait-timeout-transfe` / `r]`)."""
    lines = report.splitlines()
    out = []
    for a, b in zip(lines, lines[1:], strict=False):
        tail, head = _TAIL.search(a), _HEAD.match(b)
        if not tail or not head:
            continue
        joined, cut = tail.group() + head.group(1), len(tail.group())
        for end in range(cut + 1, len(joined) + 1):
            if joined[:end] in idents:
                out.append(f"{joined[:end]}: {a!r} / {b!r}")
    return out


def _sections(report: str) -> dict[str, list[str]]:
    """The report's sections by title (a line that starts in column 0 after a blank line)."""
    out: dict[str, list[str]] = {}
    title = "head"
    lines = report.splitlines()
    for i, line in enumerate(lines):
        if line and not line[0].isspace() and (i == 0 or not lines[i - 1]) and i:
            words = line.split()
            title = " ".join(words[:2]).rstrip(",:") if words[0] == "By" else words[0].rstrip(",:")
        out.setdefault(title, []).append(line)
    return out


# -- the tests ------------------------------------------------------------------------------------

def test_the_storm_is_varied(corpora):
    """Not tuned to: dozens of codes and APIs, hundreds of finding groups, a dozen nodes."""
    _, data = corpora["storm"]
    assert len(data["findings"]) > 20_000  # 12 nodes x 1,600 code lines, and their echoes
    assert len({f["code"] for f in data["findings"]}) >= 20
    assert len({f["api"] for f in data["findings"]}) >= 15
    assert len(_groups(data)) >= 400
    assert len({f["node"] for f in data["findings"]}) == 12
    assert {f["node"] for f in corpora["lonely"][1]["findings"]} == {None}
    assert {f["node"] for f in corpora["dense"][1]["findings"]} == {None}


@pytest.mark.parametrize("name", CORPORA)
def test_default_report_fits_in_200_lines(corpora, name):
    analysis, _ = corpora[name]
    for width in WIDTHS:
        lines = _render(analysis, width).splitlines()
        assert len(lines) <= MAX_LINES, f"{name} at {width} columns: {len(lines)} lines"


@pytest.mark.parametrize("name", CORPORA)
@pytest.mark.parametrize("width", WIDTHS)
def test_no_identifier_is_broken_and_no_line_is_too_wide(corpora, name, width):
    analysis, data = corpora[name]
    idents = _identifiers(data)
    for full in (False, True):
        report = _render(analysis, width, full)
        wide = [line for line in report.splitlines() if len(line) > width]
        assert not wide, f"{name} at {width}{' --full' if full else ''}: {len(wide)} lines too wide: {wide[:3]}"
        assert not _broken(report, idents), _broken(report, idents)[:5]


@pytest.mark.parametrize("name", CORPORA)
@pytest.mark.parametrize("width", (60, 80))
def test_the_groups_listed_show_their_identifiers_whole_and_the_rest_are_counted(corpora, name, width):
    analysis, data = corpora[name]
    report = _render(analysis, width)
    findings = _sections(report)["Findings"]
    body, words = _words("\n".join(findings)), _words(report)
    groups = _groups(data)
    shown = {g for g in groups if g[0] in body}
    assert shown, "the findings section lists no fingerprint"
    for f in data["findings"]:
        if (f["fingerprint"], f["node"]) in shown:
            for ident in (f["rule"], f["name"] or f["code"], f["api"]):
                assert ident is None or ident in words, f"{ident} of a listed group is not whole"
    more = [MORE.search(line) for line in findings]
    hidden = sum(int(m.group(1).replace(",", "")) for m in more if m)
    listed = sum(1 for line in findings if re.search(r"(?<![\w-])[0-9a-f]{16}(?![\w-])", line))
    assert listed + hidden == len(groups), (listed, hidden, len(groups))


@pytest.mark.parametrize("name", CORPORA)
def test_full_shows_every_group_and_every_identifier(corpora, name):
    analysis, data = corpora[name]
    report = _render(analysis, 80, full=True)
    assert not MORE.search(report)
    words = _words(report)
    missing = sorted(i for i in _identifiers(data) if i not in words)
    assert not missing, missing[:10]
    findings = "\n".join(_sections(report)["Findings"])
    listed = sum(1 for line in findings.splitlines() if re.search(r"(?<![\w-])[0-9a-f]{16}(?![\w-])", line))
    assert listed == len(_groups(data))


@pytest.mark.parametrize("name", CORPORA)
def test_every_section_is_bounded(corpora, name):
    """A section never runs on: each is a few dozen lines at most, with its `… N more` line."""
    analysis, _ = corpora[name]
    for title, lines in _sections(_render(analysis, 80)).items():
        assert len(lines) <= 66, f"{title}: {len(lines)} lines"


@pytest.mark.parametrize("name", CORPORA)
@pytest.mark.parametrize("width", (60, 80, 120))
def test_first_screen_is_the_diagnosis(corpora, name, width):
    analysis, data = corpora[name]
    incidents = data["summary"]["incidents"]
    assert incidents
    first = incidents[0]
    screen = _render(analysis, width).splitlines()[:24]
    joined = "\n".join(screen)
    assert re.search(rf"Incidents: {len(incidents)}\b|\b{len(incidents)} incidents?\b", joined)
    assert any(line.startswith(" 1. ") for line in screen)
    assert re.search(rf"{re.escape(Path(first['lead']['source']).name)}:{first['lead']['line']}\b", joined), joined
    word = analysis.summary.incidents[0].action_word
    action = next((i for i, line in enumerate(screen) if re.match(rf"\s+->\s+{re.escape(word)}:", line)), None)
    assert action is not None, joined
    tables = [i for i, line in enumerate(screen) if line.startswith(("Codes by API", "Findings", "By node", "Related"))]
    assert all(i > action for i in tables), "a table comes before the diagnosis"


@pytest.mark.parametrize("name", CORPORA)
def test_no_placeholder_in_prose(corpora, name):
    analysis, data = corpora[name]
    for report in (_render(analysis, 80), _render(analysis, 80, full=True), markdown.render(analysis)):
        assert "(no node)" not in report
    for inc in data["summary"]["incidents"]:
        assert "(no node)" not in inc["story"]


@pytest.mark.parametrize("name, log", [("lonely", "plog-777_20251112034000000.log"), ("dense", "dense-4m.log")])
def test_a_log_without_a_node_is_named_in_the_story(corpora, name, log):
    analysis, data = corpora[name]
    story = data["summary"]["incidents"][0]["story"]
    assert f"the log {log}" in story, story
    assert _render(analysis, 80).splitlines()[4].startswith(f" 1. {log}  ")


@pytest.mark.parametrize("name", CORPORA)
def test_markdown_sections_are_bounded(corpora, name):
    analysis, data = corpora[name]
    md = markdown.render(analysis)
    table_rows = [line for line in md.splitlines() if line.startswith("| ") and not line.startswith("| --")]
    assert len(table_rows) <= 150, len(table_rows)
    if name in ("storm", "dense"):
        assert "(see --format json, or --full)" in md
    analysis.full = True
    try:
        full = markdown.render(analysis)
    finally:
        analysis.full = False
    assert "(see --format json, or --full)" not in full
    words = _words(full)
    assert all(fp in words for fp, _ in _groups(data))


def test_cli_full_option_and_pipe_width(tmp_path):
    """Through the command: a pipe gets 80 columns; --full lists every group."""
    path = tmp_path / "logs" / "plog-4811_20251112034000000.log"
    path.parent.mkdir()
    rnd = random.Random(5)
    combos = [(rnd.choice(_catalog()), rnd.choice(_apis()), rnd.choice(WORDS)) for _ in range(30)]
    path.write_text("\n".join(storm_lines(rnd, 4811, 700, combos, start=0.0)) + "\n")
    runner = CliRunner()
    short = runner.invoke(cli, ["scan", str(path), "--fail-on", "never"])
    full = runner.invoke(cli, ["scan", str(path), "--fail-on", "never", "--full"])
    assert short.exit_code == 0 and full.exit_code == 0, (short.output, full.output)
    assert max(len(line) for line in short.stdout.splitlines()) <= 80
    assert len(short.stdout.splitlines()) <= MAX_LINES
    assert MORE.search(short.stdout)
    assert len(full.stdout.splitlines()) > len(short.stdout.splitlines())
    assert not MORE.search(full.stdout)
