"""Link facts: what a line says about its node's side of a P/D link (role, cluster ids, addresses,
req_ids, device, versions), and what a whole node's logs say, gathered during the scan.

Stage: context (link facts). The spellings are data (`rules/linkfacts.yaml`): per kind, literals
for a cheap pre-test, patterns whose `value` group (or `ip` and `port` groups) is the fact, a map
that normalises printed values, and example lines that `ddtriage rules check` proves. `NodeFacts`
keeps a bounded summary per node: sets of small values and at most `MAX_REQ_IDS` request ids.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from .catalog import read_yaml
from .errors import RuleError

MAX_VALUES = 64  # values kept per set of a node's facts (addresses, clusters, devices, ...): the smallest
MAX_REQ_IDS = 2000  # request ids remembered per node (enough to tie failures across nodes; all in JSON)
KINDS = ("role", "local_cluster", "remote_cluster", "listen", "local_ip", "remote_addr", "remote_ip", "req_id",
         "device", "cann", "vllm", "vllm_ascend", "mindie", "xllm")
VERSION_KINDS = ("cann", "vllm", "vllm_ascend", "mindie", "xllm")

Fact = tuple[str, str]  # (kind, value)


@dataclass(frozen=True, slots=True)
class FactPattern:
    """One kind of fact: its literals, patterns and value map, with its example lines."""

    id: str
    literals: tuple[str, ...]
    patterns: tuple[regex.Pattern[str], ...]
    values: dict[str, str]
    match: tuple[tuple[str, str], ...] = ()  # (line, expected value)
    no_match: tuple[str, ...] = ()
    scan: tuple[str, ...] | None = None  # literals that make a line a scan candidate (None: `literals`)

    def find(self, line: str) -> str | None:
        """The fact on a line (its first spelling that matches), normalised; None without one."""
        for pattern in self.patterns:
            m = pattern.search(line)
            if not m:
                continue
            groups = m.groupdict()
            value = groups.get("value")
            if value is None and groups.get("ip") and groups.get("port"):
                value = f"{groups['ip']}:{groups['port']}"
            if value:
                return self.values.get(value.lower(), value)
        return None


class LinkFactMatcher:
    """Finds every kind of link fact on a line."""

    def __init__(self, kinds: list[FactPattern]) -> None:
        self.kinds = kinds
        self.literals = tuple(dict.fromkeys(lit for k in kinds for lit in k.literals))
        # What the scanner's prefilter looks for: facts printed on every request are not among them.
        self.raw_literals = tuple(dict.fromkeys(
            lit.encode() for k in kinds for lit in (k.literals if k.scan is None else k.scan)))
        every = sorted((lit.encode() for lit in self.literals), key=len, reverse=True)
        self._raw_present = re.compile(b"|".join(map(re.escape, every)))
        self._screen: _Screen | None | bool = False  # built on first use (False: not yet)

    def find(self, line: str, raw: bytes | None = None) -> list[Fact]:
        """[(kind, value)] on one line, in the order of the kinds (`raw`: the line's bytes, when
        the caller has them)."""
        if self._screen is False:
            self._screen = _Screen.build(self.kinds)  # ~0.1 s: not paid by a scan that reads no fact line
        if isinstance(self._screen, _Screen) and line.isascii():
            # the bytes must be the text's own (decoding drops NUL padding and a CR)
            return self._screen.find(line, raw if raw is not None and len(raw) == len(line) else line.encode())
        return self.find_plainly(line)

    def find_plainly(self, line: str) -> list[Fact]:
        """`find` with nothing but the patterns (the reference the screened path must equal)."""
        out = []
        holds = line.__contains__
        for kind in self.kinds:
            # `in` per literal (a C search each) beats one alternation regex over the line.
            if any(map(holds, kind.literals)):
                value = kind.find(line)
                if value is not None:
                    out.append((kind.id, value))
        return out

    def maybe_in(self, raw: bytes) -> bool:
        """Whether undecoded bytes hold any literal (the cheap test before decoding)."""
        return bool(self.literals) and self._raw_present.search(raw) is not None

    def check_examples(self, origin: str = "linkfacts.yaml") -> list[str]:
        """Every failing example line, as `origin: fact kind: reason`."""
        problems = []
        for kind in self.kinds:
            if not kind.match:
                problems.append(f"{origin}: fact {kind.id}: needs at least one `match` example")
            for line, expected in kind.match:
                got = dict(self.find(line)).get(kind.id)
                if got != expected:
                    problems.append(f"{origin}: fact {kind.id}: example should give {expected!r} but gave "
                                    f"{got!r}: {line[:120]!r}")
            for line in kind.no_match:
                got = dict(self.find(line)).get(kind.id)
                if got is not None:
                    problems.append(f"{origin}: fact {kind.id}: example should give nothing but gave {got!r}: "
                                    f"{line[:120]!r}")
        return problems

    @classmethod
    def load(cls, path: Path | None) -> LinkFactMatcher:
        if path is None:
            return cls([])
        data = read_yaml(path)
        if not isinstance(data, dict) or not isinstance(data.get("facts"), list):
            raise RuleError(f"{path}: expected a mapping with a `facts` list")
        return cls([_load_kind(path, i, raw) for i, raw in enumerate(data["facts"])])


def _load_kind(path: Path, index: int, raw: Any) -> FactPattern:
    where = f"{path}: fact {raw.get('id', '#' + str(index + 1)) if isinstance(raw, dict) else '#' + str(index + 1)}"
    if not isinstance(raw, dict) or raw.get("id") not in KINDS:
        raise RuleError(f"{where}: must be a mapping whose `id` is one of {', '.join(KINDS)}")
    unknown = sorted(set(raw) - {"id", "literals", "scan", "patterns", "values", "examples"})
    if unknown:
        raise RuleError(f"{where}: unknown field(s): {', '.join(unknown)}")
    literals = raw.get("literals")
    if not isinstance(literals, list) or not literals or not all(isinstance(x, str) and x for x in literals):
        raise RuleError(f"{where}: `literals` must be a non-empty list of strings")
    patterns = []
    for text in raw.get("patterns") or []:
        try:
            # `regex`, not `re`: it finds a case-free literal prefix (`(?i)\bremote ...`) by
            # searching for it, where `re` tries every position (10x slower on these lines).
            patterns.append(regex.compile(str(text)))
        except regex.error as exc:
            raise RuleError(f"{where}: pattern {text!r}: invalid regular expression: {exc}") from None
    if not patterns:
        raise RuleError(f"{where}: needs at least one pattern")
    values = raw.get("values") or {}
    if not isinstance(values, dict):
        raise RuleError(f"{where}: `values` must map printed values to normal ones")
    examples = raw.get("examples") or {}
    match, no_match = examples.get("match") or [], examples.get("no_match") or []
    if not all(isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m) for m in match):
        raise RuleError(f"{where}: examples.match entries must be [line, expected value]")
    if not all(isinstance(x, str) for x in no_match):
        raise RuleError(f"{where}: examples.no_match must be a list of lines")
    scan = raw.get("scan")
    if scan is not None and not (isinstance(scan, list) and all(isinstance(x, str) and x for x in scan)):
        raise RuleError(f"{where}: `scan` must be a list of strings (may be empty)")
    return FactPattern(raw["id"], tuple(literals), tuple(patterns),
                       {str(k).lower(): str(v) for k, v in values.items()},
                       tuple((m[0], m[1]) for m in match), tuple(no_match), None if scan is None else tuple(scan))


class _Screen:
    """One hyperscan pass over a line tells which kinds' literals and which patterns are on it,
    so that only patterns known to match are run in Python (5 to 10 times fewer searches on a
    busy connector log's lines). For ASCII lines only: there, a pattern matches under hyperscan
    exactly when it matches under `regex` (a test holds this on every corpus line)."""

    def __init__(self, db: Any, kinds: list[FactPattern], literal_ids: list[frozenset[int]],
                 pattern_ids: list[tuple[int | None, ...]]) -> None:
        self.db, self.kinds, self.pattern_ids = db, kinds, pattern_ids
        self.kind_of = {i: k for k, ids in enumerate(literal_ids) for i in ids}  # literal id -> kind

    @classmethod
    def build(cls, kinds: list[FactPattern]) -> _Screen | None:
        try:
            import hyperscan
        except ImportError:  # pragma: no cover - depends on the platform
            return None
        expressions: list[bytes] = []
        literal_ids, pattern_ids = [], []
        for kind in kinds:
            ids = set()
            for lit in kind.literals:
                ids.add(len(expressions))
                expressions.append(b"".join(b"\\x%02x" % b for b in lit.encode()))
            literal_ids.append(frozenset(ids))
            pids: list[int | None] = []
            for pattern in kind.patterns:
                translated = regex.sub(r"\(\?P<\w+>", "(", pattern.pattern).encode()
                if _compiles(hyperscan, translated):
                    pids.append(len(expressions))
                    expressions.append(translated)
                else:
                    pids.append(None)  # always run in Python
            pattern_ids.append(tuple(pids))
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=expressions, ids=list(range(len(expressions))),
                   flags=[hyperscan.HS_FLAG_SINGLEMATCH | hyperscan.HS_FLAG_ALLOWEMPTY] * len(expressions))
        return cls(db, kinds, literal_ids, pattern_ids)

    def find(self, line: str, raw: bytes) -> list[Fact]:
        found: set[int] = set()
        self.db.scan(raw, match_event_handler=lambda i, _f, _t, _fl, _c: found.add(i))
        out = []
        for k in sorted({self.kind_of[i] for i in found if i in self.kind_of}):  # kinds whose literal is there
            kind = self.kinds[k]
            for pattern, pid in zip(kind.patterns, self.pattern_ids[k], strict=True):
                if pid is not None and pid not in found:
                    continue
                m = pattern.search(line)
                value = _value_of(m.groupdict()) if m else None
                if value:
                    out.append((kind.id, kind.values.get(value.lower(), value)))
                    break
        return out


def _compiles(hyperscan: Any, expression: bytes) -> bool:
    try:
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=[expression], ids=[0], flags=[hyperscan.HS_FLAG_SINGLEMATCH])
    except Exception:  # noqa: BLE001 - hyperscan's own error: a construct it lacks
        return False
    return True


def _value_of(groups: dict[str, str | None]) -> str | None:
    """A match's fact as `FactPattern.find` takes it: `value`, else `ip:port`."""
    value, ip, port = groups.get("value"), groups.get("ip"), groups.get("port")
    if value is None and ip and port:
        return f"{ip}:{port}"
    return value


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
            elif kind == "req_id" and len(self.req_ids) < MAX_REQ_IDS:
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
            self.trim(MAX_VALUES + MAX_VALUES // 2)

    def trim(self, limit: int = 0) -> None:
        """Keep at most `limit` (MAX_VALUES by default) values of each set, the smallest: the same
        ones whatever the order facts came in, so any --jobs, Dask or `merge` agree. A node has a
        few addresses and peers; a log that prints a new one on every line costs no more."""
        limit = limit or MAX_VALUES
        for name in _BOUNDED:
            values = getattr(self, name)
            if len(values) > limit:
                setattr(self, name, set(sorted(values, key=_value_key)[:limit]))
        for kind, values in self.versions.items():
            if len(values) > limit:
                self.versions[kind] = set(sorted(values)[:limit])

    def merge(self, other: NodeFacts) -> None:
        self.roles.update(other.roles)
        for name in ("clusters", "local_ips", "listen", "remote", "remote_clusters", "remote_ips", "devices", "pids"):
            getattr(self, name).update(getattr(other, name))
        room = MAX_REQ_IDS - len(self.req_ids)
        if room > 0:
            self.req_ids.update(sorted(other.req_ids - self.req_ids)[:room])
        for kind, values in other.versions.items():
            self.versions.setdefault(kind, set()).update(values)
        self.trim(MAX_VALUES + MAX_VALUES // 2)

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
            "req_ids": sorted(self.req_ids, key=lambda r: (len(r), r)),
            "versions": {k: sorted(v) for k, v in sorted(self.versions.items())},
        }

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
    if value is None:
        return (0, 0, "")
    return (1, int(value), "") if value.isdigit() else (2, 0, value)
