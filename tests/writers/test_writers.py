"""Stage: writers. Every registered writer on small analyses built here: no findings, one finding,
and a burst with a likely cause and an LLM_FAILED echo. Plus the contract they read (report.py).

Golden reports of sample_logs/ in every registered format. Regenerate with `make golden` (never
by hand); the same input must give byte-identical reports, whatever --jobs is. A format in
`WRITERS` without its golden report fails here (folded from test_golden.py).
"""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path

import pytest
from analyzer import Analysis, analyze
from analyzer.cli import cli
from analyzer.diagnose.summary import Burst, Summary
from analyzer.writers import WRITERS, render_report, write_report
from click.testing import CliRunner

CLEAN = "nothing to see\nLLM_SUCCESS\n"
ONE = ("[ERROR] GE(5569,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:812]5571 PullKvBlocks: "
       "ErrorNo: 1343270913(request wait to be processed timeout!) [GE][MODULE]pull blocks timeout\n")
# A runtime stream-sync timeout (the likely cause), the LLM_TIMEOUT it set off, a generic echo.
CAUSED = "".join(line + "\n" for line in [
    "[ERROR] RUNTIME(5569,python3):2025-11-12-03:40:10.011.004 [stream.cc:1143]5650 Synchronize: "
    "stream synchronize timeout, stream_id = 14, runtime result = 507046",
    "[ERROR] GE(5569,python3):2025-11-12-03:40:10.011.220 [data_cache_engine.cc:802]5650 PullCache: "
    "ErrorNo: 1343270938(Process timeout.) [GE][MODULE]sync stream failed, req_id = 2077",
    "[ERROR] GE(5569,python3):2025-11-12-03:40:10.011.300 [llm_datadist.cc:549]5650 PullCache: "
    "ErrorNo: 4294967295(failed) [GE][MODULE]PullCache failed, req_id = 2077",
])


def analysis_of(tmp_path: Path, text: str, name: str = "plog-1.log") -> Analysis:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return analyze([str(path)], jobs=1)


@pytest.fixture(scope="module")
def caused(tmp_path_factory: pytest.TempPathFactory) -> Analysis:
    return analysis_of(tmp_path_factory.mktemp("caused"), CAUSED)


def test_registry_matches_the_writers():
    for fmt, writer in WRITERS.items():
        assert writer.name == fmt
        assert writer.suffix.startswith(".") and len(writer.suffix) > 1
    assert len({w.suffix for w in WRITERS.values()}) == len(WRITERS)


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_render_is_write(tmp_path, fmt):
    analysis = analysis_of(tmp_path, ONE)
    if getattr(WRITERS[fmt], "binary", False):  # Parquet: bytes, rendered as their decoded content
        data = io.BytesIO()
        write_report(fmt, analysis, data)
        assert WRITERS[fmt].dump(data.getvalue()) == render_report(fmt, analysis) != ""
        return
    out = io.StringIO()
    write_report(fmt, analysis, out)
    assert out.getvalue() == render_report(fmt, analysis) != ""


def test_empty_analysis(tmp_path):
    analysis = analysis_of(tmp_path, CLEAN)
    assert analysis.summary == Summary()
    assert "No LLM-DataDist status codes found." in render_report("text", analysis)
    assert "No LLM-DataDist status codes found." in render_report("markdown", analysis)
    report = json.loads(render_report("json", analysis))
    assert report["findings"] == [] and report["summary"] == Summary().to_dict()
    assert report["inputs"]["files"] == 1 and report["inputs"]["lines"] == 2


def test_one_finding_text_puts_the_diagnosis_first(tmp_path):
    text = render_report("text", analysis_of(tmp_path, ONE))
    assert text.startswith("ddtriage: 1 finding (1 not known recoverable) in 1 file, 1 line")
    diagnosis = text.index("Diagnosis: 1 burst,")
    assert diagnosis < text.index("By node") < text.index("Codes by API") < text.index("\nFindings")
    lead = text[diagnosis:text.index("By node")]
    assert "LLM_WAIT_PROC_TIMEOUT (0x5010B001) from PullKvBlocks (Func field)" in lead
    assert "-> relink [wait-timeout-transfer]" in lead
    assert "2025-11-12T03:40:05.101002, NOT recoverable" in lead
    assert all(len(line) <= 80 for line in text.splitlines())


def test_one_finding_markdown(tmp_path):
    md = render_report("markdown", analysis_of(tmp_path, ONE))
    assert md.startswith("# ddtriage report\n")
    assert "1. **LLM_WAIT_PROC_TIMEOUT (0x5010B001)** from PullKvBlocks (Func field)" in md
    assert "**Action: `relink`** (wait-timeout-transfer)" in md
    assert "| 1 | 0x5010B001 | LLM_WAIT_PROC_TIMEOUT | PullKvBlocks | relink | wait-timeout-transfer |" in md


def test_one_finding_json_round_trips_in_a_stable_order(tmp_path):
    analysis = analysis_of(tmp_path, ONE)
    raw = render_report("json", analysis)
    report = json.loads(raw)
    assert list(report) == ["tool", "version", "inputs", "summary", "related", "links", "proofs", "findings"]
    summary = report["summary"]
    assert summary == analysis.summary.to_dict()
    assert list(summary) == ["findings", "unrecoverable", "unknown_codes", "codes", "actions", "nodes", "bursts",
                             "bundles", "more_bundles", "fingerprints", "more_fingerprints", "incidents"]
    assert list(summary["codes"][0]) == ["code", "name", "api", "rule", "action", "recoverable", "count",
                                         "first_seen", "last_seen", "first_at", "sources", "more_sources"]
    assert list(summary["bursts"][0]) == ["source", "node", "kind", "pid", "lines", "first_seen", "last_seen",
                                          "findings", "severe", "lead", "echoes", "repeats", "causes", "also", "state",
                                          "recovery"]
    assert summary["codes"][0]["api"] == "PullKvBlocks" and summary["actions"] == [{"action": "relink", "count": 1}]
    assert [f["action"] for f in report["findings"]] == ["relink"]
    # Re-encoding what was read gives the same text: key order is part of the format.
    head = {k: v for k, v in report.items() if k != "findings"}
    assert raw.startswith(json.dumps(head, indent=2, ensure_ascii=False)[:-2])


def test_causes_and_echoes_in_the_summary(caused):
    (burst,) = caused.summary.bursts
    assert isinstance(burst, Burst)
    assert burst.lead.name == "LLM_TIMEOUT" and burst.lead.api == "PullKvCache" and burst.lead.action == "relink"
    assert burst.echoes == 1 and burst.findings == 2 and burst.severe
    assert [(c.family, c.code, c.line) for c in burst.causes] == [("runtime", "507046", 1)]


def test_causes_and_echoes_in_every_human_format(caused):
    text = render_report("text", caused)
    assert "likely cause: runtime 507046 (stream sync timeout) at line 1" in text
    assert "+ 1 generic LLM_FAILED echo" in text
    md = render_report("markdown", caused)
    assert "   Likely cause: runtime 507046 (stream sync timeout) at line 1." in md
    assert "   1 generic LLM_FAILED echo." in md
    burst = json.loads(render_report("json", caused))["summary"]["bursts"][0]
    assert burst["causes"] == [{"line": 1, "family": "runtime", "code": "507046", "meaning": "stream sync timeout"}]
    assert burst["echoes"] == 1 and burst["lines"] == [2, 3]


def test_markdown_escapes_pipes_in_cells(tmp_path):
    md = render_report("markdown", analysis_of(tmp_path, ONE, name="a|b.log"))
    assert "a|b.log" not in md.replace("a\\|b.log", "")
    assert f"`{tmp_path}/a\\|b.log:1`" in md
    # Every table row still has as many cells as its header.
    for table in md.split("\n\n"):
        rows = [r for r in table.splitlines() if r.startswith("|")]
        cells = {len(r.replace("\\|", "").split("|")) for r in rows}
        assert len(cells) <= 1, table


def test_summary_records_are_frozen_and_slotted(caused):
    burst = caused.summary.bursts[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        burst.echoes = 5  # type: ignore[misc]
    for record in (caused.summary, burst, burst.lead, burst.causes[0], caused.summary.codes[0],
                   caused.summary.nodes[0], caused.summary.actions[0]):
        assert not hasattr(record, "__dict__")
        assert all(not isinstance(getattr(record, f.name), (list, dict, set)) for f in dataclasses.fields(record))


GOLDEN = Path(__file__).parents[1] / "golden"


def golden_path(fmt: str) -> Path:
    # A binary format's golden report is its decoded content, as text.
    return GOLDEN / ("sample_logs" + WRITERS[fmt].suffix + (".txt" if getattr(WRITERS[fmt], "binary", False) else ""))


def render(fmt: str, jobs: int = 1) -> str:
    result = CliRunner().invoke(cli, ["scan", "sample_logs", "--format", fmt, "--fail-on", "never",
                                      "--jobs", str(jobs)], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    if getattr(WRITERS[fmt], "binary", False):  # Parquet: its decoded content (the bytes name pyarrow's version)
        return WRITERS[fmt].dump(result.stdout_bytes)
    return result.stdout


@pytest.mark.parametrize("fmt", sorted(WRITERS))
def test_golden_report(in_root, update_golden, fmt):
    path = golden_path(fmt)
    report = render(fmt)
    if update_golden:
        GOLDEN.mkdir(exist_ok=True)
        path.write_text(report, encoding="utf-8")
    assert path.exists(), f"format {fmt!r} has no golden report {path.name}: run `make golden` and check it"
    assert report == path.read_text(encoding="utf-8"), f"{path.name} differs: if intended, run `make golden`"


def test_every_golden_report_has_a_writer():
    """A golden file no writer produces is stale (a renamed or removed format)."""
    expected = {golden_path(fmt).name for fmt in WRITERS}
    assert len(expected) == len(WRITERS), "two formats share a suffix, so their golden reports would collide"
    stale = sorted(p.name for p in GOLDEN.glob("sample_logs.*") if p.name not in expected)
    assert not stale, f"golden reports without a writer: {stale}"


def test_same_report_with_more_jobs(in_root):
    assert render("json", jobs=1) == render("json", jobs=3)


def test_a_time_read_from_the_lines_before_is_marked_in_every_findings_table(tmp_path):
    # Markdown's Findings table left the time empty, and HTML's showed it as if the line had it;
    # the text report already marked it `~... (from the lines before)`
    log = tmp_path / "app.log"
    log.write_text("[ERROR] GE(7,python3):2025-11-12-03:40:03.700.920 [cache.cc:10]7 AllocateCache: begin\n"
                   "AllocateCache failed, ret = LLM_CACHE_ID_ALREADY_EXIST\n")
    outs = {fmt: tmp_path / f"r.{fmt}" for fmt in ("text", "markdown", "html")}
    result = CliRunner().invoke(cli, ["scan", str(log), "-q", "--fail-on", "never",
                                      *(a for fmt, path in outs.items() for a in ("-o", f"{fmt}:{path}"))])
    assert result.exit_code == 0, result.stderr
    assert "~2025-11-12T03:40:03.700920 (from the lines before)" in outs["text"].read_text()
    row = next(x for x in outs["markdown"].read_text().splitlines() if x.startswith(f"| `{log}:2` |"))
    assert row.split(" | ")[2:4] == ["~2025-11-12T03:40:03.700920", "LLM_CACHE_ID_ALREADY_EXIST"], row
    assert ('<td data-v="2025-11-12T03:40:03.700920">~2025-11-12T03:40:03.700920</td>'
            in outs["html"].read_text())
