"""The follower of `ddtriage watch` (analyzer/run/watch.py): what it reports as files change, and
that its analysis is a scan's."""

from __future__ import annotations

import io
import os
import random
import shutil
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from analyzer.inputs.own import own_document
from analyzer.run.api import Options, analyze
from analyzer.run.watch import Follower, wakeups
from analyzer.writers import write_report

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"
PLOG = "node-1/ascend/log/debug/plog/plog-100_20251112034000000.log"


def link_failed(n: int, second: int = 1) -> str:
    """A plog line of LLM_LINK_FAILED from LinkClusters, told apart by `n`."""
    return (f"[ERROR] GE(100,python3):2025-11-12-03:40:{second:02d}.{n % 1000:03d}.000 [llm_link_manager.cc:210]100 "
            f"LinkClusters: ErrorNo: 1343270921(local cluster link with remote cluster failed!) "
            f"[GE][MODULE]Failed to link clusters, index = {n}\n")


def info(n: int) -> str:
    return f"[INFO] GE(100,python3):2025-11-12-03:40:01.{n % 1000:03d}.000 [llm_engine.cc:88]100 Run: step {n}\n"


@pytest.fixture(scope="module")
def engine(rules):
    return Options().engine_factory(rules)()


def json_report(analysis) -> str:
    out = io.StringIO()
    write_report("json", analysis, out)
    return out.getvalue()


def marks(findings) -> list[int]:
    """The `index = N` of each planted finding."""
    return sorted(int(f.text.rsplit("index = ", 1)[1]) for f in findings)


def write(path: Path, text: str, mode: str = "a") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, mode, encoding="utf-8") as handle:
        handle.write(text)


def written_in_pieces(data: dict[Path, bytes], follower: Follower, rnd: random.Random, sizes: list[int]) -> list:
    """Each file's bytes appended in pieces of the `sizes` (cut mid-line too), a round over the files
    at a time, a sync after each round, then the final one: every finding reported."""
    done = dict.fromkeys(data, 0)
    reported = []
    while any(done[p] < len(d) for p, d in data.items()):
        for path, body in data.items():
            size = rnd.choice(sizes)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "ab") as handle:
                handle.write(body[done[path]:done[path] + size])
            done[path] += size
        reported += follower.sync().findings
    return reported + follower.sync(final=True).findings


@pytest.mark.parametrize("seed", [1, 2])
def test_a_tree_written_in_pieces_gives_the_scan_and_each_finding_once(tmp_path, engine, rules, seed):
    """The sample logs copied into a tree in random pieces (cut mid-line too), a sync after each
    round: the findings reported are those of a scan of the final tree, each once, and the JSON
    report is byte for byte the scan's."""
    tree = tmp_path / "tree"
    data = {tree / p.relative_to(SAMPLES): p.read_bytes() for p in sorted(SAMPLES.rglob("*")) if p.is_file()}
    tree.mkdir()
    follower = Follower([str(tree)], engine)
    reported = written_in_pieces(data, follower, random.Random(seed), [1, 70, 900, 20000])
    scanned = analyze([str(tree)], rules=rules)
    assert sorted((f.source, f.line, f.code) for f in reported) == sorted(
        (f.source, f.line, f.code) for f in scanned.findings)
    assert len(reported) == 66  # the demo bundle's findings (tests/data/sample_logs.md)
    assert json_report(follower.analysis()) == json_report(scanned)


def test_appends_are_reported_once_and_a_partial_line_waits_for_its_newline(tmp_path, engine):
    log = tmp_path / PLOG
    write(log, info(1) + link_failed(1))
    follower = Follower([str(tmp_path)], engine)
    assert marks(follower.sync().findings) == [1]
    assert follower.sync().findings == []  # nothing new
    write(log, link_failed(2) + link_failed(3)[:40])
    assert marks(follower.sync().findings) == [2]
    write(log, link_failed(3)[40:])
    update = follower.sync()
    assert marks(update.findings) == [3] and update.findings[0].line == 4
    assert marks(follower.analysis().findings) == [1, 2, 3]


def test_a_rotated_file_keeps_its_findings_under_its_new_name_and_reports_nothing_again(tmp_path, engine, rules):
    log = tmp_path / PLOG
    write(log, link_failed(1) + link_failed(2))
    follower = Follower([str(tmp_path)], engine)
    assert marks(follower.sync().findings) == [1, 2]
    os.rename(log, f"{log}.1")  # logrotate: the old file moves, a new one starts under the name
    write(log, link_failed(3))
    assert marks(follower.sync().findings) == [3]
    analysis = follower.analysis()
    assert sorted((Path(f.source).name, f.line) for f in analysis.findings) == [
        (log.name, 1), (log.name + ".1", 1), (log.name + ".1", 2)]
    assert json_report(analysis) == json_report(analyze([str(tmp_path)], rules=rules))


def test_a_truncated_file_is_read_again_with_a_note(tmp_path, engine, rules):
    log = tmp_path / PLOG
    write(log, "".join(info(i) for i in range(40)) + link_failed(1))
    follower = Follower([str(tmp_path)], engine)
    assert marks(follower.sync().findings) == [1]
    write(log, link_failed(2), mode="w")  # copytruncate without the copy, then the process writes on
    update = follower.sync()
    assert marks(update.findings) == [2] and update.findings[0].line == 1
    assert [n.reason for n in update.notes] == ["truncated or rewritten: read again from the start"]
    assert json_report(follower.analysis()) == json_report(analyze([str(tmp_path)], rules=rules))


def test_the_copy_copytruncate_makes_is_not_reported_again(tmp_path, engine):
    log = tmp_path / PLOG
    write(log, "".join(info(i) for i in range(100)) + link_failed(1))  # past the bytes a file is told by
    follower = Follower([str(tmp_path)], engine)
    assert marks(follower.sync().findings) == [1]
    shutil.copyfile(log, f"{log}.1")
    write(log, link_failed(2), mode="w")
    assert marks(follower.sync().findings) == [2]
    assert marks(follower.analysis().findings) == [1, 2]  # the copy's line is in the analysis, reported once


def test_a_deleted_file_leaves_the_analysis_and_a_new_node_folder_joins_it(tmp_path, engine):
    write(tmp_path / PLOG, link_failed(1))
    follower = Follower([str(tmp_path)], engine)
    follower.sync()
    (tmp_path / PLOG).unlink()
    other = tmp_path / PLOG.replace("node-1", "node-2")
    write(other, link_failed(2))
    update = follower.sync()
    assert marks(update.findings) == [2] and update.findings[0].node == "node-2"
    assert [f.node for f in follower.analysis().findings] == ["node-2"]


def test_a_restart_from_the_state_reports_only_what_came_while_it_was_down(tmp_path, engine, rules):
    state = tmp_path / "state.json"
    tree = tmp_path / "tree"
    log = tree / PLOG
    write(log, link_failed(1))
    first = Follower([str(tree)], engine, state=str(state))
    assert marks(first.sync().findings) == [1]
    assert [e["change"] for e in first.incident_events(first.analysis())] == ["new"]
    first.save()
    assert own_document(state.read_bytes()) == "watch state file"  # never read as a log
    write(log, link_failed(2, second=9))  # while watch is down
    os.rename(log, f"{log}.1")
    write(log, link_failed(3, second=9))
    second = Follower([str(tree)], engine, state=str(state))
    assert second.resumed
    assert marks(second.sync().findings) == [2, 3]
    analysis = second.analysis()
    assert json_report(analysis) == json_report(analyze([str(tree)], rules=rules))
    [event] = second.incident_events(analysis)  # the same failure again: the incident known goes on
    assert (event["change"], event["findings"]) == ("updated", 3)


def test_a_state_file_that_is_not_one_is_refused_with_its_name(tmp_path, engine):
    state = tmp_path / "state.json"
    state.write_text("{}")
    from analyzer.core.errors import InputError

    with pytest.raises(InputError, match=r"state.json: unusable watch state"):
        Follower([str(tmp_path)], engine, state=str(state))


def test_an_incident_keeps_its_id_as_it_grows(tmp_path, engine):
    log = tmp_path / PLOG
    write(log, link_failed(1))
    follower = Follower([str(tmp_path)], engine)
    follower.sync()
    [new] = follower.incident_events(follower.analysis())
    write(log, link_failed(2))
    follower.sync()
    [grown] = follower.incident_events(follower.analysis())
    assert (new["change"], grown["change"]) == ("new", "updated")
    assert grown["id"] == new["id"] and (new["findings"], grown["findings"]) == (1, 2)
    assert follower.incident_events(follower.analysis()) == []  # unchanged: no event


def test_an_incident_that_turns_recovered_gets_a_recovered_event():
    """Incidents carry `state` once issue #19 item 2 lands; read with getattr until then."""
    def incident(state: str | None, findings: int):
        lead = SimpleNamespace(timestamp="2025-11-12T03:40:01", node="n", code="0x5010B009", text="x")
        body = {"id": 1, "findings": findings, "state": state}
        return SimpleNamespace(bursts=(), related=(), lead=lead, state=state, to_dict=lambda: dict(body))

    follower = Follower.__new__(Follower)
    follower.incidents = {}
    changes = []
    for state, findings in [("ongoing", 1), ("ongoing", 2), ("recovered", 3), ("recovered", 4)]:
        analysis = SimpleNamespace(summary=SimpleNamespace(incidents=[incident(state, findings)], bursts=()),
                                   related=[])
        changes += [e["change"] for e in follower.incident_events(analysis)]
    assert changes == ["new", "updated", "recovered", "updated"]


def test_standard_input_fed_in_pieces_gives_the_scan_of_the_stream(engine, rules, monkeypatch):
    data = (SAMPLES / "decode-node-2" / "vllm_worker.log").read_bytes()
    follower = Follower(["-"], engine)
    reported = []
    for at in range(0, len(data), 333):
        reported += follower.feed(data[at:at + 333]).findings
    reported += follower.feed(b"", final=True).findings
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    scanned = analyze(["-"], rules=rules)
    assert [(f.line, f.code) for f in reported] == [(f.line, f.code) for f in scanned.findings]
    assert json_report(follower.analysis()) == json_report(scanned)


def test_polling_wakes_up_until_stopped(tmp_path):
    stop = threading.Event()
    woken = []
    for _ in wakeups([str(tmp_path)], stop, poll=True, interval=0.05):
        woken.append(time.monotonic())
        if len(woken) == 3:
            stop.set()
    assert len(woken) == 3 and woken[-1] - woken[0] < 1


def test_notifications_wake_up_on_a_write(tmp_path):
    pytest.importorskip("watchfiles")
    stop = threading.Event()
    notes: list[str] = []
    wrote: list[float] = []

    def writer() -> None:
        time.sleep(0.3)
        wrote.append(time.monotonic())
        (tmp_path / "a.log").write_text("x\n")

    threading.Thread(target=writer, daemon=True).start()
    for _ in wakeups([str(tmp_path)], stop, note=notes.append):
        if wrote:
            break
    assert notes == [] and time.monotonic() - wrote[0] < 1


def test_a_link_fact_behind_long_lines_reaches_a_finding_written_later(tmp_path, engine, rules):
    # each growth is read as a range after the 64 KiB before it; the fact 3 lines (70 KB) before the
    # error was out of reach, so the finding lost the peer a scan names
    log = tmp_path / PLOG
    fact = ("[INFO] HCCL(100,python3):2025-11-12-03:40:01.001.000 [transport_manager.cc:859] [6133][HCCL_TRACE]"
            "Link: link cluster 6 success\n")
    write(log, info(1) + fact + info(2) + "[INFO] GE(100,python3):2025-11-12-03:40:01.002.000 [a.cc:1]100 F: "
          + "y" * 70_000 + "\n")
    follower = Follower([str(tmp_path)], engine)
    assert follower.sync().findings == []
    write(log, link_failed(1))
    (found,) = follower.sync().findings
    (scanned,) = analyze([str(tmp_path)], rules=rules).findings
    assert dict(scanned.link).get("remote_cluster") == "6"
    assert found.link == scanned.link
    assert json_report(follower.analysis()) == json_report(analyze([str(tmp_path)], rules=rules))


@pytest.mark.parametrize("before", [3, 21])
def test_standard_input_behind_long_lines_gives_the_scans_link_facts(engine, rules, monkeypatch, before):
    # a fact `before` lines (of 70 KB) before an error fed later: within 12 lines the finding carries
    # it, as a scan's does; 21 lines back it does not (the window once handed the stream's head in)
    fact = ("[INFO] HCCL(100,python3):2025-11-12-03:40:01.001.000 [transport_manager.cc:859] [6133][HCCL_TRACE]"
            "Link: link cluster 6 success\n")
    long = "[INFO] GE(100,python3):2025-11-12-03:40:01.{:03d}.000 [a.cc:1]100 F: " + "y" * 70_000 + "\n"
    first = (fact + "".join(long.format(i) for i in range(before - 1))).encode()
    data = first + link_failed(1).encode()
    follower = Follower(["-"], engine)
    reported = follower.feed(first).findings + follower.feed(data[len(first):]).findings
    reported += follower.feed(b"", final=True).findings
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data)))
    scanned = analyze(["-"], rules=rules)
    (found,), (expected,) = reported, list(scanned.findings)
    assert found.link == expected.link
    assert ("remote_cluster", "6") in found.link if before <= 12 else not found.link
    assert json_report(follower.analysis()) == json_report(scanned)


ENVELOPES = ROOT / "tests" / "data" / "envelopes"


@pytest.mark.parametrize("corpus", ["cri", "docker", "journald"])
def test_a_line_the_runtime_cut_in_parts_is_scanned_whole_when_its_last_part_comes(tmp_path, engine, rules, corpus):
    # The corpus six times over (past HEAD_BYTES, so growths are read as ranges), written in random
    # pieces: a growth that ended between the parts of a cut line had its parts scanned apart, and
    # the code cut in two was lost, from the live events and the analysis alike (39 of 42 here)
    tree = tmp_path / "tree"
    src = ENVELOPES / corpus
    data = {tree / p.relative_to(src): p.read_bytes() * 6 for p in sorted(src.rglob("*")) if p.is_file()}
    follower = Follower([str(tree)], engine)
    reported = written_in_pieces(data, follower, random.Random(1), [70, 900, 20000])
    scanned = analyze([str(tree)], rules=rules)
    assert sorted((f.source, f.line, f.code) for f in reported) == sorted(
        (f.source, f.line, f.code) for f in scanned.findings)
    assert json_report(follower.analysis()) == json_report(scanned)


def cri(text: str, tag: str = "F", second: int = 1) -> str:
    return f"2025-11-12T03:40:{second:02d}.000000000+08:00 stderr {tag} {text}\n"


@pytest.mark.parametrize("stdin", [False, True])
def test_a_cri_line_whose_last_part_is_not_written_yet_waits_for_it(tmp_path, engine, rules, monkeypatch, stdin):
    filler = "".join(cri(info(n).rstrip("\n")) for n in range(800))  # ~90 KB: past HEAD_BYTES
    line = link_failed(7).rstrip("\n")
    cut = line.index("ErrorNo: 134327") + len("ErrorNo: 134")  # the code cut in two
    first, second = filler + cri(line[:cut], "P"), cri(line[cut:])
    if stdin:
        follower = Follower(["-"], engine)
        update = follower.feed(first.encode())
    else:
        log = tmp_path / "var/log/pods/ns_decode-0_uid/vllm/0.log"
        write(log, first)
        follower = Follower([str(tmp_path)], engine)
        update = follower.sync()
    assert update.findings == []  # the line is not whole yet
    if stdin:
        update = follower.feed(second.encode())
        update.findings += follower.feed(b"", final=True).findings
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO((first + second).encode())))
        scanned = analyze(["-"], rules=rules)
    else:
        write(log, second)
        update = follower.sync()
        scanned = analyze([str(tmp_path)], rules=rules)
    (found,) = update.findings
    assert (found.line, found.code) == (801, "0x5010B009") and marks([found]) == [7]
    assert json_report(follower.analysis()) == json_report(scanned)


def test_a_csv_record_whose_quote_is_still_open_waits_for_its_end(tmp_path, engine, rules):
    import csv as csv_module

    rows = [["Nov 12, 2025 @ 03:40:01.000", "decode-0", info(n).rstrip("\n")] for n in range(700)]
    rows.append(["Nov 12, 2025 @ 03:40:05.000", "decode-0", "Traceback (most recent call last):\n  pull_blocks\n"
                 + link_failed(9).rstrip("\n")])  # one record over three lines, the code on its last
    out = io.StringIO()
    writer = csv_module.writer(out, quoting=csv_module.QUOTE_ALL, lineterminator="\n")
    writer.writerow(["@timestamp", "kubernetes.pod_name", "log"])
    writer.writerows(rows)
    text = out.getvalue()
    log = tmp_path / "export.csv"
    cut = text.index("  pull_blocks")  # after the record's first line: its quote still open
    write(log, text[:cut])
    follower = Follower([str(tmp_path)], engine)
    assert follower.sync().findings == []
    write(log, text[cut:])
    (found,) = follower.sync().findings
    assert marks([found]) == [9] and found.line == 702
    assert json_report(follower.analysis()) == json_report(analyze([str(tmp_path)], rules=rules))


@pytest.mark.parametrize("magic, fake", [(b"BZh9", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x1f\x8b\x08\x00", "gzip")])
def test_a_log_that_starts_like_a_compressed_file_gets_the_scans_note_once(tmp_path, engine, rules, magic, fake):
    # read as plain text either way, but only a scan (through the unpacker) said so
    log = tmp_path / "node-1" / "app.log"
    log.parent.mkdir()
    log.write_bytes(magic + b" junk\n" + link_failed(1).encode())
    follower = Follower([str(tmp_path)], engine)
    update = follower.sync()
    assert [(n.source, n.reason) for n in update.notes] == [
        (str(log), f"starts like {fake} but does not decode as {fake}; read as plain text")]
    assert marks(update.findings) == [1]
    write(log, link_failed(2))
    update = follower.sync()
    assert update.notes == [] and marks(update.findings) == [2]  # noted once, though read again whole
    assert json_report(follower.analysis()) == json_report(analyze([str(tmp_path)], rules=rules))


def test_a_new_file_on_the_inode_a_deleted_one_freed_is_not_taken_for_a_rename(tmp_path, engine, rules):
    # logrotate `rotate 2` + `create`: app.log.2 deleted, .1 -> .2, app.log -> .1, a new app.log. The new
    # app.log often gets the inode app.log.2 freed; it was taken for app.log.2 renamed, kept its line
    # mark, and its findings on lines below the old file's count were never reported
    folder = tmp_path / "node-1"
    log = folder / "app.log"
    write(log, link_failed(1) + "".join(info(i) for i in range(30)))
    follower = Follower([str(tmp_path)], engine)
    reported = follower.sync().findings
    reused = False
    for n in range(2, 9):
        if (folder / "app.log.2").exists():
            os.unlink(folder / "app.log.2")
        if (folder / "app.log.1").exists():
            os.rename(folder / "app.log.1", folder / "app.log.2")
        os.rename(log, folder / "app.log.1")
        known = set(follower.tails)
        write(log, link_failed(n) + "".join(info(i) for i in range(30)))
        st = os.stat(log)
        reused |= (st.st_dev, st.st_ino) in known
        update = follower.sync()
        assert marks(update.findings) == [n]
        reported += update.findings
    if not reused:
        pytest.skip("this file system gave no freed inode to a new file")
    assert json_report(follower.analysis()) == json_report(analyze([str(tmp_path)], rules=rules))


def test_a_compressed_rotation_renamed_again_reports_nothing_again(tmp_path, engine, rules):
    import gzip

    folder = tmp_path / "node-1"
    folder.mkdir()
    (folder / "app.log.1.gz").write_bytes(gzip.compress((link_failed(1) + link_failed(2)).encode()))
    follower = Follower([str(tmp_path)], engine)
    assert marks(follower.sync().findings) == [1, 2]
    os.rename(folder / "app.log.1.gz", folder / "app.log.2.gz")  # the next rotation
    assert follower.sync().findings == []
    assert json_report(follower.analysis()) == json_report(analyze([str(tmp_path)], rules=rules))


def test_the_copy_copytruncate_made_while_watch_was_down_is_not_reported_again(tmp_path, engine, rules):
    state = tmp_path / "state.json"
    tree = tmp_path / "tree"
    log = tree / PLOG
    write(log, "".join(info(i) for i in range(100)) + link_failed(1))  # past the bytes a copy is told by
    first = Follower([str(tree)], engine, state=str(state))
    assert marks(first.sync().findings) == [1]
    first.save()
    shutil.copyfile(log, f"{log}.1")  # copytruncate while watch is down
    write(log, link_failed(2), mode="w")
    second = Follower([str(tree)], engine, state=str(state))
    update = second.sync()
    assert marks(update.findings) == [2]  # not the copy's 1 again
    assert json_report(second.analysis()) == json_report(analyze([str(tree)], rules=rules))


def vllm(md: str, hms: str, n: int, error: bool = False) -> str:
    head = f"(Worker_DP0_TP3_EP3 pid=5569) {'ERROR' if error else 'INFO'} {md} {hms} [llmdatadist_c_mgr_connector.py:771] "
    if error:
        return head + ("KV transfer task failed: [pull_blocks] failed, error code is LLMStatusCode.LLM_KV_CACHE_NOT_EXIST, "
                       f"req_id = {n}\n")
    return head + f"start pull for request cmpl-{n:08d}, req_id={n}, remote cluster 2, 16 blocks\n"


def test_with_a_bare_year_a_growth_past_new_year_counts_the_crossing_as_a_scan_does(tmp_path, rules):
    # year-less vLLM stamps under --year 2025: a scan counts the December -> January crossing from the
    # file's start; a growth read as a range started afresh and stayed in 2025
    options = Options(year=2025)
    engine = options.engine_factory(rules)()
    log = tmp_path / "node-1" / "vllm_worker.log"
    write(log, "".join(vllm("12-31", f"23:59:{i % 60:02d}", i) for i in range(800)) + vllm("12-31", "23:59:59", 1, True))
    follower = Follower([str(tmp_path)], engine, options)
    assert [f.timestamp[:10] for f in follower.sync().findings] == ["2025-12-31"]
    write(log, vllm("01-01", "00:00:01", 2) + vllm("01-01", "00:00:02", 3, True))
    assert [f.timestamp for f in follower.sync().findings] == ["2026-01-01T00:00:02"]
    scanned = analyze([str(tmp_path)], rules=rules, options=options)
    assert json_report(follower.analysis()) == json_report(scanned)


def test_a_version_gated_rule_sees_the_version_logged_long_before_a_growth(tmp_path):
    from analyzer import load_rules

    extra = tmp_path / "rules"
    extra.mkdir()
    (extra / "gated.yaml").write_text(
        "rules:\n  - id: link-failed-new-cann\n    match:\n      codes: [LLM_LINK_FAILED]\n"
        "      versions: {cann: \">=8.3.RC1\"}\n    action: check-network\n    remedy: Gated remedy.\n"
        "    examples:\n      match: [\"CANN version = 8.3.RC1\\nLinkClusters: ErrorNo: 1343270921\"]\n", encoding="utf-8")
    gated = load_rules(extra)
    engine = Options().engine_factory(gated)()
    log = tmp_path / "tree" / "plog-4811.log"
    write(log, "[INFO] GE(4811,python3):2025-11-12-03:39:50.000.000 [ge_api.cc:80]4811 GEInitialize: GE init begin, "
          "CANN version = 8.3.RC1, build = 20250820\n"
          + "[INFO] GE(4811,python3):2025-11-12-03:40:00.000.000 [a.cc:1]4811 F: nothing to see here\n" * 2000)
    follower = Follower([str(log.parent)], engine)
    assert follower.sync().findings == []
    write(log, link_failed(1).replace("GE(100,", "GE(4811,").replace("]100 ", "]4811 "))
    (found,) = follower.sync().findings
    assert found.rule == "link-failed-new-cann"
    assert json_report(follower.analysis()) == json_report(analyze([str(log.parent)], rules=gated))
