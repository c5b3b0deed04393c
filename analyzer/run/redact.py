"""`--redact`: a report that can leave the site. Addresses, host and node names, pod and container
names and ids, user names in home paths, and request ids become pseudonyms (`ip-3`, `node-2`, ...),
the same value the same token in every format and every line.

Layer: run, after the analysis (`redact(analysis)` returns another `Analysis`; every writer then
renders it as it is): pairing, incidents, states and fingerprints were computed on the real
values, so a redacted report says the same. Tokens are numbered in the sorted order of the values
found anywhere in the analysis (one pass over it first), so they do not depend on which format is
written first; with a key (`--redact-key`) each token is a keyed hash of its value instead
(HMAC-SHA256), stable across runs, so two redacted reports can be compared.
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, cast

from ..core.records import Finding
from .analysis import Analysis
from .store import FindingStore

# Also inside names (`pd_comm_10.0.1.11_10.0.2.12`); not a version (`v0.10.1.1`).
IPV4 = r"(?<![\d.v])(?:25[0-5]|2[0-4]\d|1?\d?\d)(?:\.(?:25[0-5]|2[0-4]\d|1?\d?\d)){3}(?!\d|\.\d)"
_H = r"[0-9A-Fa-f]{1,4}"
# Full eight groups, or a compressed form with `::` and a hex group on at least one side (not a
# clock: 03:40:02 has no `::`; not C++ scope: ge::Status has no hex group after it).
IPV6 = (rf"(?<![\w:])(?:(?:{_H}:){{7}}{_H}|(?:{_H}:){{1,6}}:(?:{_H}(?::{_H}){{0,5}})?|::{_H}(?::{_H}){{0,6}})"
        r"(?![\w:])")
_ADDRESS = re.compile(rf"{IPV6}|{IPV4}")
_HOME = re.compile(r"(?<![\w.])(/home/|/Users/|C:\\Users\\)([^/\\\s\"'`:;,)]+)")
_CONTAINER_ID = re.compile(r"\b[0-9a-f]{64}\b")
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
# A kubelet pod folder (`/var/log/pods/NAMESPACE_POD_UID/`): one pod token for all of it; a pod uid alone.
_KUBELET_POD_FOLDER = re.compile(rf"(?<![\w.-])[a-z0-9][a-z0-9-]*_[a-z0-9][a-z0-9.-]*_{_UUID}(?![\w-])")
_POD_UID = re.compile(rf"\b{_UUID}\b")
# kubelet's `/var/log/containers/POD_NAMESPACE_CONTAINER-ID.log`: one pod token for the names.
_CONTAINER_LOG_NAME = re.compile(r"(?<![\w.-])[a-z0-9][-a-z0-9.]*_[a-z0-9][-a-z0-9.]*_[a-z0-9][-a-z0-9]*"
                                 r"(?=-[0-9a-f]{64}\.log)")
# A request id where a line names one: `req_id = X`, `request id: X`, `req = X`; a list after
# `req_id ` (the stories: `req_id 2051, 2063 failed`).
# Each value must look like an id (a digit or a `-` in it): `request failed, req_id = 2051` is not
# the list `failed, req_id` after `request`, which hid the `req_id = 2051` after it.
_REQ_ID = r"(?=[A-Za-z0-9_\-]*[\d\-])[A-Za-z0-9][A-Za-z0-9_\-]*"
_REQ = re.compile(rf"(?i)\b(?:req(?:_id| id)|request[ _]id|request|req)(?:\s*[=:]\s*|\s+)({_REQ_ID}(?:, {_REQ_ID})*)")
TOKEN_KINDS = ("ip", "node", "pod", "container", "user", "req")

# What a match of each pattern cannot do without (cheap scans in C, not the pattern's ~75 ns a
# character): a text without it is left alone.
_IPV4_HINT = re.compile(r"\d\.\d{1,3}\.\d{1,3}\.\d")
_REQ_HINT = re.compile(r"(?i)req")
_HINTS: dict[re.Pattern[str], Callable[[str], object]] = {
    # IPv4: four dotted numbers; IPv6: eight groups (seven colons) or a `::`
    _ADDRESS: lambda t: "::" in t or t.count(":") >= 7 or _IPV4_HINT.search(t),
    _HOME: lambda t: "/home/" in t or "/Users/" in t or "C:\\Users\\" in t,
    _CONTAINER_ID: lambda t: len(t) >= 64,
    _KUBELET_POD_FOLDER: lambda t: t.count("-") >= 4,  # a uuid's four
    _POD_UID: lambda t: t.count("-") >= 4,
    _CONTAINER_LOG_NAME: lambda t: ".log" in t,
    _REQ: _REQ_HINT.search,
}


_PLAIN_TYPES = (bool, int, float)  # what `value` keeps as it is (with None)


def _matches(pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
    """`pattern.finditer(text)`, none where its hint says none can be."""
    return pattern.finditer(text) if _HINTS[pattern](text) else iter(())


def _sub(pattern: re.Pattern[str], repl: Callable[[re.Match[str]], str], text: str) -> str:
    """`pattern.sub(repl, text)`, the text itself where its hint says no match can be."""
    return pattern.sub(repl, text) if _HINTS[pattern](text) else text
# Texts up to this long are remembered once read (a storm's findings repeat their source, node, code,
# API, rule and fingerprint; each text took seven pattern passes, ~0.4 ms a finding), at most
# REMEMBERED of them at a time.
REMEMBERED_TEXT = 256
REMEMBERED = 8192


class Redactor:
    """Pseudonyms for the sensitive values of one report."""

    def __init__(self, key: str | None = None) -> None:
        self.key = key.encode() if key is not None else None
        self.values: dict[str, set[str]] = {k: set() for k in TOKEN_KINDS}
        self.tokens: dict[str, str] = {}  # value -> token, once `freeze()`d
        self._known: re.Pattern[str] | None = None
        self._harvested: set[str] = set()  # short texts already harvested
        self._redacted: dict[str, str] = {}  # short text -> `text` of it, once frozen

    # -- collecting ---------------------------------------------------------------------------
    def note(self, kind: str, value: str | None) -> None:
        if value and value not in ("(no node)",):
            self.values[kind].add(value)

    def harvest(self, text: str) -> None:
        """The addresses, home-folder users, container ids and request ids a text holds."""
        if len(text) <= REMEMBERED_TEXT:
            if text in self._harvested:
                return
            if len(self._harvested) >= REMEMBERED:
                self._harvested.clear()
            self._harvested.add(text)
        for m in _matches(_ADDRESS, text):
            self.note("ip", m.group(0))
        for m in _matches(_HOME, text):
            self.note("user", m.group(2))
        for m in _matches(_CONTAINER_ID, text):
            self.note("container", m.group(0))
        for m in _matches(_KUBELET_POD_FOLDER, text):
            self.note("pod", m.group(0))
        for pattern in (_POD_UID, _CONTAINER_LOG_NAME):
            for m in _matches(pattern, text):
                self.note("pod", m.group(0))
        for m in _matches(_REQ, text):
            for value in m.group(1).split(", "):
                if any(c.isdigit() for c in value) or "-" in value:  # `req = X` in prose must look like an id
                    self.note("req", value)

    def freeze(self) -> None:
        """Number (or hash) every value noted; build the one pattern that finds them in text."""
        self._redacted.clear()  # read with the tokens before these
        taken = set()
        for kind in TOKEN_KINDS:
            for n, value in enumerate(sorted(self.values[kind]), 1):
                if value in self.tokens:
                    continue  # a value of two kinds keeps its first (an ip that is also a node name)
                self.tokens[value] = self._token(kind, value, n)
                taken.add(value)
        # Whole values only, longest first; numeric request ids only where a line names them as one.
        words = sorted((v for v in self.tokens if not (v.isdigit() and v in self.values["req"])), key=len,
                       reverse=True)
        self._known = re.compile("(?<![\\w.-])(?:" + "|".join(map(re.escape, words)) + ")(?![\\w-]|\\.\\d)") \
            if words else None

    def _token(self, kind: str, value: str, n: int) -> str:
        if self.key is None:
            return f"{kind}-{n}"
        return f"{kind}-" + hmac.new(self.key, f"{kind}:{value}".encode(), hashlib.sha256).hexdigest()[:10]

    # -- replacing ----------------------------------------------------------------------------
    def text(self, text: str) -> str:
        """`text` with every sensitive value replaced by its token."""
        if not text or not self.tokens:
            return text
        if len(text) > REMEMBERED_TEXT:
            return self._text(text)
        done = self._redacted.get(text)
        if done is None:
            if len(self._redacted) >= REMEMBERED:
                self._redacted.clear()
            done = self._redacted[text] = self._text(text)
        return done

    def _text(self, text: str) -> str:
        tokens = self.tokens
        text = _sub(_REQ, lambda m: m.group(0)[: m.start(1) - m.start(0)] + ", ".join(
            tokens.get(v, v) for v in m.group(1).split(", ")), text)
        text = _sub(_HOME, lambda m: m.group(1) + tokens.get(m.group(2), m.group(2)), text)
        # These also where a name goes on (`ID-json.log`), which the whole-value pattern leaves.
        for pattern in (_ADDRESS, _CONTAINER_LOG_NAME, _CONTAINER_ID, _POD_UID):
            text = _sub(pattern, lambda m: tokens.get(m.group(0), m.group(0)), text)
        if self._known is not None:
            text = self._known.sub(lambda m: tokens[m.group(0)], text)
        return text

    def value(self, obj: Any) -> Any:
        """Any value of an analysis (records, tuples, dicts, sets) with its strings redacted."""
        if isinstance(obj, str):
            return self.text(obj)
        if obj is None or isinstance(obj, (bool, int, float)):
            return obj
        if isinstance(obj, tuple) and hasattr(obj, "_fields"):  # a NamedTuple record: a finding, its texts here
            value, text = self.value, self.text
            return cast(Any, obj)._make([text(v) if type(v) is str else v if v is None or type(v) in _PLAIN_TYPES
                                         else value(v) for v in obj])
        if isinstance(obj, tuple) and len(obj) == 2 and obj[0] == "req_id" and isinstance(obj[1], str):
            return ("req_id", self.req(obj[1]))  # a link fact: a request id even when it is a bare number
        if isinstance(obj, (tuple, list, set, frozenset)):
            return type(obj)(self.value(v) for v in obj)
        if isinstance(obj, Counter):
            return Counter(obj)
        if isinstance(obj, dict):  # keys are kinds and names of the tool's own (versions, roles)
            return {k: self.value(v) for k, v in obj.items()}
        if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            changes = {f.name: (self.reqs if f.name == "req_ids" else self.value)(getattr(obj, f.name))
                       for f in dataclasses.fields(obj) if f.init}
            return dataclasses.replace(obj, **changes)
        return obj

    def req(self, value: str) -> str:
        """A request id's token (a bare number too: the field says what it is)."""
        return self.tokens.get(value) or self.text(value)

    def reqs(self, values: Any) -> Any:
        """A collection of request ids (`req_ids` of link facts and bursts), each as its token."""
        return type(values)(self.req(v) for v in values) if isinstance(values, (set, frozenset, list, tuple)) \
            else self.value(values)


def collect(red: Redactor, analysis: Analysis) -> None:
    """Note every sensitive value of an analysis: the names its records give, what its texts hold."""
    for f in analysis.findings:
        _note_finding(red, f)
    for node, facts in analysis.links.items():
        red.note("node", node)
        for ip in facts.local_ips:
            red.note("ip", ip)
        for v in facts.req_ids:
            red.note("req", v)
    for e in analysis.related:
        red.note("node", e.node)
        red.harvest(e.text)
        red.harvest(e.source)
        for kind, v in e.link:
            if kind == "req_id":
                red.note("req", v)
    for p in analysis.proofs:
        red.note("node", p.node)
        red.harvest(p.text)
    for b in analysis.summary.bursts:
        red.note("node", b.node)
        for r in b.req_ids:
            red.note("req", r)
    for lines in analysis.context.values():
        for _, t in lines:
            red.harvest(t)
    for inc in analysis.summary.incidents:
        red.harvest(inc.story)
    _collect_unexplained(red, analysis)


def _collect_unexplained(red: Redactor, analysis: Analysis) -> None:
    """`scan --unexplained`: nodes, a source and an example line each."""
    for near in analysis.unexplained:
        for node in near.nodes:
            red.note("node", node)
        red.harvest(near.source)
        red.harvest(near.example)
        red.harvest(near.template)


def _note_finding(red: Redactor, f: Finding) -> None:
    red.note("node", f.node)
    red.note("pod", f.pod)
    red.note("container", f.container)
    red.harvest(f.text)
    red.harvest(f.source)
    for kind, v in f.link:
        if kind == "req_id":
            red.note("req", v)


class RedactedStore(FindingStore):
    """The findings of a store, redacted as they are read (in the store's order)."""

    def __init__(self, inner: FindingStore, red: Redactor) -> None:
        super().__init__()
        self.inner, self.red = inner, red

    def __len__(self) -> int:
        return len(self.inner)

    def __iter__(self) -> Iterator[Finding]:
        value = self.red.value
        return (value(f) for f in self.inner)

    def raw(self) -> Iterator[Finding]:
        return iter(self)

    def stored(self, size: int, spilled: bool = False) -> None:
        """None: a finding is redacted as it is read, never straight from the store's chunks."""
        return None

    def close(self) -> None:
        self.inner.close()


def redact(analysis: Analysis, key: str | None = None, also: Iterable[str] = ()) -> Analysis:
    """The analysis with its sensitive values replaced (`also`: more names to hide, e.g. --node)."""
    red = Redactor(key)
    collect(red, analysis)
    for name in also:
        red.note("node", name)
    red.freeze()
    return dataclasses.replace(
        analysis, findings=RedactedStore(analysis.findings, red), inputs=red.value(analysis.inputs),
        summary=red.value(analysis.summary), known_errors=red.value(analysis.known_errors),
        related=red.value(analysis.related), proofs=red.value(analysis.proofs),
        links={red.text(node) if node else node: red.value(facts) for node, facts in analysis.links.items()},
        context={(red.text(source), line): red.value(lines) for (source, line), lines in analysis.context.items()},
        unexplained=red.value(analysis.unexplained))
