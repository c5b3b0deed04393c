"""The columnar shape of a finding, shared by the Parquet and CSV writers and by `merge`.

One row per finding. The columns the fleet tables are queried by come first (bundle, node, pod,
kind, device, pid, code, name, api, action, rule, recoverable, fingerprint, timestamp, source,
line); the rest of the finding follows, so a Parquet file holds every finding whole and `ddtriage
merge` can rebuild it exactly. Timestamps are ISO 8601 text as in the JSON report (`CAST(timestamp
AS TIMESTAMP)` in DuckDB, `pd.to_datetime(df.timestamp)` in pandas).
"""

from __future__ import annotations

import sys
from typing import Any

from ..core.records import Finding

# The columns the issue asks for, in this order.
KEY_COLUMNS = ("bundle", "node", "pod", "kind", "device", "pid", "code", "name", "api", "action", "rule",
               "recoverable", "fingerprint", "timestamp", "source", "line")
_COLUMN = {"time_hint": "inferred_time"}  # column (JSON) name of a field, where they differ
_FIELD = {c: f for f, c in _COLUMN.items()}
_INTERNAL = {"year_guessed"}  # settled by the scan; not part of a report
# Everything else a finding holds, in field order, so that a finding can be rebuilt.
REST_COLUMNS = tuple(_COLUMN.get(f, f) for f in Finding._fields if f not in KEY_COLUMNS and f not in _INTERNAL)
COLUMNS = KEY_COLUMNS + REST_COLUMNS


def value(f: Finding, column: str) -> Any:
    """The cell of `column` for finding `f`."""
    if column == "references":
        return list(f.references)
    if column == "causes":
        return [{"line": c[0], "family": c[1], "code": c[2], "meaning": c[3]} for c in f.causes]
    if column == "link":  # (kind, value) pairs: a map in Parquet
        return list(f.link)
    return getattr(f, _FIELD.get(column, column))


def finding_of(row: dict[str, Any]) -> Finding:
    """The finding a row (its JSON shape, or a full row of `COLUMNS`) was written from; keys that
    are no finding field (a baseline mark) are left out."""
    fields = {_FIELD.get(k, k): v for k, v in row.items() if _FIELD.get(k, k) in _FIELDS}
    for name in _SHARED:  # one string per distinct value, as the engine shares them, not one per row
        if isinstance(fields.get(name), str):
            fields[name] = sys.intern(fields[name])
    fields["references"] = tuple(row.get("references") or ())
    fields["causes"] = tuple((c["line"], c["family"], c["code"], c["meaning"]) for c in row.get("causes") or ())
    link = row.get("link") or ()
    fields["link"] = tuple(sorted((dict(link) if not isinstance(link, dict) else link).items()))
    return Finding(**fields)


_FIELDS = set(Finding._fields)
_SHARED = ("source", "bundle", "node", "kind", "code", "name", "api", "api_evidence", "rule", "action", "remedy",
           "form", "fingerprint", "pid", "tid")
