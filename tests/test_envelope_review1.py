"""Envelope defects from review 1 (D1, D2, D11), through the real CLI. Inputs modelled on the
reviewer's files and written again here from the formats' documentation (journalctl -o json,
rsyslog's RSYSLOG_FileFormat, RFC 4180 CSV as Kibana and Python's csv.writer write it); the
expected findings are written by hand."""

import csv
import io
import json

import pytest
from analyzer.cli import cli
from analyzer.scan.blocks import Prefilter
from click.testing import CliRunner


def scan(tmp_path, text, *args, name="logs.txt"):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    result = CliRunner().invoke(cli, ["scan", "-q", "--format", "json", "--year", "2025", *args, str(path)],
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
    report = scan(tmp_path, journal(separators, colon), name="journal.json")
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
    report = scan(tmp_path, text)
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
    report = scan(tmp_path, RSYSLOG, name="messages")
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
    report = scan(tmp_path, KUBECTL, name="pod.log")
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
    report = scan(tmp_path, text, name="export.csv")
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
    report = scan(tmp_path, export(header, rows, lineterminator="\n"), name="out.csv")
    assert brief(report, "line", "code", "api", "action") == [(2, "0x5010B001", "PullKvBlocks", "relink")]
    assert report["findings"][0]["timestamp"].startswith("2025-11-1")
    assert report["inputs"]["lines"] == 6  # header, 4 lines of the traceback, 1


def test_bytes_read_are_the_files_when_parts_are_rejoined(tmp_path):
    # the rejoined text is longer or shorter than the file: the report counts the file's bytes
    parts = [json.dumps({"log": LONG[:16384], "stream": "stderr", "time": "2025-11-11T19:40:09.1Z"}),
             json.dumps({"log": LONG[16384:] + "\n", "stream": "stderr", "time": "2025-11-11T19:40:09.2Z"})]
    text = "\n".join(parts) + "\n"
    report = scan(tmp_path, text)
    assert brief(report, "line", "code") == [(1, "0x5010B007")]
    assert report["inputs"]["bytes"] == len(text.encode())
