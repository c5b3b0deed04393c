"""`serial.indented` (the JSON report's head, SARIF) writes the text of
`json.JSONEncoder(indent=2, ensure_ascii=False)`, to the byte, on generated documents: with the C
encoder for flat containers and without it, and with what it leaves to the stdlib encoder."""

from __future__ import annotations

import enum
import json
from collections import OrderedDict, namedtuple

import pytest
from analyzer.core import serial
from analyzer.core.serial import indented

_stdlib = json.JSONEncoder(indent=2, ensure_ascii=False).iterencode


def _same(o: object) -> None:
    assert "".join(indented(o)) == "".join(_stdlib(o))


@pytest.fixture(params=["c", "python"])
def walk(request, monkeypatch):
    """Both ways a flat container is written: one C call, or item by item (no C encoder)."""
    if request.param == "python":
        monkeypatch.setattr(serial, "_make_flat", None)
        monkeypatch.setattr(serial, "_LEVELS", serial._Levels())
    return request.param


def test_generated_documents(walk) -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    floats = st.one_of(st.floats(), st.sampled_from([-0.0, 0.0, 1e16, 1e-7, 1.5, float("nan"), float("inf"),
                                                     float("-inf"), 2.0 ** 63, 5e-324, 1.7976931348623157e308]))
    text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12) | \
        st.sampled_from(["", "\n", "\x00\x1f\x7f\x9f", '"\\', "},\n  {", "\u2028\u202e", "中文", "\U0001f600"])
    ints = st.integers() | st.integers(min_value=-(2 ** 200), max_value=2 ** 200)
    scalars = st.one_of(st.none(), st.booleans(), ints, floats, text)
    keys = st.one_of(text, ints, floats, st.booleans(), st.none())
    documents = st.recursive(scalars, lambda kids: st.one_of(
        st.lists(kids, max_size=6), st.lists(kids, max_size=4).map(tuple),
        st.dictionaries(keys, kids, max_size=6)), max_leaves=40)

    @settings(max_examples=300, deadline=None)
    @given(documents)
    def check(o):
        _same(o)
        _same({"head": o, "more": [o, {"x": o}]})  # the same at other depths

    check()


class Level(enum.IntEnum):
    LOW = 1


class Name(str):
    pass


Pair = namedtuple("Pair", "a b")


def test_what_is_left_to_the_stdlib_encoder(walk) -> None:
    odd = {"ordered": OrderedDict([("b", [1, {"c": Pair(Level.LOW, Name("n\n"))}]), ("a", {})]),
           "enum": Level.LOW, Level.LOW: [Name("x"), Pair([], {})], Name("key"): OrderedDict(),
           "deep": [[[{"k": [OrderedDict(z=[1, 2])]}]]]}
    _same(odd)
    _same([odd, (odd,)])
    _same(OrderedDict(odd))


def test_the_same_errors(walk) -> None:
    loop: list = [1]
    loop.append({"again": loop})
    for bad, error in [(loop, ValueError), ({"x": {1, 2}}, TypeError), ({(1, 2): "tuple key"}, TypeError),
                       ({"x": [{"y": {(1,): 2}}]}, TypeError), ([object()], TypeError)]:
        with pytest.raises(error) as ours:
            "".join(indented(bad))
        with pytest.raises(error) as theirs:
            "".join(_stdlib(bad))
        assert str(ours.value) == str(theirs.value)


def test_a_long_head_is_written_in_chunks() -> None:
    head = {"summary": {"bursts": [{"n": i, "lines": [i, i]} for i in range(3000)]},
            "related": [{"line": i, "text": "x" * 100, "link": {}} for i in range(3000)]}
    chunks = list(indented(head))
    assert "".join(chunks) == "".join(_stdlib(head))
    assert len(chunks) > 6000 and max(map(len, chunks)) < 300


def test_long_flat_containers_are_written_in_runs(walk) -> None:
    head = {"links": {"listen": [f"10.0.{i % 256}.{i // 256}:26000" for i in range(10000)],
                      "ports": dict.fromkeys(range(5000), 1), "ids": tuple(range(9000))}}
    chunks = list(indented(head))
    assert "".join(chunks) == "".join(_stdlib(head))
    assert max(map(len, chunks)) < serial.FLAT_RUN * 40
