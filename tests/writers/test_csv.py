"""The CSV writer against CSV injection: a cell a spreadsheet would run as a formula (it starts with
`=`, `+`, `-`, `@`, a tab or a CR) is written as text, with a leading `'`; every other cell as it is.
Read back by Python's csv module and by pandas, as users read it."""

from __future__ import annotations

import csv
import io

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

LINE = "PullKvCache failed, ret = 0x5010B001"


def _rows(path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


@pytest.fixture
def hostile(tmp_path):
    """A bundle whose node folder, file name and log lines start like formulas."""
    node = tmp_path / "b" / "=HYPERLINK(evil)"
    node.mkdir(parents=True)
    (node / "@SUM(A1).log").write_text(
        f"=cmd|' /C calc'!A0 {LINE}\n"
        f"+1 {LINE}\n"
        f"-2 {LINE}\n"
        f"@3 {LINE}\n"
        f"[ERROR] GE(1,python3):2025-11-12-10:00:01.000.000 [llm.cc:1] {LINE}\n", encoding="utf-8")
    return tmp_path / "b"


def test_formula_cells_are_written_as_text(hostile, tmp_path, monkeypatch):
    out = tmp_path / "f.csv"
    monkeypatch.chdir(hostile)  # sources named relative to here: they start with `=`
    result = CliRunner().invoke(cli, ["scan", "=HYPERLINK(evil)", "--jobs", "1", "--format", "csv", "-o", str(out),
                                      "--fail-on", "never"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr
    rows = _rows(out)
    texts = [r["text"] for r in rows]
    assert texts == [f"'=cmd|' /C calc'!A0 {LINE}", f"'+1 {LINE}", f"'-2 {LINE}", f"'@3 {LINE}",
                     f"[ERROR] GE(1,python3):2025-11-12-10:00:01.000.000 [llm.cc:1] {LINE}"]
    for row in rows:
        assert row["source"] == "'=HYPERLINK(evil)/@SUM(A1).log"
        assert row["code"] == "0x5010B001" and row["line"].isdigit()
        # no cell a spreadsheet would run
        assert not any(cell.startswith(("=", "+", "-", "@", "\t", "\r")) for cell in row.values())


def test_pandas_reads_the_marked_cells_as_text(hostile, tmp_path):
    pd = pytest.importorskip("pandas")
    out = tmp_path / "f.csv"
    CliRunner().invoke(cli, ["scan", str(hostile), "--jobs", "1", "--format", "csv", "-o", str(out),
                             "--fail-on", "never"], catch_exceptions=False)
    frame = pd.read_csv(out, dtype=str, keep_default_na=False)
    assert list(frame["text"].str[:2]) == ["'=", "'+", "'-", "'@", "[E"]
    assert not frame["node"].str.startswith(("=", "+", "-", "@")).any()
