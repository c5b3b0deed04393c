"""Frames (issue #21): the sample logs and a generated fleet as pandas DataFrames, with their
dtypes, rows counted against the JSON report and incidents against `summary.incidents`; the same
frames from a JSON, a JSONL and a Parquet report of one scan, and from a folder of parts; a storm
built in many row groups; README's table of columns held to the code."""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import pytest
from analyzer import InputError, analyze, read_report
from analyzer.cli import cli
from analyzer.run import frames as frames_module
from analyzer.run.frames import FRAMES, frame_columns
from click.testing import CliRunner

from fleetgen import make_fleet

pd = pytest.importorskip("pandas")
pytest.importorskip("pyarrow")

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "sample_logs"


def scan(*args: str) -> None:
    result = CliRunner().invoke(cli, ["scan", *args, "-q", "--fail-on", "never"], catch_exceptions=False)
    assert result.exit_code == 0, result.stderr


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """One scan of sample_logs/ written as JSON, JSONL and Parquet, and its own analysis."""
    out = tmp_path_factory.mktemp("reports")
    scan(str(SAMPLES), "-o", str(out / "r.json"), "-o", str(out / "r.jsonl"), "-o", str(out / "r.parquet"))
    result = analyze([str(SAMPLES)], jobs=1)
    yield out, result, json.loads((out / "r.json").read_text(encoding="utf-8"))
    result.close()


@pytest.fixture(scope="module")
def sample_frames(reports):
    return reports[1].frames()


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    root = make_fleet(tmp_path_factory.mktemp("frames"), nodes=6, big_copies=2)
    result = analyze([str(root)], jobs=1)
    yield root, result
    result.close()


def test_every_frame_is_there_with_its_columns_in_order(sample_frames):
    assert list(sample_frames) == list(FRAMES) == ["findings", "related", "incidents", "bursts", "nodes",
                                                   "bundles", "fingerprints"]
    for name, df in sample_frames.items():
        assert tuple(df.columns) == frame_columns()[name], name


def test_findings_dtypes_categorical_labels_utc_times_nullable_ints(sample_frames):
    df = sample_frames["findings"]
    for column in ("code", "api", "action", "node", "bundle", "rule", "fingerprint"):
        assert isinstance(df[column].dtype, pd.CategoricalDtype), column
        assert list(df[column].cat.categories) == sorted(df[column].cat.categories), column
    for column in ("timestamp", "inferred_time", "envelope_time"):
        assert str(df[column].dtype) == "datetime64[us, UTC]", column
    assert str(df["line"].dtype) == str(df["api_line"].dtype) == "Int64"
    assert str(df["recoverable"].dtype) == "boolean" and str(df["text"].dtype) == "string"
    assert isinstance(df["causes"].dtype, pd.ArrowDtype) and isinstance(df["link"].dtype, pd.ArrowDtype)
    assert set(df["node"].cat.categories) == {"decode-node-2", "decode-node-3", "prompt-node-1"}
    assert df["api_line"].isna().any()


def test_findings_rows_are_the_json_reports_findings(reports, sample_frames):
    _, _, report = reports
    df = sample_frames["findings"]
    assert len(df) == len(report["findings"]) == 66
    first = report["findings"][0]
    row = df.iloc[0]
    assert (row["source"], row["line"], row["code"], row["api"], row["action"]) == \
        (first["source"], first["line"], first["code"], first["api"], first["action"])
    assert row["timestamp"] == pd.Timestamp(first["timestamp"]).tz_localize("UTC")
    assert list(df["line"]) == [f["line"] for f in report["findings"]]
    assert df["timestamp"].isna().tolist() == [f["timestamp"] is None for f in report["findings"]]
    stamped = [pd.Timestamp(f["timestamp"]) for f in report["findings"] if f["timestamp"]]
    assert df["timestamp"].dropna().tolist() == [t if t.tzinfo else t.tz_localize("UTC") for t in stamped]
    assert list(df["references"].iloc[0]) == first["references"]
    assert len(sample_frames["related"]) == len(report["related"]) == 13


def test_incident_rows_are_the_summary_incidents(reports, sample_frames):
    _, result, _ = reports
    inc = sample_frames["incidents"]
    assert list(inc["id"]) == [i.id for i in result.summary.incidents] == [1, 2, 3, 4, 5, 6]
    assert [list(n) for n in inc["nodes"]] == [list(i.nodes) for i in result.summary.incidents]
    assert list(inc["findings"]) == [i.findings for i in result.summary.incidents]
    first = inc.iloc[0]  # the answer key of the sample logs: a refused connection on the decode side
    assert (first["lead_family"], first["lead_code"], first["lead_node"], first["lead_role"]) == \
        ("socket", "111", "decode-node-2", "Decoder")
    assert first["action"] == "check-network" and first["remedy"].startswith("Connection refused")
    assert list(inc.loc[inc["lead_role"] == "Prompt", "id"]) == [2, 4, 5]
    assert inc["state"].notna().all()
    assert str(inc["start"].dtype) == "datetime64[us, UTC]" and str(inc["bursts"].dtype) == "Int64"
    bursts = sample_frames["bursts"]
    assert len(bursts) == len(result.summary.bursts) and bursts["incident"].notna().all()
    assert sorted(bursts.loc[bursts["incident"] == 1, "findings"].tolist()) != []
    assert int(bursts.groupby("incident")["findings"].sum()[1]) == int(first["findings"])


def test_incident_state_is_a_column(reports, sample_frames):
    """Each incident's state (issue #19): the sample logs' decode-node-3 link recovers, ongoing first."""
    _, result, _ = reports
    df = sample_frames["incidents"]
    assert list(df["state"]) == [i.state for i in result.summary.incidents]
    assert list(df["state"]) == ["ongoing"] * 5 + ["recovered"]
    assert isinstance(df["state"].dtype, pd.CategoricalDtype)


def test_nodes_and_bundles_of_the_sample_logs(sample_frames):
    nodes = sample_frames["nodes"].set_index("node")
    assert nodes.loc["decode-node-2", "role"] == "Decoder" and nodes.loc["prompt-node-1", "role"] == "Prompt"
    assert int(nodes["findings"].sum()) == 66
    assert (nodes["host_findings"] + nodes["device_findings"] + nodes["application_findings"]
            == nodes["findings"]).all()
    assert sorted(sample_frames["bundles"]["bundle"]) == [str(SAMPLES / "decode-node-2"), str(SAMPLES / "decode-node-3"),
                                                       str(SAMPLES / "prompt-node-1")]


def test_a_generated_fleet_every_bundle_and_failure_across_bundles(fleet):
    root, result = fleet
    frames = result.frames()
    report = json.loads(CliRunner().invoke(cli, ["scan", str(root), "-q", "--fail-on", "never", "--format",
                                                 "json"]).stdout)
    assert len(frames["findings"]) == len(report["findings"])
    bundles = frames["bundles"]
    assert len(bundles) == 7  # six nodes and big-node-0
    assert bundles["findings"].sum() == len(frames["findings"])
    # The frame's first rows are the summary's rows, in its order (the summary keeps the first 50).
    assert list(bundles["bundle"]) == [b["bundle"] for b in report["summary"]["bundles"]]
    prints = frames["fingerprints"]
    assert len(prints) == len(set(frames["findings"]["fingerprint"]))
    assert list(prints["fingerprint"][:10]) == [r["fingerprint"] for r in report["summary"]["fingerprints"][:10]]
    assert int(prints["bundles"].iloc[0]) == 4  # three decode nodes and the big node
    by_bundle = frames["findings"].groupby("fingerprint", observed=True)["bundle"].nunique()
    assert int(by_bundle[prints["fingerprint"].iloc[0]]) == 4
    assert str(frames["findings"]["bundle"].dtype) == "category"
    assert set(frames["findings"]["kind"].cat.categories) <= {"host", "device", "application"}


def test_row_groups_of_any_size_give_the_same_frame(reports, sample_frames, monkeypatch):
    """Batches with their own dictionaries are unified: the categories do not depend on the cut."""
    monkeypatch.setattr(frames_module, "FRAME_ROWS", 7)
    pd.testing.assert_frame_equal(reports[1].frame("findings"), sample_frames["findings"])


def test_a_storm_frame_in_many_row_groups(tmp_path, monkeypatch):
    line = ("[ERROR] GE(4811,python3):2025-11-12-03:{m:02d}:{s:02d}.{ms:03d}.000 [llm_datadist_v2.cc:174]48{t} "
            "PullKvBlocks: call PullKvBlocks failed, ret = 0x5010B001, req_id = {r}\n")
    log = tmp_path / "storm-node" / "plog-4811_20251112034000000.log"
    log.parent.mkdir()
    log.write_text("".join(line.format(m=40 + i // 60000, s=i // 1000 % 60, ms=i % 1000, t=12 + i % 4, r=i)
                           for i in range(3000)), encoding="utf-8")
    monkeypatch.setattr(frames_module, "FRAME_ROWS", 1000)
    with analyze([str(tmp_path)], jobs=1) as result:
        df = result.frame("findings")
    assert len(df) == 3000 and df["code"].nunique() == 1 and list(df["code"].cat.categories) == ["0x5010B001"]
    assert df["timestamp"].is_monotonic_increasing and df["line"].tolist() == list(range(1, 3001))
    assert df["timestamp"].iloc[-1] == pd.Timestamp("2025-11-12T03:40:02.999", tz="UTC")
    per_minute = df.groupby(pd.Grouper(key="timestamp", freq="1min")).size()
    assert per_minute.tolist() == [3000]


def test_frames_of_json_jsonl_and_parquet_reports_are_equal(reports, sample_frames):
    out, _, _ = reports
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = {fmt: read_report(out / f"r.{fmt}").frames() for fmt in ("json", "jsonl", "parquet")}
    assert any("holds no input stats" in str(w.message) for w in caught)  # the JSONL part, as merge warns
    for name in FRAMES:
        pd.testing.assert_frame_equal(got["json"][name], got["parquet"][name], obj=name)
        pd.testing.assert_frame_equal(got["json"][name], sample_frames[name], obj=name)
    # JSONL holds findings only: no related errors, no link facts (the nodes' roles) and no proofs
    # of recovery (its bursts are all ongoing, so they fall into other incidents).
    for name in ("findings", "bundles", "fingerprints"):
        pd.testing.assert_frame_equal(got["jsonl"][name], got["json"][name], obj=name)
    unknowable = [c for c in got["json"]["bursts"].columns if c in ("incident", "state") or c.startswith("recover")]
    pd.testing.assert_frame_equal(got["jsonl"]["bursts"].drop(columns=unknowable),
                                  got["json"]["bursts"].drop(columns=unknowable), obj="bursts")
    pd.testing.assert_frame_equal(got["jsonl"]["nodes"].drop(columns="role"), got["json"]["nodes"].drop(columns="role"))
    assert got["jsonl"]["related"].empty and got["jsonl"]["nodes"]["role"].isna().all()
    assert len(got["jsonl"]["incidents"]) > 0


def test_a_folder_of_parts_reads_as_merge_merges_them(fleet, tmp_path):
    root, result = fleet
    parts = tmp_path / "parts"
    parts.mkdir()
    for i, bundle in enumerate(sorted(root.iterdir())):
        scan(str(bundle), "-o", str(parts / f"part-{i:02d}.{('json', 'parquet')[i % 2]}"))
    (parts / "notes.txt").write_text("not a report\n")
    merged = read_report(parts)
    assert repr(merged).startswith(f"<Analysis: {len(result.findings)} findings")
    for name in ("findings", "bundles", "fingerprints", "nodes", "incidents"):
        pd.testing.assert_frame_equal(merged.frame(name), result.frame(name), obj=name)


def test_what_cannot_be_read_is_one_line_naming_it(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match=r"empty: a folder without reports"):
        read_report(tmp_path / "empty")
    (tmp_path / "x.json").write_text("{\n  \"tool\": \"other\"\n}\n")
    with pytest.raises(InputError, match=r"x\.json: not a ddtriage"):
        read_report(tmp_path / "x.json")
    with pytest.raises(ValueError, match=r"no frame 'finding': the frames are findings, related"):
        analyze([str(SAMPLES / "prompt-node-1")], jobs=1).frames("finding")


def test_readme_lists_every_frames_columns():
    """README's "Frames" table is the one place the columns are documented; it is held to the code."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = re.split(r"\n##+ ", text.split("### Frames", 1)[1], maxsplit=1)[0]
    listed = {}
    for row in re.findall(r"^\| `(\w+)` \|[^|]*\| (.+) \|$", section, flags=re.M):
        listed[row[0]] = tuple(re.findall(r"`(\w+)`", row[1]))
    assert listed == frame_columns()


def test_a_stamp_that_is_no_real_time_is_nat_not_an_error(tmp_path):
    # a log printed Feb 29 of 2025, 25:61:61 and month 13: the report passes them on as printed, and
    # the frames once failed whole (pyarrow ArrowInvalid) on them
    log = tmp_path / "ts.log"
    log.write_text("".join(
        f"[ERROR] GE(1234,python3):{t} [llm_datadist.cc:100]1234 PullKvCache: failed, ret = 0x5010B001\n"
        for t in ("2025-02-29-03:40:05.101.002", "2025-11-12-25:61:61.101.002", "2025-11-12-03:40:05.101.002")))
    findings = analyze([str(log)]).frames()["findings"]
    times = findings["timestamp"].tolist()
    assert times[0] is pd.NaT and times[1] is pd.NaT
    assert str(times[2]) == "2025-11-12 03:40:05.101002+00:00"


def test_a_year_below_1000_is_printed_with_four_digits():
    from datetime import datetime

    from analyzer.core.times import utc_text

    assert utc_text(datetime(1, 1, 1, 12), False) == "0001-01-01T12:00:00Z"
    assert utc_text(datetime(2025, 11, 12, 3, 40, 5, 101002), True) == "2025-11-12T03:40:05.101002Z"
    assert utc_text(datetime(2025, 11, 12, 3, 40, 5), True) == "2025-11-12T03:40:05.000000Z"
