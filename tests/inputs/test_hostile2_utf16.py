"""Issue #18, UTF-16: a lone surrogate (a Windows tool cut a string mid-pair) costs that code unit,
not the file: the planted lines before, on and after it are all found, with a note."""

from __future__ import annotations

import pytest
from planted import marks, planted, reasons, scan

LONE = {"high": b"\x00\xd8", "low": b"\x00\xdc"}  # one code unit each (little-endian), no partner


def _utf16(lines: list[bytes], bad_line: int, unit: bytes) -> bytes:
    out = bytearray(b"\xff\xfe")
    for n, text in enumerate(lines):
        body = text.decode().encode("utf-16-le")
        if n == bad_line:  # the bad unit sits in the middle of a code line, after its code
            cut = len(body) - 2
            body = body[:cut] + " ".encode("utf-16-le") + unit + "x".encode("utf-16-le") + body[cut:]
        out += body
    return bytes(out)


@pytest.mark.parametrize("kind", sorted(LONE))
@pytest.mark.parametrize("where", [0, 1, 12])  # in the first line (the sniffed head), the next, far on
def test_lone_surrogate_costs_one_unit(tmp_path, kind, where):
    lines = [planted(n) for n in range(1, 15)]
    log = tmp_path / "windows-tool.log"
    log.write_bytes(_utf16(lines, where, LONE[kind]))
    code, report, stderr = scan(log)
    assert marks(report) == list(range(1, 15)), (marks(report), stderr)
    assert code == 1  # findings reach --fail-on any
    assert report["inputs"]["skipped"] == []
    notes = reasons(report, "notes")
    assert any("UTF-16" in n and "1 " in n and "U+FFFD" in n for n in notes), notes
    bad = [f["text"] for f in report["findings"] if "\ufffd" in f["text"]]
    assert len(bad) == 1 and f"mark-{where + 1} \ufffdx" in bad[0], bad  # the unit is what is lost


def test_utf16_big_endian_lone_surrogate(tmp_path):
    text = b"".join(planted(n) for n in (1, 2, 3)).decode()
    body = bytearray(b"\xfe\xff" + text.encode("utf-16-be"))
    cut = 2 + 2 * (len(planted(1)) + 10)  # inside the second line
    body[cut:cut] = b"\xdb\xff"
    log = tmp_path / "be.log"
    log.write_bytes(bytes(body))
    code, report, stderr = scan(log)
    assert marks(report) == [1, 2, 3], stderr
    assert code == 1
