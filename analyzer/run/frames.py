"""A run as pandas DataFrames, for batch analysis in a notebook (issue #21).

Stage: run (after the end of a run; imported only when frames are asked for, so a scan, a worker
and `ddtriage --help` never import pandas). `Analysis.frames()` calls `frames` with its parts.

    findings      one row per finding: the Parquet/CSV columns (`core.serial.COLUMNS`)
    related       one row per related error (runtime, HCCL, socket, ...)
    incidents     one row per incident: nodes, lead, state, action, story
    bursts        one row per burst the summary keeps (the first `MAX_BURSTS`)
    nodes         one row per node
    bundles       one row per bundle, worst first (every bundle, not the summary's first 50)
    fingerprints  one row per failure across bundles, most widespread first (every one)

Every frame goes through one Arrow table and `_to_pandas`, so the dtypes are one rule: labels
(codes, APIs, actions, nodes, bundles, ...) categorical with sorted categories, times tz-aware UTC,
counts and line numbers nullable `Int64`, flags nullable `boolean`, free text `string[pyarrow]`,
lists and maps Arrow-backed (`pd.ArrowDtype`). The findings are read from the spilled store in row
groups of `FRAME_ROWS` into Arrow record batches (no row dicts, no Python object per cell kept),
so a million of them fit in a few hundred MiB. A stamp printed without a zone (and no `--tz` at
the scan) is read as if it were UTC.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from datetime import datetime
from itertools import islice
from typing import Any

import pandas as pd
import pyarrow  # noqa: F401 - here, so that a missing pyarrow is an ImportError naming the frames extra

from ..core.observations import NodeFacts, RelatedEvent
from ..core.records import Finding, RuleTexts
from ..core.serial import COLUMNS, arrow_schema, column_batch, load_pyarrow
from ..diagnose.fleet import FleetTally
from ..diagnose.summary import Summary

FRAME_ROWS = 8192  # findings per Arrow record batch (a few MiB of Python objects at a time)

# Labels: few distinct values, many rows; categorical in every frame that has them.
LABELS = frozenset({
    "bundle", "node", "pod", "container", "kind", "device", "pid", "tid", "code", "name", "api", "api_evidence",
    "action", "rule", "fingerprint", "source", "remedy", "form", "time_source", "stream", "envelope", "family",
    "state", "role", "first_at",
    "lead_node", "lead_role", "lead_family", "lead_code", "lead_meaning", "lead_api", "lead_source", "lead_name",
    "lead_api_evidence", "lead_rule", "lead_action", "meaning"})

# The columns of each frame but `findings` (whose columns are `core.serial.COLUMNS`) and their
# Arrow types: t text, i integer, b flag, ts time, names a list of text. README's "Frames" table
# lists them, and a test holds it to this.
_T, _I, _B, _TS, _NAMES = "t", "i", "b", "ts", "names"
FRAME_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "related": (("source", _T), ("line", _I), ("timestamp", _TS), ("node", _T), ("family", _T), ("code", _T),
                ("meaning", _T), ("text", _T), ("incident", _I)),
    "incidents": (("id", _I), ("state", _T), ("start", _TS), ("end", _TS), ("nodes", _NAMES), ("lead_node", _T),
                  ("lead_role", _T), ("lead_family", _T), ("lead_code", _T), ("lead_meaning", _T),
                  ("lead_api", _T), ("lead_source", _T), ("lead_line", _I), ("lead_timestamp", _TS),
                  ("lead_text", _T), ("action", _T), ("remedy", _T), ("story", _T), ("findings", _I),
                  ("severe", _B), ("bursts", _I), ("related", _I), ("fingerprints", _NAMES)),
    "bursts": (("incident", _I), ("source", _T), ("node", _T), ("kind", _T), ("pid", _T), ("first_line", _I),
               ("last_line", _I), ("first_seen", _TS), ("last_seen", _TS), ("findings", _I), ("severe", _B),
               ("echoes", _I), ("repeats", _I), ("lead_line", _I), ("lead_timestamp", _TS), ("lead_code", _T),
               ("lead_name", _T), ("lead_api", _T), ("lead_api_evidence", _T), ("lead_rule", _T),
               ("lead_action", _T), ("lead_recoverable", _B), ("lead_text", _T), ("causes", _I), ("also", _I)),
    "nodes": (("node", _T), ("role", _T), ("findings", _I), ("unrecoverable", _I), ("host_findings", _I),
              ("device_findings", _I), ("application_findings", _I), ("sources", _I)),
    "bundles": (("bundle", _T), ("findings", _I), ("unrecoverable", _I), ("failures", _I), ("nodes", _I),
                ("first_seen", _TS), ("last_seen", _TS), ("node_names", _NAMES)),
    "fingerprints": (("fingerprint", _T), ("code", _T), ("name", _T), ("api", _T), ("rule", _T), ("action", _T),
                     ("recoverable", _B), ("generic", _B), ("template", _T), ("findings", _I), ("bundles", _I),
                     ("nodes", _I), ("first_seen", _TS), ("last_seen", _TS), ("first_at", _T),
                     ("node_names", _NAMES)),
}
FRAMES = ("findings", *FRAME_COLUMNS)  # the frames `Analysis.frames()` gives, in this order
TIMES = frozenset({"timestamp", "inferred_time", "envelope_time"})  # the findings' time columns


def frames(names: Sequence[str], findings: Iterable[Finding], summary: Summary, related: Sequence[RelatedEvent],
           links: dict[str | None, NodeFacts], texts: RuleTexts) -> dict[str, pd.DataFrame]:
    """The frames named (all of `FRAMES` when none), by name, in `FRAMES` order. `findings` is
    read once, and only for the findings, bundles and fingerprints frames; `texts`: the rules'
    remedies and references of its findings."""
    wanted = [n for n in FRAMES if n in names] if names else list(FRAMES)
    unknown = sorted(set(names) - set(FRAMES))
    if unknown:
        raise ValueError(f"no frame {', '.join(map(repr, unknown))}: the frames are {', '.join(FRAMES)}")
    fleet = FleetTally() if {"bundles", "fingerprints"} & set(wanted) else None
    out: dict[str, pd.DataFrame] = {}
    if "findings" in wanted:
        out["findings"] = findings_frame(findings, texts, fleet)
    elif fleet is not None:
        for f in findings:
            fleet.add(f)
    rows = {"related": lambda: _related_rows(summary, related),
            "incidents": lambda: _incident_rows(summary, links),
            "bursts": lambda: _burst_rows(summary),
            "nodes": lambda: _node_rows(summary, links),
            "bundles": lambda: _bundle_rows(fleet),
            "fingerprints": lambda: _fingerprint_rows(fleet)}
    for name in wanted:
        if name != "findings":
            out[name] = _small_frame(name, rows[name]())
    return out


def findings_frame(findings: Iterable[Finding], texts: RuleTexts, fleet: FleetTally | None = None) -> pd.DataFrame:
    """One row per finding, in report order, with the Parquet columns; `fleet`, when given, is
    fed every finding on the way (the bundles and fingerprints frames, in the same pass)."""
    pa = load_pyarrow()
    schema = arrow_schema()
    batches = [_findings_batch(pa, schema, chunk, texts) for chunk in _chunks(findings, fleet)]
    table = pa.Table.from_batches(batches, schema=_batch_schema(pa, schema))
    return _to_pandas(table)


def _chunks(findings: Iterable[Finding], fleet: FleetTally | None) -> Iterator[list[Finding]]:
    it = iter(findings)
    while chunk := list(islice(it, FRAME_ROWS)):
        if fleet is not None:
            for f in chunk:
                fleet.add(f)
        yield chunk


def _batch_schema(pa: Any, schema: Any) -> Any:
    """The findings' schema as the frame holds it: labels dictionary-encoded, times as UTC instants."""
    fields = []
    for f in schema:
        if f.name in TIMES:
            f = f.with_type(pa.timestamp("us", tz="UTC"))
        elif f.name in LABELS:
            f = f.with_type(pa.dictionary(pa.int32(), pa.string()))
        fields.append(f)
    return pa.schema(fields)


def _findings_batch(pa: Any, schema: Any, chunk: list[Finding], texts: RuleTexts) -> Any:
    cells = column_batch(chunk, texts)
    arrays = []
    for field in schema:
        array = pa.array(cells[field.name], type=field.type)
        if field.name in TIMES:
            array = _utc(pa, array)
        elif field.name in LABELS:
            array = array.dictionary_encode()
        arrays.append(array)
    return pa.RecordBatch.from_arrays(arrays, schema=_batch_schema(pa, schema))


def _utc(pa: Any, stamps: Any) -> Any:
    """ISO 8601 text to UTC instants, in Arrow: a stamp without a zone is read as UTC."""
    pc = pa.compute
    zoned = pc.match_substring_regex(stamps, r"(Z|[+-]\d\d:?\d\d)$")
    text = pc.if_else(pc.fill_null(zoned, True), stamps, pc.binary_join_element_wise(stamps, "Z", ""))
    text = pc.replace_substring(text, " ", "T", max_replacements=1)
    try:
        return pc.cast(text, pa.timestamp("us", tz="UTC"))
    except pa.ArrowInvalid:  # a stamp a log printed that is no real time (Feb 30, 25:61): null there
        return pc.cast(pa.array([s if s is None or _real(s) else None for s in text.to_pylist()], pa.string()),
                       pa.timestamp("us", tz="UTC"))


def _real(stamp: str) -> bool:
    """Whether an ISO 8601 stamp names a real moment (Arrow reads it)."""
    try:
        datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _to_pandas(table: Any) -> pd.DataFrame:
    """The one rule of dtypes (module docstring) from an Arrow table."""
    pa = load_pyarrow()

    def mapper(t: Any) -> Any:
        if pa.types.is_nested(t):  # lists, structs, maps stay Arrow arrays (no Python list per cell)
            return pd.ArrowDtype(t)
        if t == pa.int64():
            return pd.Int64Dtype()
        if t == pa.bool_():
            return pd.BooleanDtype()
        if t == pa.string():
            return pd.StringDtype("pyarrow")
        return None

    table = table.unify_dictionaries()
    df = table.to_pandas(types_mapper=mapper, split_blocks=True)
    for name in df.columns:
        if isinstance(df[name].dtype, pd.CategoricalDtype):
            categories = df[name].cat.categories
            df[name] = df[name].cat.reorder_categories(sorted(categories))
    return df


def _small_frame(name: str, rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    """A frame of `FRAME_COLUMNS[name]` from its rows (few: incidents, nodes, bundles, ...)."""
    pa = load_pyarrow()
    kinds = {_T: pa.string(), _I: pa.int64(), _B: pa.bool_(), _TS: pa.string(), _NAMES: pa.list_(pa.string())}
    spec = FRAME_COLUMNS[name]
    columns = list(zip(*rows, strict=True)) if rows else [()] * len(spec)
    arrays, fields = [], []
    for (column, kind), cells in zip(spec, columns, strict=True):
        array = pa.array(list(cells), type=kinds[kind])
        if kind == _TS:
            array = _utc(pa, array)
        elif column in LABELS:
            array = array.dictionary_encode()
        arrays.append(array)
        fields.append(pa.field(column, array.type))
    return _to_pandas(pa.Table.from_arrays(arrays, schema=pa.schema(fields)))


def _incident_of(summary: Summary, attribute: str) -> dict[int, int]:
    """Index (into `summary.bursts` or the related errors) -> the id of the incident holding it."""
    return {i: inc.id for inc in summary.incidents for i in getattr(inc, attribute)}


def _related_rows(summary: Summary, related: Sequence[RelatedEvent]) -> list[tuple[Any, ...]]:
    of = _incident_of(summary, "related")
    return [(e.source, e.line, e.timestamp, e.node, e.family, e.code, e.meaning, e.text, of.get(i))
            for i, e in enumerate(related)]


def _incident_rows(summary: Summary, links: dict[str | None, NodeFacts]) -> list[tuple[Any, ...]]:
    rows = []
    for inc in summary.incidents:
        lead = inc.lead
        facts = links.get(lead.node)
        rows.append((inc.id, getattr(inc, "state", None), inc.start, inc.end, list(inc.nodes), lead.node,
                     facts.role if facts else None, lead.family, lead.code, lead.meaning or None, lead.api,
                     lead.source, lead.line, lead.timestamp, lead.text, inc.action_word, inc.action, inc.story,
                     inc.findings, inc.severe, len(inc.bursts), len(inc.related), list(inc.fingerprints)))
    return rows


def _burst_rows(summary: Summary) -> list[tuple[Any, ...]]:
    of = _incident_of(summary, "bursts")
    return [(of.get(i), b.source, b.node, b.kind, b.pid, b.first_line, b.last_line, b.first_seen, b.last_seen,
             b.findings, b.severe, b.echoes, b.repeats, b.lead.line, b.lead.timestamp, b.lead.code, b.lead.name,
             b.lead.api, b.lead.api_evidence, b.lead.rule, b.lead.action, b.lead.recoverable, b.lead.text,
             len(b.causes), len(b.also)) for i, b in enumerate(summary.bursts)]


def _node_rows(summary: Summary, links: dict[str | None, NodeFacts]) -> list[tuple[Any, ...]]:
    rows = []
    for r in summary.nodes:
        kinds = dict(r.kinds)
        facts = links.get(r.node)
        rows.append((r.node, facts.role if facts else None, r.findings, r.unrecoverable, kinds.get("host", 0),
                     kinds.get("device", 0), kinds.get("application", 0), len(r.sources) + r.more_sources))
    return rows


def _bundle_rows(fleet: FleetTally | None) -> list[tuple[Any, ...]]:
    assert fleet is not None
    rows, _ = fleet.bundle_rows(limit=sys.maxsize)
    return [(r.bundle, r.findings, r.unrecoverable, r.failures, len(r.nodes) + r.more_nodes, r.first_seen,
             r.last_seen, list(r.nodes)) for r in rows]


def _fingerprint_rows(fleet: FleetTally | None) -> list[tuple[Any, ...]]:
    assert fleet is not None
    rows, _ = fleet.fingerprint_rows(limit=sys.maxsize)
    return [(r.fingerprint, r.code, r.name, r.api, r.rule, r.action, r.recoverable, r.generic, r.template,
             r.findings, r.bundles, r.nodes, r.first_seen, r.last_seen, r.first_at, list(r.node_names))
            for r in rows]


def frame_columns() -> dict[str, tuple[str, ...]]:
    """Each frame's columns, in order (what README's "Frames" table lists)."""
    return {"findings": COLUMNS} | {name: tuple(c for c, _ in spec) for name, spec in FRAME_COLUMNS.items()}
