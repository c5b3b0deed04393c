"""What a run produced, as data: the record the writers read (`Analysis`).

Layer: run. Built only by `finish.conclude`, at the end of a scan, a merge or the known-errors path.

In a notebook an `Analysis` shows itself: `repr` is one line, `_repr_html_` the first screen of
the HTML report. That page belongs to the writers, a layer above this one, so the record does not
import it: it asks `core.views`, a hook that the top-level package (the composition root, above
every layer and always imported first) fills with a function that imports `writers.html` when a
notebook first renders one. `frames()` gives pandas DataFrames (`run.frames`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core import views
from ..core.observations import NodeFacts, Proof, RelatedEvent
from ..core.records import InputStats, RuleTexts
from ..core.serial import NATIVE_BATCH, finding_texts
from ..diagnose.summary import Summary
from ..knowledge.rules import RuleSet
from ..scan.blocks import core_chunk_lines, core_finding_lines
from .store import FindingStore

if TYPE_CHECKING:
    import pandas as pd

    from ..diagnose.known_errors import KnownErrors
    from ..diagnose.mining import NearIncident


@dataclass(repr=False)
class Analysis:
    """What a triage run produced, as data. `findings` is re-iterable in report order and has a
    `len()`; `list(result.findings)` for a list. `close()` (or `with analyze(...) as result:`)
    deletes its temporary files at once; otherwise they go when the result is collected."""

    findings: FindingStore
    inputs: InputStats
    rules: RuleSet
    summary: Summary = field(default_factory=Summary)
    known_errors: KnownErrors | None = None  # baseline and suppressions applied (analyzer.diagnose.known_errors)
    related: list[RelatedEvent] = field(default_factory=list)  # neighbour-family errors, by source and line
    links: dict[str | None, NodeFacts] = field(default_factory=dict)  # what each node's logs say of its links
    proofs: list[Proof] = field(default_factory=list)  # lines that show a link healthy again, in time order
    # Lines around each incident lead, read back from the source (`-C N`): (source, line) -> lines
    context: dict[tuple[str, int], list[tuple[int, str]]] = field(default_factory=dict)
    fail_on: str = "any"  # the command's --fail-on: CI writers show what fails the gate (related errors)
    full: bool = False  # the command's --full: text and Markdown list every row, not the first screens' worth
    texts: RuleTexts | None = None  # each rule's remedy and references (default: those of `rules`)
    # `scan --unexplained`: the top templates of the ERROR/WARNING lines nothing explains, near each incident
    unexplained: list[NearIncident] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.texts is None:
            self.texts = self.rules.texts

    @property
    def rule_texts(self) -> RuleTexts:
        """The texts a writer prints for a finding's rule (`texts`, never None once built)."""
        assert self.texts is not None
        return self.texts

    def finding_json(self, sep: str) -> Iterator[str]:
        """Each finding's JSON line (`serial.finding_line`), in report order, the lines of a batch
        joined by `sep`: encoded by the compiled core where it runs, straight from the store's
        chunks where no transform applies (`FindingStore.stored`), a spilled chunk rendered
        by the core beside the writing thread, never read back into Python objects
        (`serial.finding_texts`)."""
        from .parallel import cpu_count

        native = core_finding_lines()
        store = self.findings
        stored = store.stored(NATIVE_BATCH, spilled=True) if native is not None and store.transform is None else None
        # One thread renders while this one writes: a second rendered little more (dense 256 MiB:
        # 0.17 -> 0.16 s) for a second malloc arena's worth of memory (+7 MiB on 10,000 files).
        threads = min(1, cpu_count() - 1)
        return finding_texts(store, self.rule_texts, sep, native, stored, core_chunk_lines(), threads)

    def frames(self, *names: str) -> dict[str, pd.DataFrame]:
        """pandas DataFrames of this run, by name: `findings`, `related`, `incidents`, `bursts`,
        `nodes`, `bundles`, `fingerprints` (those named, else all; README "Frames" lists their
        columns). Needs pandas and pyarrow: `pip install 'ddtriage[frames]'`."""
        try:
            from .frames import frames
        except ImportError as exc:
            raise ImportError(f"frames need pandas and pyarrow ({exc.name} is missing): "
                              "pip install 'ddtriage[frames]'") from None
        return frames(names, self.findings, self.summary, self.related, self.links, self.rule_texts)

    def frame(self, name: str) -> pd.DataFrame:
        """One of `frames()`: `result.frame("incidents")`."""
        return self.frames(name)[name]

    def __repr__(self) -> str:
        s, i = self.summary, self.inputs
        return (f"<Analysis: {s.findings} findings ({s.unrecoverable} not known recoverable), "
                f"{len(s.incidents)} incidents, {len(self.related)} related errors, {len(s.nodes)} nodes; "
                f"{i.files} files, {i.lines} lines read>")

    def _repr_html_(self) -> str | None:
        """The first screen of the HTML report (Jupyter calls this)."""
        return views.html(self)

    def close(self) -> None:
        """Delete the temporary files that hold the findings."""
        self.findings.close()

    def __enter__(self) -> Analysis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
