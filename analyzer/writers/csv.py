"""CSV: one row per finding, the fleet columns (`writers.columns.KEY_COLUMNS`) and the line text.

    bundle,node,pod,kind,device,pid,code,name,api,action,rule,recoverable,fingerprint,timestamp,source,line,text
    fleet/decode-node-2.tar.gz,decode-node-2,,host,,5569,0x5010B001,LLM_WAIT_PROC_TIMEOUT,PullKvBlocks,...

Streamed from the store row by row (memory stays bounded). Empty cells are nulls; `recoverable`
is `true`, `false` or empty (unknown). `pd.read_csv("fleet.csv")`, or in DuckDB
`SELECT * FROM 'fleet.csv'`.
"""

from __future__ import annotations

import csv
from typing import TYPE_CHECKING, TextIO

from ..core.serial import KEY_COLUMNS, value

if TYPE_CHECKING:
    from ..run.analysis import Analysis

name = "csv"
suffix = ".csv"

CSV_COLUMNS = (*KEY_COLUMNS, "text")


def _cell(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def write(analysis: Analysis, out: TextIO) -> None:
    rows = csv.writer(out, lineterminator="\n")
    rows.writerow(CSV_COLUMNS)
    texts = analysis.rule_texts
    for f in analysis.findings:
        rows.writerow([_cell(value(f, c, texts)) for c in CSV_COLUMNS])
