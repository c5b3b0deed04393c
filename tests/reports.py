"""What tests read off a run: a scan through the library, and its findings in their JSON shape."""

from analyzer.core.serial import finding_dict
from analyzer.run.api import Options, analyze


def scan(*paths, **options):
    """`analyze` of `paths` with `Options(**options)`, on one job unless `jobs=` says otherwise."""
    jobs = options.pop("jobs", 1)
    return analyze([str(p) for p in paths], options=Options(**options), jobs=jobs)


def rows(analysis):
    """The findings of an analysis as the JSON report writes them (their rules' texts included)."""
    return [finding_dict(f, analysis.rule_texts) for f in analysis.findings]
