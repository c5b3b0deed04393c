"""Link facts: where they are read (cost) and whose they are (context), through the CLI.

- D28: busy connector INFO lines (req_id, cluster on every pull) are never matched one by one;
  init lines and the failure's own line are.
- D26: two pods with the same pid (`kubectl logs --prefix`) never share link facts.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.knowledge.linkfacts import LinkFactMatcher
from click.testing import CliRunner


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout


def connector_log(path: Path, pulls: int) -> Path:
    """A decode connector: one init line, `pulls` INFO pulls naming req_id and cluster, one failure."""
    lines = ["(Worker_TP0 pid=7001) INFO 11-12 03:39:55 [llmdatadist_connector_v1.py:212] Init LLMDataDist: "
             "role = LLMRole.DECODER, local cluster_id = 10, device_id = 0"]
    for i in range(pulls):
        lines.append(f"(Worker_TP0 pid=7001) INFO 11-12 03:40:{i % 60:02d} [llmdatadist_connector_v1.py:301] "
                     f"pull_blocks start, req_id={3000 + i}, src_cache_key=BlocksCacheKey(cluster_id=2, model_id=0)")
        lines.append(f"(Worker_TP0 pid=7001) INFO 11-12 03:40:{i % 60:02d} [scheduler.py:88] running 12 reqs")
    lines.append("(Worker_TP0 pid=7001) ERROR 11-12 03:41:00 [llmdatadist_connector_v1.py:330] KV transfer task "
                 "failed: [pull_blocks] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK, req_id = 3999.")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_busy_info_lines_are_not_matched_line_by_line(tmp_path, monkeypatch):
    log = connector_log(tmp_path / "decode.log", 2000)
    calls = []
    real = LinkFactMatcher.find

    def counted(self: LinkFactMatcher, line: str, *args: object) -> list[tuple[str, str]]:
        calls.append(line)
        return real(self, line, *args)

    monkeypatch.setattr(LinkFactMatcher, "find", counted)
    code, out = run("scan", str(log), "-j1", "--format", "json", "--fail-on", "never")
    report = json.loads(out)
    # the init line, the failure and the few lines before it: not the 2,000 pulls
    assert len(calls) < 40, len(calls)
    (finding,) = report["findings"]
    assert finding["link"]["req_id"] == "3999"
    (node,) = report["links"]
    assert node["role"] == "Decoder" and node["clusters"][0]["cluster_id"] == "10"
    assert "3999" in node["req_ids"]


KUBECTL = """\
[pod/prefill-0/vllm] 2025-11-12T03:40:00.000000000Z (Worker pid=1) INFO 11-12 03:40:00 [c.py:1] LLMDataDist init role=prompt, cluster_id=0, listen 10.1.0.1:26000
[pod/decode-0/vllm] 2025-11-12T03:40:00.100000000Z (Worker pid=1) INFO 11-12 03:40:00 [c.py:1] LLMDataDist init role=decoder, cluster_id=1
[pod/decode-0/vllm] 2025-11-12T03:40:01.000000000Z (Worker pid=1) INFO 11-12 03:40:01 [c.py:2] start pull req_id=777 from cluster 0
[pod/prefill-0/vllm] 2025-11-12T03:40:01.100000000Z (Worker pid=1) ERROR 11-12 03:40:01 [c.py:3] llm_datadist.status.LLMException: [allocate_blocks_cache] failed, error code is LLMStatusCode.LLM_DEVICE_OUT_OF_MEMORY, x.
[pod/decode-0/vllm] 2025-11-12T03:40:01.200000000Z (Worker pid=1) ERROR 11-12 03:40:01 [c.py:4] llm_datadist.status.LLMException: [pull_blocks] failed, error code is LLMStatusCode.LLM_NOT_YET_LINK, x.
"""


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_pods_with_the_same_pid_keep_their_own_link_facts(tmp_path, jobs):
    log = tmp_path / "pd.log"
    log.write_text(KUBECTL)
    code, out = run("scan", str(log), "-j", jobs, "--format", "json", "--fail-on", "never")
    by_pod = {f["pod"]: f["link"] for f in json.loads(out)["findings"]}
    assert by_pod["prefill-0"] == {"local_cluster": "0"}  # not decode-0's cluster 1, peer 0 or req 777
    assert by_pod["decode-0"]["local_cluster"] == "1"


def test_the_compiled_screen_is_shared_within_a_thread_never_across_threads():
    """The hyperscan screen is compiled once per process and thread (its scratch space is not
    thread-safe), and a matcher of a rules set loaded again finds the same facts."""
    import threading

    from analyzer.knowledge.linkfacts import _Screen
    from analyzer.knowledge.rules import RuleSet

    pytest.importorskip("hyperscan")
    kinds = RuleSet.load().linkfacts.kinds
    here, again = _Screen.build(kinds), _Screen.build(RuleSet.load().linkfacts.kinds)
    there = []
    worker = threading.Thread(target=lambda: there.append(_Screen.build(kinds)))
    worker.start()
    worker.join()
    assert here.db is again.db and there[0].db is not here.db
    line = "LinkLlmClusters remote ip info = 10.1.0.1:26000, cluster_id = 7"
    assert here.find(line, line.encode()) == there[0].find(line, line.encode()) == [("remote_addr", "10.1.0.1:26000")]


# -- the compiled core's table (issue #17): the same facts as `find_plainly`, from the same YAML --

LOOK_AROUND = ("(?=", "(?!", "(?<=", "(?<!")


def _table():
    from analyzer.knowledge.rules import RuleSet

    return RuleSet.load().linkfacts


def test_the_table_holds_no_look_around():
    """Rust's regex has none: a boundary is written as an explicit alternative (`(?:[^\\d:]|$)`),
    so that the core runs every kind and both engines read the same pattern."""
    for kind in _table().kinds:
        for pattern in kind.patterns:
            assert not any(t in pattern.pattern for t in LOOK_AROUND), (kind.id, pattern.pattern)


def _core():
    return pytest.importorskip("ddtriage_core", reason="the compiled core is not installed")


def test_the_core_compiles_every_kind():
    facts = _core().Facts(list(_table().core_table()))
    assert facts.not_portable == [], "these kinds run in Python only (rewrite the pattern): " + repr(
        facts.not_portable)


def test_a_pattern_the_core_cannot_run_leaves_its_lines_to_python():
    facts = _core().Facts([("role", ["ole"], [r"(?i)\brole\s*=\s*(?P<value>\w+)(?!\d)"], []),
                           ("device", ["device_id"], [r"device_id\s*=\s*(?P<value>\d+)"], [])])
    assert [k for k, _ in facts.not_portable] == ["role"]
    assert facts.find(b"init role = Prompt, device_id = 3") is None  # Python decides the whole line
    assert facts.find(b"init device_id = 3") == [("device", "3")]
    assert facts.find("init device_id = 3 \u00e9".encode()) is None  # not plain ASCII: Python
    assert facts.find(b"init device_id = 3\r") == [("device", "3")]  # decode() drops a trailing CR


PIECES = ["role", "Role", "ole", " = ", "=", ":", " ", ", ", "cluster_id", "local cluster id", "remote cluster",
          "remote_cluster_id", "remote ip", "remote ip info", "remote engine", "listen", "listen on ",
          "listen_ip_info", "local ip", "local_ip", "connect to ", "send to ", "req_id", "req id", "req = ",
          "request id: ", "device_id", "deviceId", "Device:", "LLMRole.", "prompt", "DECODER", "kv_consumer",
          "\"cluster_id\":", "BlocksCacheKey(cluster_id=", "10.1.0.1", ":26000", "0", "12", "255", ".", "-", "_",
          "a", "Z", "\t", "\r", "\x00", "\x1b[31m", "\u00e9", "\u0663", "\ufffd", "(", "[", "]"]


def test_the_core_equals_find_plainly_on_generated_lines():
    from hypothesis import given, settings
    from hypothesis import strategies as st

    matcher = _table()
    facts = _core().Facts(list(matcher.core_table()))
    raw_bytes = st.binary(max_size=6)

    @settings(max_examples=400, deadline=None)
    @given(st.lists(st.one_of(st.sampled_from(PIECES).map(str.encode), raw_bytes), max_size=24))
    def check(parts: list[bytes]) -> None:
        raw = b"".join(parts).replace(b"\n", b" ")
        got = facts.find(raw)
        if got is not None:
            from analyzer.scan.blocks import decode

            assert got == matcher.find_plainly(decode(raw)), raw

    check()


def test_screen_equals_the_literal_pre_test_then_find_on_generated_lines():
    """`LinkFactMatcher.screen` (what the engine asks of each candidate line) gives the facts that
    `find` gives behind the `maybe_in` pre-test, and where the core judges proofs, it says a line
    cannot be one only where `RecoveryTable.find` says None: whether the core answers or not."""
    from analyzer.knowledge.rules import RuleSet
    from analyzer.scan.blocks import decode
    from hypothesis import given, settings
    from hypothesis import strategies as st

    rules = RuleSet.load()
    core = _core()
    with_core = RuleSet.load().linkfacts
    with_core.use_core(core.Facts(list(with_core.core_table()), list(rules.recovery.core_table())),
                       judges_proofs=True)
    plain = _table()
    proofs = ["link clusters success", "Successfully build link", "link success", "remote cluster 2", "success"]

    @settings(max_examples=400, deadline=None)
    @given(st.lists(st.one_of(st.sampled_from(PIECES + proofs).map(str.encode), st.binary(max_size=6)),
                    max_size=24))
    def check(parts: list[bytes]) -> None:
        raw = b"".join(parts).replace(b"\n", b" ")
        text = decode(raw)
        expected = plain.find(text, raw) if plain.maybe_in(raw) else []
        for matcher in (with_core, plain):
            facts, may_prove = matcher.screen(text, raw)
            assert facts == expected, raw
            if may_prove is False:
                assert rules.recovery.find(text) is None, raw
        assert plain.screen(text, raw)[1] is None  # no core: the recovery table's own pre-test

    check()
