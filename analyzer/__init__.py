"""ddtriage: triage analyzer for Huawei Ascend CANN LLM-DataDist logs.

    paths -> inputs -> scanner -> patterns/context -> rules -> triage -> writers

`api` is the facade; `engine` runs the stages on one stream, `parallel` runs many at once.

Library first: everything the CLI does is a call here.

    from analyzer import analyze, load_rules, explain
    result = analyze(["sample_logs/"])
    result.findings        # list[Finding]
    result.summary         # report.Summary: counts by code x API, by node, bursts with their lead
    result.inputs          # InputStats: files, lines, bytes read, skipped inputs
"""

import os

from .api import Analysis, Options, analyze, analyze_text
from .errors import DDTriageError, InputError, RuleError
from .explain import explain
from .records import Finding, InputStats, Skipped
from .rules import RuleSet


def load_rules(*dirs: str | os.PathLike[str]) -> RuleSet:
    """Built-in rules plus any extra rule directories (later ones override earlier ones)."""
    from pathlib import Path

    return RuleSet.load([Path(d) for d in dirs])


__all__ = [
    "Analysis", "DDTriageError", "Finding", "InputError", "InputStats", "Options", "RuleError", "RuleSet",
    "Skipped", "analyze", "analyze_text", "explain", "load_rules",
]
