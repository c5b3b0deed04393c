"""The whole triage as library calls: paths -> sources -> work units -> findings -> summary.

Stage: library facade. The CLI is a thin layer over `analyze`.

    from analyzer import analyze
    result = analyze(["sample_logs/"])
    result.findings, result.summary, result.inputs

Findings are not held in memory: they are filed in a `FindingStore` (runs in temporary files)
as the units finish, and replayed in report order: once for the time policy when it needs it,
once for the summary's aggregates (`triage.Tally`), then by each writer.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from datetime import datetime, tzinfo
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

from .engine import Engine
from .incidents import build_incidents
from .inputs import Limits, Selection, iter_sources
from .linkfacts import NodeFacts
from .observed import RelatedEvent, settle_related_years
from .parallel import EngineFactory, merge, plan_units, run_units
from .progress import Progress
from .records import Finding, InputStats, Skipped
from .report import Summary
from .rules import RuleSet
from .store import FindingStore, sort_key, spill_dir
from .timepolicy import time_policy, window_bound
from .triage import Tally

if TYPE_CHECKING:
    from .baseline import KnownErrors


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


@dataclass
class Analysis:
    """What a triage run produced, as data. `findings` is re-iterable in report order and has a
    `len()`; `list(result.findings)` for a list. `close()` (or `with analyze(...) as result:`)
    deletes its temporary files at once; otherwise they go when the result is collected."""

    findings: FindingStore
    inputs: InputStats
    rules: RuleSet
    summary: Summary = field(default_factory=Summary)
    known_errors: KnownErrors | None = None  # baseline and suppressions applied (analyzer.baseline)
    related: list[RelatedEvent] = field(default_factory=list)  # neighbour-family errors, by source and line
    links: dict[str | None, NodeFacts] = field(default_factory=dict)  # what each node's logs say of its links
    # Lines around each incident lead, read back from the source (`-C N`): (source, line) -> lines
    context: dict[tuple[str, int], list[tuple[int, str]]] = field(default_factory=dict)
    fail_on: str = "any"  # the command's --fail-on: CI writers show what fails the gate (related errors)
    full: bool = False  # the command's --full: text and Markdown list every row, not the first screens' worth

    def close(self) -> None:
        """Delete the temporary files that hold the findings."""
        self.findings.close()

    def __enter__(self) -> Analysis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def analyze(paths: Iterable[str | Path] | str | Path, rules: RuleSet | None = None,
            rules_dirs: Iterable[str | Path] = (), options: Options | None = None, jobs: int = 1,
            progress: Progress | None = None, dask: str | None = None) -> Analysis:
    """Scan `paths` (files, folders, archives, fsspec URLs, `-`) and return findings, input stats
    and summary. `dask` (`tcp://host:port` or `local[:N]`) runs the work units on a Dask cluster
    instead of `jobs` local processes. The result is the same whatever `jobs` or `dask` is."""
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
                from .dask_backend import DaskRunner

                runner = stack.enter_context(DaskRunner(dask))
                slots, run = runner.slots, runner.run_units
            else:
                slots, run = jobs, partial(run_units, jobs=jobs)
            units = plan_units(sources, slots)
            progress.start(sum(s.size or 0 for s in sources), len(sources))
            results = run(units, options.engine_factory(ruleset), progress=progress, spill_dir=store.spill_dir)
            store, stats, tally = merge(units, results, store)
            progress.finish()
        stats.skipped[:0] = skipped
        stats.skipped = list(dict.fromkeys(stats.skipped))  # workers report a disabled rule once each
        stats.excluded += len(excluded)
        since, until = window_bound(options.since, options.tz), window_bound(options.until, options.tz)
        store.transform = time_policy(store.raw, store.guessed > 0, since, until)
        if tally is None or store.transform is not None:
            # The units' own tallies do not fit (a split file, a name met twice, or the time
            # policy changes findings): count the findings again, read back in report order.
            tally = Tally()
            for finding in store:
                tally.add(finding)
    except BaseException:
        store.close()
        raise
    store.count = tally.count
    stats.outside_window = store.raw_count - tally.count
    sure = {node: [stamp] for node, (_, stamp) in tally.sure.items()}  # a stamp with a sure year per node
    related = [e for e in settle_related_years(stats.observed.sorted_related(), sure)
               if _in_window(e.timestamp, options.since, options.until)]
    summary = tally.summary()
    incidents = build_incidents(summary.bursts, related, stats.observed.nodes, ruleset)
    return Analysis(store, stats, ruleset, replace(summary, incidents=incidents), related=related,
                    links=dict(sorted(stats.observed.nodes.items(), key=lambda kv: kv[0] or "")))


def _in_window(ts: str | None, since: datetime | None, until: datetime | None) -> bool:
    if not ts or (since is None and until is None):
        return True
    try:
        when = datetime.fromisoformat(ts)
    except ValueError:
        return True
    return (since is None or when >= since) and (until is None or when <= until)


def analyze_text(text: str, rules: RuleSet | None = None, name: str = "<text>") -> list[Finding]:
    """Findings of a snippet of log text (rule examples, notebooks)."""
    return analyze_snippet(Engine(rules or RuleSet.load(), prefilter_engine="find"), text, name)


def analyze_snippet(engine: Engine, text: str, name: str = "<text>") -> list[Finding]:
    """Findings of a snippet of log text with an already compiled engine."""
    stats = InputStats()
    found = engine.scan_leaf(name, io.BytesIO(text.encode("utf-8")), None, stats)
    return sorted(found, key=sort_key)
