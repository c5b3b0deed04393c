"""`ddtriage show` through the CLI: nothing from a log drives the terminal (D25), and a truncated
.gz shows the lines that exist up to the cut, then one warning (D27).
"""

from __future__ import annotations

import gzip
import random
import zlib

from analyzer.cli import cli
from click.testing import CliRunner


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def test_show_escapes_osc_dcs_c1_and_bidi(tmp_path):
    log = tmp_path / "ctl.log"
    log.write_text("LinkLlmClusters failed, ret = 5010b009\n"
                   "\x1b]0;HACKED\x07 \x1b[2J \x9b2J \u202e evil \x1bP+q6b64\x1b\\ end\n", encoding="utf-8")
    code, out, _ = run("show", f"{log}:2", "-C", "1")
    assert code == 0
    for raw in ("\x1b", "\x07", "\x9b", "\u202e"):
        assert raw not in out
    assert "\\x1b]0;HACKED\\x07" in out and "\\u202e evil" in out and "\\x1bP+q6b64\\x1b\\" in out


def test_show_of_a_truncated_gz_prints_the_lines_up_to_the_cut(tmp_path):
    rng = random.Random(3)
    data = b"".join(b"line %d ret = 0x5010B009 %032x\n" % (i, rng.getrandbits(128)) for i in range(1, 61))
    packed = gzip.compress(data, mtime=0)
    cut = tmp_path / "trunc.log.gz"
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    whole = zlib.decompressobj(16 + 15).decompress(cut.read_bytes())  # what zcat recovers
    last = whole.count(b"\n") + (0 if whole.endswith(b"\n") else 1)
    assert 10 < last < 58
    code, out, err = run("show", f"{cut}:{last - 2}-{last + 5}")
    assert code == 0
    lines = out.splitlines()
    assert [ln.split()[0] for ln in lines] == [str(n) for n in range(last - 2, last + 1)]
    tail = whole.rstrip(b"\n").rsplit(b"\n", 1)[-1].decode()  # the cut line, as far as zcat prints it
    assert lines[-1].split(None, 1)[1] == tail
    assert err.count("\n") == 1 and "trunc.log.gz" in err and "stopped after line" in err
    # nothing readable in the asked range: still an error, as before
    code, _, err = run("show", f"{cut}:{last + 3}")
    assert code != 0
