"""The one serialisation of a finding: its JSON shape, its JSON text, its columns, and back.

Used by the JSON and JSONL writers (`finding_line`), the Parquet and CSV writers (`COLUMNS`,
`value`), the store's readers and `merge` (`finding_of`). A field added to `Finding` is added here
once, and the tests that hold the fast encoder to `json.dumps` and rebuild findings from every
format show where it is missing.

JSON text:

`json.dumps(finding_dict(f), ensure_ascii=False)` costs ~12 us a finding, most of it building
the dict and walking it. Here each field is encoded straight from the record with the C string
encoder, and the long fields a storm repeats (remedy, references, causes) are encoded once per
distinct value. The bytes are the same as `json.dumps` gives (a test holds every finding of the
answer keys to that); and if `finding_dict` gains a field this module does not know, it
falls back to `json.dumps` rather than write something else.

orjson was measured and not used: it cannot print `json.dumps`'s `", "`/`": "` separators, so its
output would differ from every golden report, and re-spacing its output costs what it saves.
"""

from __future__ import annotations

import json
import marshal
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from itertools import chain, compress, islice
from typing import Any, cast

from .errors import InputError
from .records import NO_TEXT, Finding, RuleText, RuleTexts, shifted


def finding_dict(f: Finding, texts: RuleTexts) -> dict[str, Any]:
    """The JSON shape of a finding (stable key order); its rule's remedy and references from `texts`."""
    text = texts.of(f.rule)
    return {
        "source": f.source,
        "line": f.line,
        "timestamp": f.timestamp,
        "time_source": f.time_source,
        "inferred_time": f.time_hint,
        "code": f.code,
        "name": f.name,
        "known": f.known,
        "api": f.api,
        "api_evidence": f.api_evidence,
        "api_line": f.api_line,
        "recoverable": f.recoverable,
        "rule": f.rule,
        "fingerprint": f.fingerprint,
        "action": f.action,
        "remedy": text.remedy,
        "references": list(text.references),
        "form": f.form,
        "in_cluster_results": f.in_cluster_results,
        "bundle": f.bundle,
        "node": f.node,
        "pod": f.pod,
        "container": f.container,
        "stream": f.stream,
        "envelope": f.envelope,
        "envelope_time": f.envelope_time,
        "kind": f.kind,
        "device": f.device,
        "pid": f.pid,
        "tid": f.tid,
        "causes": [{"line": c[0], "family": c[1], "code": c[2], "meaning": c[3]} for c in f.causes],
        "link": dict(f.link),
        "text": f.text,
    }


_dumps = json.JSONEncoder(ensure_ascii=False).encode
_string: Callable[[str], str] = json.encoder.encode_basestring  # C, when built (ensure_ascii=False)


def _str(value: str | None) -> str:
    return "null" if value is None else _string(value)


def _int(value: int | None) -> str:
    return "null" if value is None else int.__repr__(value)


def _bool(value: bool | None) -> str:
    return "null" if value is None else ("true" if value else "false")


_CACHE: dict[Any, str] = {}
CACHE_SIZE = 4096


def _cached(value: Any) -> str:
    """`json.dumps` of a value a storm repeats (a remedy, a tuple of references or causes)."""
    found = _CACHE.get(value)
    if found is None:
        if len(_CACHE) >= CACHE_SIZE:
            _CACHE.clear()
        found = _CACHE[value] = _dumps(value if isinstance(value, str) else _plain(value))
    return found


def _plain(value: tuple) -> list:
    if value and isinstance(value[0], tuple):  # causes
        return [{"line": c[0], "family": c[1], "code": c[2], "meaning": c[3]} for c in value]
    return list(value)


def _fast(f: Finding, texts: RuleTexts) -> str:
    text = texts.of(f.rule)
    return (f'{{"source": {_string(f.source)}, "line": {int.__repr__(f.line)}, "timestamp": {_str(f.timestamp)}, '
            f'"time_source": {_str(f.time_source)}, "inferred_time": {_str(f.time_hint)}, '
            f'"code": {_string(f.code)}, "name": {_str(f.name)}, '
            f'"known": {_bool(f.known)}, "api": {_str(f.api)}, "api_evidence": {_str(f.api_evidence)}, '
            f'"api_line": {_int(f.api_line)}, "recoverable": {_bool(f.recoverable)}, "rule": {_string(f.rule)}, '
            f'"fingerprint": {_string(f.fingerprint)}, "action": {_string(f.action)}, '
            f'"remedy": {_cached(text.remedy)}, "references": {_cached(text.references)}, "form": {_string(f.form)}, '
            f'"in_cluster_results": {_bool(f.in_cluster_results)}, "bundle": {_str(f.bundle)}, '
            f'"node": {_str(f.node)}, "pod": {_str(f.pod)}, "container": {_str(f.container)}, '
            f'"stream": {_str(f.stream)}, "envelope": {_str(f.envelope)}, "envelope_time": {_str(f.envelope_time)}, '
            f'"kind": {_string(f.kind)}, "device": {_str(f.device)}, '
            f'"pid": {_str(f.pid)}, "tid": {_str(f.tid)}, "causes": {_cached(f.causes)}, "link": {_link(f.link)}, '
            f'"text": {_string(f.text)}}}')


def _link(link: tuple[tuple[str, str], ...]) -> str:
    """A finding's link facts as a JSON object (kinds are unique and sorted)."""
    return "{" + ", ".join(f"{_string(k)}: {_string(v)}" for k, v in link) + "}"


_FAST_KEYS = ["source", "line", "timestamp", "time_source", "inferred_time", "code", "name", "known", "api",
              "api_evidence", "api_line", "recoverable", "rule", "fingerprint", "action", "remedy", "references",
              "form", "in_cluster_results", "bundle", "node", "pod", "container", "stream", "envelope",
              "envelope_time", "kind", "device", "pid", "tid", "causes", "link", "text"]


def _slow(f: Finding, texts: RuleTexts) -> str:
    return _dumps(finding_dict(f, texts))


def _pick() -> Callable[[Finding, RuleTexts], str]:
    """The fast encoder while it writes what `finding_dict` holds, key for key; else `json.dumps`."""
    probe = Finding(source="s", line=1, timestamp=None, code="0x5010B001", name=None, api=None, api_evidence=None,
                    api_line=None, recoverable=None, rule="r", action="a", text="t", form="hex")
    texts = RuleTexts({"r": RuleText("m", ("ref",))})
    return (_fast if list(finding_dict(probe, texts)) == _FAST_KEYS and _fast(probe, texts) == _slow(probe, texts)
            else _slow)


finding_line = _pick()


NativeLines = Callable[..., list["str | None"]]  # (findings, rule texts, shift=0) -> their lines
Stored = Iterable[tuple[list[Any], int]]  # findings as a store holds them, and the lines to shift them by
NATIVE_BATCH = 1024  # findings per call of the compiled encoder
_RULE = Finding._fields.index("rule")


def finding_lines(findings: Iterable[Finding], texts: RuleTexts, native: NativeLines | None = None) -> Iterator[str]:
    """`finding_line` of each finding, in order (`finding_batches`, one line at a time)."""
    for batch in finding_batches(findings, texts, native):
        yield from batch


def finding_batches(findings: Iterable[Finding], texts: RuleTexts, native: NativeLines | None = None,
                    stored: Stored | None = None) -> Iterator[list[str]]:
    """`finding_line` of each finding, in order, a non-empty list at a time (a writer joins a list
    and writes it once). `native`: the compiled core's twin of `_fast` (`ddtriage_core.finding_lines`,
    a batch at a time; None for a finding it leaves to Python), used only while `_fast` is the
    encoder; it is given each rule's remedy and references as `_cached` encodes them, so both write
    the same bytes (tests/core/test_serial_native.py). `stored`: the same findings as the store
    holds them (`FindingStore.stored`: plain tuples, lines not yet shifted), which `native` reads
    with no Python work per finding; `findings` is then not read."""
    encode = finding_line
    if native is None or encode is not _fast:
        it = iter(findings)
        while batch := list(islice(it, NATIVE_BATCH)):
            yield [encode(f, texts) for f in batch]
        return
    if stored is None:
        it = iter(findings)
        stored = ((batch, 0) for batch in iter(lambda: list(islice(it, NATIVE_BATCH)), []))
    rules: dict[str, tuple[str, str]] = {}
    for batch, shift in stored:
        if not batch:
            continue
        for rule in {f[_RULE] for f in batch}.difference(rules):
            if rule.__class__ is str:
                text = texts.of(rule)
                rules[rule] = (_cached(text.remedy), _cached(text.references))
        lines = native(batch, rules, shift) if shift else native(batch, rules)
        if None in lines:  # Python's: as a `Finding`, shifted
            lines = [_fast(shifted(Finding._make(f), shift), texts) if line is None else line
                     for f, line in zip(batch, lines, strict=True)]
        yield cast("list[str]", lines)


ChunkRender = Callable[[bytes, int, str, int], "list[str] | None"]  # (spilled chunk, shift, separator, size) -> pieces
RENDER_AHEAD = 1  # spilled chunks rendered ahead per render thread (~5 MiB of JSON each)


def _read_back(item: list[Any] | bytes, shift: int) -> Iterator[tuple[list[Any], int]]:
    """A stored list, or a spilled chunk read back, as (findings, shift) lists of `NATIVE_BATCH`."""
    found: list[Any] = marshal.loads(item) if isinstance(item, bytes) else item
    for i in range(0, len(found), NATIVE_BATCH):
        yield found[i:i + NATIVE_BATCH], shift


def finding_texts(findings: Iterable[Finding], texts: RuleTexts, sep: str, native: NativeLines | None = None,
                  stored: Iterable[tuple[list[Any] | bytes, int]] | None = None,
                  chunks: Callable[[dict[str, tuple[str, str]]], ChunkRender] | None = None,
                  threads: int = 0) -> Iterator[str]:
    """`finding_batches`, each batch's lines joined by `sep` (a writer writes each once). `stored`
    may also hold spilled chunks as their bytes (`FindingStore.stored(spilled=True)`): with
    `chunks` (`ddtriage_core.ChunkLines`, built from every known rule's texts as `_cached` encodes
    them), each is rendered by the core without the GIL, as strings of `NATIVE_BATCH` lines, in
    this thread (`threads` 0) or in that many threads while this one writes, so a storm's
    findings never become Python objects here. A chunk the
    core leaves to Python (None: a finding `_fast` must write, a rule it does not know) is read
    back and written as `finding_batches` writes it. The text is the same either way."""
    if stored is None or chunks is None or native is None or finding_line is not _fast:
        plain = cast("Stored | None", stored)
        if plain is not None and native is not None:  # no renderer: spilled chunks read back here
            plain = (piece for f, shift in plain for piece in _read_back(f, shift))
        for batch in finding_batches(findings, texts, native, plain):
            yield sep.join(batch)
        return
    render = chunks({rule: (_cached(text.remedy), _cached(text.references)) for rule, text in texts.items()})

    def joined(item: list[Any] | bytes, shift: int, rendered: list[str] | None) -> Iterator[str]:
        if rendered is None:
            for batch in finding_batches((), texts, native, _read_back(item, shift)):
                yield sep.join(batch)
        else:
            yield from filter(None, rendered)

    items = iter(stored)
    for item, shift in items:  # here until a spilled chunk comes (runs in memory need no thread)
        if threads > 0 and item.__class__ is bytes:
            break
        yield from joined(item, shift, render(item, shift, sep, NATIVE_BATCH) if item.__class__ is bytes else None)
    else:
        return
    spilled = (item, shift)
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    ahead: deque[tuple[list[Any] | bytes, int, Future[list[str] | None] | None]] = deque()
    with ThreadPoolExecutor(max_workers=threads, thread_name_prefix="ddtriage-json") as pool:
        for chunk, moved in chain([spilled], items):
            rendered = pool.submit(render, chunk, moved, sep, NATIVE_BATCH) if chunk.__class__ is bytes else None
            ahead.append((chunk, moved, rendered))
            while len(ahead) > threads * RENDER_AHEAD:
                done, at, future = ahead.popleft()
                yield from joined(done, at, None if future is None else future.result())
        while ahead:
            done, at, future = ahead.popleft()
            yield from joined(done, at, None if future is None else future.result())


# --- indented JSON (the JSON report's head, SARIF) ---------------------------------------------------
#
# `json.JSONEncoder(indent=2)` is the pure-Python encoder (CPython's C encoder takes no indent), a
# generator per container and several chunks per item. `indented` writes the same text: a
# container whose values are all scalars (or empty containers) is encoded by the C encoder in one
# call, its item separator being the newline and indent of its level, so only the containers that
# hold other containers are walked here. Anything the walk does not know exactly (a subclass of
# dict, list, str, ...) is left to the stdlib encoder, re-indented to its level (`ensure_ascii=False`
# output holds no newline but its own: a newline in a string is written `\n`).

_INDENT = "  "
_SCALARS = frozenset({str, int, float, bool, type(None)})
_CONTAINERS = frozenset({dict, list, tuple})
_LEAFISH = _SCALARS | _CONTAINERS
_is_container = _CONTAINERS.__contains__
_INF = float("inf")
_stdlib_indented = json.JSONEncoder(indent=len(_INDENT), ensure_ascii=False).iterencode
_make_flat: Callable[..., Any] | None = getattr(json.encoder, "c_make_encoder", None)  # None: not built


def _no_default(o: Any) -> Any:
    raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")


def _floatstr(o: float) -> str:
    """`float.__repr__`, NaN and the infinities as `json` writes them (allow_nan)."""
    if o != o:
        return "NaN"
    if o == _INF:
        return "Infinity"
    if o == -_INF:
        return "-Infinity"
    return float.__repr__(o)


# The scalars by exact type (a subclass goes to the stdlib encoder); all but floats C calls.
_LEAF: dict[type, Callable[[Any], str]] = {
    str: _string, int: int.__repr__, float: _floatstr,
    bool: ("false", "true").__getitem__, type(None): {None: "null"}.__getitem__,
}


class _Level:
    """What the items at one depth are written with: the newline and indent before the first, the
    separator between two, and the C encoder of a flat container with that separator."""

    __slots__ = ("flat", "newline", "sep")

    def __init__(self, depth: int) -> None:
        self.newline = "\n" + _INDENT * depth
        self.sep = "," + self.newline
        self.flat = _make_flat(None, _no_default, _string, None, ": ", self.sep, False, False, True) \
            if _make_flat is not None else None


class _Levels(dict[int, _Level]):
    def __missing__(self, depth: int) -> _Level:
        level = self[depth] = _Level(depth)
        return level


_LEVELS = _Levels()


def _key(key: Any) -> str:
    """A dict key as `json` writes it: int, float, bool and None keys as strings."""
    if isinstance(key, str):
        return _string(key)
    if isinstance(key, float):
        return _string(_floatstr(key))
    if key is True or key is False or key is None:
        return _string(_LEAF[type(key)](key))
    if isinstance(key, int):
        return _string(int.__repr__(key))
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def _flat(values: Any) -> bool:
    """Whether the C encoder writes these values as the indented encoder does: scalars of the
    exact types, and containers only when empty (`[]`, `{}` at any depth)."""
    types = set(map(type, values))
    if types <= _SCALARS:
        return True
    return types <= _LEAFISH and not any(compress(values, map(_is_container, map(type, values))))


def _value(o: Any, depth: int, markers: set[int]) -> str:
    """The indented JSON of `o` at `depth` (the indent of its closing bracket)."""
    kind = type(o)
    leaf = _LEAF.get(kind)
    if leaf is not None:
        return leaf(o)
    if kind not in _CONTAINERS:  # anything else as the stdlib writes it (or refuses it), re-indented
        return "".join(_stdlib_indented(o)).replace("\n", _LEVELS[depth].newline)
    if not o:
        return "{}" if kind is dict else "[]"
    inner = _LEVELS[depth + 1]
    if kind is dict:
        return f"{{{inner.newline}{_dict_items(o, depth + 1, inner, markers)}{_LEVELS[depth].newline}}}"
    return f"[{inner.newline}{_list_items(o, depth + 1, inner, markers)}{_LEVELS[depth].newline}]"


def _dict_items(o: dict, depth: int, inner: _Level, markers: set[int]) -> str:
    """The items of a non-empty dict at `depth`, between its braces."""
    if inner.flat is not None and _flat(o.values()):
        return "".join(inner.flat(o, 0))[1:-1]
    _enter(o, markers)
    get = _LEAF.get
    text = inner.sep.join([f"{_string(k) if type(k) is str else _key(k)}: "
                           f"{leaf(v) if (leaf := get(type(v))) is not None else _value(v, depth, markers)}"
                           for k, v in o.items()])
    markers.discard(id(o))
    return text


def _list_items(o: list | tuple, depth: int, inner: _Level, markers: set[int]) -> str:
    """The items of a non-empty list or tuple at `depth`, between its brackets."""
    if inner.flat is not None and _flat(o):
        return "".join(inner.flat(o, 0))[1:-1]
    _enter(o, markers)
    get = _LEAF.get
    text = inner.sep.join([leaf(v) if (leaf := get(type(v))) is not None else _value(v, depth, markers)
                           for v in o])
    markers.discard(id(o))
    return text


def _enter(o: Any, markers: set[int]) -> None:
    """`o` is being written: met again inside itself, it is a cycle (as `json` says it)."""
    if id(o) in markers:
        raise ValueError("Circular reference detected")
    markers.add(id(o))


STREAM_ITEMS = 32  # a container of more items than this (or of the top two levels) is written in chunks
FLAT_RUN = 4096  # and a flat one of more items than this, in runs of this many items (dicts: item by item)


def indented(o: Any) -> Iterator[str]:
    """The text of `json.JSONEncoder(indent=2, ensure_ascii=False).iterencode(o)`, the same to the
    byte (and the same errors), in chunks: one per item of the top two levels' containers and of
    every longer one (`STREAM_ITEMS`; `FLAT_RUN` scalars of a list of scalars), so a fleet's head
    (~40 MiB) is never one string."""
    return _chunks(o, 0, set())


def _chunks(o: Any, depth: int, markers: set[int]) -> Iterator[str]:
    kind = type(o)
    inner = _LEVELS[depth + 1]
    keyed = kind is dict
    flat = inner.flat is not None and len(o) <= FLAT_RUN if kind in _CONTAINERS else False
    if kind not in _CONTAINERS or not o or (flat and _flat(o.values() if keyed else o)):
        yield _value(o, depth, markers)
        return
    if not keyed and inner.flat is not None and _flat(o):  # a long flat list: `FLAT_RUN` items a C call
        before = "[" + inner.newline
        for start in range(0, len(o), FLAT_RUN):
            yield before + "".join(inner.flat(o[start:start + FLAT_RUN], 0))[1:-1]
            before = inner.sep
        yield _LEVELS[depth].newline + "]"
        return
    _enter(o, markers)
    get, deeper, top = _LEAF.get, depth + 1, depth < 1
    before = ("{" if keyed else "[") + inner.newline
    for k, v in (o.items() if keyed else enumerate(o)):  # a list item's index is not written
        if keyed:
            before += f"{_string(k) if type(k) is str else _key(k)}: "
        if (leaf := get(type(v))) is not None:
            yield before + leaf(v)
        elif type(v) in _CONTAINERS and (top or len(v) > STREAM_ITEMS):
            yield before
            yield from _chunks(v, deeper, markers)
        else:
            yield before + _value(v, deeper, markers)
        before = inner.sep
    markers.discard(id(o))
    yield _LEVELS[depth].newline + ("}" if keyed else "]")


# --- the columnar shape (Parquet, CSV, merge): the columns fleet tables are queried by come first ---
KEY_COLUMNS = ("bundle", "node", "pod", "kind", "device", "pid", "code", "name", "api", "action", "rule",
               "recoverable", "fingerprint", "timestamp", "source", "line")
_COLUMN = {"time_hint": "inferred_time"}  # column (JSON) name of a field, where they differ
_FIELD = {c: f for f, c in _COLUMN.items()}
_INTERNAL = {"year_guessed"}  # settled by the scan; not part of a report
_RULE_TEXT = ("remedy", "references")  # looked up by the finding's rule (`RuleTexts`), not held by it
# Everything else a report holds of a finding, so that a finding can be rebuilt: its fields in
# order, with its rule's texts where a finding once held them (the columns do not move).
REST_COLUMNS = ("api_evidence", "api_line", "remedy", "text", "form", "tid", "in_cluster_results", "known",
                "generic", "references", "causes", "inferred_time", "container", "stream", "envelope",
                "envelope_time", "time_source", "link")
COLUMNS = KEY_COLUMNS + REST_COLUMNS


def value(f: Finding, column: str, texts: RuleTexts) -> Any:
    """The cell of `column` for finding `f` (its rule's texts from `texts`)."""
    if column == "remedy":
        return texts.remedy(f.rule)
    if column == "references":
        return list(texts.of(f.rule).references)
    if column == "causes":
        return [{"line": c[0], "family": c[1], "code": c[2], "meaning": c[3]} for c in f.causes]
    if column == "link":  # (kind, value) pairs: a map in Parquet
        return list(f.link)
    return getattr(f, _FIELD.get(column, column))


_POSITION = {name: i for i, name in enumerate(Finding._fields)}


def column_batch(findings: list[Finding], texts: RuleTexts, columns: tuple[str, ...] = COLUMNS) -> dict[str, list[Any]]:
    """The cells of `columns` for each of `findings`, column by column (`value` of each finding,
    transposed at once: what a Parquet row group or a frame's row group is built from; the rules'
    remedies and references from `texts`). The list-valued cells a storm repeats (references,
    causes, link facts) are converted once per distinct value and shared."""
    if not findings:
        return {c: [] for c in columns}
    fields = list(zip(*findings, strict=True))
    rules = fields[_POSITION["rule"]]
    out: dict[str, list[Any]] = {}
    for column in columns:
        if column in _RULE_TEXT:
            by_rule: dict[str, Any] = {}
            out[column] = [by_rule[r] if r in by_rule else by_rule.setdefault(r, _rule_cell(texts.of(r), column))
                           for r in rules]
            continue
        cells = fields[_POSITION[_FIELD.get(column, column)]]
        convert = _NESTED.get(column)
        if convert is None:
            out[column] = list(cells)
            continue
        seen: dict[Any, Any] = {}
        out[column] = [seen[c] if c in seen else seen.setdefault(c, convert(c)) for c in cells]
    return out


def _rule_cell(text: RuleText, column: str) -> Any:
    return text.remedy if column == "remedy" else list(text.references)


_NESTED: dict[str, Callable[[Any], Any]] = {
    "causes": lambda cs: [{"line": c[0], "family": c[1], "code": c[2], "meaning": c[3]} for c in cs],
    "link": list,  # (kind, value) pairs: a map in Parquet
}


def finding_of(row: dict[str, Any], generic: Callable[[str], bool] | None = None,
               texts: RuleTexts | None = None) -> Finding:
    """The finding a row (its JSON shape, or a full row of `COLUMNS`) was written from; keys that
    are no finding field (a baseline mark) are left out. `generic` (not in a report) tells from
    the code whether the catalog holds it generic. `texts` learns the remedy of a rule it does
    not know from the row (a user rule of the scan that wrote it)."""
    fields = {_FIELD.get(k, k): v for k, v in row.items() if _FIELD.get(k, k) in _FIELDS}
    for name in _SHARED:  # one string per distinct value, as the engine shares them, not one per row
        if isinstance(fields.get(name), str):
            fields[name] = sys.intern(fields[name])
    fields["causes"] = tuple((c["line"], c["family"], c["code"], c["meaning"]) for c in row.get("causes") or ())
    link = row.get("link") or ()
    fields["link"] = tuple(sorted((dict(link) if not isinstance(link, dict) else link).items()))
    if generic is not None:
        fields["generic"] = generic(fields["code"])
    if texts is not None and fields["rule"] not in texts:
        texts.learn(fields["rule"], rule_text_of(row))
    return Finding(**fields)


_FIELDS = set(Finding._fields)
_SHARED = ("source", "bundle", "node", "kind", "code", "name", "api", "api_evidence", "rule", "action",
           "form", "fingerprint", "pid", "tid")


def rule_text_of(row: dict[str, Any]) -> RuleText:
    """The remedy and references a row was written with (what a merge learns of a rule it does not know)."""
    remedy = row.get("remedy")
    if not isinstance(remedy, str):
        return NO_TEXT
    return RuleText(remedy, tuple(row.get("references") or ()))


# --- Parquet ---------------------------------------------------------------------------------------

REPORT_VERSION = 1  # the shape of a JSON or Parquet report (its `version`); a change is documented
PARQUET_METADATA_KEY = b"ddtriage"  # the report's head (inputs, summary, related, links) as JSON


def parquet_head(handle: Any) -> bytes | None:
    """The report head of an open `pyarrow.parquet.ParquetFile`: its key-value metadata, where
    reports of every version hold it (older ones in the Arrow schema's metadata too)."""
    return (handle.metadata.metadata or {}).get(PARQUET_METADATA_KEY)


def load_pyarrow() -> Any:
    """pyarrow with its Parquet module, or an InputError that says how to install it."""
    # Arrow's own allocators keep what they freed: with the system allocator a merge of many
    # parts stays ~100 MiB lower at its peak. Set before the import too (unless the user chose),
    # as what the Parquet reader allocates on its own goes to the pool chosen then (~14 MiB more).
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    try:
        import pyarrow
        import pyarrow.parquet  # noqa: F401 - loads the submodule
    except ImportError:
        raise InputError("--format parquet needs pyarrow: pip install 'ddtriage[fleet]'") from None
    pyarrow.set_memory_pool(pyarrow.system_memory_pool())
    return pyarrow


def arrow_schema() -> Any:
    """The Arrow schema of a findings table (`COLUMNS`): the Parquet report's, and the findings frame's."""
    pa = load_pyarrow()
    text, flag, number = pa.string(), pa.bool_(), pa.int64()
    cause = pa.struct([("line", number), ("family", text), ("code", text), ("meaning", text)])
    types = {"recoverable": flag, "line": number, "api_line": number, "known": flag, "generic": flag,
             "in_cluster_results": flag, "references": pa.list_(text),
             "causes": pa.list_(cause), "link": pa.map_(text, text)}
    return pa.schema([(c, types.get(c, text)) for c in COLUMNS])
