"""The columnar shape of a finding, shared by the Parquet and CSV writers and by `merge`.

One row per finding. The columns the fleet tables are queried by come first (bundle, node, pod,
kind, device, pid, code, name, api, action, rule, recoverable, fingerprint, timestamp, source,
line); the rest of the finding follows, so a Parquet file holds every finding whole and `ddtriage
merge` can rebuild it exactly. Timestamps are ISO 8601 text as in the JSON report (`CAST(timestamp
AS TIMESTAMP)` in DuckDB, `pd.to_datetime(df.timestamp)` in pandas).
"""

from __future__ import annotations

from typing import Any

from ..records import Finding

# The columns the issue asks for, in this order; `pod` is null until an input names a pod.
KEY_COLUMNS = ("bundle", "node", "pod", "kind", "device", "pid", "code", "name", "api", "action", "rule",
               "recoverable", "fingerprint", "timestamp", "source", "line")
# Everything else a finding holds (JSON report names), so that a finding can be rebuilt.
REST_COLUMNS = ("tid", "api_evidence", "api_line", "known", "generic", "form", "in_cluster_results",
                "inferred_time", "remedy", "references", "causes", "text")
COLUMNS = KEY_COLUMNS + REST_COLUMNS

# Finding field for each column whose name differs.
_FIELD = {"inferred_time": "time_hint"}


def value(f: Finding, column: str) -> Any:
    """The cell of `column` for finding `f`."""
    if column == "pod":
        return getattr(f, "pod", None)
    if column == "references":
        return list(f.references)
    if column == "causes":
        return [{"line": c[0], "family": c[1], "code": c[2], "meaning": c[3]} for c in f.causes]
    return getattr(f, _FIELD.get(column, column))


def finding_of(row: dict[str, Any]) -> Finding:
    """The finding a full row (all of `COLUMNS`) was written from."""
    fields = {_FIELD.get(c, c): row[c] for c in COLUMNS if c != "pod" and _FIELD.get(c, c) in Finding._fields}
    fields["references"] = tuple(row["references"] or ())
    fields["causes"] = tuple((c["line"], c["family"], c["code"], c["meaning"]) for c in row["causes"] or ())
    return Finding(**fields)
