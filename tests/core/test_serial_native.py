"""Stage: core (serial). The compiled core's finding encoder (`ddtriage_core.finding_lines`) writes
every finding's JSON line byte for byte as `serial._fast` does, and leaves to Python what it does
not know exactly (a lone surrogate, an int past 64 bits, a subclass, an unknown rule)."""

import json
import marshal

import pytest
from analyzer.core import serial
from analyzer.core.records import Finding, RuleText, RuleTexts, shifted
from hypothesis import given, settings
from hypothesis import strategies as st

core = pytest.importorskip("ddtriage_core")

TEXTS = RuleTexts({"r1": RuleText("Relink: \"quoted\"\n\u4e2d\u6587", ("https://x/a", "b\\c")), "r2": RuleText("", ())})

# any code point, lone surrogates and C0 controls included; some past 64 characters, so that the
# core's escaping meets a clean 32-byte run, a run with something to escape and a short tail
_text = st.text(max_size=40) | st.text(alphabet=st.sampled_from('aaaaaaaaaaaaaaaab"\\\n\x01\u00e9\u4e2d'), min_size=30, max_size=90)
_opt = st.none() | _text
_int = st.integers(-(1 << 70), 1 << 70)  # past 64 bits too: Python's to write


@st.composite
def findings(draw):
    return Finding(
        source=draw(_text), line=draw(_int), timestamp=draw(_opt), code=draw(_text), name=draw(_opt),
        api=draw(_opt), api_evidence=draw(_opt), api_line=draw(st.none() | _int),
        recoverable=draw(st.sampled_from([None, True, False])), rule=draw(st.sampled_from(["r1", "r2", "r3"])),
        action=draw(_text), text=draw(_text), form=draw(_text), pid=draw(_opt), tid=draw(_opt),
        in_cluster_results=draw(st.booleans()), known=draw(st.booleans()), node=draw(_opt), kind=draw(_text),
        device=draw(_opt), causes=tuple(draw(st.lists(st.tuples(_int, _text, _text, _text), max_size=3))),
        time_hint=draw(_opt), fingerprint=draw(_text), bundle=draw(_opt), pod=draw(_opt), container=draw(_opt),
        stream=draw(_opt), envelope=draw(_opt), envelope_time=draw(_opt), time_source=draw(_opt),
        link=tuple(draw(st.lists(st.tuples(_text, _text), max_size=3))))


@settings(max_examples=200, deadline=None)
@given(st.lists(findings(), max_size=8))
def test_native_lines_equal_the_python_encoder(batch):
    assert serial.finding_line is serial._fast  # the encoder the native one twins
    plain = list(serial.finding_lines(batch, TEXTS))
    assert plain == [serial._fast(f, TEXTS) for f in batch]
    assert list(serial.finding_lines(batch, TEXTS, core.finding_lines)) == plain
    for line, f in zip(plain, batch, strict=True):
        if not any(0xD800 <= ord(c) <= 0xDFFF for c in line):
            assert json.loads(line)["line"] == f.line


def test_native_answers_ordinary_findings_itself():
    """Not a test that Python passes on its own: the core writes these lines, and leaves the odd ones."""
    f = Finding(source="plog/plog-1.log", line=12, timestamp="2025-11-12T03:40:05.101002", code="0x5010B001",
                name="LLM_WAIT_PROC_TIMEOUT", api="PullKvBlocks", api_evidence="func", api_line=11, recoverable=True,
                rule="r1", action="retry", text='ErrorNo: 1343270913 "x"\t\x01 \u00e9', form="plog_errorno",
                pid="5569", causes=((10, "runtime", "507046", "m"),), link=(("req_id", "7"), ("remote_addr", "a")))
    rules = {"r1": (serial._cached(TEXTS.of("r1").remedy), serial._cached(TEXTS.of("r1").references))}
    odd = [f._replace(text="\ud800"), f._replace(line=1 << 64), f._replace(rule="r9"), f._replace(recoverable=1)]
    lines = core.finding_lines([f, *odd], rules)
    assert lines[0] == serial._fast(f, TEXTS)
    assert lines[1:] == [None, None, None, None]


def test_batches_are_the_lines_in_lists_of_native_batch(monkeypatch):
    """A writer joins each list: the lists hold every line once, in order, the core's and Python's."""
    monkeypatch.setattr(serial, "NATIVE_BATCH", 3)
    f = Finding(source="a.log", line=1, timestamp=None, code="0x5010B001", name=None, api=None, api_evidence=None,
                api_line=None, recoverable=None, rule="r1", action="retry", text="t", form="hex")
    batch = [f._replace(line=n, text="\ud800" if n % 4 == 0 else "t") for n in range(1, 9)]
    for native in (None, core.finding_lines):
        lists = list(serial.finding_batches(batch, TEXTS, native))
        assert [len(x) for x in lists] == [3, 3, 2]
        assert sum(lists, []) == [serial._fast(f, TEXTS) for f in batch]


@settings(max_examples=200, deadline=None)
@given(st.lists(findings(), max_size=8), st.integers(-(1 << 40), 1 << 40))
def test_native_lines_of_stored_tuples_are_the_shifted_findings_lines(batch, shift):
    """A store's read-back tuples and their range's shift (`FindingStore.stored`): the lines of the
    findings `records.shifted` gives, by the core (lines past 64 bits left to Python) and by Python."""
    expected = [serial._fast(shifted(f, shift), TEXTS) for f in batch]
    stored = [(list(map(tuple, batch[:3])), shift), ([], shift), (list(map(tuple, batch[3:])), shift)]
    for native in (None, core.finding_lines):
        given_stored = stored if native else None  # Python's encoder reads the findings themselves
        findings = [shifted(f, shift) for f in batch]
        assert sum(serial.finding_batches(findings, TEXTS, native, given_stored), []) == expected


def _chunks(rules):
    return core.ChunkLines(rules).render


@settings(max_examples=80, deadline=None)
@given(st.lists(st.lists(findings(), max_size=6), max_size=4), st.integers(-(1 << 40), 1 << 40),
       st.sampled_from([0, 1, 2]), st.sampled_from(["\n", ",\n    "]), st.sampled_from([2, 1024]))
def test_spilled_chunks_rendered_by_the_core_are_the_shifted_findings_lines(chunks, shift, threads, sep, size):
    """A store's spilled chunks handed over as their marshalled bytes (`FindingStore.stored(spilled=True)`),
    among in-memory lists: the text is every finding's line, shifted, joined by `sep`, as Python
    writes it, in pieces of at most `NATIVE_BATCH` lines; a chunk the core leaves to Python (a lone
    surrogate, an int past 64 bits, a rule it does not know) is read back and written by Python.
    In threads or not."""
    stored = [(marshal.dumps(list(map(tuple, c))) if k % 2 == 0 else c, shift) for k, c in enumerate(chunks)]
    found = [shifted(f, shift) for c in chunks for f in c]
    batch, serial.NATIVE_BATCH = serial.NATIVE_BATCH, size
    try:
        pieces = list(serial.finding_texts(found, TEXTS, sep, core.finding_lines, stored, _chunks, threads))
    finally:
        serial.NATIVE_BATCH = batch
    assert sep.join(t for t in pieces if t) == sep.join(serial._fast(f, TEXTS) for f in found)
    if sep == "\n":  # a JSON line holds no newline
        assert all(0 < p.count("\n") + 1 <= size for p in pieces)


def test_the_core_renders_an_ordinary_spilled_chunk_itself():
    """Not a test Python passes on its own: the core answers a chunk of plain findings (with marshal's
    back-references, small tuples and longs), and refuses one that holds what Python must write."""
    f = Finding(source="plog/plog-1.log", line=12, timestamp="2025-11-12T03:40:05.101002", code="0x5010B001",
                name="LLM_WAIT_PROC_TIMEOUT", api="PullKvBlocks", api_evidence="func", api_line=11, recoverable=True,
                rule="r1", action="retry", text='ErrorNo: 1343270913 "x"\t\x01 \u00e9\u4e2d', form="plog_errorno",
                pid="5569", causes=((10, "runtime", "507046", "m"),), link=(("req_id", "7"), ("remote_addr", "a")))
    batch = [f, f._replace(line=1 << 40, api_line=-(1 << 35)), f._replace(line=3, causes=(), link=())]
    rules = {r: (serial._cached(t.remedy), serial._cached(t.references)) for r, t in TEXTS.items()}
    render = core.ChunkLines(rules).render
    data = marshal.dumps([tuple(x) for x in batch])
    lines = [serial._fast(shifted(x, 5), TEXTS) for x in batch]
    assert render(data, 5, "\n", 1024) == ["\n".join(lines)]
    assert render(data, 5, ", ", 2) == [", ".join(lines[:2]), lines[2]]  # pieces of at most `size` lines
    assert render(data, 5, "\n", 0) == lines
    assert render(marshal.dumps([]), 0, "\n", 1024) == []
    for odd in (f._replace(text="\ud800"), f._replace(line=1 << 64), f._replace(rule="r9"),
                f._replace(recoverable=1), f._replace(causes=[(1, "a", "b", "c")]), f._replace(line=2.0)):
        assert render(marshal.dumps([tuple(f), tuple(odd)]), 0, "\n", 1024) is None
    assert render(data[:-1], 0, "\n", 1024) is None  # cut
    assert render(data + b"N", 0, "\n", 1024) is None  # trailing bytes
    assert render(marshal.dumps((tuple(f),)), 0, "\n", 1024) is None  # not a list
