"""`--redact` (issue #19, item 3): no address, name or id of the input in any format's output, file
paths, HTML and Parquet included; the findings, incidents and states those of the plain run; tokens
the same in every format, and keyed ones the same across runs."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from analyzer import analyze
from analyzer.cli import cli
from analyzer.run.redact import Redactor, redact
from analyzer.writers import REGISTRY, render_report
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parents[2]

# What the corpus plants (written by hand, apart from the code): node names, addresses, pods and
# their uids, container ids, a home folder's user, request ids.
HIDDEN = [
    "decode-node-2", "prompt-node-1", "decode-node-3",  # nodes (folder names)
    "10.0.1.11", "10.0.2.12", "10.0.2.13", "fe80::1a2b:3c4d",  # addresses
    "llm-serving_decode-0_d2e8a4b6-37c1-4f09-b5e2-8a9c0d1e2f34", "d2e8a4b6-37c1-4f09-b5e2-8a9c0d1e2f34",  # pod
    "9a7c5e3b1d2f4a6c8e0b9d7f5a3c1e2b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a2c",  # a docker container id
    "alice",  # /home/alice/...
    "chatcmpl-2071", "cmpl-9f8e7d6c",  # request ids
]
EXTRA = (  # a worker log with a home path, an IPv6 peer and a request id (the user and the address)
    "(Worker_TP0 pid=7001) ERROR 11-12 03:42:10 [llmdatadist_connector_v1.py:468] KV transfer task failed: "
    "[pull_blocks] failed, error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT, req_id = cmpl-9f8e7d6c, "
    "remote = [fe80::1a2b:3c4d]:26000, see /home/alice/ascend/log/run\n"
    '  File "/home/alice/vllm-ascend/vllm_ascend/distributed/llmdatadist_connector_v1.py", line 468, in _pull\n'
)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("redact")
    shutil.copytree(ROOT / "sample_logs", root / "sample_logs")
    for name in ("cri", "docker"):
        shutil.copytree(ROOT / "tests" / "data" / "envelopes" / name, root / name)
    (root / "sample_logs" / "decode-node-3" / "vllm_worker.log").write_text(EXTRA)
    return root


@pytest.fixture(scope="module")
def runs(corpus: Path):
    paths = [str(corpus / "sample_logs"), str(corpus / "cri"), str(corpus / "docker")]
    plain = analyze(paths, jobs=1)
    return plain, redact(plain), paths


def test_no_planted_value_in_any_format(runs) -> None:
    plain, hidden, _ = runs
    everything = "\n".join(render_report(fmt, plain) for fmt in REGISTRY)
    missing = [v for v in HIDDEN if v not in everything]
    assert not missing, f"the corpus no longer shows {missing}: the test would prove nothing"
    for fmt in REGISTRY:
        text = render_report(fmt, hidden)
        leaked = [v for v in HIDDEN if v in text]
        assert not leaked, (fmt, leaked)


def test_findings_incidents_and_states_are_the_plain_runs(runs) -> None:
    plain, hidden, _ = runs

    def findings(a):
        return [(f.line, f.code, f.api, f.rule, f.action, f.fingerprint, f.recoverable) for f in a.findings]

    def incidents(a):
        return [(i.id, i.state, i.findings, i.fingerprints, i.lead.line, i.lead.code, i.action_word,
                 i.recovery and (i.recovery.line, i.recovery.proof, i.recovery.seconds)) for i in a.summary.incidents]

    assert findings(hidden) == findings(plain) and len(findings(plain)) > 60
    assert incidents(hidden) == incidents(plain)
    assert [b.state for b in hidden.summary.bursts] == [b.state for b in plain.summary.bursts]
    assert "recovered" in {i.state for i in plain.summary.incidents}


def test_tokens_are_the_same_in_every_format_and_line(runs) -> None:
    _, hidden, _ = runs
    text, data = render_report("text", hidden), json.loads(render_report("json", hidden))
    node = next(f["node"] for f in data["findings"] if f["line"] == 9 and "plog-6120" in f["source"])
    assert re.fullmatch(r"node-\d+", node)
    assert node in text and node in render_report("html", hidden) and node in render_report("parquet", hidden)
    recovered = next(i for i in data["summary"]["incidents"] if i["state"] == "recovered")
    assert recovered["nodes"] == [node] and recovered["story"].startswith(f"At 03:41:31.009 {node} (Decoder")
    assert f"/{node}/ascend/log/debug/plog/plog-6120_" in recovered["recovery"]["source"]


def test_a_key_gives_hashed_tokens_stable_across_runs(runs) -> None:
    plain, _, paths = runs
    once = render_report("json", redact(plain, key="s3cret"))
    again = render_report("json", redact(analyze(paths, jobs=1), key="s3cret"))
    assert once == again
    assert re.search(r'"node": "node-[0-9a-f]{10}"', once)
    assert render_report("json", redact(plain, key="other")) != once


def test_the_cli_redacts_scan_merge_and_show(corpus: Path, tmp_path: Path) -> None:
    runner = CliRunner()
    sample = str(corpus / "sample_logs")
    part = tmp_path / "part.json"
    scanned = runner.invoke(cli, ["scan", sample, "--redact", "-q", "-o", str(part), "-o", "text:-"])
    assert scanned.exit_code == 1 and "still broken first" in scanned.stdout
    merged = runner.invoke(cli, ["merge", str(part), "--format", "json", "--redact-key", "k"])
    shown = runner.invoke(cli, ["show", f"{sample}/decode-node-3/ascend/log/debug/plog/"
                                        "plog-6120_20251112034130118.log:7-9", "--redact"])
    assert "connect to ip-1:26000 failed" in shown.stdout
    for out in (scanned.stdout, part.read_text(), merged.stdout, shown.stdout):
        assert not [v for v in HIDDEN if v in out]
    assert json.loads(merged.stdout)["summary"]["incidents"][0]["state"] == "ongoing"


def test_texts_keep_what_is_not_a_name() -> None:
    red = Redactor()
    line = ("link pd_comm_10.0.1.11_10.0.2.12 at 03:40:02.812 (vLLM v0.10.1.1), ge::Status, 0x5010B009, "
            "req_id 2051, 2063 failed, see plog-1.log:2051")
    red.harvest(line)
    red.freeze()
    assert red.text(line) == ("link pd_comm_ip-1_ip-2 at 03:40:02.812 (vLLM v0.10.1.1), ge::Status, 0x5010B009, "
                              "req_id req-1, req-2 failed, see plog-1.log:2051")


def test_kubelet_log_names_become_one_pod_token() -> None:
    red = Redactor()
    path = "/var/log/containers/decode-0_llm-serving_vllm-" + "ab" * 32 + ".log"
    red.harvest(path)
    red.freeze()
    assert red.text(path) == "/var/log/containers/pod-1-container-1.log"


SAMPLE_LOGS = ROOT / "sample_logs"
SECRETS = re.compile(r"10\.0\.[12]\.1[12]|prompt-node-1|decode-node-2")


def test_the_unexplained_section_is_redacted_too(tmp_path: Path, monkeypatch) -> None:
    # `--redact --unexplained` wrote the section's nodes, sources and example lines raw
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SAMPLE_LOGS, tmp_path / "logs")
    result = CliRunner().invoke(cli, ["scan", "logs", "--redact", "--unexplained", "-o", "r.json", "-o", "r.md",
                                      "-o", "r.txt", "-q"], catch_exceptions=False)
    assert result.exit_code == 1, result.stderr
    assert json.loads((tmp_path / "r.json").read_text())["unexplained"]  # the section is there
    for name in ("r.json", "r.md", "r.txt"):
        assert not SECRETS.findall((tmp_path / name).read_text()), name


def test_numeric_request_ids_become_tokens_in_link_facts_and_in_text(tmp_path: Path, monkeypatch) -> None:
    # link facts' req_ids and a finding's link req_id stayed raw numbers, and in `pull request failed,
    # req_id = 2051` the list after `request` (`failed, req_id`) hid the id after it
    monkeypatch.chdir(tmp_path)
    shutil.copytree(SAMPLE_LOGS, tmp_path / "logs")
    CliRunner().invoke(cli, ["scan", "logs", "--redact", "-o", "r.json", "-q"], catch_exceptions=False)
    report = json.loads((tmp_path / "r.json").read_text())
    req_ids = [v for link in report["links"] for v in link["req_ids"]]
    assert req_ids and all(v.startswith("req-") for v in req_ids)
    linked = [f["link"]["req_id"] for f in report["findings"] if f["link"].get("req_id")]
    assert linked and all(v.startswith("req-") for v in linked)
    assert not re.search(r"req_id = \d", (tmp_path / "r.json").read_text())
    assert Redactor().text("pull request failed, req_id = 2051") == "pull request failed, req_id = 2051"  # none noted
    red = Redactor()
    red.harvest("pull request failed, req_id = 2051")
    red.freeze()
    assert red.text("pull request failed, req_id = 2051") == "pull request failed, req_id = req-1"


# Pieces of texts around the patterns' edges: addresses (IPv4, IPv6 in every form, a version, a
# clock), home folders, ids of 64 hex and uuids, kubelet names, request ids in every spelling.
PIECES = ["10.0.1.11", "v0.10.1.1", "fe80::1a2b:3c4d", "::1", "1:2:3:4:5:6:7:8", "03:40:02", "ge::Status",
          "/home/alice/x", "/Users/bob/y", "C:\\Users\\eve\\z", "9a7c5e3b1d2f4a6c8e0b9d7f5a3c1e2b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a2c",
          "d2e8a4b6-37c1-4f09-b5e2-8a9c0d1e2f34", "ns_pod-0_d2e8a4b6-37c1-4f09-b5e2-8a9c0d1e2f34",
          "pod-0_ns_c-9a7c5e3b1d2f4a6c8e0b9d7f5a3c1e2b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a2c.log", "req_id = 2051",
          "REQUEST ID: cmpl-9f", "req = 7f2c", "request 12, 13", "decode-node-2", " ", ", ", ":", ".", "-", "_",
          "x", "7", "[", "]", "\n"]


def _plain_text(red: Redactor, text: str) -> str:
    """`Redactor.text` as it was written first: every pattern over every text (the reference)."""
    from analyzer.run import redact as module

    tokens = red.tokens
    text = module._REQ.sub(lambda m: m.group(0)[: m.start(1) - m.start(0)] + ", ".join(
        tokens.get(v, v) for v in m.group(1).split(", ")), text)
    text = module._HOME.sub(lambda m: m.group(1) + tokens.get(m.group(2), m.group(2)), text)
    for pattern in (module._ADDRESS, module._CONTAINER_LOG_NAME, module._CONTAINER_ID, module._POD_UID):
        text = pattern.sub(lambda m: tokens.get(m.group(0), m.group(0)), text)
    return red._known.sub(lambda m: tokens[m.group(0)], text) if red._known is not None else text


@settings(max_examples=400, deadline=None)
@given(texts=st.lists(st.lists(st.sampled_from(PIECES), max_size=12).map("".join), min_size=1, max_size=6))
def test_each_text_is_redacted_as_every_pattern_over_it_would(texts: list[str]) -> None:
    """The cheap tests that skip a pattern (no `.`-separated numbers nor colons for an address, ...)
    and the texts remembered change no answer: harvest and replace agree with the plain passes."""
    from analyzer.run import redact as module

    red, plain = Redactor(), Redactor()
    for text in texts:
        red.harvest(text)
        red.harvest(text)  # a text harvested again (remembered) notes nothing new
        for pattern, kind, group in ((module._ADDRESS, "ip", 0), (module._HOME, "user", 2),
                                     (module._CONTAINER_ID, "container", 0), (module._KUBELET_POD_FOLDER, "pod", 0),
                                     (module._POD_UID, "pod", 0), (module._CONTAINER_LOG_NAME, "pod", 0)):
            for m in pattern.finditer(text):
                plain.note(kind, m.group(group))
        for m in module._REQ.finditer(text):
            for value in m.group(1).split(", "):
                if any(c.isdigit() for c in value) or "-" in value:
                    plain.note("req", value)
    assert red.values == plain.values
    red.note("node", "decode-node-2")
    red.freeze()
    for text in texts * 2:  # the second time from memory
        assert red.text(text) == _plain_text(red, text)


def test_a_storm_reads_each_repeated_text_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A storm's findings repeat their source, node, code, API, rule and fingerprint: each such text
    goes through the patterns once, not once a finding (redacting 5,000 findings took 3 s)."""
    red = Redactor()
    red.note("node", "decode-node-2")
    red.freeze()
    read: list[str] = []
    real = Redactor._text
    monkeypatch.setattr(Redactor, "_text", lambda self, text: (read.append(text), real(self, text))[1])
    for n in range(1000):
        assert red.text("logs/decode-node-2/plog-1.log") == "logs/node-1/plog-1.log"
        red.text(f"2025-11-12T03:42:{n % 60:02d}.000000Z")
    assert len(read) == 1 + 60
