"""What a scan observes besides findings, bounded: each node's link facts and the neighbour-family
errors (HCCL, runtime, CANN, HIXL, torch_npu, MindIE, socket) logged on their own.

Stage: detect (the engine's side-channel). The engine fills one `Observed` per work unit (it rides in
`InputStats`, so it is merged with the other counts); its size does not grow with the number of
findings: link facts are sets of small values per node, and at most `MAX_RELATED` related errors
are kept (the first in report order, whatever the units; the rest are only counted).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..core import observations
from ..core.headers import Header, header_pid, record_headers
from ..core.observations import Fact, NodeFacts, Observed, Proof, RelatedEvent
from ..core.records import process_key
from ..knowledge.linkfacts import LinkFactMatcher
from ..knowledge.recovery import RecoveryTable
from ..scan.blocks import decode

if TYPE_CHECKING:
    from ..core.records import Record
    from ..inputs import Layout, YearHint
    from ..knowledge.families import NeighbourMatcher
    from ..scan.blocks import Candidate, RelatedCount
    from ..scan.clock import StreamClock

LINK_LINES = 12  # link facts (req_id, peer) of the same process this many lines back belong to a finding
FINDING_LINK_KINDS = frozenset({"req_id", "local_cluster", "remote_cluster", "remote_addr", "remote_ip", "device"})












# Whether a related error no report can keep (past MAX_RELATED of its stream) is only counted, not
# built; False: built and trimmed as any other, the twin the tests compare it with.
COUNT_PAST_CAP = True
# Whether the compiled core reads a line of neighbour errors and no code whole, for `related_row`
# to note (where it reads it as Python would); False: every such line goes through `line`.
CORE_READS_RELATED = True


def _no_lines() -> Sequence[tuple[int, str]]:
    return ()  # a line with a stamp of its own never looks back for one


def _note(state: StreamView, node: str | None, process: str | None, pid: str | None, facts: list[Fact],
          line_no: int) -> None:
    """A line's facts: its node's, and what later lines of its process look back at."""
    state.observed.note_facts(node, facts, pid)
    _remember(state, process, facts, line_no)


def _remember(state: StreamView, process: str | None, facts: Sequence[Fact], line_no: int) -> None:
    """The facts later lines of `process` look back at (`finding_link`): the last of each kind."""
    mine = state.recent.setdefault(process, {})
    for kind, value in facts:
        mine[kind] = (value, line_no)


class StreamView(Protocol):
    """What `LineObserver` needs of the engine's per-stream state."""

    name: str
    layout: Layout
    clock: StreamClock
    year: YearHint | None
    observed: Observed
    recent: dict[str | None, dict[str, tuple[str, int]]]  # process (pod, pid) -> kind -> (value, line)
    related_noted: int  # related errors noted in `observed` so far
    related_line: int  # the line of the last of them
    counting: RelatedCount | None  # the compiled core's share of the counting, if any


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
    """Link facts, neighbour-family errors and proofs of recovery of each candidate line, into the
    stream's `Observed`."""

    def __init__(self, linkfacts: LinkFactMatcher, neighbours: NeighbourMatcher,
                 recovery: RecoveryTable | None = None) -> None:
        self.linkfacts, self.neighbours = linkfacts, neighbours
        self.recovery = recovery or RecoveryTable([], [])

    def _proof(self, state: StreamView, line_no: int, text: str, raw: bytes, node: str | None,
               process: str | None, header: Header | None, record: Record | None) -> None:
        """Note the line as a proof of recovery when it is one, naming the peer its own facts (or
        its process's, the few lines before) name."""
        if not self.recovery.maybe_in(raw):
            return
        proof = self.recovery.find(text)
        if proof is None:
            return
        header = header or record_headers(text, state.year)[0]
        link = dict(finding_link(state.recent.get(process, {}), [], line_no))
        when = state.clock.time_of(header, lambda: (), record)
        clusters = (link["remote_cluster"],) if "remote_cluster" in link else ()
        addrs = tuple(link[k] for k in ("remote_addr", "remote_ip") if k in link)[:1]
        state.observed.note_proof(Proof(state.name, line_no, when.timestamp or when.time_hint, node, proof,
                                        header.pid or state.layout.pid, clusters, addrs, text[:600],
                                        when.year_guessed))

    def facts_only(self, state: StreamView, default_node: str | None, line_no: int, text: str, raw: bytes,
                   found: list[Fact] | None = None) -> None:
        """Note the link facts of a plain line that holds fact literals only (no code, no
        neighbour error): what `line` does for it, without what only a finding needs. `found`:
        the line's facts when the compiled core has matched them already."""
        facts = self.linkfacts.find(text, raw) if found is None else found
        proof = self.recovery.maybe_in(raw)
        if not facts and not proof:
            return
        pid = header_pid(text, state.year) or state.layout.pid
        node = node_of(state.layout, None, state.layout.pod, default_node)
        process = process_of(state.layout, None, pid)
        if facts:
            _note(state, node, process, pid, facts, line_no)
        if proof:
            self._proof(state, line_no, text, raw, node, process, None, None)

    def fact_rows(self, state: StreamView, default_node: str | None,
                  rows: tuple[tuple[str, tuple[tuple[str, str, int], ...]], ...]) -> None:
        """What later lines of each process look back at, of a run of fact-only lines the compiled
        core answered whole (lines that hold facts, are no proof and start with a plog header):
        per pid, the last (kind, value, line) of each kind. Their node's facts come at the
        stream's end (`core_facts`)."""
        layout, recent = state.layout, state.recent
        for pid, updates in rows:
            mine = recent.setdefault(process_of(layout, None, pid), {})
            for kind, value, line_no in updates:
                mine[kind] = (value, line_no)

    def core_facts(self, state: StreamView, default_node: str | None, gathered: tuple[object, ...]) -> None:
        """The node facts the compiled core gathered from a stream's rows (`Scan.node_facts`)."""
        node = node_of(state.layout, None, state.layout.pod, default_node)
        state.observed.merge_node(node, NodeFacts.from_core(gathered))

    def line(self, state: StreamView, cand: Candidate, text: str, raw: bytes,
             lookback: Callable[[], Sequence[tuple[int, str]]], record: Record | None,
             default_node: str | None) -> tuple[Fact, ...]:
        """Note one line's facts and related errors; return the link facts a finding on it carries."""
        if cand.facts_only:  # a record of a line with fact literals only: no finding, no related error
            facts = self.linkfacts.find(text, raw)
            proof = self.recovery.maybe_in(raw)
            if facts or proof:
                pid = header_pid(text, state.year) or state.layout.pid
                node = node_of(state.layout, record, (record.pod if record else None) or state.layout.pod,
                               default_node)
                process = process_of(state.layout, record, pid)
                if facts:
                    _note(state, node, process, pid, facts, cand.line_no)
                if proof:
                    self._proof(state, cand.line_no, text, raw, node, process, None, record)
            return ()
        facts, may_prove = self.linkfacts.screen(text, raw)
        families = self.neighbours.families_in(raw)
        if self.recovery.maybe_in(raw) if may_prove is None else may_prove:
            header = record_headers(text, state.year)[0]
            pid = header.pid or state.layout.pid
            node = node_of(state.layout, record, (record.pod if record else None) or state.layout.pod, default_node)
            process = process_of(state.layout, record, pid)
            if facts:  # the proof names what its own line names
                _remember(state, process, facts, cand.line_no)
            self._proof(state, cand.line_no, text, raw, node, process, header, record)
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
            _note(state, node, process, pid, facts, cand.line_no)
        found = self.neighbours.find(text, families) if families else []
        if found:
            self._related(state, cand.line_no, text, header, lookback, record, node, facts, found)
        return link

    def related_row(self, state: StreamView, default_node: str | None, line_no: int, raw: bytes,
                    row: dict[str, Any]) -> None:
        """Note a line of neighbour errors and no code that the compiled core read whole
        (`scan.blocks.RelatedCount.built`: printable ASCII, a plog header with a year, no
        possible proof): as `line` notes it, from the core's pid, timestamp, facts and errors. No
        finding is on the line, so nothing needs its link."""
        pid, facts = row["pid"], row["facts"]
        layout = state.layout
        node = node_of(layout, None, layout.pod, default_node)
        if facts:
            _note(state, node, process_of(layout, None, pid), pid, facts, line_no)
        header = Header("plog", row["at"], pid, None, None, 0)
        self._related(state, line_no, decode(raw), header, _no_lines, None, node, facts,
                      self.neighbours.core_found(row["errors"]))

    def _related(self, state: StreamView, line_no: int, text: str, header: Header,
                 lookback: Callable[[], Sequence[tuple[int, str]]], record: Record | None, node: str | None,
                 facts: list[Fact], found: list[tuple[str, str, str]]) -> None:
        """Note the related errors `found` on a line."""
        if COUNT_PAST_CAP and state.related_noted >= observations.MAX_RELATED and line_no > state.related_line:
            # Ordered after MAX_RELATED related errors of this stream already noted (report order:
            # source, then line), so no report can keep them (`Observed._trim`): counted, not built.
            # The clock still reads the stamp where reading it moves the clock (a year-less stamp,
            # a line without one, an envelope's zone).
            if record is not None or header.timestamp is None or header.yearless:
                state.clock.time_of(header, lookback, record)
            state.observed.related_dropped += len(found)
            if state.counting is not None and state.counting.after is None:
                state.counting.after = state.related_line  # lines after it: the core's to count too
            return
        when = state.clock.time_of(header, lookback, record)
        kept = tuple((k, v) for k, v in facts if k in FINDING_LINK_KINDS)
        for family, code, meaning in found:
            state.observed.note_related(RelatedEvent(
                source=state.name, line=line_no, timestamp=when.timestamp or when.time_hint, node=node,
                family=family, code=code, meaning=meaning, pid=header.pid, text=text[:600], link=kept,
                year_guessed=when.year_guessed))
        state.related_noted += len(found)
        state.related_line = line_no
