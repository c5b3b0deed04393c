"""ddtriage: triage analyzer for Huawei Ascend CANN LLM-DataDist logs.

    paths -> inputs -> scan -> detect -> diagnose -> writers      (knowledge: the YAML tables)

`run.api` is the facade; `detect.engine` runs the stages on one stream, `run.parallel` runs many
at once. ARCHITECTURE.md draws the packages and the records that cross them.

Library first: everything the CLI does is a call here.

    from analyzer import analyze, load_rules, explain
    result = analyze(["sample_logs/"])
    result.findings        # Finding records, re-iterable (a spilled store, not a list)
    result.summary         # diagnose.summary.Summary: counts by code x API, by node, bursts with their lead
    result.inputs          # InputStats: files, lines, bytes read, skipped inputs
    result.frames()        # pandas DataFrames: findings, incidents, bursts, nodes, bundles, ... (the frames extra)
    read_report("fleet.parquet").frames()   # the same from a JSON, JSONL or Parquet report, or a folder of them
"""

from __future__ import annotations

import os
from importlib import import_module
from typing import TYPE_CHECKING, Any

from .core import views
from .core.errors import DDTriageError, InputError, RuleError

if TYPE_CHECKING:
    from .core.records import Finding, InputStats, Skipped
    from .knowledge.explain import explain
    from .knowledge.rules import RuleSet
    from .run.analysis import Analysis
    from .run.api import Options, analyze, analyze_text
    from .run.merge_parts import read_report

# Imported on first use (PEP 562): `ddtriage --help` and `explain` must not pay for the engine.
_LAZY = {"Analysis": "run.analysis", "Options": "run.api", "analyze": "run.api", "analyze_text": "run.api",
         "explain": "knowledge.explain", "RuleSet": "knowledge.rules", "read_report": "run.merge_parts",
         "Finding": "core.records", "InputStats": "core.records", "Skipped": "core.records"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        value = getattr(import_module(f".{_LAZY[name]}", __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _html_view(analysis: Analysis) -> str:
    """An analysis in a notebook: the first screen of its HTML report (imported on first use)."""
    from .writers.html import first_screen

    return first_screen(analysis)


# The composition root wires the writers' view into the record (core.views: no layer imports up).
views.html_view = _html_view


def load_rules(*dirs: str | os.PathLike[str], lang: str = "en") -> RuleSet:
    """Built-in rules plus any extra rule directories (later ones override earlier ones); their
    text (meanings, remedies) in `lang`, en or zh."""
    from pathlib import Path

    from .knowledge.rules import RuleSet

    return RuleSet.load([Path(d) for d in dirs], lang=lang)


__all__ = [
    "Analysis", "DDTriageError", "Finding", "InputError", "InputStats", "Options", "RuleError", "RuleSet",
    "Skipped", "analyze", "analyze_text", "explain", "load_rules", "read_report",
]
