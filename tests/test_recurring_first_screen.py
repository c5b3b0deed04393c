"""The "Recurring across bundles" table names the recurring failures first (review D15): wrappers
log the generic LLM_FAILED after every specific code (domain.md §5), once per API, so ranked by
spread alone its echoes filled the first screen and pushed the failure they echo below the cut.
Specific codes come first; the generic echoes are ranked after them, and the text report folds
them into one counted line."""

from __future__ import annotations

import json
from pathlib import Path

from analyzer.cli import cli
from click.testing import CliRunner

APIS = ("PullKvBlocks", "LinkClusters", "PushKvBlocks", "AllocateCache", "UnlinkClusters", "SetRole",
        "PullKvCache", "PushKvCache")  # 8 echoing APIs: as many rows as the first screen shows


def _fleet(root: Path) -> Path:
    """Three nodes, each: one LLM_TIMEOUT from PushKvBlocks, then two generic echoes from each of 8 APIs."""
    for node in ("node-a", "node-b", "node-c"):
        folder = root / "fleet" / node / "ascend" / "log" / "debug" / "plog"
        folder.mkdir(parents=True)
        lines = ["[ERROR] GE(5569,python3):2025-11-12-03:40:05.100.000 [llm_datadist.cc:549]5650 PushKvBlocks: "
                 "ErrorNo: 1343270938(transfer timeout!) [GE][MODULE]PushKvBlocks failed, req_id = 7"]
        for i, api in enumerate(api for api in APIS for _ in range(2)):
            lines.append(f"[ERROR] GE(5569,python3):2025-11-12-03:40:05.{201 + i}.000 [llm_datadist.cc:549]5650 "
                         f"{api}: ErrorNo: 4294967295(failed) [GE][MODULE]{api} failed")
        (folder / "plog-5569_20251112034002789.log").write_text("\n".join(lines) + "\n")
    return root / "fleet"


def _scan(fleet: Path, fmt: str) -> str:
    result = CliRunner().invoke(cli, ["scan", str(fleet), "--format", fmt, "--fail-on", "never", "--no-pager"])
    assert result.exit_code == 0, result.stderr
    return result.stdout


def test_text_first_screen_names_the_specific_failure_and_counts_the_echoes(tmp_path):
    text = _scan(_fleet(tmp_path), "text").splitlines()
    start = next(i for i, line in enumerate(text) if line.startswith("Recurring across"))
    assert text[start] == "Recurring across 3 bundles and 3 nodes: 1 failure in more than one bundle"
    assert text[start + 2].split() == ["3", "3", "3", "LLM_TIMEOUT", "(0x5010B01A)", "from", "PushKvBlocks", "->",
                                       "relink"]
    section = text[start:text.index("", start)]
    assert not [line for line in section if "LLM_FAILED" in line and "echoes" not in line]
    folded = " ".join(line.strip() for line in section[section.index(next(x for x in section if "+ " in x)):])
    assert folded == "+ 48 generic LLM_FAILED (0xFFFFFFFF) echoes of these from 8 APIs, in up to 3 bundles"


def test_markdown_and_json_rank_the_specific_failure_before_its_echoes(tmp_path):
    fleet = _fleet(tmp_path)
    markdown = _scan(fleet, "markdown").splitlines()
    start = markdown.index("## Recurring across 3 bundles and 3 nodes")
    rows = markdown[start + 4:markdown.index("", start + 4)]
    assert "LLM_TIMEOUT (0x5010B01A) | PushKvBlocks | relink" in rows[0]
    assert len(rows) == 9 and all("LLM_FAILED" in row for row in rows[1:])
    prints = json.loads(_scan(fleet, "json"))["summary"]["fingerprints"]
    assert [(p["name"], p["generic"]) for p in prints[:2]] == [("LLM_TIMEOUT", False), ("LLM_FAILED", True)]
    assert [p["findings"] for p in prints] == [3] + [6] * 8
