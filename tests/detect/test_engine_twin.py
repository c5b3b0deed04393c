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
