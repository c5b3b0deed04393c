"""Unknown errors mined into templates: a streaming Drain-like clusterer of our own.

Stage: diagnose (mining). The ERROR and WARNING lines that no code, family or rule explains are
masked (times, ids, addresses, paths, hex, numbers: `detect.fingerprint.MASKS` plus paths and
mixed ids), split into tokens and clustered one at a time in a fixed-depth prefix tree (He et al.,
"Drain", ICWS 2017): lines of one length, whose first tokens agree, join the template they are
most similar to when at least `similarity` of their tokens are equal; the tokens that differ
become `<*>`. Memory is bounded by `max_templates`: past it the least seen template is dropped.

    >>> m = Miner()
    >>> _ = m.add("ra_socket_send: send to peer 10.0.0.1 failed, ret 5")
    >>> m.add("ra_socket_send: send to peer 10.0.0.2 failed, ret 7").text
    'ra_socket_send: send to peer <IP> failed, ret <N>'

Templates are ranked by count, spread over nodes and closeness in time to the incidents.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from ..detect.fingerprint import MASKS

WILD = "<*>"
# Masks of mining only (the fingerprint's stay as they are: fingerprints are stable ids). Paths
# before the fingerprint's masks, so the digits in them do not make a path several tokens.
MINING_MASKS: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p), r) for p, r in (
    # absolute and relative file paths with at least two parts: /usr/local/Ascend/cann-9.1.0/lib64/x.so
    (r"(?<![\w<])(?:~|\.{1,2})?/(?:[\w.+-]{1,128}/){1,32}[\w.+-]{0,128}", "<PATH>"),
    (r"(?<![\w<])[\w.-]{1,64}(?:/[\w.-]{1,64}){2,32}", "<PATH>"),
))
_LEVEL = re.compile(r"\b(ERR[O0]R|WARNING|WARN|CRITICAL|FATAL)\b")
_GLOG_LEVEL = re.compile(r"[ \t]*[EWF]\d{4}(?:\d{4})? \d\d:\d\d:\d\d")


def level_of(line: str, msg_start: int) -> str | None:
    """ERROR or WARNING when the line's header (the text before `msg_start`, or its first 64
    characters when no header was told) says so; None for INFO, DEBUG and the rest."""
    head = line[:msg_start] if msg_start > 0 else line[:64]
    m = _LEVEL.search(head)
    if m:
        return "WARNING" if m.group(1).startswith("WARN") else "ERROR"
    if _GLOG_LEVEL.match(line):
        return "WARNING" if line.lstrip()[0] == "W" else "ERROR"
    return None


# Every mask decides by character class (a digit, a hex digit, a word character), apart from the
# literal 0 of `0x`: two messages equal once `0x` is marked and every digit is 1 have one masked text
# (the same reasoning, and key, as detect.fingerprint's memo). Remembered up to MASK_MEMO_SIZE.
_ONES = str.maketrans("0123456789", "1111111111")
_MASK_MEMO: dict[str, str] = {}
MASK_MEMO_SIZE = 20000


def mask_text(text: str) -> str:
    """The line with paths, times, ids, addresses, hex and numbers masked."""
    key = text.replace("0x", "\x00x").replace("0X", "\x00X").translate(_ONES)
    found = _MASK_MEMO.get(key)
    if found is None:
        if len(_MASK_MEMO) >= MASK_MEMO_SIZE:
            _MASK_MEMO.clear()
        found = _MASK_MEMO[key] = masked(text)
    return found


def masked(text: str) -> str:
    """`mask_text`, computed (what it remembers)."""
    for pattern, replacement in MINING_MASKS:
        text = pattern.sub(replacement, text)
    for pattern, replacement in MASKS:
        text = pattern.sub(replacement, text)
    return text


def tokens_of(text: str, limit: int = 64) -> list[str]:
    """The masked tokens of a message (split at white space; at most `limit`)."""
    return mask_text(text).split()[:limit]


def _route(token: str) -> str:
    # Drain: a token with a digit or a mask routes as a wildcard (ids must not split the tree).
    return WILD if token == WILD or "<" in token or any(c.isdigit() for c in token) else token


@dataclass(slots=True)
class Template:
    """One mined template and what was seen of it (bounded: a few examples, a few nodes)."""

    id: int
    tokens: list[str]
    count: int = 0
    nodes: set[str] = field(default_factory=set)
    first: float | None = None  # seconds since the epoch
    last: float | None = None
    nearest: float | None = None  # seconds to the nearest incident (None: no time, or none)
    examples: list[str] = field(default_factory=list)
    sources: list[tuple[str, int]] = field(default_factory=list)  # (file, line) of the examples
    level: str = "ERROR"
    per_incident: dict[int, int] = field(default_factory=dict)  # incident id -> lines near it
    route: tuple[object, ...] = ()  # its place in the prefix tree (length, then the routing tokens)
    seen: int = 0  # the number of the last line it took

    @property
    def text(self) -> str:
        return " ".join(self.tokens)

    def score(self) -> float:
        """count x spread x closeness: a template on many nodes, near an incident, ranks first."""
        spread = 1 + math.log2(max(1, len(self.nodes)))
        # 3x at the incident, 2x a minute away, ~1x far from any (or no time known)
        near = 1.0 if self.nearest is None else 1 + 2 / (1 + self.nearest / 60)
        return math.log2(1 + self.count) * spread * near


NODES_KEPT = 64
EXAMPLES_KEPT = 3


class Miner:
    """The clusterer. `add` one message at a time; `templates()` ranks what it holds."""

    def __init__(self, depth: int = 4, similarity: float = 0.5, max_children: int = 100,
                 max_templates: int = 1000, incidents: Sequence[tuple[float, float]] = ()) -> None:
        self.depth = max(3, depth)
        self.similarity = similarity
        self.max_children = max_children
        self.max_templates = max_templates
        self.incidents = sorted(incidents)  # (start, end) seconds of each incident
        self._tree: dict = {}  # length -> routing token -> ... -> None -> list of templates
        self._by_id: dict[int, Template] = {}
        self._next = 1
        self.lines = 0
        self.dropped = 0  # templates evicted by the cap

    def add(self, message: str, node: str | None = None, when: float | None = None,
            example: str | None = None, source: tuple[str, int] | None = None, level: str = "ERROR",
            incident: int | None = None) -> Template:
        """Cluster one message (logged near `incident`, if given); return its template."""
        self.lines += 1
        tokens = tokens_of(message)
        if not tokens:
            tokens = [WILD]
        leaf, route = self._leaf(tokens)
        found = self._best(leaf, tokens)
        if found is None:
            found = Template(self._next, list(tokens), level=level, route=route)
            self._next += 1
            leaf.append(found)
            self._by_id[found.id] = found
            if len(self._by_id) > self.max_templates:
                self._evict(found)
        else:
            for i, (a, b) in enumerate(zip(found.tokens, tokens, strict=True)):
                if a != b:
                    found.tokens[i] = WILD
        self._seen(found, node, when, example if example is not None else message, source, level)
        if incident is not None:
            found.per_incident[incident] = found.per_incident.get(incident, 0) + 1
        return found

    def _leaf(self, tokens: list[str]) -> tuple[list[Template], tuple[object, ...]]:
        """The leaf of the tree a line goes to, and its route from the root."""
        route: list[object] = [len(tokens)]
        node: dict = self._tree.setdefault(len(tokens), {})
        for token in tokens[:self.depth - 2]:
            key = _route(token)
            if key not in node:
                key = key if len(node) < self.max_children else WILD  # a full node sends the rest to <*>
            route.append(key)
            node = node.setdefault(key, {})
        leaf: list[Template] = node.setdefault(None, [])
        return leaf, tuple(route)

    def _best(self, leaf: list[Template], tokens: list[str]) -> Template | None:
        best, best_key = None, (-1.0, -1)
        for t in leaf:
            same = wild = 0
            for a, b in zip(t.tokens, tokens, strict=True):
                if a == WILD:
                    wild += 1
                elif a == b:
                    same += 1
            sim = same / len(tokens)
            if (sim, wild) > best_key:
                best, best_key = t, (sim, wild)
        return best if best is not None and best_key[0] >= self.similarity else None

    def _seen(self, t: Template, node: str | None, when: float | None, example: str,
              source: tuple[str, int] | None, level: str) -> None:
        t.count += 1
        t.seen = self.lines
        if level == "ERROR":
            t.level = "ERROR"
        if node and len(t.nodes) < NODES_KEPT:
            t.nodes.add(node)
        if when is not None:
            t.first = when if t.first is None else min(t.first, when)
            t.last = when if t.last is None else max(t.last, when)
            gap = self._gap(when)
            if gap is not None and (t.nearest is None or gap < t.nearest):
                t.nearest = gap
        if len(t.examples) < EXAMPLES_KEPT and example not in t.examples:
            t.examples.append(example)
            if source is not None:
                t.sources.append(source)

    def _gap(self, when: float) -> float | None:
        if not self.incidents:
            return None
        return min(0.0 if s <= when <= e else min(abs(when - s), abs(when - e)) for s, e in self.incidents)

    def _evict(self, keep: Template) -> None:
        """Drop the least seen template (of those, the one seen longest ago: a new template gets as
        many new lines' time to repeat as the cap holds), and the tree branch only it used."""
        victim = min((t for t in self._by_id.values() if t is not keep), key=lambda t: (t.count, t.seen))
        del self._by_id[victim.id]
        self.dropped += 1
        nodes: list[dict] = [self._tree]
        for key in victim.route:
            nodes.append(nodes[-1][key])
        leaf: list[Template] = nodes[-1][None]
        leaf.remove(victim)
        if not leaf:
            del nodes[-1][None]
        for parent, key, child in zip(reversed(nodes[:-1]), reversed(victim.route), reversed(nodes[1:]), strict=True):
            if child:
                break
            del parent[key]

    def templates(self) -> list[Template]:
        """Every template held, best first (score, then count, then text: deterministic)."""
        return sorted(self._by_id.values(), key=lambda t: (-t.score(), -t.count, t.text, t.id))

    def groups(self, messages: Iterable[str]) -> list[int]:
        """The template id of each message, after all of them are clustered (for grouping
        accuracy: a line belongs to the template it ends up in)."""
        ids = [self.add(m).id for m in messages]
        return ids


@dataclass(frozen=True, slots=True)
class NearIncident:
    """One unexplained template logged near an incident (what `scan --unexplained` lists)."""

    incident: int
    template: str
    count: int  # its lines near this incident
    nodes: tuple[str, ...]
    source: str  # where its first example is
    line: int
    example: str

    def to_dict(self) -> dict[str, object]:
        return {"incident": self.incident, "template": self.template, "count": self.count,
                "nodes": list(self.nodes), "source": self.source, "line": self.line, "example": self.example}


def near_incidents(miner: Miner, per_incident: int = 3) -> list[NearIncident]:
    """The top `per_incident` templates of each incident (by its lines near it, then overall
    rank), incident by incident."""
    rank = {t.id: i for i, t in enumerate(miner.templates())}
    by_incident: dict[int, list[Template]] = {}
    for t in miner.templates():
        for inc in t.per_incident:
            by_incident.setdefault(inc, []).append(t)
    out = []
    for inc in sorted(by_incident):
        ranked = sorted(by_incident[inc], key=lambda t: (-t.per_incident[inc], rank[t.id]))
        for t in ranked[:per_incident]:
            source, line = t.sources[0] if t.sources else ("", 0)
            out.append(NearIncident(inc, t.text, t.per_incident[inc], tuple(sorted(t.nodes)), source, line,
                                    t.examples[0] if t.examples else ""))
    return out


def grouping_accuracy(truth: Sequence[str], predicted: Sequence[object]) -> float:
    """loghub-2.0's GA: the share of lines whose predicted group holds exactly the lines of
    their true group."""
    if len(truth) != len(predicted):
        raise ValueError("truth and predicted differ in length")
    by_truth: dict[str, set[int]] = {}
    by_pred: dict[object, set[int]] = {}
    for i, (t, p) in enumerate(zip(truth, predicted, strict=True)):
        by_truth.setdefault(t, set()).add(i)
        by_pred.setdefault(p, set()).add(i)
    right = sum(len(lines) for lines in by_pred.values()
                if by_truth[truth[next(iter(lines))]] == lines)
    return right / len(truth) if truth else 1.0
