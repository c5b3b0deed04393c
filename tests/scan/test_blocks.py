"""Stage: scan (the hot loop). Exact line numbers whatever the block boundaries, bad bytes,
long lines or line endings; both prefilter engines give the same candidates.
"""

import io
from pathlib import Path

import pytest
from analyzer.detect.patterns import BASE_LITERALS
from analyzer.scan import blocks as scanner
from analyzer.scan.blocks import Prefilter, ScanCounts, scan_stream
from hypothesis import given, settings
from hypothesis import strategies as st

from hostile import FINDING, peak_mib
from reports import rows

LITERALS = BASE_LITERALS
ENGINES = ["find"] + (["hyperscan"] if scanner.HAVE_HYPERSCAN else [])


def candidates(data: bytes, engine="find", block_size=1 << 20, max_line=scanner.MAX_LINE):
    counts = ScanCounts()
    found = [(c.line_no, c.text()) for c in
             scan_stream(io.BytesIO(data), Prefilter(LITERALS, engine), counts, block_size, max_line)]
    return found, counts


@pytest.mark.parametrize("engine", ENGINES)
def test_line_numbers_are_exact_across_blocks(engine):
    lines = [f"noise line {i}" for i in range(1000)]
    for n in (1, 17, 500, 999, 1000):
        lines[n - 1] = f"line {n} ret = 0x5010B009"
    data = ("\n".join(lines) + "\n").encode()
    for block in (7, 64, 4096, 1 << 20):
        found, counts = candidates(data, engine, block)
        assert [n for n, _ in found] == [1, 17, 500, 999, 1000]
        assert counts.lines == 1000 and counts.bytes == len(data)


def test_crlf_nul_invalid_utf8_and_no_final_newline():
    data = (b"a\r\n\x00\x00\x00\x00[ERROR] x ret = 0x5010B001\r\n\xff\xfe\xfa bad bytes LLM_TIMEOUT\r\n"
            b"last line without newline 0x5010b007")
    found, counts = candidates(data, block_size=5)
    assert [n for n, _ in found] == [2, 3, 4]
    assert found[0][1] == "[ERROR] x ret = 0x5010B001"  # NULs and CR gone
    assert "LLM_TIMEOUT" in found[1][1]
    assert counts.lines == 4


def test_multi_megabyte_line_does_not_hide_a_later_hit():
    data = b"x" * (3 << 20) + b" 0x5010B009 " + b"y" * (2 << 20) + b"\nnext 0x5010B001\n"
    found, counts = candidates(data, block_size=1 << 20, max_line=1 << 20)
    assert [n for n, _ in found if "0x5010B009" in _] == [1]
    assert [n for n, t in found if "0x5010B001" in t] == [2]
    assert counts.lines == 2


def test_lookback_sees_previous_block():
    data = b"".join(f"line {i} PullKvBlocks start\n".encode() for i in range(50)) + b"ret = 0x5010B001\n"
    counts = ScanCounts()
    (cand,) = list(scan_stream(io.BytesIO(data), Prefilter(LITERALS, "find"), counts, block_size=100))
    earlier = cand.lookback(5)
    assert [n for n, _ in earlier] == [46, 47, 48, 49, 50]
    assert earlier[-1][1] == "line 49 PullKvBlocks start"


NOISE = st.text(alphabet=st.characters(blacklist_characters="\n", blacklist_categories=("Cs",)), max_size=60)


def _without_literals(text: str) -> str:
    """Noise holds no prefilter literal (not even one that removing another one makes)."""
    literals = [lit.decode() for lit in LITERALS]
    while any(lit in text for lit in literals):
        for lit in literals:
            text = text.replace(lit, "")
    return text


@settings(max_examples=150, deadline=None)
@given(
    noise=st.lists(NOISE, min_size=1, max_size=60),
    planted=st.lists(st.tuples(st.integers(0, 59), st.sampled_from(["0x5010B009", "LLM_TIMEOUT", "ret = 1343270913"])), max_size=8),
    block=st.integers(3, 300),
    crlf=st.booleans(),
)
def test_property_every_planted_code_found_at_its_line(noise, planted, block, crlf):
    lines = [_without_literals(n) for n in noise]
    expected = set()
    for index, code in planted:
        if index < len(lines):
            lines[index] = f"{lines[index]} {code} "
            expected.add(index + 1)
    data = ("\r\n" if crlf else "\n").join(lines).encode("utf-8", "surrogatepass")
    for engine in ENGINES:
        found, counts = candidates(data, engine, block)
        assert {n for n, _ in found} == expected
        assert counts.lines == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@settings(max_examples=100, deadline=None)
@given(data=st.binary(max_size=3000), block=st.integers(1, 200))
def test_property_arbitrary_bytes_never_crash_and_count_every_line(data, block):
    found, counts = candidates(data, "find", block)
    assert counts.bytes == len(data)
    assert counts.lines == data.count(b"\n") + (0 if data.endswith(b"\n") or not data else 1)


@pytest.mark.skipif(len(ENGINES) < 2, reason="hyperscan not installed")
def test_both_prefilter_engines_give_the_same_findings(rules):
    from pathlib import Path

    from analyzer import analyze
    from analyzer.run.api import Options

    logs = [str(Path(__file__).parents[2] / "sample_logs"), str(Path(__file__).parents[1] / "data" / "unseen")]
    fast = analyze(logs, rules=rules, options=Options(prefilter="hyperscan"))
    pure = analyze(logs, rules=rules, options=Options(prefilter="find"))
    assert rows(fast) == rows(pure)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
@pytest.mark.skipif(scanner._core is None, reason="the compiled core is not installed")
def test_a_storm_is_handed_on_in_small_blocks(tmp_path):
    # 8 MiB blocks held a block's 50,000 findings at once: 150,000 findings of one line each
    # peaked at 162 MiB under the core (Python: 75); with a CJK word on each line, 222 MiB
    storm = tmp_path / "storm.log"
    storm.write_text("".join(f"{FINDING} {i}\n" for i in range(150_000)))
    peak = peak_mib(tmp_path, "scan", str(storm), "-q", "-j1", "--fail-on", "never", "-o", str(tmp_path / "r.json"),
                    env={"DDTRIAGE_ENGINE": "rust"})
    assert peak < 130, f"peak RSS {peak:.0f} MiB"


@pytest.mark.parametrize("engine", ["find", "hyperscan"] if scanner.HAVE_HYPERSCAN else ["find"])
def test_lines_of_nul_padding_are_searched_in_linear_time(engine):
    """Each line holding a NUL is searched again without its NULs; a line at a time, a file of
    NUL padding (1,000,000 short lines of NULs) took 5 s here in the Python engine: now one search."""
    import time

    code = "local ip 10.0.0.1 ret 0x5010B001".encode("utf-16-le")  # NULs between its letters
    data = b"\x00" * 15 + b"\n"
    data = data * 500_000 + code + b"\n" + data * 500_000
    prefilter = Prefilter(BASE_LITERALS, engine, (), [b"local ip"])
    started = time.perf_counter()
    starts, facts = prefilter.tiers(data, 0, len(data))
    assert time.perf_counter() - started < 2
    assert starts == [16 * 500_000] and not facts  # the code line, full tier (the fact literal too)
