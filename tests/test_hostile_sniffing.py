"""Hostile input, sniffing: magic bytes choose a decoder only when it then succeeds, so a plain log
that starts like UTF-16 or bzip2 loses no line; UTF-16 followed by UTF-8 keeps both; a code cut by
a very long line's fragment boundary is still found."""

from __future__ import annotations

from hostile import line, numbers, scan_json


def test_plain_log_starting_with_ff_fe_loses_no_line(tmp_path):
    log = tmp_path / "starts-ff-fe.log"
    log.write_bytes(b"\xff\xfe" + b"".join(line(n) for n in range(1, 6)))
    code, report, _ = scan_json(log)
    assert code == 1
    assert numbers(report) == [1, 2, 3, 4, 5]


def test_plain_log_starting_with_bzh9_loses_no_line_and_warns(tmp_path):
    log = tmp_path / "starts-bzh9.log"
    log.write_bytes(b"BZh9" + b"".join(line(n) for n in range(1, 6)))
    code, report, stderr = scan_json(log)
    assert code == 1
    assert numbers(report) == [1, 2, 3, 4, 5]
    assert "starts like bzip2" in stderr


def test_utf16_then_utf8_keeps_both(tmp_path):
    log = tmp_path / "mixed.log"
    utf16 = ("\ufeff" + "".join(line(n).decode() for n in (1, 2, 3))).encode("utf-16-le")
    log.write_bytes(utf16 + b"".join(line(n) for n in (4, 5, 6)))
    code, report, _ = scan_json(log)
    assert code == 1
    assert numbers(report) == [1, 2, 3, 4, 5, 6]


def test_real_utf16_is_still_read(tmp_path):
    log = tmp_path / "windows.log"
    log.write_bytes(("\ufeff" + "".join(line(n).decode() for n in (1, 2))).encode("utf-16-le"))
    assert numbers(scan_json(log)[1]) == [1, 2]


def test_code_straddling_a_long_line_fragment_cut_is_found_once(tmp_path):
    # The scanner reads 8 MiB blocks and cuts a line longer than 4 MiB into fragments, carrying
    # the last 256 bytes over; put the code's digits across that cut, and around it.
    planted = b" PullKvBlocks failed, ret = 1343270913 line-7 "  # the digits are its only form
    digits = planted.index(b"1343270913")
    for across in (-20, -4, 0):
        log = tmp_path / f"long{across}.log"
        with open(log, "wb") as out:
            out.write(b"x" * ((8 << 20) - 256 + across - digits))
            out.write(planted)
            out.write(b"y" * (1 << 20) + b"\n")
        assert numbers(scan_json(log)[1]) == [7], across
