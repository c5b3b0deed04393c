"""What a run produced, as data: the record the writers read (`Analysis`).

Layer: run. Built only by `finish.conclude`, at the end of a scan, a merge or the known-errors path.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..core.observations import NodeFacts, Proof, RelatedEvent
from ..core.records import InputStats
from ..diagnose.summary import Summary
from ..knowledge.rules import RuleSet
from .store import FindingStore

if TYPE_CHECKING:
    from ..diagnose.known_errors import KnownErrors


@dataclass
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

    def close(self) -> None:
        """Delete the temporary files that hold the findings."""
        self.findings.close()

    def __enter__(self) -> Analysis:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
