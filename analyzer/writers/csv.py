"""CSV: one row per finding, the fleet columns (`writers.columns.KEY_COLUMNS`) and the line text.

    bundle,node,pod,kind,device,pid,code,name,api,action,rule,recoverable,fingerprint,timestamp,source,line,text
    fleet/decode-node-2.tar.gz,decode-node-2,,host,,5569,0x5010B001,LLM_WAIT_PROC_TIMEOUT,PullKvBlocks,...

Streamed from the store row by row (memory stays bounded). Empty cells are nulls; `recoverable`
is `true`, `false` or empty (unknown). `pd.read_csv("fleet.csv")`, or in DuckDB
`SELECT * FROM 'fleet.csv'`.

Every text cell comes from an untrusted bundle (file and member names, node names, log lines), and
a CSV file is also opened in spreadsheets, which run a cell that starts with `=`, `+`, `-` or `@`
as a formula (OWASP's "CSV injection"; a tab or CR before one still counts). Such a cell is written
with a leading `'`, the spreadsheets' own mark for text, so it shows as text and reads back with
that one character more; no other cell changes. Line breaks inside a cell are quoted by the csv
module, so a cell never starts a row.
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


# What makes a spreadsheet read a cell as a formula (or as a command, `@`), at the cell's start.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _cell(v: object) -> object:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str) and v.startswith(FORMULA_START):
        return "'" + v
    return v


def write(analysis: Analysis, out: TextIO) -> None:
    rows = csv.writer(out, lineterminator="\n")
    rows.writerow(CSV_COLUMNS)
    texts = analysis.rule_texts
    for f in analysis.findings:
        rows.writerow([_cell(value(f, c, texts)) for c in CSV_COLUMNS])
