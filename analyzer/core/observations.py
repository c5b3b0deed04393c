"""What a scan observes besides findings, as records: each node's link facts (`NodeFacts`) and the
neighbour-family errors logged on their own (`RelatedEvent`), gathered per work unit in `Observed`.

Layer: core. Bounded by design: link facts are sets of small values per node (at most
`MAX_NODE_FACT_VALUES` each, `MAX_REQ_IDS` request ids), and at most `MAX_RELATED` related errors
are kept (the first in report order, whatever the units; the rest are only counted). The engine
fills them (`detect.observer`); incidents read them (`diagnose`).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    pass

MAX_VALUES = 64  # values kept per set of a node's facts (addresses, clusters, devices, ...): the smallest
MAX_REQ_IDS = 2000  # request ids remembered per node (enough to tie failures across nodes; all in JSON)
KEEP_VALUES = MAX_VALUES + MAX_VALUES // 2  # what a trim on the way keeps (reports keep MAX_VALUES)
KINDS = ("role", "local_cluster", "remote_cluster", "listen", "local_ip", "remote_addr", "remote_ip", "req_id",
         "device", "cann", "driver", "llm_datadist", "hixl", "vllm", "vllm_ascend", "mindie", "xllm")
VERSION_KINDS = ("cann", "driver", "llm_datadist", "hixl", "vllm", "vllm_ascend", "mindie", "xllm")

Fact = tuple[str, str]  # (kind, value)

def addr_ip(addr: str) -> str:
    """The ip of `ip[:port]`."""
    return addr.split(":", 1)[0]

@dataclass
class NodeFacts:
    """What one node's logs say about its side of the links (bounded: sets of small values)."""

    roles: Counter[str] = field(default_factory=Counter)
    clusters: set[tuple[str, str | None, str | None]] = field(default_factory=set)  # (cluster, device, pid)
    local_ips: set[str] = field(default_factory=set)
    listen: set[str] = field(default_factory=set)
    remote: set[tuple[str | None, str | None]] = field(default_factory=set)  # (cluster, addr) it talks to
    remote_clusters: set[str] = field(default_factory=set)
    remote_ips: set[str] = field(default_factory=set)
    req_ids: set[str] = field(default_factory=set)
    devices: set[str] = field(default_factory=set)
    pids: set[str] = field(default_factory=set)
    versions: dict[str, set[str]] = field(default_factory=dict)
    _noted: int = 0  # lines noted (the sets are trimmed now and then)

    def note(self, facts: list[Fact], pid: str | None) -> None:
        """Add the facts of one line (logged by process `pid`)."""
        got = dict(facts)
        if pid:
            self.pids.add(pid)
        for kind, value in facts:
            if kind == "role":
                self.roles[value] += 1
            elif kind == "local_cluster":
                self.clusters.add((value, got.get("device"), pid))
            elif kind == "local_ip":
                self.local_ips.add(value)
            elif kind == "listen":
                self.listen.add(value)
            elif kind == "remote_cluster":
                self.remote_clusters.add(value)
            elif kind == "remote_ip":
                self.remote_ips.add(value)
            elif kind == "req_id":
                self.req_ids.add(value)
            elif kind == "device":
                self.devices.add(value)
            elif kind in VERSION_KINDS:
                self.versions.setdefault(kind, set()).add(value)
        if "remote_addr" in got or ("remote_cluster" in got and ("local_cluster" in got or "local_ip" in got)):
            # A link line: what this node links to (cluster and address when the line names both).
            self.remote.add((got.get("remote_cluster"), got.get("remote_addr")))
        self._noted += 1
        if self._noted % 256 == 0:
            self.trim(KEEP_VALUES)

    def trim(self, limit: int = 0) -> None:
        """Keep at most `limit` (MAX_VALUES by default) values of each set, the smallest, and the
        MAX_REQ_IDS smallest request ids: the same ones whatever the order facts came in and
        whenever a trim ran, so any --jobs, Dask, `merge` or engine agree (and the compiled core
        may gather a stream's facts on its own). A node has a few addresses and peers; a log that
        prints a new one on every line costs no more."""
        limit = limit or MAX_VALUES
        for name in _BOUNDED:
            values = getattr(self, name)
            if len(values) > limit:
                setattr(self, name, set(sorted(values, key=_value_key)[:limit]))
        for kind, values in self.versions.items():
            if len(values) > limit:
                self.versions[kind] = set(sorted(values)[:limit])
        # under a periodic trim (a `limit`) the ids may run half as many again before a sort
        if len(self.req_ids) > (MAX_REQ_IDS if limit == MAX_VALUES else MAX_REQ_IDS + MAX_REQ_IDS // 2):
            self.req_ids = set(sorted(self.req_ids, key=req_id_key)[:MAX_REQ_IDS])

    def merge(self, other: NodeFacts) -> None:
        self.roles.update(other.roles)
        for name in ("clusters", "local_ips", "listen", "remote", "remote_clusters", "remote_ips", "devices", "pids"):
            getattr(self, name).update(getattr(other, name))
        self.req_ids.update(other.req_ids)
        for kind, values in other.versions.items():
            self.versions.setdefault(kind, set()).update(values)
        # Only when a set has grown well past what a trim keeps: merging many small streams'
        # facts (the core hands over each stream's) must not sort the kept values every time.
        if (any(len(getattr(self, name)) > 2 * KEEP_VALUES for name in _BOUNDED) or len(self.req_ids) > 2 * MAX_REQ_IDS
                or any(len(values) > 2 * KEEP_VALUES for values in self.versions.values())):
            self.trim(KEEP_VALUES)

    def cluster_rows(self) -> list[dict[str, str | None]]:
        """Local clusters with device and pid; a row without a device is dropped when another row
        of the same cluster and pid names it."""
        named = {(c, p) for c, d, p in self.clusters if d is not None}
        rows = [(c, d, p) for c, d, p in self.clusters if d is not None or (c, p) not in named]
        return [{"cluster_id": c, "device_id": d, "pid": p}
                for c, d, p in sorted(rows, key=lambda t: tuple(_num_key(x) for x in t))]

    @property
    def role(self) -> str | None:
        """The role the node's logs name most often (Prompt or Decoder), None when none is named."""
        return min(self.roles.items(), key=lambda kv: (-kv[1], kv[0]))[0] if self.roles else None

    @property
    def ips(self) -> set[str]:
        """Addresses this node is reached at."""
        return self.local_ips | {addr_ip(a) for a in self.listen}

    @property
    def cluster_ids(self) -> set[str]:
        return {c for c, _, _ in self.clusters}

    @property
    def has_links(self) -> bool:
        """Whether the logs say anything that can tie this node to another one."""
        return bool(self.clusters or self.ips or self.remote or self.remote_clusters or self.remote_ips)

    def to_dict(self, node: str | None) -> dict[str, Any]:
        self.trim()
        return {
            "node": node,
            "role": self.role,
            "clusters": self.cluster_rows(),
            "local_ips": sorted(self.local_ips),
            "listen": sorted(self.listen),
            "remote": [{"cluster_id": c, "addr": a}
                       for c, a in sorted(self.remote, key=lambda t: (_num_key(t[0]), t[1] or ""))],
            "remote_clusters": sorted(self.remote_clusters, key=_num_key),
            "remote_ips": sorted(self.remote_ips),
            "devices": sorted(self.devices, key=_num_key),
            "req_ids": sorted(self.req_ids, key=req_id_key),
            "versions": {k: sorted(v) for k, v in sorted(self.versions.items())},
        }

    @classmethod
    def from_core(cls, gathered: tuple[Any, ...]) -> NodeFacts:
        """A node's facts as the compiled core gathered them (`Scan.node_facts`: its sets as lists)."""
        roles, clusters, local_ips, listen, remote, remote_clusters, remote_ips, req_ids, devices, pids, versions = (
            gathered)
        return cls(Counter(dict(roles)), set(clusters), set(local_ips), set(listen), set(remote),
                   set(remote_clusters), set(remote_ips), set(req_ids), set(devices), set(pids),
                   {kind: set(values) for kind, values in versions})

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NodeFacts:
        """A node's facts from their JSON shape (`to_dict`), for `ddtriage merge`."""
        facts = cls()
        if d.get("role"):
            facts.roles[d["role"]] += 1
        facts.clusters = {(c["cluster_id"], c.get("device_id"), c.get("pid")) for c in d.get("clusters") or ()}
        facts.local_ips, facts.listen = set(d.get("local_ips") or ()), set(d.get("listen") or ())
        facts.remote = {(r.get("cluster_id"), r.get("addr")) for r in d.get("remote") or ()}
        facts.remote_clusters, facts.remote_ips = set(d.get("remote_clusters") or ()), set(d.get("remote_ips") or ())
        facts.devices, facts.req_ids = set(d.get("devices") or ()), set(d.get("req_ids") or ())
        facts.versions = {k: set(v) for k, v in (d.get("versions") or {}).items()}
        return facts
_BOUNDED = ("clusters", "local_ips", "listen", "remote", "remote_clusters", "remote_ips", "devices", "pids")

def _value_key(value: object) -> tuple[object, ...]:
    """An order on a set's values (strings, or tuples of optional strings) for `NodeFacts.trim`."""
    if isinstance(value, tuple):
        return tuple(_num_key(v) for v in value)
    return _num_key(value if isinstance(value, str) else None)

def _num_key(value: str | None) -> tuple[int, int, str]:
    """Numbers by value, before other text; a total order (ties by the text: `07` after `7`), so
    which values a trim keeps never depends on a set's iteration order."""
    if value is None:
        return (0, 0, "")
    return (1, int(value), value) if value.isdecimal() else (2, 0, value)


def req_id_key(value: str) -> tuple[int, str]:
    """The order request ids are kept and listed in: shortest first, then by text."""
    return (len(value), value)

MAX_RELATED = 5000

class RelatedEvent(NamedTuple):
    """A neighbour-family error on one line."""

    source: str
    line: int
    timestamp: str | None  # its own stamp, else the time of the record before it
    node: str | None
    family: str
    code: str
    meaning: str
    pid: str | None = None
    text: str = ""
    link: tuple[Fact, ...] = ()  # link facts on the same line (req_id, remote address, ...)
    year_guessed: bool = False  # a year-less stamp whose year was only guessed (settled after the scan)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "timestamp": self.timestamp, "node": self.node,
                "family": self.family, "code": self.code, "meaning": self.meaning, "text": self.text,
                "link": dict(self.link)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RelatedEvent:
        """A related error from its JSON shape (`ddtriage merge`)."""
        return cls(d["source"], d["line"], d.get("timestamp"), d.get("node"), d["family"], d["code"],
                   d.get("meaning", ""), text=d.get("text", ""), link=tuple(sorted((d.get("link") or {}).items())))

MAX_PROOFS = 10_000  # proof buckets kept (the latest: a link's last proof decides whether it is healthy)


class Proof(NamedTuple):
    """A line that shows a link healthy again (a proof of `recovery.yaml`)."""

    source: str
    line: int
    timestamp: str | None
    node: str | None
    proof: str  # the proof's id in recovery.yaml
    pid: str | None = None
    clusters: tuple[str, ...] = ()  # remote cluster ids the line (or its process just before) names
    addrs: tuple[str, ...] = ()  # remote ip[:port]
    text: str = ""
    year_guessed: bool = False

    def bucket(self) -> tuple[object, ...]:
        """Proofs of one link, node, process and proof within one second are one bucket; a bucket keeps
        its earliest and its latest (split-free: the same whatever the units), so a storm of
        successful transfers costs two proofs a second. Untimed proofs: one bucket per log."""
        return (self.node, self.proof, self.pid, self.clusters, self.addrs,
                self.timestamp[:19] if self.timestamp else None, None if self.timestamp else self.source)

    def order(self) -> tuple[str, str, int]:
        return (self.timestamp or "", self.source, self.line)

    def sort_key(self) -> tuple[bool, str, str, int]:
        """Time order, untimed last (by source and line)."""
        return (self.timestamp is None, self.timestamp or "", self.source, self.line)

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "line": self.line, "timestamp": self.timestamp, "node": self.node,
                "proof": self.proof, "pid": self.pid, "clusters": list(self.clusters), "addrs": list(self.addrs),
                "text": self.text}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Proof:
        """A proof from its JSON shape (`ddtriage merge`)."""
        return cls(d["source"], d["line"], d.get("timestamp"), d.get("node"), d["proof"], d.get("pid"),
                   tuple(d.get("clusters") or ()), tuple(d.get("addrs") or ()), d.get("text", ""))


@dataclass
class Observed:
    """Link facts per node, related errors and proofs of recovery of one unit of work (or, merged,
    of a run)."""

    nodes: dict[str | None, NodeFacts] = field(default_factory=dict)
    related: list[RelatedEvent] = field(default_factory=list)
    related_dropped: int = 0
    proofs: dict[tuple[object, ...], tuple[Proof, Proof]] = field(default_factory=dict)  # bucket -> (first, last)

    def note_proof(self, proof: Proof) -> None:
        key = proof.bucket()
        had = self.proofs.get(key)
        if had is None:
            self.proofs[key] = (proof, proof)
        else:
            self.proofs[key] = (min(had[0], proof, key=Proof.order), max(had[1], proof, key=Proof.order))
        if len(self.proofs) >= 2 * MAX_PROOFS:
            self._trim_proofs()

    def _trim_proofs(self) -> None:
        if len(self.proofs) > MAX_PROOFS:
            latest = sorted(self.proofs, key=lambda k: self.proofs[k][1].order())[-MAX_PROOFS:]
            self.proofs = {k: self.proofs[k] for k in latest}

    def sorted_proofs(self) -> list[Proof]:
        """Every proof kept, in time order (untimed last, by source and line)."""
        self._trim_proofs()
        kept = {p for pair in self.proofs.values() for p in pair}
        return sorted(kept, key=Proof.sort_key)

    def settle(self) -> dict[str | None, NodeFacts]:
        """Each node's facts as reported: trimmed to what is kept, whenever the last periodic trim ran."""
        for facts in self.nodes.values():
            facts.trim()
        return self.nodes

    def merge_node(self, node: str | None, facts: NodeFacts) -> None:
        """Add a node's facts gathered elsewhere (a unit, a part's report, the compiled core)."""
        if node in self.nodes:
            self.nodes[node].merge(facts)
        else:
            self.nodes[node] = facts

    def note_facts(self, node: str | None, facts: list[Fact], pid: str | None) -> None:
        facts_of = self.nodes.get(node)
        if facts_of is None:
            facts_of = self.nodes[node] = NodeFacts()
        facts_of.note(facts, pid)

    def count_dropped(self, n: int) -> None:
        """`n` related errors past the cap, counted, not kept."""
        self.related_dropped += n

    def note_related(self, event: RelatedEvent) -> None:
        self.related.append(event)
        if len(self.related) >= 2 * MAX_RELATED:
            self._trim()

    def _trim(self) -> None:
        """Keep the MAX_RELATED first in report order (source, line): which ones does not depend on
        how the inputs were cut into units, parts or Dask tasks, so `merge` and `--jobs` agree."""
        if len(self.related) > MAX_RELATED:
            self.related.sort(key=_related_key)
            self.related_dropped += len(self.related) - MAX_RELATED
            del self.related[MAX_RELATED:]

    def add(self, other: Observed) -> None:
        for node, facts in other.nodes.items():
            self.merge_node(node, facts)
        self.related.extend(other.related)
        self.related_dropped += other.related_dropped
        self._trim()
        for pair in other.proofs.values():
            for proof in pair:
                self.note_proof(proof)

    def shift(self, lines: int) -> None:
        """Renumber the lines of a byte range that started `lines` lines into its file."""
        if lines:
            self.related = [e._replace(line=e.line + lines) for e in self.related]
            self.proofs = {k: (a._replace(line=a.line + lines), b._replace(line=b.line + lines))
                           for k, (a, b) in self.proofs.items()}

    def add_report(self, related: list[dict[str, Any]], links: list[dict[str, Any]],
                   proofs: list[dict[str, Any]] | None = None) -> None:
        """Related errors, link facts and proofs from a JSON report's `related`, `links` and `proofs`
        (`ddtriage merge`)."""
        for d in related:
            self.note_related(RelatedEvent.from_dict(d))
        for d in proofs or ():
            self.note_proof(Proof.from_dict(d))
        for d in links:
            self.merge_node(d.get("node"), NodeFacts.from_dict(d))

    def sorted_related(self) -> list[RelatedEvent]:
        self._trim()
        return sorted(self.related, key=_related_key)

    def related_keys(self) -> set[RelatedKey]:
        """The report-order keys of the related errors kept (distinct)."""
        return {_related_key(e) for e in self.related}

    def drop_related_after(self, bound: RelatedKey) -> None:
        """Count, not keep, the related errors ordered after `bound` (`parallel.RelatedCut`)."""
        kept = [e for e in self.related if _related_key(e) <= bound]
        self.related_dropped += len(self.related) - len(kept)
        self.related = kept


RelatedKey = tuple[str, int, str, str]  # a related error's place in report order


def _related_key(e: RelatedEvent) -> RelatedKey:
    return (e.source, e.line, e.family, e.code)
