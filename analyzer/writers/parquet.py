"""Parquet: one row per finding (`writers.columns`), for pandas, DuckDB, Spark, Polars.

    pd.read_parquet("fleet.parquet")
    duckdb -c "SELECT node, code, count(*) FROM 'fleet.parquet' GROUP BY ALL ORDER BY 3 DESC"

Written in row groups of `ROW_GROUP` findings as they stream from the store, so memory stays
bounded however many findings there are. The file's key-value metadata `ddtriage` holds the
report version, the input stats (files, lines, bytes, skipped inputs), related errors, link facts
and proofs of recovery, which `ddtriage merge` reads back. Needs pyarrow (the `fleet` extra).
A binary format: the CLI writes it to a file.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, BinaryIO

from ..core.serial import PARQUET_METADATA_KEY, REPORT_VERSION, arrow_schema, column_batch, load_pyarrow, parquet_head

if TYPE_CHECKING:
    from ..core.records import Finding
    from ..run.analysis import Analysis

name = "parquet"
suffix = ".parquet"
binary = True  # write() takes a binary stream

# Findings per row group: the rows of one group are held as Python values until written, and
# 65,536 of them cost ~120 MiB more than the JSON writer (review D16); 2,048 keep the peak near it.
ROW_GROUP = 2048  # findings per row group: bounded memory (pyarrow and pandas alone are ~110 MiB)


def schema() -> Any:
    """The Arrow schema of a findings file (`core.serial.arrow_schema`)."""
    return arrow_schema()


def write(analysis: Analysis, out: BinaryIO) -> None:
    pa = load_pyarrow()
    meta = {"version": REPORT_VERSION, "inputs": analysis.inputs.to_dict(),
            # what `ddtriage merge` needs to rebuild the incidents: related errors, link facts, proofs
            "related": [e.to_dict() for e in analysis.related],
            "links": [facts.to_dict(node) for node, facts in analysis.links.items()],
            "proofs": [p.to_dict() for p in analysis.proofs]}
    # The head goes into the file's key-value metadata alone: as schema metadata it was stored twice
    # (in the serialized Arrow schema as well), and a reader decoded both, ~30 MiB for one part
    # of a fleet (megabytes of related errors and link facts) before reading a row.
    target = schema()
    with pa.parquet.ParquetWriter(out, target, compression="zstd") as writer:
        writer.add_key_value_metadata({PARQUET_METADATA_KEY: json.dumps(meta, sort_keys=True).encode()})
        rows: list[Finding] = []
        texts = analysis.rule_texts
        for f in analysis.findings:
            rows.append(f)
            if len(rows) == ROW_GROUP:
                writer.write_table(pa.table(column_batch(rows, texts), schema=target))
                rows = []
        if rows or not len(analysis.findings):
            writer.write_table(pa.table(column_batch(rows, texts), schema=target))


def dump(data: bytes) -> str:
    """A Parquet report as text (its metadata, then one JSON row per finding): what the golden
    test compares, since the file's bytes name the pyarrow version that wrote it."""
    import io

    pa = load_pyarrow()
    table = pa.parquet.read_table(io.BytesIO(data))
    head = (parquet_head(pa.parquet.ParquetFile(io.BytesIO(data))) or b"").decode()
    lines = [head, ", ".join(f"{f.name}: {f.type}" for f in table.schema)]
    lines += [json.dumps(row, ensure_ascii=False) for row in table.to_pylist()]
    return "\n".join(lines) + "\n"
