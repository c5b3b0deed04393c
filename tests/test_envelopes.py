"""Envelopes (issue #9): every collector's wrapping, written here from the formats' documentation,
must give the same findings, APIs, actions and UTC times as the unwrapped log; through the CLI."""

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from analyzer.cli import cli
from analyzer.knowledge.rules import RuleSet
from analyzer.run.rulecheck import check_envelope_examples
from click.testing import CliRunner

SAMPLES = Path(__file__).parent.parent / "sample_logs"
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
    result = CliRunner().invoke(cli, ["scan", "-q", "--format", "json", "--year", "2025", *args],
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
    builtin = Path(__file__).parent.parent / "analyzer" / "data"
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
    result = CliRunner().invoke(cli, ["scan", "-q", "--format", "json", "--year", "2025", *args, "-"],
                                input=text, catch_exceptions=False)
    assert result.exit_code in (0, 1), result.stderr
    return json.loads(result.stdout)["findings"]
