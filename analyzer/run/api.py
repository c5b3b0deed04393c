"""The whole triage as library calls: paths -> sources -> work units -> findings -> summary.

Stage: run (the library facade). The CLI is a thin layer over `analyze`.

    from analyzer import analyze
    result = analyze(["sample_logs/"])
    result.findings, result.summary, result.inputs

Findings are not held in memory: they are filed in a `FindingStore` (runs in temporary files)
as the units finish, and replayed in report order: once for the time policy when it needs it,
once for the summary's aggregates (`diagnose.tally.Tally`), then by each writer.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import datetime, tzinfo
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.progress import Progress
from ..core.records import Finding, InputStats, Skipped, report_key
from ..core.times import TimeWindow
from ..detect.engine import Engine
from ..inputs import Limits, Selection, iter_sources
from ..knowledge.rules import RuleSet
from .analysis import Analysis  # noqa: F401 - part of the facade: analyzer.run.api.Analysis
from .finish import finish_run
from .parallel import EngineFactory, jobs_for, merge_results, plan_units, run_units, splits_files
from .store import FindingStore, spill_dir

if TYPE_CHECKING:
    pass


@dataclass(frozen=True)
class Options:
    """How to read inputs: unpacking limits, selection, time window, year for year-less stamps."""

    limits: Limits = field(default_factory=Limits)
    selection: Selection = field(default_factory=Selection)
    since: datetime | None = None
    until: datetime | None = None
    year: int | None = None
    tz: tzinfo | None = None  # --tz: the zone of stamps printed without one
    prefilter: str = "auto"  # auto | hyperscan | find
    not_these: tuple[str, ...] = ()  # files never to read (the report being written)
    node: str | None = None  # --node: the node of logs whose path names none (a scan on the node itself)
    follow: bool = False  # follow symlinks that lead out of the folders given

    def engine_factory(self, rules: RuleSet) -> EngineFactory:
        """What builds an engine for these options, in this process or in a worker."""
        return partial(Engine, rules, limits=self.limits, selection=self.selection, year=self.year,
                       tz=self.tz, prefilter_engine=self.prefilter, node=self.node)


def analyze(paths: Iterable[str | Path] | str | Path, rules: RuleSet | None = None,
            rules_dirs: Iterable[str | Path] = (), options: Options | None = None, jobs: int | None = 1,
            progress: Progress | None = None, dask: str | None = None) -> Analysis:
    """Scan `paths` (files, folders, archives, fsspec URLs, `-`) and return findings, input stats
    and summary. `dask` (`tcp://host:port` or `local[:N]`) runs the work units on a Dask cluster
    instead of `jobs` local processes (None: every CPU when the input is big enough to pay for the
    workers, else this process). The result is the same whatever `jobs` or `dask` is."""
    if isinstance(paths, (str, Path)):
        paths = [paths]  # one path, not its characters
    names = [str(p) for p in paths]
    options = options or Options()
    progress = progress or Progress()
    ruleset = rules or RuleSet.load([Path(d) for d in rules_dirs])
    skipped: list[Skipped] = []
    excluded: list[str] = []
    sources = list(iter_sources(names, skipped, options.selection, excluded, options.not_these,
                                follow=options.follow))
    store = FindingStore(spill_dir())
    try:
        with ExitStack() as stack:
            if dask:
                from .dask_cluster import DaskRunner

                runner = stack.enter_context(DaskRunner(dask))
                slots, run = runner.slots, runner.run_units
            else:
                jobs = jobs or jobs_for(sources)
                slots, run = jobs, partial(run_units, jobs=jobs)
            units = plan_units(sources, slots, splits_files(options.year, ruleset.uses_versions),
                               ruleset.envelopes)
            progress.start(sum(s.size or 0 for s in sources), len(sources))
            results = run(units, options.engine_factory(ruleset), progress=progress, spill_dir=store.spill_dir)
            store, stats, tally = merge_results(units, results, store)
            progress.finish()
        stats.skipped[:0] = skipped
        stats.skipped = list(dict.fromkeys(stats.skipped))  # workers report a disabled rule once each
        stats.excluded += len(excluded)
        return finish_run(store, stats, tally, ruleset, TimeWindow.of(options.since, options.until, options.tz))
    except BaseException:
        store.close()
        raise


def analyze_text(text: str, rules: RuleSet | None = None, name: str = "<text>") -> list[Finding]:
    """Findings of a snippet of log text (rule examples, notebooks)."""
    return analyze_snippet(Engine(rules or RuleSet.load(), prefilter_engine="find"), text, name)


def analyze_snippet(engine: Engine, text: str, name: str = "<text>") -> list[Finding]:
    """Findings of a snippet of log text with an already compiled engine."""
    stats = InputStats()
    found = engine.scan_leaf(name, io.BytesIO(text.encode("utf-8")), None, stats)
    return sorted(found, key=report_key)
