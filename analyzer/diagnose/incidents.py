"""Incidents: the bursts of one failure across files and nodes, with a lead, an action and a story.

Stage: diagnose (after the summary). Built from the summary's bursts, the link facts of each node and
the related (neighbour-family) errors the scan kept, never from the findings themselves, so its
cost does not grow with a storm of findings.

- Nodes are *linked* when one names the other's address (a remote ip:port it talks to is where the
  other listens, or a peer ip the serving side saw is the other's ip), or, for cluster ids never
  printed with an address, when a Decoder names a Prompt's cluster id (ids repeat between
  deployments, so roles must differ), or when both name the same req_id. Nodes whose logs hold no
  link fact at all are joined by time alone.
- Bursts of the same or linked nodes less than `GAP_SECONDS` apart form one incident; a later run of
  the very same failures (same fingerprints, same nodes) continues it, as a storm does.
- Related errors of the incident's nodes, or of nodes linked to them, logged from `LEAD_BEFORE`
  before its first burst to `GAP_SECONDS` after its last, join it (and bring their node).
- The lead is the earliest lower-level error (runtime, HCCL, socket, ...) up to the first specific
  LLM-DataDist failure; without one, the earliest specific code; then the application's errors.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..core.observations import NodeFacts, RelatedEvent, addr_ip
from ..core.records import Finding
from ..core.times import stamp_seconds
from ..knowledge.rules import RuleSet
from .summary import Burst, IncidentLead

GAP_SECONDS = 0.5  # failures of linked nodes this close in time are one incident (a link failure
#                    crosses to the other side within milliseconds)
LEAD_BEFORE = 1.0  # a lower-level error this long before an incident's first finding may lead it
FOLLOW_SECONDS = 10.0  # failures against the very peer an incident failed on, this soon after, follow from it
STORM_SECONDS = 600.0  # a repeat of the same failures on the same nodes this soon continues an incident
LLM_LEVEL, GENERIC_LEVEL = 2, 4  # lead ranks: neighbour families are 1 (below) or 3 (the application)
NO_NODE = "(no node)"


MAX_BURST_IDS = 64  # fingerprints, req_ids and peers a burst remembers


class BurstLinks:
    """What an incident needs to know of one burst, gathered as its findings stream past (bounded):
    fingerprints, req_ids and peers its lines name, and how many findings of each code and API."""

    __slots__ = ("prints", "req_ids", "peers", "by_code")

    def __init__(self) -> None:
        self.prints: dict[str, None] = {}
        self.req_ids: dict[str, None] = {}
        self.peers: dict[tuple[str | None, str | None], None] = {}
        self.by_code: Counter[tuple[str, str | None]] = Counter()

    def add(self, f: Finding) -> None:
        self.by_code[(f.name or f.code, f.api)] += 1
        if f.fingerprint and len(self.prints) < MAX_BURST_IDS:
            self.prints[f.fingerprint] = None
        if f.link:
            link = dict(f.link)
            if "req_id" in link and len(self.req_ids) < MAX_BURST_IDS:
                self.req_ids[link["req_id"]] = None
            if ("remote_cluster" in link or "remote_addr" in link) and len(self.peers) < MAX_BURST_IDS:
                self.peers[(link.get("remote_cluster"), link.get("remote_addr"))] = None

    def fields(self) -> dict[str, Any]:
        """The `Burst` fields these fill."""
        return {"fingerprints": tuple(sorted(self.prints)), "req_ids": tuple(self.req_ids),
                "peers": tuple(self.peers),
                "counts": tuple(sorted(((name, api, n) for (name, api), n in self.by_code.items()),
                                       key=lambda c: (-c[2], c[0], c[1] or "")))}


def order_time(ts: str | None) -> float:
    """A time to order errors by: a stamp without fractions (vLLM prints whole seconds) may be as
    late as the end of its second, so it never beats a precise stamp from the same second."""
    t = stamp_seconds(ts)
    if t is None:
        return math.inf
    return t + (0.999999 if ts is not None and "." not in ts[10:] else 0.0)


class Links:
    """Which nodes the link facts tie together."""

    def __init__(self, facts: dict[str | None, NodeFacts], bursts: Sequence[Burst]) -> None:
        self.facts = facts
        for node_facts in facts.values():
            node_facts.trim()  # the bounded sets the report shows, whatever the units were
        self.req_ids: dict[str, set[str]] = {}  # node -> req_ids its failures name
        for b in bursts:
            self.req_ids.setdefault(_node(b.node), set()).update(b.req_ids)
        self._cache: dict[tuple[str, str], bool] = {}
        # Per node, what the pairs ask again and again (the sets are as big as the node's facts).
        self._ips: dict[str, set[str]] = {}
        self._clusters: dict[str, set[str]] = {}
        self._remote_by_ip: dict[str, dict[str, set[str | None]]] = {}  # node -> remote ip -> clusters
        self._has_links: dict[str, bool] = {}
        self._roles: dict[str, str | None] = {}
        self._unpaired: dict[str, set[str]] = {}  # node -> remote clusters it names without an address
        self._asked: dict[str, set[str]] = {}  # node -> request ids its logs and its failures name
        self._near: dict[str, tuple[str, ...]] = {}  # node -> `neighbours` (of the universe indexed)
        self._index: _LinkIndex | None = None

    def has_links(self, node: str) -> bool:
        if node not in self._has_links:
            f = self.facts.get(None if node == NO_NODE else node)
            self._has_links[node] = bool(f and f.has_links)
        return self._has_links[node]

    def linked(self, a: str, b: str) -> bool:
        if a == b:
            return True
        key = (a, b) if a < b else (b, a)
        if key not in self._cache:
            self._cache[key] = self._one_way(a, b) or self._one_way(b, a) or (
                not self.has_links(a) and not self.has_links(b))
        return self._cache[key]

    def neighbours(self, node: str, universe: set[str]) -> tuple[str, ...]:
        """Every node of `universe` that `linked` ties to `node` (itself included), sorted. A fleet
        of N nodes has N² pairs: only the nodes that share an address, a cluster or a request id
        with it (either way), and those without links when it has none, can be, so only they are
        asked. `universe` is indexed once, while the same set is passed."""
        if self._index is None or self._index.universe is not universe:
            self._near, self._index = {}, _LinkIndex(self, universe)
        near = self._near.get(node)
        if near is not None:
            return near
        index = self._index
        found = {node} | (index.unlinked if not self.has_links(node) else set())
        if self._facts_of(node) is not None:
            ips, clusters, by_ip, unpaired, asked = self._derived(node)
            fa = self._facts_of(node)
            assert fa is not None
            for ip in by_ip.keys() | fa.remote_ips:  # node -> b: b is reached at an address it names
                found |= index.reached_at.get(ip, set())
            for ip in ips:  # b -> node
                found |= index.naming_ip.get(ip, set())
            # Clusters and request ids tie only nodes of different (or unknown) roles.
            role = self._role(node, fa)
            for values, table in ((unpaired, index.in_cluster), (clusters, index.naming_cluster),
                                  (self.req_ids.get(node, ()), index.asking), (asked, index.failing_on)):
                for value in values:
                    for other_role, nodes in table.get(value, {}).items():
                        if role is None or other_role is None or other_role != role:
                            found |= nodes
        near = self._near[node] = tuple(sorted(b for b in found if b in universe and self.linked(node, b)))
        return near

    def _facts_of(self, node: str) -> NodeFacts | None:
        return self.facts.get(None if node == NO_NODE else node)

    def _derived(self, node: str) -> tuple[set[str], set[str], dict[str, set[str | None]], set[str], set[str]]:
        """What `_one_way` reads of a node with facts, derived once: the addresses it is reached at,
        its clusters, the clusters it links to by address, those it names without one, and the
        request ids its logs and failures name."""
        f = self._facts_of(node)
        assert f is not None
        if node not in self._ips:
            self._ips[node], self._clusters[node] = f.ips, f.cluster_ids
        if node not in self._remote_by_ip:
            by_ip: dict[str, set[str | None]] = {}
            for cluster, addr in f.remote:
                if addr:
                    by_ip.setdefault(addr_ip(addr), set()).add(cluster)
            self._remote_by_ip[node] = by_ip
        if node not in self._unpaired:
            self._unpaired[node] = f.remote_clusters - {c for c, a2 in f.remote if c and a2}
        if node not in self._asked:
            self._asked[node] = f.req_ids | self.req_ids.get(node, set())
        return self._ips[node], self._clusters[node], self._remote_by_ip[node], self._unpaired[node], self._asked[node]

    def _one_way(self, a: str, b: str) -> bool:
        fa, fb = self._facts_of(a), self._facts_of(b)
        if fa is None or fb is None:
            return False
        # What a node's facts give is derived once (`_derived`): a fleet asks ~250,000 pairs.
        ips, clusters, _, _, asked_b = self._derived(b)
        _, _, by_ip, unpaired_a, _ = self._derived(a)
        for ip in (by_ip.keys() & ips) if len(by_ip) < len(ips) else (ips & by_ip.keys()):
            if any(cluster is None or not clusters or cluster in clusters for cluster in by_ip[ip]):
                return True
        if fa.remote_ips & ips:
            return True
        role_a, role_b = self._role(a, fa), self._role(b, fb)
        if not (role_a is None or role_b is None or role_a != role_b):
            return False
        if unpaired_a & clusters:
            return True
        return bool(self.req_ids.get(a, set()) & asked_b)

    def _role(self, node: str, facts: NodeFacts) -> str | None:
        if node not in self._roles:
            self._roles[node] = facts.role
        return self._roles[node]


class _LinkIndex:
    """Per address, cluster and request id, the nodes of a universe that hold it in each of the
    ways `Links._one_way` compares them: what `Links.neighbours` looks up."""

    def __init__(self, links: Links, universe: set[str]) -> None:
        self.universe = universe
        self.unlinked = {n for n in universe if not links.has_links(n)}
        self.reached_at: dict[str, set[str]] = {}  # ip -> nodes reached at it
        self.naming_ip: dict[str, set[str]] = {}  # ip -> nodes that link to it (by address or remote ip)
        # value -> the role of the nodes (None: unknown) -> the nodes
        self.in_cluster: dict[str, dict[str | None, set[str]]] = {}  # cluster -> nodes of it
        self.naming_cluster: dict[str, dict[str | None, set[str]]] = {}  # cluster -> nodes naming it, no address
        self.asking: dict[str, dict[str | None, set[str]]] = {}  # req id -> nodes whose logs or failures name it
        self.failing_on: dict[str, dict[str | None, set[str]]] = {}  # req id -> nodes whose failures name it
        for n in universe:
            f = links._facts_of(n)
            if f is None:
                continue
            ips, clusters, by_ip, unpaired, asked = links._derived(n)
            for values, by_value in ((ips, self.reached_at), (by_ip.keys() | f.remote_ips, self.naming_ip)):
                for value in values:
                    by_value.setdefault(value, set()).add(n)
            role = links._role(n, f)
            for values, by_role in ((clusters, self.in_cluster), (unpaired, self.naming_cluster),
                                    (asked, self.asking), (links.req_ids.get(n, set()), self.failing_on)):
                for value in values:
                    by_role.setdefault(value, {}).setdefault(role, set()).add(n)


@dataclass
class _Group:
    bursts: list[int] = field(default_factory=list)
    related: list[int] = field(default_factory=list)
    t0: float = math.inf
    t1: float = -math.inf

    def nodes(self, bursts: Sequence[Burst], related: Sequence[RelatedEvent]) -> set[str]:
        return {_node(bursts[i].node) for i in self.bursts} | {_node(related[i].node) for i in self.related}


def _node(node: str | None) -> str:
    return node or NO_NODE


def _span(b: Burst) -> tuple[float, float]:
    """When a burst ran; a whole-second stamp (vLLM) covers its whole second."""
    t0, t1 = stamp_seconds(b.first_seen), stamp_seconds(b.last_seen)
    if t1 is not None and b.last_seen and "." not in b.last_seen[19:]:
        t1 += 0.999999
    return (t0 if t0 is not None else math.inf, t1 if t1 is not None else -math.inf)


def group_units(bursts: Sequence[Burst], related: Sequence[RelatedEvent], links: Links) -> list[_Group]:
    """Bursts and related errors of the same or linked nodes close in time, joined (union-find over
    a time sweep): a related error can tie two nodes that both link to its node. Only groups that
    hold a burst are kept; a related error left alone stays a related error."""
    spans = [_span(b) for b in bursts]
    for e in related:
        t = stamp_seconds(e.timestamp)
        spans.append((t, t) if t is not None else (math.inf, -math.inf))
    nodes = [_node(b.node) for b in bursts] + [_node(e.node) for e in related]
    parent = list(range(len(spans)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    timed = sorted((i for i in range(len(spans)) if spans[i][0] != math.inf), key=lambda i: (spans[i][0], i))
    # A unit joins every earlier one, started at most STORM_SECONDS before it, that ended at most
    # GAP_SECONDS before it started, on a linked node. Those of one node are already joined to
    # each other (each joined the one before it), so the one that ended last stands for them all:
    # per node, a sliding-window maximum of the end time (a deque), not a scan of the window.
    # Only the windows of nodes linked to the unit's are looked at (`Links.neighbours`; a window
    # is trimmed when it is looked at, as the times only grow).
    latest: dict[str, deque[int]] = {}
    universe = set(nodes)
    for j in timed:
        start = spans[j][0]
        for node in links.neighbours(nodes[j], universe):
            window = latest.get(node)
            while window and start - spans[window[0]][0] > STORM_SECONDS:
                window.popleft()
            if window and start <= spans[window[0]][1] + GAP_SECONDS:
                parent[find(j)] = find(window[0])
        window = latest.setdefault(nodes[j], deque())
        while window and spans[window[-1]][1] <= spans[j][1]:
            window.pop()
        window.append(j)
    untimed: dict[str, int] = {}
    for i in range(len(bursts)):
        if spans[i][0] == math.inf:  # no time at all: one group per node
            parent[find(i)] = find(untimed.setdefault(nodes[i], i))
    groups: dict[int, _Group] = {}
    for i in range(len(spans)):
        if spans[i][0] == math.inf and i >= len(bursts):
            continue
        g = groups.setdefault(find(i), _Group())
        if i < len(bursts):
            g.bursts.append(i)
        else:
            g.related.append(i - len(bursts))
        g.t0 = min(g.t0, spans[i][0])
        g.t1 = max(g.t1, spans[i][1], spans[i][0])
    kept = [g for g in groups.values() if g.bursts]
    for g in kept:  # the group's time is its findings' time; its related errors only lead
        g.t0 = min(spans[i][0] for i in g.bursts)
        g.t1 = max(max(spans[i]) for i in g.bursts if spans[i][0] != math.inf) if any(
            spans[i][0] != math.inf for i in g.bursts) else -math.inf
    return _continue_storms(sorted(kept, key=lambda g: (g.t0, min(g.bursts))), bursts)


def _continue_storms(groups: list[_Group], bursts: Sequence[Burst]) -> list[_Group]:
    """A later group on an earlier one's nodes continues it when it only repeats its failures (a
    storm), or when, within seconds, the addresses its bursts name are ones the earlier group
    already failed against (the pulls that fail with LLM_NOT_YET_LINK after the link to that peer
    failed)."""
    out: list[_Group] = []
    # Per group kept: its fingerprints, the addresses its bursts name and its nodes, kept up to date
    # as groups join it (recomputing them for every pair made a fleet of many groups quadratic).
    seen: dict[int, tuple[set[str], set[str], set[str]]] = {}
    for g in groups:
        fps = {fp for i in g.bursts for fp in bursts[i].fingerprints}
        nodes = {_node(bursts[i].node) for i in g.bursts}
        addrs = {a for i in g.bursts for _, a in bursts[i].peers if a}
        for h in reversed(out):
            if g.t0 - h.t1 > STORM_SECONDS:
                continue
            h_fps, h_addrs, h_nodes = seen[id(h)]
            same_failure = bool(fps) and fps <= h_fps
            same_peer = bool(addrs) and addrs <= h_addrs and g.t0 - h.t1 <= FOLLOW_SECONDS
            if (same_failure or same_peer) and nodes <= h_nodes:
                h.bursts += g.bursts
                h.related += g.related
                h.t1 = max(h.t1, g.t1)
                h_fps |= fps
                h_addrs |= addrs
                h_nodes |= nodes
                break
        else:
            out.append(g)
            seen[id(g)] = (fps, addrs, nodes)
    return out


def attach_related(groups: list[_Group], bursts: Sequence[Burst], related: Sequence[RelatedEvent],
                   links: Links) -> None:
    """Each timed related error not yet in a group joins the nearest group of its node (or a linked
    node) in time, from LEAD_BEFORE before it to GAP_SECONDS after."""
    taken = {k for g in groups for k in g.related}
    node_sets = [{_node(bursts[i].node) for i in g.bursts} for g in groups]
    # The groups by start, to ask each event only those whose start is within reach: no later than
    # LEAD_BEFORE after it, no earlier than the longest group and GAP_SECONDS before it (a second
    # more each way, so rounding never leaves one out; the exact test is below). An untimed group
    # (t0 = inf) is never in reach.
    timed = sorted((g.t0, gi) for gi, g in enumerate(groups) if math.isfinite(g.t0) and math.isfinite(g.t1))
    starts = [t0 for t0, _ in timed]
    longest = max((groups[gi].t1 - t0 for t0, gi in timed), default=0.0)
    for k, event in enumerate(related):
        t = stamp_seconds(event.timestamp)
        if t is None or k in taken:
            continue
        node, best, best_gap = _node(event.node), None, math.inf
        lo = bisect_left(starts, t - GAP_SECONDS - longest - 1.0)
        hi = bisect_right(starts, t + LEAD_BEFORE + 1.0)
        for gi in sorted(gi for _, gi in timed[lo:hi]):  # in group order: the first of equal gaps wins
            g = groups[gi]
            if not g.t0 - LEAD_BEFORE <= t <= g.t1 + GAP_SECONDS:
                continue
            if not any(links.linked(node, n) for n in node_sets[gi]):
                continue
            gap = 0.0 if g.t0 <= t <= g.t1 else min(abs(t - g.t0), abs(t - g.t1))
            if gap < best_gap:
                best, best_gap = gi, gap
        if best is not None:
            groups[best].related.append(k)


def lead_of(burst_ids: Sequence[int], related_ids: Sequence[int], bursts: Sequence[Burst],
            related: Sequence[RelatedEvent], rules: RuleSet) -> tuple[IncidentLead, str, str]:
    """(lead, its action word, its remedy): lower-level errors up to the first specific failure
    first, then the earliest specific LLM-DataDist code, then application errors and echoes."""
    first_specific = min((order_time(bursts[i].lead.timestamp or bursts[i].first_seen) for i in burst_ids
                          if bursts[i].lead.name != "LLM_FAILED"), default=math.inf)
    candidates: list[tuple[tuple[int, float, str, int], IncidentLead, str, str]] = []
    for k in related_ids:
        e = related[k]
        family = rules.neighbours.family(e.family)
        level = family.level if family else 1
        t = order_time(e.timestamp)
        if level == 1 and t > first_specific + GAP_SECONDS:
            level = 3  # a lower-level error well after the failure is its consequence, not its lead
        action, remedy = family.remedy_for(e.code) if family else ("collect-logs", "")
        lead = IncidentLead(e.source, e.line, e.node, e.family, e.code, e.text, e.timestamp, e.meaning)
        candidates.append(((level, t, e.source, e.line), lead, action, remedy))
    for i in burst_ids:
        b = bursts[i]
        level = GENERIC_LEVEL if b.lead.name == "LLM_FAILED" else LLM_LEVEL
        when = b.lead.timestamp or b.lead.inferred_time
        lead = IncidentLead(b.source, b.lead.line, b.node, "llm-datadist", b.lead.code, b.lead.text, when,
                            b.lead.name or "unknown LLM-DataDist code", b.lead.api)
        candidates.append(((level, order_time(when), b.source, b.lead.line), lead, b.lead.action, b.lead.remedy))
    _, lead, action, remedy = min(candidates, key=lambda c: c[0])
    return lead, action, remedy
