"""Envelopes, case by case (issue #9): two pods through `kubectl logs --prefix --timestamps`, lines
the runtime cut in two, escapes that hide codes, records inside records, zones, and xLLM's hex
without `0x`. Through the real CLI; expected results written by hand.
"""

import json

from analyzer.cli import cli
from click.testing import CliRunner


def scan(tmp_path, text, *args, name="logs.txt", relative=False):
    path = tmp_path / name
    shown = name if relative else str(path)  # relative: as typed in tmp_path (the layout reads the path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    result = CliRunner().invoke(cli, ["scan", "-q", "--format", "json", "--year", "2025", *args, shown],
                                catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)


def brief(report, *keys):
    return [tuple(f[k] for k in keys) for f in report["findings"]]


# Both pods run their worker as pid 1 with thread 57. The decode pod's wait timeout names no API:
# its API is the PullKvBlocks call logged just before IN ITS OWN POD; the prefill pod's
# LinkClusters line sits in between and must not lend it its API.
PREFIX = """\
[pod/prefill-0/vllm] 2025-11-11T19:40:04.100000000Z [INFO] GE(1,python3):2025-11-11-19:40:04.100.000 [llm_link_manager.cc:88]57 LinkClusters: start link, cluster 1
[pod/decode-0/vllm] 2025-11-12T03:40:04.200000000+08:00 [INFO] GE(1,python3):2025-11-12-03:40:04.200.000 [llm_datadist.cc:640]57 PullKvBlocks: pull blocks start, req_id = 7
[pod/prefill-0/vllm] 2025-11-11T19:40:04.300000000Z [INFO] GE(1,python3):2025-11-11-19:40:04.300.000 [llm_link_manager.cc:91]57 LinkClusters: waiting for peer
[pod/decode-0/vllm] 2025-11-12T03:40:05.101002345+08:00 [ERROR] GE(1,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:812]57 : wait result ret = 1343270913
[pod/prefill-0/vllm] 2025-11-11T19:40:05.200000000Z [ERROR] GE(1,python3):2025-11-11-19:40:05.200.000 [llm_link_manager.cc:402]57 LinkClusters: ErrorNo: 1343270921(local cluster link with remote cluster failed!)
[pod/decode-0/vllm] 2025-11-12T03:40:06.000000000+08:00 E20251112 03:40:06.000000    63 llm_data_dist_transfer.cpp:75] PullKvBlocks failed, layer = 3, role = K, ret = 5010b001
"""


def test_kubectl_prefix_timestamps_keeps_two_pods_apart(tmp_path):
    report = scan(tmp_path, PREFIX, name="pd.log")
    assert brief(report, "line", "pod", "container", "code", "api", "action", "timestamp") == [
        (4, "decode-0", "vllm", "0x5010B001", "PullKvBlocks", "relink", "2025-11-11T19:40:05.101002Z"),
        (5, "prefill-0", "vllm", "0x5010B009", "LinkLlmClusters", "check-network", "2025-11-11T19:40:05.200000Z"),
        (6, "decode-0", "vllm", "0x5010B001", "PullKvBlocks", "relink", "2025-11-11T19:40:06.000000Z"),
    ]
    assert {f["node"] for f in report["findings"]} == {"decode-0", "prefill-0"}  # no better name: the pod
    # one burst per pod, never one across them
    bursts = report["summary"]["bursts"]
    assert {(b["node"], b["lead"]["api"]) for b in bursts} == {("decode-0", "PullKvBlocks"),
                                                              ("prefill-0", "LinkLlmClusters")}


def test_kubectl_prefix_text_report_names_both_pods(tmp_path):
    path = tmp_path / "pd.log"
    path.write_text(PREFIX)
    result = CliRunner().invoke(cli, ["scan", "-q", str(path)], catch_exceptions=False)
    assert result.exit_code == 1
    assert "decode-0" in result.stdout and "prefill-0" in result.stdout
    assert "relink" in result.stdout and "check-network" in result.stdout


def test_since_with_an_offset_keeps_the_pod_whose_stamps_carry_one(tmp_path):
    # 19:40:05.5Z is 03:40:05.5 at +08:00: only the decode pod's last line is at or after it
    report = scan(tmp_path, PREFIX, "--since", "2025-11-12T03:40:05.5+08:00", name="pd.log")
    assert brief(report, "line", "pod") == [(6, "decode-0")]
    report = scan(tmp_path, PREFIX, "--until", "2025-11-11T19:40:05.2Z", name="pd.log")
    assert brief(report, "line") == [(4,), (5,)]


def test_tz_sets_the_zone_of_zone_less_stamps(tmp_path):
    line = "[ERROR] GE(1,p):2025-11-12-03:40:05.101.002 [llm_datadist.cc:1]2 PullKvBlocks: ret = 1343270913\n"
    assert brief(scan(tmp_path, line), "timestamp", "time_source") == [("2025-11-12T03:40:05.101002", "line")]
    assert brief(scan(tmp_path, line, "--tz", "Asia/Shanghai"), "timestamp") == [("2025-11-11T19:40:05.101002Z",)]
    assert brief(scan(tmp_path, line, "--tz", "-05:00"), "timestamp") == [("2025-11-12T08:40:05.101002Z",)]
    assert brief(scan(tmp_path, line, "--tz", "+08:00", "--since", "2025-11-12 03:40"), "line") == [(1,)]
    result = CliRunner().invoke(cli, ["scan", "--tz", "Mars/Olympus", str(tmp_path / "logs.txt")])
    assert result.exit_code == 2 and "Mars/Olympus" in result.stderr


def test_a_line_without_its_own_time_takes_its_envelopes(tmp_path):
    text = ('{"log":"llm_datadist.status.LLMException: [pull_blocks] failed, error code is '
            'LLMStatusCode.LLM_NOT_YET_LINK\\n","stream":"stderr","time":"2025-11-11T19:40:09.650208337Z"}\n')
    report = scan(tmp_path, text)
    assert brief(report, "timestamp", "time_source", "envelope_time", "stream", "api") == [
        ("2025-11-11T19:40:09.650208Z", "envelope", "2025-11-11T19:40:09.650208+00:00", "stderr", "PullKvBlocks")]


def _docker_parts(line, stamp):
    cut = 16384
    parts = [line[i:i + cut] for i in range(0, len(line), cut)]
    parts[-1] += "\n"
    return "".join(json.dumps({"log": p, "stream": "stderr", "time": stamp}, separators=(",", ":")) + "\n"
                   for p in parts)


_HEAD = "(EngineCore_DP0 pid=1) ERROR 11-12 03:40:09 [c.py:874] KV transfer failed: [pull_blocks] blocks=["
_TAIL = "], error code is LLMStatusCode.LLM_NOT_YET_LINK"
# the name straddles byte 16384, where Docker and containerd cut a line
LONG = _HEAD + "7" * (16384 - 8 + 16 - len(_HEAD) - len(_TAIL)) + _TAIL


def test_docker_partial_entries_are_joined(tmp_path):
    assert LONG.index("LLM_NOT_YET_LINK") < 16384 < LONG.index("LLM_NOT_YET_LINK") + 16
    text = '{"log":"before\\n","stream":"stderr","time":"2025-11-11T19:40:08Z"}\n' + _docker_parts(
        LONG, "2025-11-11T19:40:09.1Z") + '{"log":"after\\n","stream":"stderr","time":"2025-11-11T19:40:10Z"}\n'
    report = scan(tmp_path, text)
    assert brief(report, "line", "code", "api", "timestamp") == [
        (2, "0x5010B007", "PullKvBlocks", "2025-11-11T19:40:09Z")]
    assert report["inputs"]["lines"] == 4


def test_cri_partial_lines_are_joined_across_reads(tmp_path):
    cut = LONG.index("LLM_NOT_YET_LINK") + 5
    filler = "".join(f"2025-11-12T03:40:08.{i:06d}+08:00 stdout F noise line {i}\n" for i in range(30000))
    text = (filler + f"2025-11-12T03:40:09.1+08:00 stderr P {LONG[:cut]}\n"
            f"2025-11-12T03:40:09.2+08:00 stderr F {LONG[cut:]}\n")
    report = scan(tmp_path, text)
    assert brief(report, "line", "code", "api", "timestamp") == [
        (30001, "0x5010B007", "PullKvBlocks", "2025-11-11T19:40:09Z")]


def test_journald_partial_records_and_byte_array_messages(tmp_path):
    def record(i, message, partial=False):
        obj = {"__CURSOR": f"s=1;i={i}", "__REALTIME_TIMESTAMP": "1762890009650208", "_HOSTNAME": "decode-node-2",
               "CONTAINER_NAME": "decode-0", "MESSAGE": message}
        if partial:
            obj["CONTAINER_PARTIAL_MESSAGE"] = "true"
        return json.dumps(obj, separators=(", ", " : ")) + "\n"
    cut = LONG.index("LLM_NOT_YET_LINK") + 3
    coloured = list(b"PullKvBlocks failed, ret = \x1b[31m5010b002\x1b[0m")
    text = record(1, LONG[:cut], True) + record(2, LONG[cut:]) + record(3, coloured)
    report = scan(tmp_path, text)
    assert brief(report, "line", "code", "api", "node", "pod", "text") == [
        (1, "0x5010B007", "PullKvBlocks", "decode-node-2", "decode-0", report["findings"][0]["text"]),
        (3, "0x5010B002", "PullKvBlocks", "decode-node-2", "decode-0", "PullKvBlocks failed, ret = 5010b002")]


def test_escaped_tabs_and_rsyslog_escapes_before_a_code(tmp_path):
    plog = "[ERROR] GE(1,p):2025-11-12-03:40:07.220.431 [llm_datadist.cc:902]58 CheckLinkStatus: ErrorNo:"
    loki = (json.dumps({"labels": {"pod": "decode-0"}, "line": plog + "\t1343270919(not linked)",
                        "timestamp": "2025-11-12T03:40:07.3+08:00"}) + "\n"
            + '{"labels":{"pod":"decode-0"},"line":"' + plog + '\\u00091343270919(x)","timestamp":"2025-11-12T03:40:08Z"}\n')
    assert brief(scan(tmp_path, loki), "code", "api", "text") == [
        ("0x5010B007", "CheckLinkStatus", plog + "\t1343270919(not linked)"),
        ("0x5010B007", "CheckLinkStatus", plog + "\t1343270919(x)")]
    syslog = f"<133>1 2025-11-12T03:40:07.3+08:00 decode-node-2 decode-0 - - - {plog}#0111343270919(x)\n"
    assert brief(scan(tmp_path, syslog), "code", "text") == [("0x5010B007", plog + "\t1343270919(x)")]


def test_a_merged_traceback_takes_its_api_from_its_own_frames(tmp_path):
    # Fluent Bit's multiline parser merged one traceback into one record; the record before it is
    # a LinkClusters error of another request: its API must not leak into the traceback's code.
    traceback = ("Traceback (most recent call last):\n"
                 '  File "/x/llm_datadist/v2/cache_manager.py", line 402, in pull_blocks\n'
                 "    raise LLMException(msg, status)\n"
                 "llm_datadist.status.LLMException: error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT\n")
    first = "[ERROR] GE(1,p):2025-11-12-03:40:05.1 [llm.cc:1]2 LinkClusters: ErrorNo: 1343270925(link is busy)"
    text = "".join(
        f'kube.c.log: [1762890005.{i}, {{"log":{json.dumps(m)},"kubernetes":{{"pod_name":"decode-0"}}}}]\n'
        for i, m in enumerate((first, traceback)))
    report = scan(tmp_path, text)
    assert brief(report, "line", "code", "api", "api_evidence", "action") == [
        (1, "0x5010B00D", "LinkLlmClusters", "func", "retry-later"),
        (2, "0x5010B001", "PullKvBlocks", "traceback", "relink")]


def test_a_one_line_search_response_gives_each_hit_its_own_context(tmp_path):
    def hit(pod, log):
        return {"_index": "logs", "_source": {"@timestamp": "2025-11-11T19:40:05.000Z", "log": log,
                                              "kubernetes": {"pod_name": pod}}}
    body = {"took": 2, "timed_out": False, "hits": {"hits": [
        hit("prefill-0", "[pull_blocks] failed, error code is LLMStatusCode.LLM_LINK_BUSY"),
        hit("decode-0", "KV transfer task failed: error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT"),
        hit("decode-0", "[link_clusters] failed, error code is LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT"),
    ]}}
    report = scan(tmp_path, json.dumps(body, separators=(",", ":")) + "\n")
    # one physical line; the first [tag] on it (another pod's) gives no other record its API
    assert sorted(brief(report, "line", "pod", "code", "api", "api_evidence"), key=str) == [
        (1, "decode-0", "0x5010B001", "LinkLlmClusters", "tag"),
        (1, "decode-0", "0x5010B001", None, None),
        (1, "prefill-0", "0x5010B01B", "PullKvBlocks", "tag"),
    ]


def test_pod_and_container_from_the_kubelet_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    line = "2025-11-12T03:40:05.1+08:00 stderr F [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT\n"
    report = scan(tmp_path, line, name="var/log/pods/serving_decode-3_0a1b2c3d-4e5f/vllm/0.log", relative=True)
    assert brief(report, "pod", "container", "node", "envelope") == [("decode-3", "vllm", "decode-3", "cri")]
    report = scan(tmp_path, line, name="node-7/var/log/pods/serving_decode-3_0a1b2c3d-4e5f/vllm/0.log",
                  relative=True)
    assert brief(report, "pod", "node") == [("decode-3", "node-7")]


def test_envelope_is_told_by_content_not_name(tmp_path):
    plain = "[ERROR] GE(1,p):2025-11-12-03:40:05.1 [llm.cc:1]2 PullKvBlocks: ret = 1343270913\n"
    report = scan(tmp_path, plain, name="x-json.log")
    assert brief(report, "envelope", "api") == [(None, "PullKvBlocks")]


def test_xllm_hex_without_0x(tmp_path):
    text = ("E20251112 03:40:05.1 63 llm_data_dist_transfer.cpp:60] LinkLlmClusters failed, ret = 5010b009\n"
            "E20251112 03:40:06.1 63 llm_data_dist_transfer.cpp:75] PullKvBlocks failed, layer = 3, role = K, "
            "ret = 5010b001\n"
            "E20251112 03:40:07.1 63 llm_data_dist_transfer.cpp:90] PushKvBlocks failed, ret=5010b007\n"
            "E20251112 03:40:08.1 63 llm_data_dist_transfer.cpp:75] PullKvBlocks failed, k_ret: 5010B01B, v_ret: 0\n"
            "E20251112 03:40:09.1 63 llm_data_dist_transfer.cpp:99] PullKvBlocks failed, status = ffffffff\n"
            # look-alikes: an id, an address, a longer hex, no code word before it
            "I20251112 03:40:10.1 63 x.cpp:1] cache id 5010b001 mapped at 0xffff5010b001, key = 5010b0011\n"
            "I20251112 03:40:11.1 63 x.cpp:1] ret = 0, mask ffffffff\n")
    assert brief(scan(tmp_path, text), "line", "code", "api", "form") == [
        (1, "0x5010B009", "LinkLlmClusters", "hex"),
        (2, "0x5010B001", "PullKvBlocks", "hex"),
        (3, "0x5010B007", "PushKvBlocks", "hex"),
        (4, "0x5010B01B", "PullKvBlocks", "hex"),
        (5, "0xFFFFFFFF", "PullKvBlocks", "generic"),
    ]


def test_explain_accepts_hex_without_0x():
    for token in ("5010b007", "5010B007", "0x5010B007", "1343270919"):
        result = CliRunner().invoke(cli, ["explain", token])
        assert result.exit_code == 0 and "LLM_NOT_YET_LINK" in result.stdout, token
    result = CliRunner().invoke(cli, ["explain", "ffffffff"])
    assert result.exit_code == 0 and "LLM_FAILED" in result.stdout
    assert CliRunner().invoke(cli, ["explain", "5010c007"]).exit_code == 2


def test_a_json_log_without_a_known_message_key_is_scanned_as_its_pairs(tmp_path):
    text = ('{"severity":"E","when":"2025-11-12T03:40:05Z","err":{"op":"PullKvBlocks","detail":'
            '"wait failed,\\tret = 5010b001"}}\n{"severity":"I","when":"2025-11-12T03:40:06Z","err":null}\n')
    assert brief(scan(tmp_path, text), "line", "code", "api", "envelope") == [
        (1, "0x5010B001", "PullKvBlocks", "json-lines")]


def test_tz_from_the_config_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".ddtriage.toml").write_text('tz = "+08:00"\n')
    line = "[ERROR] GE(1,p):2025-11-12-03:40:05.101.002 [llm_datadist.cc:1]2 PullKvBlocks: ret = 1343270913\n"
    assert brief(scan(tmp_path, line), "timestamp") == [("2025-11-11T19:40:05.101002Z",)]
    assert brief(scan(tmp_path, line, "--tz", "UTC"), "timestamp") == [("2025-11-12T03:40:05.101002Z",)]


def test_an_enveloped_file_split_across_jobs_gives_the_same_report(tmp_path, monkeypatch):
    from analyzer.run import parallel

    monkeypatch.setattr(parallel, "SPLIT_MIN_BYTES", 1)
    header = '"@timestamp","kubernetes.pod_name","log"\n'
    rows = []
    for i in range(3000):
        rows.append(f'"Nov 12, 2025 @ 03:40:{i % 60:02d}.000","decode-{i % 2}","(EngineCore pid=1) INFO 11-12 03:40:'
                    f'{i % 60:02d} [c.py:1] noise ""{i}"" "\n')
        if i % 500 == 250:
            rows.append(f'"Nov 12, 2025 @ 03:40:{i % 60:02d}.500","decode-{i % 2}","(EngineCore pid=1) ERROR 11-12 '
                        f'03:40:{i % 60:02d} [c.py:9] [pull_blocks] failed, error code is ""LLM_WAIT_PROCESS_TIMEOUT"""\n')
    path = tmp_path / "export.csv"
    path.write_text(header + "".join(rows))
    reports = []
    for jobs in ("1", "3"):
        result = CliRunner().invoke(cli, ["scan", "-q", "--format", "json", "--jobs", jobs, "--tz", "+08:00",
                                          str(path)], catch_exceptions=False)
        reports.append(json.loads(result.stdout)["findings"])
    assert reports[0] == reports[1]
    assert len(reports[0]) == 6 and {f["envelope"] for f in reports[0]} == {"csv"}
    assert all(f["api"] == "PullKvBlocks" and f["text"].endswith('"LLM_WAIT_PROCESS_TIMEOUT"') for f in reports[0])


def test_a_csv_cell_past_the_csv_module_limit_is_scanned_as_the_line(tmp_path):
    text = ('"@timestamp","pod","log"\n"Nov 12, 2025 @ 03:40:05.000","decode-0","' + "x" * 200_000
            + ' [pull_blocks] failed, error code is LLMStatusCode.LLM_TIMEOUT"\n')
    assert brief(scan(tmp_path, text), "line", "code", "api") == [(2, "0x5010B01A", "PullKvBlocks")]


def test_times_at_the_ends_of_the_calendar_do_not_break_the_scan(tmp_path):
    text = ('[pod/a/c] 9999-12-31T23:59:59-05:00 [ERROR] GE(1,p):9999-12-31-23:59:59.000.001 [llm.cc:1]2 '
            "PullKvBlocks: ret = 1343270913\n"
            "[pod/a/c] 0001-01-01T00:00:00+08:00 [ERROR] GE(1,p):0001-01-01-00:00:00.000.001 [llm.cc:1]2 "
            "PullKvBlocks: ret = 1343270913\n")
    assert [f[0] for f in brief(scan(tmp_path, text, "--tz", "+08:00"), "line")] == [1, 2]


def test_json_lines_whose_log_lacks_a_newline_are_not_joined(tmp_path):
    # a pipeline's re-export in Docker's shape without the final \n: every entry is whole
    lines = [f'{{"log":"(EngineCore pid=1) ERROR 11-12 03:40:0{i} [c.py:9] [pull_blocks] failed, error code is '
             f'LLMStatusCode.LLM_TIMEOUT","stream":"stderr","time":"2025-11-11T19:40:0{i}Z"}}\n' for i in range(3)]
    assert brief(scan(tmp_path, "".join(lines)), "line", "envelope") == [
        (1, "docker-json-file"), (2, "docker-json-file"), (3, "docker-json-file")]


def test_the_joined_detect_pattern_tells_every_head_as_the_rows_one_by_one(tmp_path):
    """`EnvelopeTable.any_row` (every row envelope's `detect`, alternated) only lets a head whose
    first lines none of them match skip the rows: every envelope example's head, every sample
    log's, and plain heads are told the same with it as without it."""
    import random
    from pathlib import Path

    from analyzer.knowledge.rules import RuleSet

    table = RuleSet.load().envelopes
    assert table.any_row() is not None  # the shipped rows join
    heads = [("\n".join([e["wrapped"]] * 3) + "\n").encode() for env in table.envelopes for e in env.examples]
    root = Path(__file__).resolve().parents[2]
    heads += [p.read_bytes()[:65536] for p in sorted((root / "sample_logs").rglob("*")) if p.is_file()]
    rng = random.Random(7)
    pieces = [b"[ERROR] GE(1,p):2025-11-12-03:40:05.101 x\n", b"2025-11-12T03:40:05Z ", b"stdout F ", b"{\"log\":\"a\"}\n",
              b"<13>1 ", b"Nov 12 03:40:05 host app[1]: ", b"\n", b"plain words\n", b"[pod/a/b] "]
    heads += [b"".join(rng.choice(pieces) for _ in range(rng.randint(1, 30))) for _ in range(300)]
    assert len(heads) > 320
    joined = [table.match_head(h) for h in heads]
    table._any_row = None  # the rows one by one
    alone = [table.match_head(h) for h in heads]
    assert joined == alone
    assert sum(1 for r in joined if r) > 20  # heads that are enveloped, not only plain ones
