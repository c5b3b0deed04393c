"""Parquet and CSV output (issue #12): one row per finding with the fleet columns, loadable by the
documented one-liners in pandas and DuckDB, written in row groups as findings stream.
"""

from __future__ import annotations

import json

import pytest
from analyzer.cli import cli
from analyzer.core.serial import KEY_COLUMNS
from analyzer.writers import parquet
from click.testing import CliRunner

from fleetgen import make_fleet

pd = pytest.importorskip("pandas")
duckdb = pytest.importorskip("duckdb")
pq = pytest.importorskip("pyarrow.parquet")


def run(*args: str) -> None:
    result = CliRunner().invoke(cli, [*args, "--fail-on", "never"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr


@pytest.fixture(scope="module")
def scanned(tmp_path_factory):
    root = tmp_path_factory.mktemp("columnar")
    fleet = make_fleet(root, nodes=9, big_copies=2)
    out = {fmt: root / f"fleet.{fmt}" for fmt in ("parquet", "csv", "json")}
    run("scan", str(fleet), "-q", *(f"-o{p}" for p in out.values()))
    return out


def test_parquet_loads_in_pandas_and_duckdb_one_row_per_finding(scanned):
    findings = json.loads(scanned["json"].read_text())["findings"]
    df = pd.read_parquet(scanned["parquet"])  # the README's one-liner
    assert len(df) == len(findings) > 100
    assert list(df.columns[:len(KEY_COLUMNS)]) == list(KEY_COLUMNS)
    assert list(df["source"]) == [f["source"] for f in findings] and list(df["line"]) == [f["line"] for f in findings]
    assert df["recoverable"].dtype == bool or set(df["recoverable"].dropna()) <= {True, False}
    # 10 bundles: 9 generated nodes and the big node's folder; DuckDB answers the fleet question.
    rows = duckdb.sql(f"SELECT count(*), count(DISTINCT bundle), count(DISTINCT node) "
                      f"FROM '{scanned['parquet']}'").fetchall()
    assert rows == [(len(findings), 10, 10)]
    spread = dict(duckdb.sql(f"SELECT fingerprint, count(DISTINCT bundle) FROM '{scanned['parquet']}' "
                             "GROUP BY fingerprint").fetchall())
    summary = json.loads(scanned["json"].read_text())["summary"]["fingerprints"]
    assert all(spread[r["fingerprint"]] == r["bundles"] for r in summary)
    assert summary[0]["bundles"] == max(spread.values()) == 6  # decode-node-1,3,5,7,9 and the big node


def test_csv_loads_in_pandas_and_duckdb(scanned):
    findings = json.loads(scanned["json"].read_text())["findings"]
    df = pd.read_csv(scanned["csv"])
    assert list(df.columns) == [*KEY_COLUMNS, "text"] and len(df) == len(findings)
    assert duckdb.sql(f"SELECT count(*) FROM '{scanned['csv']}'").fetchall() == [(len(findings),)]
    first = findings[0]
    assert (df.loc[0, "bundle"], df.loc[0, "code"], df.loc[0, "fingerprint"], str(df.loc[0, "recoverable"]).lower()) == \
        (first["bundle"], first["code"], first["fingerprint"], str(first["recoverable"]).lower())


def test_parquet_is_written_in_row_groups(scanned, monkeypatch, tmp_path):
    monkeypatch.setattr(parquet, "ROW_GROUP", 100)
    out = tmp_path / "small-groups.parquet"
    run("scan", str(scanned["json"].parent / "fleet"), "-q", "-o", str(out))
    meta = pq.ParquetFile(out).metadata
    total = len(json.loads(scanned["json"].read_text())["findings"])
    assert meta.num_rows == total and meta.num_row_groups == -(-total // 100)
    assert all(meta.row_group(i).num_rows == 100 for i in range(meta.num_row_groups - 1))
    assert pd.read_parquet(out).equals(pd.read_parquet(scanned["parquet"]))


def test_parquet_to_a_terminal_is_refused_and_no_findings_is_an_empty_table(tmp_path):
    empty = tmp_path / "quiet.log"
    empty.write_text("nothing to see\n")
    out = tmp_path / "none.parquet"
    run("scan", str(empty), "-q", "--format", "parquet", "-o", str(out))
    assert pq.read_table(out).num_rows == 0 and pq.read_table(out).schema.names[:3] == ["bundle", "node", "pod"]


def test_column_batch_is_value_of_every_finding_column_by_column():
    """`column_batch` (the Parquet writer's and the findings frame's row groups) is `value`, transposed."""
    from pathlib import Path

    from analyzer import analyze
    from analyzer.core.serial import COLUMNS, column_batch, value

    with analyze([str(Path(__file__).resolve().parents[2] / "sample_logs")], jobs=1) as result:
        found, texts = list(result.findings), result.rule_texts
    cells = column_batch(found, texts)
    assert list(cells) == list(COLUMNS)
    assert cells == {c: [value(f, c, texts) for f in found] for c in COLUMNS}
    assert any(cells["causes"]) and any(cells["link"]) and any(cells["references"])
    assert column_batch([], texts) == {c: [] for c in COLUMNS}
