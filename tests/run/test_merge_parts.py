"""`ddtriage merge` (issue #12): per-bundle parts in JSON, JSONL and Parquet, merged, give the
report of one direct scan byte for byte (summary, bursts, bundles, failures across bundles, input
stats); parts that are not reports are one-line errors.

`ddtriage merge` never counts a part twice (review D7): the same part given twice (a shell glob
that picks it again, a link to it), or a part whose every finding was merged already (the JSON and
the Parquet report of one scan, a part of a part), is left out with a one-line warning, and the
result equals a direct scan byte for byte; a part that repeats only some of the logs merged before
is refused (its input counts cannot be split), with a one-line error (folded from test_merge_repeats.py, review D7 (a part merged twice)).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from analyzer.cli import cli
from click.testing import CliRunner

from fleetgen import make_fleet

pytest.importorskip("pyarrow")


def invoke(*args: str):
    return CliRunner().invoke(cli, [*args, "--fail-on", "never"], catch_exceptions=False)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    return make_fleet(tmp_path_factory.mktemp("merge"), nodes=10, big_copies=2)


def parts_of(fleet, tmp_path, formats=("json", "parquet")) -> list[str]:
    parts = []
    for i, bundle in enumerate(sorted(fleet.iterdir())):
        part = tmp_path / f"part-{i:02d}.{formats[i % len(formats)]}"
        assert invoke("scan", str(bundle), "-q", "-o", str(part)).exit_code == 0
        parts.append(str(part))
    return parts


def test_merge_of_per_bundle_parts_equals_a_direct_scan(fleet, tmp_path):
    parts = parts_of(fleet, tmp_path)
    for fmt in ("json", "text", "markdown", "csv"):
        direct = invoke("scan", str(fleet), "-q", "--format", fmt).stdout
        merged = invoke("merge", *reversed(parts), "--format", fmt)  # part order does not matter
        assert merged.exit_code == 0, merged.stderr
        assert merged.stdout == direct, fmt
    report = json.loads(invoke("merge", *parts, "--format", "json").stdout)
    assert report["inputs"]["files"] > 30 and len(report["summary"]["bundles"]) == 11
    assert report["summary"]["fingerprints"][0]["bundles"] == 6  # 5 decode nodes + the big node
    direct_pq, merged_pq = tmp_path / "direct.parquet", tmp_path / "merged.parquet"
    invoke("scan", str(fleet), "-q", "-o", str(direct_pq))
    invoke("merge", *parts, "-o", str(merged_pq))
    assert merged_pq.read_bytes() == direct_pq.read_bytes()


def test_jsonl_parts_give_the_same_findings_and_warn_about_inputs(fleet, tmp_path):
    parts = parts_of(fleet, tmp_path, formats=("jsonl",))
    direct = json.loads(invoke("scan", str(fleet), "-q", "--format", "json").stdout)
    merged = invoke("merge", *parts, "--format", "json")
    report = json.loads(merged.stdout)
    # A JSONL part holds findings only: no related errors or link facts, so its incidents are built
    # from the findings alone (the warning says so), and no proofs of recovery, so the bursts are
    # ongoing; everything else is the direct scan's.
    assert report["findings"] == direct["findings"]

    def stateless(summary: dict) -> dict:
        return {k: [{**b, "state": None, "recovery": None} for b in v] if k == "bursts" else v
                for k, v in summary.items() if k != "incidents"}
    assert stateless(report["summary"]) == stateless(direct["summary"])
    assert {b["state"] for b in report["summary"]["bursts"]} == {"ongoing"}
    assert report["inputs"]["files"] == 0 and "holds no input stats" in merged.stderr
    assert "related errors" in merged.stderr


def test_merge_exit_codes_follow_fail_on(fleet, tmp_path):
    (part,) = parts_of(fleet, tmp_path, formats=("json",))[:1]
    assert CliRunner().invoke(cli, ["merge", part]).exit_code == 1
    assert CliRunner().invoke(cli, ["merge", part, "--fail-on", "never"]).exit_code == 0


def test_a_part_that_is_no_report_is_a_one_line_error(tmp_path):
    junk = tmp_path / "notes.json"
    junk.write_text('{\n  "hello": 1\n}\n')
    plain = tmp_path / "plog.log"
    plain.write_text("[ERROR] GE(1,python3):2025-11-12-03:40:05.101.002 nothing\n")
    for path, says in ((junk, "not a ddtriage JSON report"), (plain, "not JSON"),
                       (tmp_path / "missing.json", "No such file or directory")):
        result = CliRunner().invoke(cli, ["merge", str(path)])
        assert result.exit_code == 2 and says in result.stderr and "Traceback" not in result.stderr, result.stderr


ROOT = Path(__file__).resolve().parents[2]
COMMON = ["--format", "json", "--fail-on", "never"]


@pytest.fixture
def parts(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    for name, target in (("d2.json", "sample_logs/decode-node-2"), ("d2.parquet", "sample_logs/decode-node-2"),
                         ("all.json", "sample_logs")):
        result = CliRunner().invoke(cli, ["scan", target, "--quiet", "--fail-on", "never", "-o", str(tmp_path / name)])
        assert result.exit_code == 0, result.stderr
    (tmp_path / "again.json").symlink_to(tmp_path / "d2.json")
    return tmp_path


def merge(*paths: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["merge", *map(str, paths), *COMMON])
    return result.exit_code, result.stdout, result.stderr


def test_a_part_given_twice_is_read_once(parts):
    direct = (parts / "d2.json").read_text()
    for twice in ("d2.json", "again.json"):
        code, out, err = merge(parts / "d2.json", parts / twice)
        assert code == 0 and out == direct
        assert err == f"ddtriage: warning: {parts / twice}: given again (as {parts / 'd2.json'}); read once\n"


def test_a_part_whose_findings_were_all_merged_is_left_out(parts):
    code, out, err = merge(parts / "d2.json", parts / "d2.parquet")  # two reports of one scan
    assert code == 0 and out == (parts / "d2.json").read_text()
    assert err == (f"ddtriage: warning: {parts / 'd2.parquet'}: every finding in it was merged already "
                   f"from {parts / 'd2.json'}; left out\n")
    code, out, err = merge(parts / "all.json", parts / "d2.json")  # a part of a part
    assert code == 0 and out == (parts / "all.json").read_text()
    assert err.count("\n") == 1 and "d2.json: every finding in it was merged already from" in err


def test_a_part_that_repeats_some_merged_logs_is_refused(parts):
    code, out, err = merge(parts / "d2.json", parts / "all.json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith(f"ddtriage: error: {parts / 'all.json'}: its findings in ")
    assert err.endswith(f"were merged already from {parts / 'd2.json'}: the same log scanned twice; "
                        "merge each log's scan once\n")


USER_RULE = """\
rules:
  - id: team-wait-timeout
    description: Our runbook for a wait timeout from a pull.
    match:
      codes: [LLM_WAIT_PROC_TIMEOUT]
      apis: [PullKvBlocks]
    action: relink
    remedy: Page the KV team, then relink the pair (runbook KV-7).
    references: ["runbook KV-7"]
    examples:
      match: ["[pull_blocks] failed, error code is LLMStatusCode.LLM_WAIT_PROC_TIMEOUT"]
      no_match: ["[link_clusters] failed, error code is LLMStatusCode.LLM_WAIT_PROC_TIMEOUT"]
"""


def test_a_merge_keeps_the_remedy_of_a_rule_only_a_part_knew(tmp_path):
    """Findings hold only their rule's id (issue #16): the remedy of a user rule that the merging
    process does not load comes from the part itself, in every format."""
    rules = tmp_path / "rules"
    rules.mkdir()
    (rules / "team.yaml").write_text(USER_RULE)
    log = Path(__file__).parents[2] / "sample_logs"
    for fmt in ("json", "jsonl", "parquet"):
        part = tmp_path / f"part.{fmt}"
        assert invoke("scan", str(log), "-q", "--rules", str(rules), "-o", str(part)).exit_code == 0
        merged = json.loads(invoke("merge", str(part), "--format", "json").stdout)
        mine = [f for f in merged["findings"] if f["rule"] == "team-wait-timeout"]
        assert mine, fmt
        assert {f["remedy"] for f in mine} == {"Page the KV team, then relink the pair (runbook KV-7)."}, fmt
        assert {tuple(f["references"]) for f in mine} == {("runbook KV-7",)}, fmt


def test_a_parquet_part_holds_its_head_once_and_older_parts_still_merge(fleet, tmp_path):
    """The head (inputs, related errors, link facts, proofs) is in the file's key-value metadata
    only, not a second time in the serialized Arrow schema (a reader decoded both: ~30 MiB for a
    fleet's part); a part written the older way, with the head in both, merges the same."""
    pq = pytest.importorskip("pyarrow.parquet")
    new = tmp_path / "new.parquet"
    assert invoke("scan", str(fleet), "-q", "-o", str(new)).exit_code == 0
    meta = pq.ParquetFile(new).metadata.metadata
    assert b"ddtriage" in meta and len(meta[b"ARROW:schema"]) < len(meta[b"ddtriage"]) / 4
    assert pq.ParquetFile(new).schema_arrow.metadata is None
    table = pq.read_table(new)
    old = tmp_path / "old.parquet"
    pq.write_table(table.replace_schema_metadata({b"ddtriage": meta[b"ddtriage"]}), old, compression="zstd")
    assert pq.ParquetFile(old).schema_arrow.metadata[b"ddtriage"] == meta[b"ddtriage"]  # the older layout
    for fmt in ("json", "text"):
        assert invoke("merge", str(old), "--format", fmt).stdout == invoke("merge", str(new), "--format", fmt).stdout


def test_a_part_cut_off_empty_or_nested_too_deeply_is_a_one_line_error(parts):
    # a JSON report cut at a line inside its findings merged without a word (24 of 66 findings), a
    # 0-byte file was an empty JSONL part, and deep nesting was an internal RecursionError
    whole = (parts / "all.json").read_text().splitlines(keepends=True)
    at = whole.index('  "findings": [\n')
    (parts / "cut.json").write_text("".join(whole[:at + 24]))
    (parts / "empty.json").write_text("")
    (parts / "empty.parquet").write_bytes(b"")
    (parts / "damaged.parquet").write_bytes(b"PAR1" + bytes(range(256)) * 4 + b"PAR1")
    whole_pq = (parts / "d2.parquet").read_bytes()
    (parts / "cut.parquet").write_bytes(whole_pq[:len(whole_pq) // 2] + whole_pq[-8:])  # its footer, no rows
    (parts / "deep.json").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    for name, says in (("cut.json", "cut off before the end of its findings list"), ("empty.json", "empty"),
                       ("empty.parquet", "empty"), ("deep.json", "nested too deeply"),
                       ("damaged.parquet", "not a ddtriage JSON, JSONL or Parquet report"),
                       ("cut.parquet", "Parquet")):
        code, out, err = merge(parts / "all.json", parts / name)
        assert code == 2 and err.startswith(f"ddtriage: error: {parts / name}: ") and says in err, err
    assert merge(parts / "all.json")[0] == 0  # the whole report still merges


def test_parquet_parts_are_read_in_a_child_and_arrow_never_loads_in_the_merge(parts):
    # Arrow's libraries and buffers (~90 MiB) stayed in the merge's process beside the summary
    # and the incidents it builds: the fleet bench's merge peaked at 219 MiB, over its 200
    import subprocess
    import sys

    direct = json.loads((parts / "d2.json").read_text())
    # forked from a process of one thread; a fresh interpreter where other threads run (a notebook)
    for before in ("", "import threading, time; threading.Thread(target=time.sleep, args=(30,), daemon=True).start(); "):
        code = (before + "import sys; from analyzer.run.merge_parts import merge_parts; "
                f"a = merge_parts([{str(parts / 'd2.parquet')!r}]); "
                "print(len(a.findings), a.inputs.files, 'pyarrow' in sys.modules)")
        got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
        assert got.stdout.split() == [str(len(direct["findings"])), str(direct["inputs"]["files"]), "False"], got.stderr
        assert got.stderr == ""
    # and the merged report is the scan's, byte for byte, from either part
    assert merge(parts / "d2.parquet") == merge(parts / "d2.json")


def test_a_parquet_reader_that_dies_is_a_one_line_error_and_the_next_merge_starts_another(parts):
    # a crash in Arrow's reader (or an OOM kill) takes the child, not the merge: one line naming the part
    from analyzer.core.errors import InputError
    from analyzer.run.merge_parts import _ParquetReader

    reader = _ParquetReader()
    try:
        assert [kind for kind, _ in reader.read(str(parts / "d2.parquet"))][-1] == "head"
        reader._child.kill()
        reader._child.join()  # dead before it is asked again: the ask itself fails (a broken pipe)
        with pytest.raises(InputError, match=r"d2\.parquet: the Parquet reader stopped \(exit code -9\)$"):
            list(reader.read(str(parts / "d2.parquet")))
        assert reader._child is None  # stopped and forgotten: a later read starts a new child
        assert [kind for kind, _ in reader.read(str(parts / "d2.parquet"))][-1] == "head"
    finally:
        reader.close()


def test_the_parquet_child_stops_quietly_when_the_merge_is_gone(parts, capsys):
    # a merge stopped mid-part (a ^C) closes its end while the child sends: the child's send then
    # fails, which must end the child without a traceback on the user's terminal
    from analyzer.run.merge_parts import _parquet_child

    class Gone:
        def __init__(self, *asked: bytes) -> None:
            self.asked, self.sent = list(asked), 0

        def recv_bytes(self) -> bytes:
            if not self.asked:
                raise EOFError
            return self.asked.pop(0)

        def send_bytes(self, data: bytes) -> None:
            self.sent += 1
            raise BrokenPipeError(32, "Broken pipe")

    import signal

    before = signal.getsignal(signal.SIGINT)
    try:
        for conn, sends in ((Gone(os.fsencode(parts / "d2.parquet")), 1), (Gone(b"/nowhere.parquet"), 1), (Gone(), 0)):
            _parquet_child(conn)  # returns at the first failed send: nothing raised, nothing printed
            assert conn.sent == sends
    finally:
        signal.signal(signal.SIGINT, before)
    assert capsys.readouterr() == ("", "")


def test_merge_never_writes_over_one_of_its_parts(parts):
    before = (parts / "d2.json").read_bytes()
    result = CliRunner().invoke(cli, ["merge", str(parts / "d2.json"), str(parts / "all.json"), "-o",
                                      str(parts / "d2.json")])
    assert result.exit_code == 2 and "one of the parts merged" in result.stderr
    assert (parts / "d2.json").read_bytes() == before


def test_a_report_of_a_later_version_is_refused(parts):
    # it merged without a word, to be misread
    text = (parts / "d2.json").read_text()
    assert '"version": 1,' in text
    (parts / "later.json").write_text(text.replace('"version": 1,', '"version": 99,', 1))
    code, _, err = merge(parts / "later.json")
    assert code == 2 and "a report of version 99; this ddtriage reads version 1" in err


@pytest.mark.parametrize("layout", [
    {"indent": 2},  # `jq .`: the writer's indent, but each finding over many lines
    {"indent": 2, "sort_keys": True},  # the findings before the head, `tool` last
    {"separators": (",", ":")},  # `jq -c`: one line
    {"indent": "\t"},
])
def test_a_report_laid_out_again_merges_as_written(parts, layout):
    # a report pretty-printed again or compacted was an error naming a KeyError ('code'), or
    # "not a ddtriage JSON report"; `jq .` had its related errors counted twice
    written = json.loads((parts / "all.json").read_text())
    (parts / "again.json").unlink()
    (parts / "again.json").write_text(json.dumps(written, **layout) + "\n")
    code, out, err = merge(parts / "again.json")
    assert (code, err) == (0, "") and out == merge(parts / "all.json")[1]
    assert merge(parts / "all.json", parts / "again.json")[2].endswith("merged already from "
                                                                      f"{parts / 'all.json'}; left out\n")
    whole = (parts / "again.json").read_text()
    (parts / "cut.json").write_text(whole[:len(whole) // 2])
    code, _, err = merge(parts / "cut.json")
    assert code == 2 and err == f"ddtriage: error: {parts / 'cut.json'}: cut off, or not JSON, before the end of the report\n"


def test_a_json_object_that_is_no_finding_names_what_it_is(tmp_path):
    for text, says in (('{"tool": "other", "findings": []}\n', "not a ddtriage report (written by 'other')"),
                       ('{"source": "a.log", "line": 3}\n', ":1: not a ddtriage finding (no 'code')")):
        (tmp_path / "part.jsonl").write_text(text)
        result = CliRunner().invoke(cli, ["merge", str(tmp_path / "part.jsonl")])
        assert result.exit_code == 2 and says in result.stderr and "KeyError" not in result.stderr, result.stderr
