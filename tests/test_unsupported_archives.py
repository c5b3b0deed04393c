"""7z and RAR inputs (review D21): recognised by their magic bytes (a row each in the formats
table) and skipped with what to do, "unpack it first", never read as text: a compressed bundle
shows no code as text, so a gate would otherwise pass on a bundle it never read."""

from __future__ import annotations

import io
import json
import tarfile

from analyzer.cli import cli
from click.testing import CliRunner

from hostile import FINDING

SEVEN_Z = b"7z\xbc\xaf\x27\x1c\x00\x04" + bytes(range(256)) * 4  # a 7z signature header, then data
RAR5 = b"Rar!\x1a\x07\x01\x00" + bytes(range(256)) * 4


def test_7z_and_rar_are_skipped_with_what_to_do(tmp_path):
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    (bundle / "app.log").write_text(FINDING + "\n")
    (bundle / "node-3.7z").write_bytes(SEVEN_Z)
    packed = io.BytesIO()
    with tarfile.open(fileobj=packed, mode="w:gz") as tar:  # a RAR inside a collector's tarball
        info = tarfile.TarInfo("node-4/logs.rar")
        info.size = len(RAR5)
        tar.addfile(info, io.BytesIO(RAR5))
    (bundle / "node-4.tar.gz").write_bytes(packed.getvalue())
    result = CliRunner().invoke(cli, ["scan", str(bundle), "--format", "json"])
    assert result.exit_code == 1, result.stderr  # the log's finding; the archives are not "clean"
    report = json.loads(result.stdout)
    assert [(s["source"], s["reason"]) for s in report["inputs"]["skipped"]] == [
        (f"{bundle}/node-3.7z", "7z archive: not supported; unpack it first"),
        (f"{bundle}/node-4.tar.gz!node-4/logs.rar", "RAR archive: not supported; unpack it first")]
    assert len(report["findings"]) == 1 and report["inputs"]["files"] == 1
    assert result.stderr.splitlines() == [
        f"ddtriage: warning: {bundle}/node-3.7z: 7z archive: not supported; unpack it first",
        f"ddtriage: warning: {bundle}/node-4.tar.gz!node-4/logs.rar: RAR archive: not supported; unpack it first"]
    strict = CliRunner().invoke(cli, ["scan", str(bundle), "--strict", "--quiet"])
    assert strict.exit_code == 2


def test_a_lone_7z_is_not_a_clean_scan(tmp_path):
    archive = tmp_path / "bundle.7z"
    archive.write_bytes(SEVEN_Z)
    result = CliRunner().invoke(cli, ["scan", str(archive)])
    assert result.exit_code == 2
    assert "7z archive: not supported; unpack it first" in result.stderr
    assert "No LLM-DataDist status codes found" not in result.stdout
