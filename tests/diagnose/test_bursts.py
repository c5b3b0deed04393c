"""A burst of one repeated failure (review D12): the repeats of the lead (same code, API and rule)
are counted ("+ 2 repeats of the lead", JSON `repeats`), not listed under "also", which names only
other failures, so a reader tells a storm of one failure from a burst of several.

From review D12 (repeats of a burst's lead).
"""

from __future__ import annotations

import json

from analyzer.cli import cli
from click.testing import CliRunner

PULL = ("[ERROR] GE(4811,python3):2025-11-12-03:40:00.000.0{ms:02d} [llm_datadist.cc:812]60 PullKvBlocks: "
        "ErrorNo: 1343270919(local cluster is not linked with remote cluster!) [GE][MODULE]pull failed, req_id = {req}")
LINK = ("[ERROR] GE(4811,python3):2025-11-12-03:40:00.000.090 [llm_datadist.cc:288]60 PullKvBlocks: "
        "ErrorNo: 1343270921(local cluster link with remote cluster failed!) [GE][MODULE]link lost, req_id = 60")


def _scan(path, fmt):
    result = CliRunner().invoke(cli, ["scan", str(path), "--format", fmt, "--fail-on", "never", "--no-pager"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_repeats_of_the_lead_are_counted_not_listed_as_also(tmp_path):
    log = tmp_path / "two.log"
    log.write_text("".join(PULL.format(ms=ms, req=ms) + "\n" for ms in (0, 20, 40)))
    (burst,) = json.loads(_scan(log, "json"))["summary"]["bursts"]
    assert (burst["lead"]["name"], burst["findings"], burst["repeats"], burst["also"]) == ("LLM_NOT_YET_LINK", 3, 2, [])
    text = _scan(log, "text")
    assert "    + 2 repeats of the lead\n" in text and "also" not in text
    assert "2 repeats of the lead." in _scan(log, "markdown")


def test_another_failure_in_the_burst_is_still_also(tmp_path):
    log = tmp_path / "mixed.log"
    log.write_text("".join(PULL.format(ms=ms, req=ms) + "\n" for ms in (0, 20)) + LINK + "\n")
    (burst,) = json.loads(_scan(log, "json"))["summary"]["bursts"]
    assert burst["repeats"] == 1
    assert [(a["name"], a["api"]) for a in burst["also"]] == [("LLM_LINK_FAILED", "PullKvBlocks")]
