"""Whole reports: every corpus scanned with the Python engine and with the core gives the same JSON
report, byte for byte (through the library, as `ddtriage scan --format json` writes it), and the
CLI's own output file is the same under either engine."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
from analyzer.run import api
from analyzer.scan import blocks as scanner
from analyzer.writers import render_report

HAVE_CORE = importlib.util.find_spec("ddtriage_core") is not None
pytestmark = pytest.mark.skipif(not HAVE_CORE, reason="the compiled core (ddtriage_core) is not installed: "
                                "`make install` or `pip install ./core` builds it")

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ["sample_logs", "tests/data/envelopes", "tests/data/fleets", "tests/data/unseen", "tests/data/baseline",
           "tests/data/twin"]


def _report(paths: list[str], engine: str, monkeypatch: pytest.MonkeyPatch, jobs: int = 1) -> str:
    monkeypatch.setattr(scanner, "ENGINE", engine)  # forked workers inherit it
    return render_report("json", api.analyze(paths, jobs=jobs))


@pytest.mark.parametrize("corpus", CORPORA)
def test_every_corpus_gives_the_same_report(corpus: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = ROOT / corpus
    if not path.exists():
        pytest.skip(f"{corpus} not in this checkout")
    python = _report([str(path)], "python", monkeypatch)
    assert python == _report([str(path)], "rust", monkeypatch)
    assert '"findings"' in python
    from analyzer.detect import engine

    monkeypatch.setattr(engine, "CORE_TALLY_MIN", 0)  # every plain stream tallied by the core's engine
    assert python == _report([str(path)], "rust", monkeypatch)


def test_fact_only_lines_answered_by_the_core_are_noted_as_python_notes_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/data/twin/fact_lines.log (written by hand): fact-only lines the core answers whole (two
    processes, a CRLF, leading blanks), proofs of recovery among them (one holding no fact at all),
    lines without a plog header, with colour, non-ASCII or a NUL (Python's)."""
    import json

    log = str(ROOT / "tests/data/twin/fact_lines.log")
    python = _report([log], "python", monkeypatch)
    assert python == _report([log], "rust", monkeypatch)
    report = json.loads(python)
    # the three success lines are proofs; the one that names no fact was once dropped by the core
    assert sorted(p["line"] for p in report["proofs"]) == [6, 7, 17]
    (node,) = report["links"]
    assert node["remote_clusters"] == ["2", "3", "4"]
    assert {c["cluster_id"] for c in node["clusters"]} >= {"5", "10", "11", "12", "13", "14", "15"}


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A generated plog big enough to be cut into byte ranges (--jobs 2; SPLIT_MIN_BYTES is lowered to
    1 MiB below), dense with codes and facts (~2,100 code lines)."""
    sys.path.insert(0, str(ROOT / "bench"))
    import gen_plog

    log = tmp_path_factory.mktemp("gen") / "dense.log"
    gen_plog.generate(str(log), 8 << 20, "dense", quiet=True)
    return log


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_generated_plog_gives_the_same_report(generated: Path, jobs: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.run import parallel

    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1 << 20)  # cut into byte ranges at --jobs 2
    python = _report([str(generated)], "python", monkeypatch, jobs)
    assert python == _report([str(generated)], "rust", monkeypatch, jobs)
    assert '"remote_clusters": [' in python


def test_the_cli_writes_the_same_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from analyzer.cli import cli
    from click.testing import CliRunner

    monkeypatch.chdir(ROOT)
    out = {}
    for engine in ("python", "rust"):
        monkeypatch.setattr(scanner, "ENGINE", engine)
        target = tmp_path / f"{engine}.json"
        result = CliRunner().invoke(cli, ["scan", "sample_logs", "--format", "json", "--fail-on", "never",
                                          "--quiet", "-o", str(target), "--jobs", "1"])
        assert result.exit_code == 0, result.output
        out[engine] = target.read_bytes()
    assert out["python"] == out["rust"]


def _facts_past_every_cap(path: Path) -> None:
    """Plog lines of two processes past every cap: 2,500 failures naming request ids, and between
    them fact-only lines (which the core answers whole): 300 listen addresses, 90 CANN versions,
    roles 3 Prompt to 5 Decoder, clusters with devices."""
    lines = []
    for i in range(2500):
        pid = 4100 + i % 2
        stamp = f"2025-11-12-03:{40 + i // 1000:02d}:{(i // 20) % 60:02d}.{i % 1000:03d}.000"
        head = f"[INFO] GE({pid},python3):{stamp} [llm_datadist.cc:1]{pid} "
        lines.append(head.replace("[INFO]", "[ERROR]")
                     + f"PullKvBlocks: pull blocks failed, ret = 1343270913, req_id = q{(i * 7919) % 2500}")
        if i < 300:
            lines.append(head + f"StartListen: listen on 10.{i // 250}.{i % 250}.{pid % 10}:{26000 + i} success")
        if i < 90:
            lines.append(head + f"GEInitialize: GE init begin, CANN version = 8.{i}.RC1, build = 20250820")
        if i < 8:
            role = "Prompt" if i < 3 else "Decoder"
            lines.append(head + f"Initialize: llm datadist init success, role = {role}, cluster_id = {i}, device_id = {i % 4}")
    path.write_text("\n".join(lines) + "\n")


def test_a_nodes_facts_past_every_cap_are_the_same_from_either_engine(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """The core gathers the facts of the lines it answers whole itself (issue #17): the report is
    the same, and what it keeps is what the caps say (expected values written from the caps)."""
    import json

    log = tmp_path / "facts.log"
    _facts_past_every_cap(log)
    python = _report([str(log)], "python", monkeypatch)
    assert python == _report([str(log)], "rust", monkeypatch)
    report = json.loads(python)
    (node,) = report["links"]
    assert node["role"] == "Decoder"
    assert len(node["listen"]) == 64 and node["listen"][:2] == ["10.0.0.0:26000", "10.0.1.1:26001"]
    assert len(node["req_ids"]) == 2000 and node["req_ids"][:2] == ["q0", "q1"] and "q1999" in node["req_ids"]
    assert "q2000" not in node["req_ids"]
    assert node["versions"]["cann"][:3] == ["8.0.RC1", "8.1.RC1", "8.10.RC1"] and len(node["versions"]["cann"]) == 64
    assert {(c["cluster_id"], c["device_id"]) for c in node["clusters"]} == {(str(i), str(i % 4)) for i in range(8)}
    # A failure carries the device its own process's init line (a row) named up to 12 lines before:
    # the failures of rounds 2..7 (four lines a round), and none after round 10.
    devices = {f["line"]: f["link"].get("device") for f in report["findings"]}
    starts = [1 + 4 * i for i in range(8)]  # the line of each round's failure while rounds are four lines
    assert [devices[n] for n in starts[2:]] == [str(i % 4) for i in range(0, 6)]
    assert all(d is None for n, d in devices.items() if n > 60)


def test_a_lone_surrogate_escape_in_an_envelope_is_read_by_both_engines(monkeypatch: pytest.MonkeyPatch) -> None:
    """tests/data/twin/surrogate_escapes.journal.json (written by hand): JSON envelopes whose message
    holds `\\udcff` escapes, a lone surrogate no UTF-8 holds; the core once stopped the file at its
    first such line."""
    import json

    log = str(ROOT / "tests/data/twin/surrogate_escapes.journal.json")
    python = _report([log], "python", monkeypatch)
    assert python == _report([log], "rust", monkeypatch)
    report = json.loads(python)
    assert not report["summary"].get("skipped")
    assert sorted(f["code"] for f in report["findings"]) == ["0x5010B001", "0x5010B002", "0x5010B009"]
