"""What a scan observes besides findings, bounded: each node's link facts and the neighbour-family
errors (HCCL, runtime, CANN, HIXL, torch_npu, MindIE, socket) logged on their own.

Stage: detect (the engine's side-channel). The engine fills one `Observed` per work unit (it rides in
`InputStats`, so it is merged with the other counts); its size does not grow with the number of
findings: link facts are sets of small values per node, and at most `MAX_RELATED` related errors
are kept (the first in report order, whatever the units; the rest are only counted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

from ..core.headers import header_pid, record_headers
from ..core.observations import Fact, Observed, RelatedEvent
from ..core.records import process_key
from ..knowledge.linkfacts import LinkFactMatcher

if TYPE_CHECKING:
    from ..core.records import Record
    from ..inputs import Layout, YearHint
    from ..knowledge.families import NeighbourMatcher
    from ..scan.blocks import Candidate
    from ..scan.clock import StreamClock

LINK_LINES = 12  # link facts (req_id, peer) of the same process this many lines back belong to a finding
FINDING_LINK_KINDS = frozenset({"req_id", "local_cluster", "remote_cluster", "remote_addr", "remote_ip", "device"})












class StreamView(Protocol):
    """What `LineObserver` needs of the engine's per-stream state."""

    name: str
    layout: Layout
    clock: StreamClock
    year: YearHint | None
    observed: Observed
    recent: dict[str | None, dict[str, tuple[str, int]]]  # process (pod, pid) -> kind -> (value, line)


def node_of(layout: Layout, record: Record | None, pod: str | None, default: str | None) -> str | None:
    """The node: what the envelope names (a host), else --node (`default`: the user knows what the
    path does not; a home folder or mount point above `ascend/log` is no node), else the Ascend
    layout's, else the pod; a folder that only holds the log names a node only when no pod does."""
    return (record.node if record else None) or default or (
        (layout.node if layout.anchored else None) or pod if pod else layout.node)


def process_of(layout: Layout, record: Record | None, pid: str | None) -> str | None:
    """`core.records.process_key` of a line: pod and container from its envelope, else its path."""
    return process_key((record.pod if record else None) or layout.pod,
                       (record.container if record else None) or layout.container, pid)


def finding_link(recent: dict[str, tuple[str, int]], facts: list[Fact], line_no: int) -> tuple[Fact, ...]:
    """What a finding's line and the few lines of its process before it say about its link."""
    link = {k: v for k, (v, n) in recent.items() if k in FINDING_LINK_KINDS and line_no - n <= LINK_LINES}
    link.update((k, v) for k, v in facts if k in FINDING_LINK_KINDS)
    return tuple(sorted(link.items()))


class LineObserver:
    """Link facts and neighbour-family errors of each candidate line, into the stream's `Observed`."""

    def __init__(self, linkfacts: LinkFactMatcher, neighbours: NeighbourMatcher) -> None:
        self.linkfacts, self.neighbours = linkfacts, neighbours

    def facts_only(self, state: StreamView, default_node: str | None, line_no: int, text: str, raw: bytes,
                   found: list[Fact] | None = None) -> None:
        """Note the link facts of a plain line that holds fact literals only (no code, no
        neighbour error): what `line` does for it, without what only a finding needs. `found`:
        the line's facts when the compiled core has matched them already."""
        facts = self.linkfacts.find(text, raw) if found is None else found
        if not facts:
            return
        pid = header_pid(text, state.year) or state.layout.pid
        node = node_of(state.layout, None, state.layout.pod, default_node)
        state.observed.note_facts(node, facts, pid)
        mine = state.recent.setdefault(process_of(state.layout, None, pid), {})
        for kind, value in facts:
            mine[kind] = (value, line_no)

    def line(self, state: StreamView, cand: Candidate, text: str, raw: bytes,
             lookback: Callable[[], Sequence[tuple[int, str]]], record: Record | None,
             default_node: str | None) -> tuple[Fact, ...]:
        """Note one line's facts and related errors; return the link facts a finding on it carries."""
        if cand.facts_only:  # a record of a line with fact literals only: no finding, no related error
            facts = self.linkfacts.find(text, raw)
            if facts:
                pid = header_pid(text, state.year) or state.layout.pid
                node = node_of(state.layout, record, (record.pod if record else None) or state.layout.pod,
                               default_node)
                state.observed.note_facts(node, facts, pid)
                mine = state.recent.setdefault(process_of(state.layout, record, pid), {})
                for kind, value in facts:
                    mine[kind] = (value, cand.line_no)
            return ()
        facts = self.linkfacts.find(text, raw) if self.linkfacts.maybe_in(raw) else []
        families = self.neighbours.families_in(raw)
        if not facts and not families:
            if not state.recent:
                return ()
            pid = record_headers(text, state.year)[0].pid or state.layout.pid
            return finding_link(state.recent.get(process_of(state.layout, record, pid), {}), [], cand.line_no)
        header = record_headers(text, state.year)[0]
        node = node_of(state.layout, record, (record.pod if record else None) or state.layout.pod, default_node)
        pid = header.pid or state.layout.pid
        process = process_of(state.layout, record, pid)
        link = finding_link(state.recent.get(process, {}), facts, cand.line_no)
        if facts:
            state.observed.note_facts(node, facts, pid)
            mine = state.recent.setdefault(process, {})
            for kind, value in facts:
                mine[kind] = (value, cand.line_no)
        found = self.neighbours.find(text, families) if families else []
        if found:
            when = state.clock.time_of(header, lookback, record)
            kept = tuple((k, v) for k, v in facts if k in FINDING_LINK_KINDS)
            for family, code, meaning in found:
                state.observed.note_related(RelatedEvent(
                    source=state.name, line=cand.line_no, timestamp=when.timestamp or when.time_hint, node=node,
                    family=family, code=code, meaning=meaning, pid=header.pid, text=text[:600], link=kept,
                    year_guessed=when.year_guessed))
        return link
