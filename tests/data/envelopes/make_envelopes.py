"""Write tests/data/envelopes/: the same two pods' log lines, raw (base/) and in each collection envelope.

Run from anywhere: `python3 tests/data/envelopes/make_envelopes.py`. Deterministic: no clock, no randomness.
This writes DATA only. The answer key (expected.yaml) is written by hand and is not produced here; see README.md.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
ESC = "\x1b"
TAB = "\t"
CST = timezone(timedelta(hours=8))
UTC = UTC
SPLIT = 16384  # Docker's and containerd's line-split size (16 KiB)

NS = "llm-serving"
CID = {  # container ids (docker/CRI), pod uids
    "prefill-0": "4f1d9e0a7c2b8e6d5a3f1c0b9e8d7c6a5b4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d",
    "decode-0": "9a7c5e3b1d2f4a6c8e0b9d7f5a3c1e2b4d6f8a0c2e4b6d8f0a1c3e5b7d9f1a2c",
}
UID = {
    "prefill-0": "6b0f3c2a-91d4-4e57-8a1b-2c3d4e5f6a70",
    "decode-0": "d2e8a4b6-37c1-4f09-b5e2-8a9c0d1e2f34",
}
NODE = {"prefill-0": "prefill-node-1", "decode-0": "decode-node-2"}
TZ = {"prefill-0": UTC, "decode-0": CST}  # node clocks (containerd, rsyslog); the containers' own clocks too


@dataclass(frozen=True)
class Line:
    """One logical line of a pod's stderr and the instant the runtime captured it (UTC, nanoseconds)."""

    pod: str
    lid: str
    text: str
    cap: str  # capture instant, "YYYY-MM-DDTHH:MM:SS.nnnnnnnnn" in UTC


def long_line() -> str:
    """A ~24 KiB vLLM error line whose status name straddles byte 16384 (the 16 KiB split)."""
    head = ("(EngineCore_DP0 pid=1) ERROR 11-12 03:40:09 [llmdatadist_c_mgr_connector.py:874] "
            "KV transfer task failed for request chatcmpl-2080 (remote_cluster_id=0, local_block_ids=[")
    ids: list[str] = []
    n = 4096
    tail_of_head = "]): [pull_blocks] failed, error code is LLMStatusCode."
    target = SPLIT - len("LLM_NOT_Y")  # the split falls after "LLM_NOT_Y"
    while len(head) + len(", ".join(ids + [str(n)])) + len(tail_of_head) + 40 < target:
        ids.append(str(n))
        n += 1
    body = head + ", ".join(ids)
    pad = target - len(body) - len(tail_of_head) - len(", session=''")
    body += ", session='" + ("0123456789abcdef" * 8)[:pad] + "'" + tail_of_head
    assert len(body) == target, (len(body), target)
    rest = "LLM_NOT_YET_LINK, remote_block_ids=[" + ", ".join(str(i) for i in range(8192, 9500)) + "]"
    line = body + rest
    assert line[SPLIT - 9:SPLIT + 7] == "LLM_NOT_YET_LINK"
    return line


def tb(msg: str) -> str:
    return "(EngineCore_DP0 pid=1) ERROR 11-12 03:40:05 [llmdatadist_c_mgr_connector.py:442] " + msg


PREFILL = [
    Line("prefill-0", "P01", "(EngineCore_DP0 pid=1) INFO 11-11 19:39:57 [llmdatadist_c_mgr_connector.py:318] "
         "Done initialize llm_datadist in rank 0, local rank 0, cluster id 0", "2025-11-11T19:39:57.310228101"),
    Line("prefill-0", "P02", "[INFO] GE(1,python3):2025-11-11-19:39:57.880.120 [llm_datadist.cc:233]1 Initialize: "
         "llm datadist init success, role = Prompt, cluster_id = 0, device_id = 0", "2025-11-11T19:39:57.880166093"),
    Line("prefill-0", "P03", "(EngineCore_DP0 pid=1) INFO 11-11 19:39:57 [llmdatadist_c_mgr_connector.py:262] "
         "LLMDataDistCMgrConnectorWorker: Cluster 0 start to listen request from peers",
         "2025-11-11T19:39:57.991004532"),
    Line("prefill-0", "P04", "(EngineCore_DP0 pid=1) INFO 11-11 19:40:04 [llmdatadist_c_mgr_connector.py:270] "
         "LLMDataDistCMgrConnectorWorker: Receive message from cluster 1", "2025-11-11T19:40:04.611873090"),
    Line("prefill-0", "P05", "[ERROR] GE(1,python3):2025-11-11-19:40:04.870.004 [llm_link_manager.cc:402]44 "
         "LinkClusters: ErrorNo: 1343270920(local cluster is already linked with remote cluster!) "
         "[GE][MODULE]cluster 1 is already linked", "2025-11-11T19:40:04.870051337"),
    Line("prefill-0", "P06", "(EngineCore_DP0 pid=1) INFO 11-11 19:40:04 [llmdatadist_c_mgr_connector.py:571] "
         "Successfully build link with cluster id 1 with cluster name pd_comm_192.168.10.11_192.168.20.12 !",
         "2025-11-11T19:40:04.905118874"),
    Line("prefill-0", "P07", "(EngineCore_DP0 pid=1) ERROR 11-11 19:40:06 [llmdatadist_c_mgr_connector.py:498] "
         "Failed to send reqest_id chatcmpl-2063 to prefill: Resource temporarily unavailable",
         "2025-11-11T19:40:06.512334019"),
    Line("prefill-0", "P08", "(EngineCore_DP0 pid=1) INFO 11-11 19:40:12 [loggers.py:123] Engine 000: "
         "Avg prompt throughput: 812.4 tokens/s, Avg generation throughput: 0.0 tokens/s, Running: 0 reqs, "
         "Waiting: 0 reqs, GPU KV cache usage: 0.0%, Prefix cache hit rate: 0.0%", "2025-11-11T19:40:12.000441870"),
]

DECODE = [
    Line("decode-0", "D01", "(EngineCore_DP0 pid=1) INFO 11-12 03:39:58 [llmdatadist_c_mgr_connector.py:318] "
         "Done initialize llm_datadist in rank 0, local rank 0, cluster id 1", "2025-11-11T19:39:58.402113508"),
    Line("decode-0", "D02", "[INFO] GE(1,python3):2025-11-12-03:39:58.702.114 [llm_datadist.cc:233]1 Initialize: "
         "llm datadist init success, role = Decoder, cluster_id = 1, device_id = 0", "2025-11-11T19:39:58.702190331"),
    Line("decode-0", "D03", "(EngineCore_DP0 pid=1) INFO 11-12 03:40:04 [llmdatadist_c_mgr_connector.py:571] "
         "Successfully build link with cluster id 0 with cluster name pd_comm_192.168.10.11_192.168.20.12 !",
         "2025-11-11T19:40:04.913553012"),
    Line("decode-0", "D04", "[INFO] GE(1,python3):2025-11-12-03:40:04.990.517 [llm_datadist.cc:640]57 PullKvBlocks: "
         "pull blocks success, req_id = 2061, ret = 0", "2025-11-11T19:40:04.990571102"),
    Line("decode-0", "D05", "[ERROR] GE(1,python3):2025-11-12-03:40:05.101.002 [llm_datadist.cc:812]57 PullKvBlocks: "
         "ErrorNo: 1343270913(request wait to be processed timeout!) [GE][MODULE]pull blocks timeout",
         "2025-11-11T19:40:05.101002345"),
    Line("decode-0", "D06", tb("Pull blocks for request chatcmpl-2063 failed"), "2025-11-11T19:40:05.102887113"),
    Line("decode-0", "D07", tb("Traceback (most recent call last):"), "2025-11-11T19:40:05.102889204"),
    Line("decode-0", "D08", tb('  File "/vllm-workspace/vllm-ascend/vllm_ascend/distributed/'
                               'llmdatadist_c_mgr_connector.py", line 855, in _read_blocks'),
         "2025-11-11T19:40:05.102890911"),
    Line("decode-0", "D09", tb("    self.cache_manager.pull_blocks("), "2025-11-11T19:40:05.102892236"),
    Line("decode-0", "D10", tb('  File "/usr/local/python3.11.13/lib/python3.11/site-packages/llm_datadist/v2/'
                               'cache_manager.py", line 402, in pull_blocks'), "2025-11-11T19:40:05.102893517"),
    Line("decode-0", "D11", tb("    raise LLMException(msg, status)"), "2025-11-11T19:40:05.102894808"),
    Line("decode-0", "D12", tb("llm_datadist.status.LLMException: [pull_blocks] failed, error code is "
                               "LLMStatusCode.LLM_WAIT_PROCESS_TIMEOUT"), "2025-11-11T19:40:05.102896122"),
    Line("decode-0", "D13", "E20251112 03:40:06.327589    63 llm_data_dist_transfer.cpp:75] PullKvBlocks failed, "
         "layer = 3, role = K, ret = 5010b001", "2025-11-11T19:40:06.327640118"),
    Line("decode-0", "D14", "[ERROR] GE(1,python3):2025-11-12-03:40:07.220.431 [llm_datadist.cc:902]58 "
         "CheckLinkStatus: ErrorNo:" + TAB + "1343270919(local cluster is not linked with remote cluster!) "
         "[GE][MODULE]remote cluster 0 is not linked", "2025-11-11T19:40:07.220473664"),
    Line("decode-0", "D15", "(EngineCore_DP0 pid=1) WARNING 11-12 03:40:08 [llmdatadist_c_mgr_connector.py:861] "
         "pull_blocks for request chatcmpl-2071 returned status " + ESC + "[1;31m1343270939" + ESC + "[0m, "
         "retry 1/3 in 50 ms", "2025-11-11T19:40:08.004519776"),
    Line("decode-0", "D16", long_line(), "2025-11-11T19:40:09.650208337"),
    Line("decode-0", "D17", "(EngineCore_DP0 pid=1) INFO 11-12 03:40:12 [loggers.py:123] Engine 000: "
         "Avg prompt throughput: 0.0 tokens/s, Avg generation throughput: 41.3 tokens/s, Running: 3 reqs, "
         "Waiting: 0 reqs, GPU KV cache usage: 1.2%, Prefix cache hit rate: 0.0%", "2025-11-11T19:40:12.001130500"),
    Line("decode-0", "D18", "[ERROR] GE(1,python3):2025-11-12-03:40:25.514.220 [ge_api.cc:331]91 AddGraph: "
         "ErrorNo: 4294967295(failed) [COMP][PRE_OPT]Build graph failed, graph id = 3",
         "2025-11-11T19:40:25.514299871"),
    Line("decode-0", "D19", "[INFO] GE(1,python3):2025-11-12-03:40:26.001.774 [llm_datadist.cc:1022]57 "
         "UnlinkClusters: unlink cluster 0 success, ret = 0", "2025-11-11T19:40:26.001836250"),
]

PODS = {"prefill-0": PREFILL, "decode-0": DECODE}


# ---------------------------------------------------------------- time helpers

def cap_dt(line: Line) -> tuple[datetime, int]:
    """(UTC datetime to the second, nanoseconds)."""
    whole, frac = line.cap.split(".")
    return datetime.fromisoformat(whole).replace(tzinfo=UTC), int(frac)


def rfc3339nano(line: Line, tz: timezone, fixed: bool = False) -> str:
    """Go's time.RFC3339Nano (trailing zeros trimmed) or RFC3339NanoFixed (always 9 digits)."""
    dt, ns = cap_dt(line)
    local = dt.astimezone(tz)
    frac = f"{ns:09d}" if fixed else f"{ns:09d}".rstrip("0")
    stamp = local.strftime("%Y-%m-%dT%H:%M:%S") + (("." + frac) if frac else "")
    off = local.strftime("%z")
    return stamp + ("Z" if off == "+0000" else off[:3] + ":" + off[3:])


def epoch_ns(line: Line) -> int:
    dt, ns = cap_dt(line)
    return int(dt.timestamp()) * 1_000_000_000 + ns


def merged() -> list[Line]:
    """Both pods' lines in capture order (each pod keeps its own order)."""
    return sorted(PREFILL + DECODE, key=epoch_ns)


# ---------------------------------------------------------------- JSON encoders

def go_json_str(s: str) -> str:
    """Go encoding/json string escaping (HTML-safe: <, >, & as \\u003c ...), as Docker and logcli write."""
    out = ['"']
    for ch in s:
        o = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif o < 0x20 or ch in "<>&" or o in (0x2028, 0x2029):
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def c_json_str(s: str, upper: bool = False) -> str:
    """Plain JSON escaping (Fluent Bit, journalctl, Jackson); Jackson writes \\u001B in upper case."""
    enc = json.dumps(s, ensure_ascii=False)
    return enc.replace("\\u001b", "\\u001B") if upper else enc


def write(rel: str, text: str, newline: str = "\n") -> None:
    path = HERE / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8", newline=newline) as fh:
        fh.write(text)


def parts(text: str) -> list[str]:
    """A line cut the way Docker and containerd cut it: 16 KiB pieces."""
    return [text[i:i + SPLIT] for i in range(0, len(text), SPLIT)]


# ---------------------------------------------------------------- envelopes

def base() -> None:
    for pod, lines in PODS.items():
        write(f"base/{pod}.log", "".join(ln.text + "\n" for ln in lines))


def docker() -> None:
    for pod, lines in PODS.items():
        cid = CID[pod]
        rows = []
        for ln in lines:
            pieces = parts(ln.text)
            for i, piece in enumerate(pieces):
                end = "\n" if i == len(pieces) - 1 else ""
                rows.append("{\"log\":" + go_json_str(piece + end) + ",\"stream\":\"stderr\",\"time\":\""
                            + rfc3339nano(ln, UTC) + "\"}\n")
        write(f"docker/var/lib/docker/containers/{cid}/{cid}-json.log", "".join(rows))


def cri_rows(lines: list[Line], tz: timezone) -> str:
    rows = []
    for ln in lines:
        pieces = parts(ln.text)
        for i, piece in enumerate(pieces):
            tag = "F" if i == len(pieces) - 1 else "P"
            rows.append(f"{rfc3339nano(ln, tz)} stderr {tag} {piece}\n")
    return "".join(rows)


def cri() -> None:
    for pod, lines in PODS.items():
        write(f"cri/var/log/pods/{NS}_{pod}_{UID[pod]}/vllm/0.log", cri_rows(lines, TZ[pod]))


def kubectl() -> None:
    # kubelet re-reads the CRI file and joins P parts: one RFC3339NanoFixed stamp per logical line.
    write("kubectl/decode-0.timestamps.log",
          "".join(f"{rfc3339nano(ln, CST, fixed=True)} {ln.text}\n" for ln in DECODE))
    write("kubectl/pd.prefix-timestamps.log",
          "".join(f"[pod/{ln.pod}/vllm] {rfc3339nano(ln, TZ[ln.pod], fixed=True)} {ln.text}\n" for ln in merged()))


def rsyslog_escape(s: str) -> str:
    """rsyslog EscapeControlCharactersOnReceive with the '#' prefix: control bytes as #ooo."""
    return "".join(f"#{ord(c):03o}" if ord(c) < 0x20 or ord(c) == 0x7F else c for c in s)


def syslog() -> None:
    rows = []
    for ln in DECODE:
        dt, _ = cap_dt(ln)
        local = dt.astimezone(CST)
        stamp = local.strftime("%b ") + f"{local.day:>2}" + local.strftime(" %H:%M:%S")
        rows.append(f"{stamp} decode-node-2 decode-0: {rsyslog_escape(ln.text)}\n")
    write("syslog/decode-node-2.messages", "".join(rows))
    rows = []
    for ln in merged():
        dt, ns = cap_dt(ln)
        local = dt.astimezone(TZ[ln.pod])
        off = local.strftime("%z")
        stamp = local.strftime("%Y-%m-%dT%H:%M:%S") + f".{ns // 1000:06d}" + off[:3] + ":" + off[3:]
        rows.append(f"<133>1 {stamp} {NODE[ln.pod]} {ln.pod} - - - {rsyslog_escape(ln.text)}\n")
    write("syslog/central.rfc5424.log", "".join(rows))


def journald() -> None:
    rows = []
    boot = "0c8e4a2f6b1d4e9a8c7b6a5f4e3d2c1b"
    seqnum = 0x1a2f40
    for ln in DECODE:
        usec = epoch_ns(ln) // 1000
        pieces = parts(ln.text)
        for i, piece in enumerate(pieces):
            seqnum += 1
            printable = all(ord(c) >= 0x20 or c == "\t" for c in piece)
            msg = c_json_str(piece) if printable else json.dumps(list(piece.encode("utf-8")))
            fields = [
                ("__CURSOR", f"s=5e2c1a9b7d3f4e8a9b0c1d2e3f4a5b6c;i={seqnum:x};b={boot};m={usec - 1762800000000000:x};"
                             f"t={usec:x};x=3b1f0e2d4c5a6978"),
                ("__REALTIME_TIMESTAMP", str(usec)),
                ("__MONOTONIC_TIMESTAMP", str(usec - 1762800000000000)),
                ("_BOOT_ID", boot),
                ("PRIORITY", "3"),
                ("_TRANSPORT", "journal"),
                ("_PID", "2718"),
                ("_UID", "0"),
                ("_GID", "0"),
                ("_COMM", "dockerd"),
                ("_EXE", "/usr/bin/dockerd"),
                ("_SYSTEMD_UNIT", "docker.service"),
                ("_HOSTNAME", "decode-node-2"),
                ("CONTAINER_ID", CID["decode-0"][:12]),
                ("CONTAINER_ID_FULL", CID["decode-0"]),
                ("CONTAINER_NAME", "decode-0"),
                ("CONTAINER_TAG", CID["decode-0"][:12]),
                ("IMAGE_NAME", "quay.io/ascend/vllm-ascend:v0.11.0rc0"),
                ("SYSLOG_IDENTIFIER", CID["decode-0"][:12]),
            ]
            if i < len(pieces) - 1:
                fields.append(("CONTAINER_PARTIAL_MESSAGE", "true"))
            body = ", ".join(f'"{k}" : "{v}"' for k, v in fields)
            rows.append("{ " + body + f', "MESSAGE" : {msg}' + " }\n")
    write("journald/decode-node-2.journal.json", "".join(rows))


def kube_meta(pod: str) -> dict[str, str]:
    return {"pod_name": pod, "namespace_name": NS, "pod_id": UID[pod], "host": NODE[pod],
            "container_name": "vllm", "docker_id": CID[pod],
            "container_image": "quay.io/ascend/vllm-ascend:v0.11.0rc0"}


def fluentbit() -> None:
    rows = []
    for ln in merged():
        tag = f"kube.var.log.containers.{ln.pod}_{NS}_vllm-{CID[ln.pod]}.log"
        ns = epoch_ns(ln)
        rec = ('{"time":' + c_json_str(rfc3339nano(ln, TZ[ln.pod])) + ',"stream":"stderr","_p":"F","log":'
               + c_json_str(ln.text) + ',"kubernetes":' + json.dumps(kube_meta(ln.pod), separators=(",", ":")) + "}")
        rows.append(f"{tag}: [{ns // 1_000_000_000}.{ns % 1_000_000_000:09d}, {rec}]\n")
    write("fluentbit/kube.out_file.log", "".join(rows))


def loki() -> None:
    rows = []
    for ln in merged():
        labels = ('{"container":"vllm","host":' + go_json_str(NODE[ln.pod]) + ',"namespace":"' + NS
                  + '","pod":' + go_json_str(ln.pod) + ',"stream":"stderr"}')
        rows.append('{"labels":' + labels + ',"line":' + go_json_str(ln.text) + ',"timestamp":"'
                    + rfc3339nano(ln, CST) + '"}\n')
    write("loki/logcli.jsonl", "".join(rows))


def es_hits() -> list[tuple[Line, dict[str, object]]]:
    hits = []
    for n, ln in enumerate(merged()):
        dt, ns = cap_dt(ln)
        ms = ns // 1_000_000
        src = {"@timestamp": dt.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms:03d}Z",
               "time": rfc3339nano(ln, TZ[ln.pod]), "stream": "stderr", "_p": "F", "log": ln.text,
               "kubernetes": kube_meta(ln.pod)}
        hits.append((ln, {"_index": "logstash-2025.11.11", "_id": f"kQ3{n:02d}ZJkB8x1c0vV7mHf2", "_score": None,
                          "_source": src, "sort": [int(dt.timestamp()) * 1000 + ms]}))
    return hits


def es_pretty(value: object, indent: int = 0) -> str:
    """Elasticsearch ?pretty output: two-space indent, `"key" : value`."""
    pad = "  " * indent
    if isinstance(value, dict):
        if not value:
            return "{ }"
        items = [f'{pad}  {c_json_str(k, upper=True)} : {es_pretty(v, indent + 1)}' for k, v in value.items()]
        return "{\n" + ",\n".join(items) + "\n" + pad + "}"
    if isinstance(value, list):
        if not value:
            return "[ ]"
        items = [f"{pad}  {es_pretty(v, indent + 1)}" for v in value]
        return "[\n" + ",\n".join(items) + "\n" + pad + "]"
    if isinstance(value, str):
        return c_json_str(value, upper=True)
    return json.dumps(value)


def es_min(value: object) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{c_json_str(k, upper=True)}:{es_min(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(es_min(v) for v in value) + "]"
    if isinstance(value, str):
        return c_json_str(value, upper=True)
    return json.dumps(value)


def elasticsearch() -> None:
    hits = [h for _, h in es_hits()]
    resp = {"took": 14, "timed_out": False,
            "_shards": {"total": 1, "successful": 1, "skipped": 0, "failed": 0},
            "hits": {"total": {"value": len(hits), "relation": "eq"}, "max_score": None, "hits": hits}}
    write("elasticsearch/search.pretty.json", es_pretty(resp) + "\n")
    write("elasticsearch/search.min.json", es_min(resp))


def csv_export() -> None:
    buf = io.StringIO()
    wr = csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n")
    wr.writerow(["@timestamp", "kubernetes.pod_name", "kubernetes.container_name", "log"])
    for ln in merged():
        dt, ns = cap_dt(ln)
        local = dt.astimezone(CST)  # Kibana renders dates in the browser's zone (Asia/Shanghai)
        stamp = local.strftime("%b ") + str(local.day) + local.strftime(", %Y @ %H:%M:%S") + f".{ns // 1_000_000:03d}"
        wr.writerow([stamp, ln.pod, "vllm", ln.text])
    write("csv/kibana-discover.csv", buf.getvalue())


def colour(text: str) -> str:
    """grc-like colouring: levels in red/green/yellow, runs of 4+ digits in yellow."""
    import re
    text = re.sub(r"(?<![\w.])(\[?(?:ERROR|WARNING|INFO)\]?)(?=\s)",
                  lambda m: {"E": "\x1b[1;31m", "W": "\x1b[1;33m", "I": "\x1b[32m"}[m.group(1).strip("[")[0]]
                  + m.group(1) + "\x1b[0m", text)
    text = re.sub(r"(?<![\w])(\d{4,})(?![\w])", "\x1b[33m\\1\x1b[0m", text)
    return text


def terminal() -> None:
    rows = ['Script started on 2025-11-12 03:45:12+08:00 [COMMAND="kubectl logs -f decode-0 -c vllm | grcat '
            'conf.log" TERM="xterm-256color" TTY="/dev/pts/3" COLUMNS="212" LINES="51"]\n']
    rows += [colour(ln.text) + "\n" for ln in DECODE]
    rows.append('^C\nScript done on 2025-11-12 03:46:01+08:00 [COMMAND_EXIT_CODE="130"]\n')
    write("terminal/decode-0.typescript", "".join(rows), newline="\r\n")


def main() -> None:
    base()
    docker()
    cri()
    kubectl()
    syslog()
    journald()
    fluentbit()
    loki()
    elasticsearch()
    csv_export()
    terminal()


if __name__ == "__main__":
    main()
