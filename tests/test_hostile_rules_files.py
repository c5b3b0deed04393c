"""Hostile input, rules files: a rules directory may come with a ticket too. Loading one is bounded:
size limit, no aliases (billion laughs), bounded nesting, no tags, a FIFO refused; each failure is
one line naming the file, exit 2, fast."""

from __future__ import annotations

import os
import time

import pytest

from hostile import FINDING, ddtriage, one_line_error


def laughs(levels: int) -> str:
    """A "billion laughs": each level a list of nine aliases of the one before (9**levels items)."""
    out = ['l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, levels + 1):
        out.append(f"l{i}: &l{i} [" + ",".join([f"*l{i - 1}"] * 9) + "]")
    return "\n".join(out) + "\n"


CASES = {
    "billion laughs": (laughs(6), "aliases (*name) are not allowed"),
    "nested 3000 deep (block)": ("rules:\n  " + "- " * 3000 + "x\n", "nested deeper than 64 levels"),
    "nested 3000 deep (mappings)": ("rules: " + "{a: " * 3000 + "1" + "}" * 3000 + "\n", "nested deeper than 64 levels"),
    "nested 3000 deep (flow)": ("rules: " + "[" * 3000 + "]" * 3000 + "\n", "nest"),  # libyaml or ours
    "a tag": ("rules: !!binary aGVsbG8=\n", "tags (tag:yaml.org,2002:binary) are not allowed"),
    "a local tag": ("rules:\n  - !rule {id: x}\n", "tags (!rule) are not allowed"),
    "five megabytes": (("#" + "x" * 99 + "\n") * 50_000 + "rules: []\n", "larger than 4 MiB"),
}


@pytest.mark.parametrize(("text", "reason"), CASES.values(), ids=CASES.keys())
def test_hostile_rules_file_is_one_line_error(tmp_path, text, reason):
    (tmp_path / "rules").mkdir()
    (tmp_path / "rules" / "evil.yaml").write_text(text)
    (tmp_path / "app.log").write_text(FINDING + "\n")
    start = time.perf_counter()
    result = ddtriage("scan", tmp_path / "app.log", "--rules", tmp_path / "rules", timeout=30)
    assert time.perf_counter() - start < 10
    assert result.returncode == 2
    error = one_line_error(result.stderr)
    assert "evil.yaml" in error and reason in error, error


def test_rules_file_that_is_a_fifo_is_refused(tmp_path):
    (tmp_path / "rules").mkdir()
    os.mkfifo(tmp_path / "rules" / "pipe.yaml")  # nobody writes: reading it would block forever
    result = ddtriage("rules", "check", tmp_path / "rules", timeout=20)
    assert result.returncode == 2
    assert "pipe.yaml: not a regular file" in one_line_error(result.stderr)
