"""Hostile input, output side: the report never lands on an input, is never half-written, and no
name or text from a bundle can drive the terminal or inject Markdown/HTML.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import tarfile

import pytest

from hostile import ESCAPES, FINDING, ROOT, one_line_error
from hostile import run_cli as ddtriage

FORMATS = ["text", "json", "jsonl", "markdown", "sarif", "junit", "github", "gitlab"]


@pytest.fixture
def logs(tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    (folder / "app.log").write_text(FINDING + "\n")
    return folder


def test_output_naming_an_input_is_refused(logs):
    log = logs / "app.log"
    before = log.read_bytes()
    result = ddtriage("scan", log, "--output", log)
    assert result.returncode == 2
    assert "is the input" in one_line_error(result.stderr)
    assert log.read_bytes() == before


def test_output_reaching_an_input_through_a_link_is_refused(logs, tmp_path):
    (tmp_path / "via-symlink.txt").symlink_to(logs / "app.log")
    os.link(logs / "app.log", tmp_path / "via-hardlink.txt")
    for out in ("via-symlink.txt", "via-hardlink.txt"):
        result = ddtriage("scan", logs / "app.log", "-o", tmp_path / out)
        assert result.returncode == 2, out
        assert "is the input" in one_line_error(result.stderr), out
    assert (logs / "app.log").read_text() == FINDING + "\n"


def test_output_inside_a_scanned_folder_is_written_and_left_out(logs):
    out = logs / "sub" / "report.md"
    out.parent.mkdir()
    assert ddtriage("scan", logs, "-o", out).returncode == 1  # issue #18: written, not refused
    assert out.read_text().startswith("# ddtriage report")
    assert ddtriage("scan", logs, "-o", out, "--exclude", "report.md").returncode == 1
    assert out.read_text().startswith("# ddtriage report")


HALF = ("import sys; import analyzer.writers.json_report as j\n"
        "def half(analysis, out):\n"
        "    out.write('{\"half\": ')\n"
        "    raise RuntimeError('disk full, say')\n"
        "j.write = half\n"
        "from analyzer.cli import main; main()\n")


def test_a_failed_write_leaves_the_old_report_untouched(logs, tmp_path):
    out = tmp_path / "report.json"
    out.write_text("the previous report\n")
    result = subprocess.run([sys.executable, "-c", HALF, "scan", str(logs), "--format", "json", "-o", str(out)],
                            capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=60)
    assert result.returncode == 2
    assert out.read_text() == "the previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["logs", "report.json"]  # no temporary file left


HOSTILE_NAMES = [
    "title-\x1b]0;pwned\x07.log",
    "clear-\x1b[2J.log",
    "cr-\rFAKE.log",
    "csi-\x9b31m.log",
    "bidi-\u202egol.exe.log",
    "md-<img src=x onerror=alert(1)>.log",
    "row-| x | y |.log",
    "link-[click](javascript:alert(1)).log",
    "tick-`code`.log",
]


@pytest.fixture
def hostile_bundle(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    for name in HOSTILE_NAMES:
        (folder / name).write_text(FINDING + "\x1b[31m \x9b\u202e\n")
    buf = io.BytesIO()
    gbk = "节点-1/应用.log".encode("gbk").decode("utf-8", "surrogateescape")  # a name that is not UTF-8
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT, errors="surrogateescape") as tar:
        for name in ["ok.log", *HOSTILE_NAMES, gbk]:
            data = (FINDING + "\n").encode()
            info = tarfile.TarInfo(name if "\r" not in name else name.replace("\r", "\n"))
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    raw = bytearray(buf.getvalue())
    raw[512 * 3: 512 * 3 + 512] = b"\xff" * 512  # a corrupt block before the later members
    (folder / "member-names.tar").write_bytes(bytes(raw))
    return folder


@pytest.mark.parametrize("fmt", FORMATS)
def test_no_escape_sequence_reaches_the_terminal_or_the_report(hostile_bundle, fmt):
    result = ddtriage("scan", hostile_bundle, "--format", fmt)
    assert result.returncode == 1, result.stderr
    for stream in (result.stdout, result.stderr):
        text = stream.decode("utf-8")  # valid UTF-8, whatever the names' bytes
        for bad in ESCAPES + ("\r",):
            assert bad not in text, (bad, text[:2000])
    if fmt in ("json", "sarif", "gitlab"):
        json.loads(result.stdout)  # still valid
    if fmt == "jsonl":  # each line valid, and the text as the log had it
        texts = [json.loads(line)["text"] for line in result.stdout.decode().splitlines()]
        assert texts and any(t.endswith("\x9b\u202e") for t in texts)  # (colour codes are dropped on reading)
    if fmt == "markdown":
        outside_code = re.sub(r"`[^`\n]*`", "", result.stdout.decode())  # a code span shows HTML as text
        assert "<img" not in outside_code
        assert not re.search(r"(?<!\\)\]\(javascript", outside_code)  # `\](` shows as text, links nothing
        rows = [x for x in result.stdout.decode().splitlines() if x.startswith("| `")]
        # six cells (related errors) or eight (findings, with rule and fingerprint), no injected ones
        assert all(len(re.split(r"(?<!\\)\|", x)) in (8, 10) for x in rows)


def test_warnings_on_stderr_are_escaped(tmp_path):
    folder = tmp_path / "bundle"
    folder.mkdir()
    (folder / "broken-\x1b[2J-\u202e.gz").write_bytes(b"\x1f\x8b\x08\x00junk")
    (folder / "app.log").write_text(FINDING + "\n")
    result = ddtriage("scan", folder)
    assert b"warning" in result.stderr
    assert not any(bad.encode() in result.stderr for bad in ESCAPES), result.stderr


def test_show_prints_log_lines_without_their_escapes(tmp_path):
    log = tmp_path / "app.log"
    log.write_text("before\n" + FINDING + " \x1b]0;pwned\x07 \x1b[2J \x9b31m \u202e\nafter\n")
    result = ddtriage("show", f"{log}:2", "-C", "1")
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode("utf-8")
    assert "PullKvBlocks" in text and "\\x1b]0;pwned\\x07" in text
    assert not any(bad in text for bad in ESCAPES)
