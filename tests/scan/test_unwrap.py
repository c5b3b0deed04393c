"""Envelopes (issue #9): every collector's wrapping, written here from the formats' documentation,
must give the same findings, APIs, actions and UTC times as the unwrapped log; through the CLI.

Envelope defects from review 1 (D1, D2, D11), through the real CLI. Inputs modelled on the
reviewer's files and written again here from the formats' documentation (journalctl -o json,
rsyslog's RSYSLOG_FileFormat, RFC 4180 CSV as Kibana and Python's csv.writer write it); the
expected findings are written by hand (folded from test_envelope_review1.py, the first review of collector envelopes (issue #9)).

The held-out envelope corpus (tests/data/envelopes/, issue #9) against its hand-written key,
through the real CLI. The key is data written apart from the code: this test only reads it (folded from test_envelope_corpus.py).
"""

import csv
import io
import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml
from analyzer.cli import cli
from analyzer.knowledge.rules import RuleSet
from analyzer.run.rulecheck import check_envelope_examples
from analyzer.scan.blocks import Prefilter
from click.testing import CliRunner

from reports import rows

SAMPLES = Path(__file__).parents[2] / "sample_logs"
INNER_LOGS = [
    SAMPLES / "decode-node-2/ascend/log/debug/plog/plog-5569_20251112034002789.log",
    SAMPLES / "decode-node-2/llm_datadist_py.log",
    SAMPLES / "decode-node-2/vllm_worker.log",
    SAMPLES / "prompt-node-1/cpp_app.log",
]
ZONE = timezone(timedelta(hours=8))  # the wall clock these sample lines were written in (our choice)

# A line's own stamp, as the formats print it (domain.md §6): plog, Python logger, glog, vLLM.
_STAMPS = [
    (re.compile(r"(\d{4}-\d\d-\d\d)[- ](\d\d:\d\d:\d\d)\.(\d{3})"), lambda m: f"{m[1]}T{m[2]}.{m[3]}"),
    (re.compile(r"^[IWEF](\d{4})(\d\d)(\d\d) (\d\d:\d\d:\d\d)\.(\d+)"), lambda m: f"{m[1]}-{m[2]}-{m[3]}T{m[4]}.{m[5]}"),
    (re.compile(r"(?:INFO|DEBUG|WARNING|ERROR|CRITICAL) (\d\d-\d\d) (\d\d:\d\d:\d\d)"), lambda m: f"2025-{m[1]}T{m[2]}"),
]


def local_times(lines):
    """Each line's wall-clock time (a stamp-less line: the one before it), as the collector
    would have received it a few milliseconds later."""
    out, last = [], datetime(2025, 11, 12, 3, 39, 50)
    for line in lines:
        for pattern, iso in _STAMPS:
            m = pattern.search(line)
            if m:
                last = datetime.fromisoformat(iso(m))
                break
        out.append(last + timedelta(milliseconds=3))
    return out


def rfc3339(when, zone=UTC, nanos="123"):
    aware = when.replace(tzinfo=ZONE).astimezone(zone)
    text = aware.strftime("%Y-%m-%dT%H:%M:%S.%f") + nanos
    return text + ("Z" if zone is UTC else aware.strftime("%z")[:3] + ":" + aware.strftime("%z")[3:])


def epoch(when):
    return when.replace(tzinfo=ZONE).timestamp()


def _go_json(text):
    return json.dumps(text)  # Go's encoding/json escapes control characters the same way


# Each wrapper: (lines, wall-clock times) -> the file's text, following the published format.
def docker(lines, times):  # docs.docker.com json-file: {"log":"...\n","stream":"stderr","time":RFC3339Nano}
    return "".join(f'{{"log":{_go_json(ln + chr(10))},"stream":"stderr","time":"{rfc3339(t)}"}}\n'
                   for ln, t in zip(lines, times, strict=True))


def cri(lines, times):  # kubelet CRI: TIMESTAMP STREAM TAG CONTENT, node clock +08:00
    return "".join(f"{rfc3339(t, ZONE)} stderr F {ln}\n" for ln, t in zip(lines, times, strict=True))


def kubectl_timestamps(lines, times):
    return "".join(f"{rfc3339(t)} {ln}\n" for ln, t in zip(lines, times, strict=True))


def kubectl_prefix(lines, times):
    return "".join(f"[pod/decode-0/vllm] {rfc3339(t, ZONE)} {ln}\n" for ln, t in zip(lines, times, strict=True))


def syslog_5424(lines, times):  # RFC 5424 §6.5 example shape, rsyslog #ooo control escapes
    return "".join(f"<11>1 {rfc3339(t, ZONE, '')} decode-node-2 vllm 5569 - - {_rsyslog(ln)}\n"
                   for ln, t in zip(lines, times, strict=True))


def syslog_3164(lines, times):  # rsyslog traditional file format, local time, no year
    return "".join(f"{t.strftime('%b %e %H:%M:%S')} decode-node-2 vllm[5569]: {_rsyslog(ln)}\n"
                   for ln, t in zip(lines, times, strict=True))


def syslog_3339(lines, times):  # rsyslog RSYSLOG_FileFormat (Debian 12+ default): RFC 3339 time, micros
    return "".join(f"{t.strftime('%Y-%m-%dT%H:%M:%S.%f')}+08:00 decode-node-2 vllm[5569]: {_rsyslog(ln)}\n"
                   for ln, t in zip(lines, times, strict=True))


def _rsyslog(line):
    return "".join(f"#{ord(c):03o}" if ord(c) < 32 else c for c in line)


def journald(lines, times):  # journalctl -o json; a message with control bytes is a byte array
    out = []
    for i, (ln, t) in enumerate(zip(lines, times, strict=True)):
        message = list(ln.encode()) if any(ord(c) < 32 for c in ln) else ln
        record = {"__CURSOR": f"s=1;i={i:x}", "__REALTIME_TIMESTAMP": str(int(round(epoch(t) * 1e6))),
                  "_HOSTNAME": "decode-node-2", "CONTAINER_NAME": "decode-0", "MESSAGE": message}
        out.append(json.dumps(record, separators=(", ", " : ")).replace("{", "{ ", 1)[:-1] + " }\n")
    return "".join(out)


def fluentbit(lines, times):  # out_file default format: `tag: [sec.nsec, {record}]`
    return "".join(f'kube.var.log.containers.decode-0_ns_vllm-0.log: [{epoch(t):.9f}, '
                   f'{{"log":{_go_json(ln)},"kubernetes":{{"pod_name":"decode-0","host":"decode-node-2"}}}}]\n'
                   for ln, t in zip(lines, times, strict=True))


def loki(lines, times):  # logcli --output=jsonl
    return "".join(json.dumps({"labels": {"pod": "decode-0", "host": "decode-node-2"}, "line": ln,
                               "timestamp": rfc3339(t, timezone(timedelta(hours=-5)))}, separators=(",", ":")) + "\n"
                   for ln, t in zip(lines, times, strict=True))


def json_lines(lines, times):  # zap's production encoder: level, ts (epoch seconds), caller, msg
    return "".join(json.dumps({"level": "info", "ts": round(epoch(t), 6), "caller": "app/main.go:42", "msg": ln,
                               "pod": "decode-0"}, separators=(",", ":")) + "\n"
                   for ln, t in zip(lines, times, strict=True))


def _search(lines, times):
    return {"took": 5, "timed_out": False, "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {"total": {"value": len(lines), "relation": "eq"}, "max_score": None,
                     "hits": [{"_index": "logs", "_id": str(i), "_score": None,
                               "_source": {"@timestamp": rfc3339(t)[:23] + "Z", "log": ln,
                                           "kubernetes": {"pod_name": "decode-0", "host": "decode-node-2"}}}
                              for i, (ln, t) in enumerate(zip(lines, times, strict=True))]}}


def search_pretty(lines, times):
    return json.dumps(_search(lines, times), indent=2).replace('": ', '" : ') + "\n"


def search_one_line(lines, times):
    return json.dumps(_search(lines, times), separators=(",", ":")) + "\n"


def kibana_csv(lines, times):  # every value quoted, `"` doubled; Kibana's default date format, local
    rows = ['"@timestamp","kubernetes.pod_name","log"']
    for ln, t in zip(lines, times, strict=True):
        stamp = t.strftime("%b %-d, %Y @ %H:%M:%S.") + f"{t.microsecond // 1000:03d}"
        rows.append(",".join('"' + v.replace('"', '""') + '"' for v in (stamp, "decode-0", ln)))
    return "\n".join(rows) + "\n"


def terminal(lines, times):  # grcat-style colour around levels and numbers, CRLF
    def colour(line):
        line = re.sub(r"\b(ERROR|INFO|WARNING)\b", "\x1b[1;31m\\1\x1b[0m", line)
        return re.sub(r"(?<![\w.])(\d{4,})(?![\w])", "\x1b[33m\\1\x1b[0m", line)
    return "Script started on 2025-11-12 03:45:12+08:00 [TERM=\"xterm\"]\r\n" + "".join(
        colour(ln) + "\r\n" for ln in lines)


WRAPPERS = {
    "docker-json-file": docker, "cri": cri, "kubectl-timestamps": kubectl_timestamps,
    "kubectl-prefix": kubectl_prefix, "syslog-rfc5424": syslog_5424, "syslog-rfc3164": syslog_3164,
    "syslog-rfc3339": syslog_3339,
    "journald-json": journald, "fluentbit-out-file": fluentbit, "loki-logcli-jsonl": loki,
    "json-lines": json_lines, "elasticsearch-search": search_pretty, "elasticsearch-search/one-line": search_one_line, "csv": kibana_csv,
    "terminal-colour": terminal,
}
NO_ZONE = {"syslog-rfc3164", "csv", "terminal-colour"}  # the envelope tells no zone: --tz says it


def scan(*args):
    result = CliRunner().invoke(cli, ["scan", "-q", "--jobs", "1", "--format", "json", "--year", "2025", *args],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def essence(report):
    """What must not change with the envelope: code, API, action, rule and the line's own time in
    UTC. (A line without a time of its own takes its envelope's, which the plain log lacks.)"""
    return sorted((f["code"], f["api"], f["action"], f["rule"], f["timestamp"] if f["time_source"] == "line" else "")
                  for f in report["findings"])


def test_every_envelope_in_the_table_has_a_wrapper_here():
    names = {e.name for e in RuleSet.load().envelopes.envelopes}
    assert names == {n.split("/")[0] for n in WRAPPERS}


@pytest.mark.parametrize("inner", INNER_LOGS, ids=lambda p: p.name.split("_")[0])
@pytest.mark.parametrize("envelope", sorted(WRAPPERS))
def test_wrapped_log_gives_the_same_findings_as_the_plain_one(tmp_path, envelope, inner):
    lines = inner.read_text(encoding="utf-8").splitlines()
    plain = tmp_path / "plain.log"
    plain.write_text("\n".join(lines) + "\n", encoding="utf-8")
    wrapped = tmp_path / "wrapped.log"  # a neutral name: the envelope is told by content only
    wrapped.write_text(WRAPPERS[envelope](lines, local_times(lines)), encoding="utf-8")
    want = scan(str(plain), "--tz", "+08:00")
    got = scan(str(wrapped), *(["--tz", "+08:00"] if envelope.split("/")[0] in NO_ZONE else []))
    assert want["findings"], "the inner log must hold findings"
    assert essence(got) == essence(want)
    assert {f["envelope"] for f in got["findings"]} == {envelope.split("/")[0]}
    for f in got["findings"]:
        assert "\x1b" not in f["text"] and "#033" not in f["text"] and "\\u00" not in f["text"]
        if envelope != "terminal-colour":  # a terminal copy has no time of its own
            assert f["time_source"] in ("line", "envelope") and f["timestamp"].endswith("Z")


def test_table_examples_are_proven():
    assert check_envelope_examples(RuleSet.load()) == []


def test_a_wrong_example_fails_rules_check(tmp_path):
    builtin = Path(__file__).parents[2] / "analyzer" / "data"
    for name in ("catalog.yaml", "apis.yaml"):
        (tmp_path / name).write_text((builtin / name).read_text())
    text = (builtin / "envelopes.yaml").read_text().replace("inner: 'Log line is here'", "inner: 'Log line'")
    (tmp_path / "envelopes.yaml").write_text(text)
    problems = check_envelope_examples(RuleSet.load([tmp_path]))
    assert len(problems) == 1 and "docker-json-file" in problems[0] and "'Log line'" in problems[0]


def test_plain_logs_have_no_envelope():
    table = RuleSet.load().envelopes
    for path in INNER_LOGS:
        assert table.match_head(path.read_bytes()[:65536]) is None, path


def test_colour_in_a_plain_log_is_cleaned():
    findings = scan_text("[ERROR] GE(1,p):2025-11-12-03:40:05.101.002 [llm_datadist.cc:1]2 "
                         "PullKvBlocks: ErrorNo: \x1b[33m1343270913\x1b[0m(request wait)\n")
    assert [(f["code"], f["api"], f["text"].count("\x1b")) for f in findings] == [
        ("0x5010B001", "PullKvBlocks", 0)]


def scan_text(text, *args):
    result = CliRunner().invoke(cli, ["scan", "-q", "--jobs", "1", "--format", "json", "--year", "2025", *args, "-"],
                                input=text, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]


def scan_wrapped(tmp_path, text, *args, name="logs.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    result = CliRunner().invoke(cli, ["scan", "-q", "--jobs", "1", "--format", "json", "--year", "2025", *args, str(path)],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def brief(report, *keys):
    return [tuple(f[k] for k in keys) for f in report["findings"]]


# -- D1: journald's byte-array MESSAGE, whatever the JSON spacing ----------------------------------
GLOG = "E20251112 03:40:06.327589    63 llm_data_dist_transfer.cpp:75] PullKvBlocks failed, ret = \x1b[31m5010b001\x1b[0m"
PLOG = ("[ERROR] GE(1,python3):2025-11-12-03:40:07.220.431 [llm_datadist.cc:902]58 CheckLinkStatus: "
        "ErrorNo: 1343270919(local cluster is not linked with remote cluster!)\x07")


def journal(separators, indent_colon=""):
    """Three journalctl -o json records (the 2nd and 3rd hold control bytes: a byte array)."""
    out = []
    for i, message in enumerate(["vllm started", list(GLOG.encode()), list(PLOG.encode())]):
        obj = {"__CURSOR": f"s=739ad463;i={i}", "__REALTIME_TIMESTAMP": f"176291880{i}000000",
               "_HOSTNAME": "node-a", "SYSLOG_IDENTIFIER": "vllm", "_PID": "1", "MESSAGE": message}
        line = json.dumps(obj, separators=separators)
        out.append(line.replace('"MESSAGE":', '"MESSAGE"' + indent_colon + ":") if indent_colon else line)
    return "\n".join(out) + "\n"


@pytest.mark.parametrize("separators,colon", [
    ((", ", ": "), ""),  # Python's json.dumps default, a collector script
    ((",", ":"), ""),  # journalctl (systemd >= 246), jq -c, Vector
    ((", ", " : "), ""),  # journalctl of older systemd
    ((",", ":"), "\t"),  # a tab before the colon: still JSON
    ((",", ": "), "  "),
])
def test_journald_byte_array_message_with_any_spacing(tmp_path, separators, colon):
    report = scan_wrapped(tmp_path, journal(separators, colon), name="journal.json")
    assert brief(report, "line", "code", "api", "node", "timestamp") == [
        (2, "0x5010B001", "PullKvBlocks", "node-a", "2025-11-12T03:40:06.327589Z"),
        (3, "0x5010B007", "CheckLinkStatus", "node-a", "2025-11-12T03:40:07.220431Z")]
    assert report["findings"][0]["text"].endswith("ret = 5010b001")  # no colour left


@pytest.mark.parametrize("engine", ["find", "auto"])
def test_prefilter_patterns_find_lines_with_either_engine(engine):
    data = b'{"a":1}\n{"MESSAGE" :\t[1, 2]}\n{"MESSAGE": "x"}\n{"MESSAGE":[3]}\n'
    prefilter = Prefilter([b"never"], engine, [rb'"MESSAGE"\s*:\s*\['])
    assert prefilter.line_starts(data, 0, len(data)) == [8, 46]


# -- D1 (Docker): a partial json-file entry is told whatever the spacing or key order -------------
HEAD = "(EngineCore_DP0 pid=1) ERROR 11-12 03:40:09 [c.py:874] KV transfer failed: [pull_blocks] blocks=["
TAIL = "], error code is LLMStatusCode.LLM_NOT_YET_LINK"
LONG = HEAD + "7" * (16384 - 8 + 16 - len(HEAD) - len(TAIL)) + TAIL  # the name straddles byte 16384


@pytest.mark.parametrize("separators,reorder", [((", ", ": "), False), ((",", ":"), True), ((" , ", " : "), True)])
def test_docker_partial_entry_with_any_spacing_or_key_order(tmp_path, separators, reorder):
    def entry(log, time):
        obj = {"log": log, "stream": "stderr", "time": time}
        if reorder:  # as a re-serialiser (Vector, jq -S) may write it
            obj = {"stream": "stderr", "time": time, "log": log}
        return json.dumps(obj, separators=separators) + "\n"
    cut = LONG.encode().index(b"LLM_NOT_YET_LINK") + 4
    text = (entry("before\n", "2025-11-11T19:40:08Z") + entry(LONG[:16384], "2025-11-11T19:40:09.1Z")
            + entry(LONG[16384:] + "\n", "2025-11-11T19:40:09.2Z") + entry("after\n", "2025-11-11T19:40:10Z"))
    assert cut > 16384 - 16 and cut < 16384 + 16
    report = scan_wrapped(tmp_path, text)
    assert brief(report, "line", "code", "api", "timestamp") == [(2, "0x5010B007", "PullKvBlocks", "2025-11-11T19:40:09Z")]
    assert report["inputs"]["lines"] == 4


# -- D2: rsyslog's RFC 3339 file format is syslog, not kubectl --timestamps ------------------------
RSYSLOG = (
    "2025-11-12T03:40:04.000100+08:00 node-a systemd[1]: Started vllm.service.\n"
    "2025-11-12T03:40:05.101+08:00 node-a vllm[1]: E20251112 03:40:06.327589    63 llm_data_dist_transfer.cpp:75]"
    " LinkLlmClusters failed,#011ret =#0115010b009\n"
    "2025-11-12T03:40:05.101+08:00 node-a vllm[1]: #033[31mret = 0x5010B007#033[0m PushKvBlocks\n"
    "2025-11-12T03:40:07.5+08:00 node-a kernel: [ 12.3] eth0: link up\n")


def test_rsyslog_rfc3339_file_format_is_syslog(tmp_path):
    report = scan_wrapped(tmp_path, RSYSLOG, name="messages")
    assert brief(report, "line", "code", "api", "node", "container", "envelope", "timestamp", "time_source") == [
        (2, "0x5010B009", "LinkLlmClusters", "node-a", "vllm", "syslog-rfc3339", "2025-11-11T19:40:06.327589Z", "line"),
        (3, "0x5010B007", "PushKvBlocks", "node-a", "vllm", "syslog-rfc3339", "2025-11-11T19:40:05.101000Z",
         "envelope")]
    assert report["findings"][1]["text"] == "ret = 0x5010B007 PushKvBlocks"  # no host, tag or escapes


KUBECTL = (
    "2025-11-11T19:40:04.100000000Z INFO vllm: starting engine\n"
    "2025-11-11T19:40:04.870051337Z LinkClusters: ErrorNo: 1343270920(local cluster is already linked with remote"
    " cluster!)\n"
    "2025-11-11T19:40:05.1Z WARNING llm_datadist: pull_blocks returned status 1343270939, retry 1/3\n"
    "2025-11-11T19:40:05.2Z [ERROR] GE(1,python3):2025-11-11-19:40:05.200.000 [llm_datadist.cc:812]57 PullKvBlocks:"
    " ErrorNo: 1343270913(request wait to be processed timeout!)\n")


def test_kubectl_timestamps_whose_lines_start_with_a_word_and_colon_stay_kubectl(tmp_path):
    report = scan_wrapped(tmp_path, KUBECTL, name="pod.log")
    assert {f["envelope"] for f in report["findings"]} == {"kubectl-timestamps"}
    assert brief(report, "line", "code", "container", "text") == [
        (2, "0x5010B008", None, "LinkClusters: ErrorNo: 1343270920(local cluster is already linked with remote cluster!)"),
        (3, "0x5010B01B", None, "WARNING llm_datadist: pull_blocks returned status 1343270939, retry 1/3"),
        (4, "0x5010B001", None, report["findings"][2]["text"])]
    assert report["findings"][2]["text"].startswith("[ERROR] GE(1,python3)")


# -- D11: a CSV record whose quoted message spans lines is one record -------------------------------
TRACEBACK = (
    "Traceback (most recent call last):\n"
    '  File "/usr/local/lib/python3.11/site-packages/vllm/distributed/kv_transfer/llmdatadist_c_mgr_connector.py",'
    " line 870, in _read_blocks\n"
    "    self.cache_manager.pull_blocks(src_cache_key, dst_cache, src_blocks, dst_blocks)\n"
    "llm_datadist.status.LLMException: [pull_blocks] failed, error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT,"
    ' src_cache_key = "BlocksCacheKey(cluster_id=1000)".')
LINK = ("[ERROR] GE(1,python3):2025-11-12-03:40:07.220.431 [llm_link_manager.cc:402]58 LinkClusters: ErrorNo: "
        "1343270921(local cluster link with remote cluster failed!)")
TRACEBACK2 = ("Traceback (most recent call last):\n  File \"/x/engine.py\", line 12, in link\n"
              "llm_datadist.status.LLMException: [link_clusters] failed, error code is LLMStatusCode.LLM_LINK_FAILED")


def export(header, rows, **writer_args):
    out = io.StringIO()
    writer = csv.writer(out, **writer_args)  # \r\n between records; a newline in a cell kept, the cell quoted
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def test_a_csv_record_spanning_lines_is_one_record_with_its_own_context(tmp_path):
    # Kibana's "Generate CSV" shape: every cell quoted, the message column not last, ECS names
    text = export(["message", "@timestamp", "host.name", "kubernetes.pod.name"], [
        [TRACEBACK, "Nov 12, 2025 @ 03:40:05.000", "decode-node-2", "decode-0"],
        [LINK, "Nov 12, 2025 @ 03:40:07.300", "prefill-node-1", "prefill-0"],
        [TRACEBACK2, "Nov 12, 2025 @ 03:40:08.000", "prefill-node-1", "prefill-0"],
    ], quoting=csv.QUOTE_ALL)
    report = scan_wrapped(tmp_path, text, name="export.csv")
    assert brief(report, "line", "code", "api", "action", "recoverable", "node", "pod", "timestamp", "time_source") == [
        (2, "0x5010B001", "PullKvBlocks", "relink", False, "decode-node-2", "decode-0", "2025-11-12T03:40:05.000000", "envelope"),
        (6, "0x5010B009", "LinkLlmClusters", "check-network", True, "prefill-node-1", "prefill-0", "2025-11-12T03:40:07.220431",
         "line"),
        (7, "0x5010B009", "LinkLlmClusters", "check-network", True, "prefill-node-1", "prefill-0", "2025-11-12T03:40:08.000000",
         "envelope")]
    assert report["findings"][0]["text"].startswith("llm_datadist.status.LLMException: [pull_blocks] failed")
    assert report["inputs"]["lines"] == 9  # header, 4 + 1 + 3 physical lines


@pytest.mark.parametrize("header", [["@timestamp", "host.name", "message"], ["_source.@timestamp", "_source.message"],
                                    ["Time", "Line"], ["timestamp", "@message", "kubernetes.pod.name"]])
def test_the_message_column_is_found_by_name_wherever_it_is(tmp_path, header):
    values = {"@timestamp": "2025-11-12T03:40:05.000Z", "_source.@timestamp": "2025-11-12T03:40:05.000Z",
              "Time": "2025-11-12 03:40:05.000", "timestamp": "2025-11-12T03:40:05Z", "host.name": "decode-node-2",
              "kubernetes.pod.name": "decode-0"}
    rows = [[values.get(h, TRACEBACK) for h in header], [values.get(h, "INFO ok") for h in header]]
    report = scan_wrapped(tmp_path, export(header, rows, lineterminator="\n"), name="out.csv")
    assert brief(report, "line", "code", "api", "action") == [(2, "0x5010B001", "PullKvBlocks", "relink")]
    assert report["findings"][0]["timestamp"].startswith("2025-11-1")
    assert report["inputs"]["lines"] == 6  # header, 4 lines of the traceback, 1


def test_bytes_read_are_the_files_when_parts_are_rejoined(tmp_path):
    # the rejoined text is longer or shorter than the file: the report counts the file's bytes
    parts = [json.dumps({"log": LONG[:16384], "stream": "stderr", "time": "2025-11-11T19:40:09.1Z"}),
             json.dumps({"log": LONG[16384:] + "\n", "stream": "stderr", "time": "2025-11-11T19:40:09.2Z"})]
    text = "\n".join(parts) + "\n"
    report = scan_wrapped(tmp_path, text)
    assert brief(report, "line", "code") == [(1, "0x5010B007")]
    assert report["inputs"]["bytes"] == len(text.encode())


CORPUS = Path(__file__).parents[1] / "data" / "envelopes"
KEY = yaml.safe_load((CORPUS / "expected.yaml").read_text(encoding="utf-8"))
NODES = {"prefill-0": "prefill-node-1", "decode-0": "decode-node-2"}

# Files whose text carries no zone at all: their zone is the documented clock of where they were
# written (corpus README): decode-node-2 and the Kibana browser are in Asia/Shanghai.
ZONE_FROM_README = {
    "syslog/decode-node-2.messages": "Asia/Shanghai",
    "terminal/decode-0.typescript": "Asia/Shanghai",
    "csv/kibana-discover.csv": "Asia/Shanghai",
}


def scan_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["scan", "-q", "--jobs", "1", "--format", "json", *args], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


@pytest.mark.parametrize("entry", KEY["files"], ids=[f["path"].split("/")[0] + ":" + f["path"].rsplit("/", 1)[-1]
                                                     for f in KEY["files"]])
def test_corpus_file_matches_the_answer_key(entry):
    args = [str(CORPUS / entry["path"])]
    zone = ZONE_FROM_README.get(entry["path"])
    if zone:
        args += ["--tz", zone]
    report = scan_json(*args)
    got = sorted((f["line"], f["code"]) for f in report["findings"])
    want = sorted((line, KEY["findings"][fid]["code"]) for fid, line in entry["findings"].items())
    assert got == want, entry["path"]
    names = entry.get("names") or {}
    roles = [r for r in ("pod", "container", "node") if r in names or (r == "pod" and "container_name" in names)]

    def expected(fid: str, line: int) -> tuple:
        truth = KEY["findings"][fid]
        idents = []
        for role in roles:
            value = names.get(role, names.get("container_name"))
            if value == "per-line":
                value = NODES[truth["pod"]] if role == "node" else truth["pod"]
            idents.append(value)
        when = truth["local_time"] if entry["envelope"] == "none" else truth["utc"]
        return (line, truth["code"], truth["name"], truth["api"], truth["action"], when, "line", *idents)

    want_full = sorted(expected(fid, line) for fid, line in entry["findings"].items())
    got_full = sorted((f["line"], f["code"], f["name"], f["api"], f["action"], f["timestamp"], f["time_source"],
                       *(f[r] for r in roles)) for f in report["findings"])
    assert got_full == want_full, entry["path"]
    for finding in report["findings"]:
        if entry["envelope"] != "none":
            assert finding["envelope"] == entry["envelope"].replace("kubectl-prefix-timestamps", "kubectl-prefix")
        assert "\x1b" not in finding["text"] and "#033" not in finding["text"] and '\\"' not in finding["text"]


def test_no_finding_on_a_negative_line():
    for entry in KEY["files"]:
        report = scan_json(str(CORPUS / entry["path"]))
        lines = {f["line"] for f in report["findings"]}
        for fid, line in entry["negatives"].items():
            if line not in set(entry["findings"].values()):  # one-line _search: every id is on line 1
                assert line not in lines, (entry["path"], fid)


def test_the_stdlib_prefilter_finds_the_same_as_hyperscan():
    from analyzer.run.api import Options, analyze

    paths = [str(CORPUS / entry["path"]) for entry in KEY["files"]]
    runs = [rows(analyze(paths, options=Options(prefilter=engine)))
            for engine in ("find", "auto")]
    assert runs[0] == runs[1] and len(runs[0]) == sum(len(e["findings"]) for e in KEY["files"])


def _stray_quote_export(rows: int) -> str:
    """A Kibana-style export whose first record's message holds a stray `"`: the record never
    closes, so every later row is held as part of it, to the end."""
    out = ['"@timestamp","message"',
           '"2025-11-12T03:40:05.101Z","[ERROR] GE(1,p):2025-11-12-03:40:05.101.002 [a.cc:1]1 F: said ""hi"  '
           'ret = 0x5010B009"']
    out += [f'"2025-11-12T03:40:{i % 60:02d}.101Z","[ERROR] GE(1,p):2025-11-12-03:40:05.101.002 [a.cc:1]1 '
            f'PullKvBlocks: ret = 0x5010B009 row {i}"' for i in range(rows)]
    return "\n".join(out) + "\n"


def test_a_stray_quote_in_a_csv_export_costs_linear_time():
    # each line held in the open record re-counted the quotes of all held before it: 20,000 rows
    # after a stray quote took 52 s
    import time

    from analyzer.scan.reassembly import Rejoined

    data = _stray_quote_export(20_000).encode()
    start = time.process_time()
    out = Rejoined(io.BytesIO(data), "csv").read()
    assert out == data  # a quote never closed: the lines as they were
    assert time.process_time() - start < 2.0


def test_a_csv_storm_parses_each_row_it_looks_back_at_once(monkeypatch, tmp_path):
    # each finding unwrapped the 40 rows before it again: a dense export was parsed 40 times over
    from analyzer.scan.unwrap import Unwrapper

    parsed = []
    real = Unwrapper.records

    def counted(self, line, around=None):
        parsed.append(line)
        return real(self, line, around)

    monkeypatch.setattr(Unwrapper, "records", counted)
    report = scan_wrapped(tmp_path, _stray_quote_export(300).replace('""hi"', '""hi""'), name="export.csv")
    assert len(report["findings"]) == 301
    assert len(parsed) < 3 * 302, len(parsed)


def test_lines_looked_back_at_are_unwrapped_without_their_times(tmp_path, monkeypatch):
    """A finding looks back at the 40 lines before it, unwrapped for their texts and pods only: a
    collector's stamp is unique to its line, so parsing it there was work for nothing (~9% of a
    CRI storm). Only the lines that hold findings (and their neighbours' errors) have theirs read;
    the findings' times are the same. By hand: 60 CRI lines, a code on every 20th."""
    from analyzer.scan import unwrap

    body = "[ERROR] GE(61,python3):2025-11-12-03:42:{:02d}.000.000 [x.cc:1]62 {}"
    # no API on a finding's own line: its context is looked for in the lines before
    lines = [f"2025-11-12T03:42:{n % 60:02d}.{n:06d}000Z stdout F "
             + body.format(n % 60, "ret = 1343270913" if n % 20 == 19 else f"Step: step {n} ok") for n in range(60)]
    path = tmp_path / "cri.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    parsed: list[str] = []
    real = unwrap.envelope_time
    monkeypatch.setattr(unwrap, "envelope_time", lambda text, *a: (parsed.append(text), real(text, *a))[1])
    result = CliRunner().invoke(cli, ["scan", str(path), "--format", "json", "--fail-on", "never", "--jobs", "1"])
    report = json.loads(result.output)
    assert [f["timestamp"] for f in report["findings"]] == ["2025-11-12T03:42:19.000000Z", "2025-11-12T03:42:39.000000Z",
                                                             "2025-11-12T03:42:59.000000Z"]
    assert len(parsed) <= 3 + 1  # the findings' lines (and the head the envelope is told from)
