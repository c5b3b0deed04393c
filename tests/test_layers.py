"""The shape of the package: stages import one way, no module cycle, few top-level modules, and
the entry points import only what they use (issue #16)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from import_graph import PACKAGE, cycles, graph, package_graph

LAYERS = ["analyzer.core", "analyzer.inputs", "analyzer.knowledge", "analyzer.scan", "analyzer.detect",
          "analyzer.diagnose", "analyzer.run", "analyzer.writers", "analyzer.cli"]


def test_no_import_cycle_between_modules_counting_every_import() -> None:
    assert cycles(graph()) == []


def test_packages_import_only_the_layers_below() -> None:
    rank = {name: i for i, name in enumerate(LAYERS)}
    rank["analyzer.knowledge"] = rank["analyzer.inputs"]  # independent of each other
    upward = [(src, dst) for src, targets in package_graph(graph()).items() if src in rank
              for dst in targets if dst in rank and rank[dst] >= rank[src]]
    assert upward == []


def test_at_most_six_modules_at_the_top() -> None:
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 6, top


def _imported_by(code: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", code + "\nimport sys\nprint(' '.join(sorted(sys.modules)))"],
                         capture_output=True, text=True, check=True).stdout
    return {m for m in out.split() if m.startswith("analyzer") or m in ("pandas", "pyarrow", "dask")}


def test_help_imports_no_engine_and_no_writer_module() -> None:
    loaded = _imported_by("from analyzer.cli import cli\ntry:\n    cli.main(['--help'], standalone_mode=False)\n"
                          "except SystemExit:\n    pass")
    assert not {m for m in loaded if m.startswith(("analyzer.detect", "analyzer.run", "analyzer.diagnose.tally"))}
    writers = {m for m in loaded if m.startswith("analyzer.writers.")} - {"analyzer.writers.common", "analyzer.writers.safe"}
    assert writers == set()
    assert not {"pandas", "pyarrow", "dask"} & loaded


def test_a_worker_that_scans_imports_no_writer() -> None:
    loaded = _imported_by("from analyzer.run import parallel\nfrom analyzer.detect.engine import Engine")
    assert not {m for m in loaded if m.startswith(("analyzer.writers", "analyzer.cli"))}
    assert not {"pandas", "pyarrow", "dask"} & loaded


def test_a_scan_that_writes_reports_imports_no_pandas() -> None:
    """pandas is for frames only (issue #21): a scan, its summary and its reports never load it,
    nor the notebook view's writer until a notebook renders a result."""
    loaded = _imported_by("import io\nfrom analyzer import analyze\nfrom analyzer.writers import write_report\n"
                          f"with analyze([{str(PACKAGE.parent / 'sample_logs')!r}], jobs=1) as r:\n    repr(r)\n"
                          "    [write_report(f, r, io.StringIO()) for f in ('text', 'json', 'markdown')]")
    assert "analyzer.run.frames" not in loaded and "analyzer.writers.html" not in loaded
    assert "pandas" not in loaded


def test_a_scan_under_the_core_imports_no_regex_module(tmp_path: Path) -> None:
    """The `regex` module (~7 ms of start-up) is for the Python engine's patterns and the rule
    tables' Python patterns, each compiled on first use once the disk cache knows they compile: a
    plain scan the core reads whole (the one-line scan of the start-up floor) never imports it."""
    pytest.importorskip("ddtriage_core", reason="the compiled core is not installed")
    log = tmp_path / "plog-5569.log"
    log.write_text("[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:812]5571 PullKvBlocks: "
                   "ErrorNo: 1343270913(request wait to be processed timeout!)\n")
    code = ("import io, os, sys\nos.environ['DDTRIAGE_ENGINE'] = 'rust'\nfrom analyzer import analyze\n"
            "from analyzer.writers import write_report\n"
            f"with analyze([{str(log)!r}], jobs=1) as r:\n    assert len(r.findings) == 1\n"
            "    write_report('json', r, io.StringIO())\n"
            "print('regex' in sys.modules)")
    # the first run proves the tables' patterns compile (that imports `regex`) and caches the verdict
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
            for _ in range(2)]
    assert runs[1].split() == ["False"]


def test_no_two_module_constants_share_a_name() -> None:
    """A name means one thing (issue #16: LOOKBACK_LINES was 40 in one module and 12 in another)."""
    import ast

    seen: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) else []
            for t in targets:
                if isinstance(t, ast.Name) and t.id.isupper() and len(t.id) > 1:
                    seen.setdefault(t.id, []).append(str(path.relative_to(PACKAGE)))
    assert {name: where for name, where in seen.items() if len(where) > 1} == {}
