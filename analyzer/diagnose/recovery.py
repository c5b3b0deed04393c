"""Recovered or ongoing: which bursts (and so which incidents) a later line shows healthy again.

Stage: diagnose, after the tally and before the incidents are told. A burst is `recovered` when a
proof of `recovery.yaml` (noted by the scan, `core.observations.Proof`) that heals the kind of its
lead's failure (link, transfer, timeout) came after its last finding, on the same node and the same
link: a remote cluster id or address the burst named (ip:port, or the ip when one side prints no
port); a burst that names no peer needs a proof of its own process. Everything else is `ongoing`:
nothing shows it healthy again. The recovery is the first such proof; its `seconds` run from the
burst's first finding.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Sequence
from dataclasses import replace

from ..core.observations import Proof, addr_ip
from ..core.times import seconds
from ..knowledge.recovery import RecoveryTable
from .incidents import order_time
from .summary import ONGOING, RECOVERED, Burst, Incident, Recovery


def mark_bursts(bursts: Sequence[Burst], proofs: Iterable[Proof], table: RecoveryTable) -> tuple[Burst, ...]:
    """The bursts, each with its state (and its recovery, when it recovered)."""
    timed: dict[str | None, list[tuple[float, Proof]]] = {}
    untimed: dict[str, list[Proof]] = {}
    for p in proofs:
        t = seconds(p.timestamp)
        if t is None:
            untimed.setdefault(p.source, []).append(p)
        else:
            timed.setdefault(p.node, []).append((t, p))
    for items in timed.values():
        items.sort(key=lambda tp: (tp[0], tp[1].source, tp[1].line))
    return tuple(_marked(b, table, timed, untimed) for b in bursts)


def _marked(b: Burst, table: RecoveryTable, timed: dict[str | None, list[tuple[float, Proof]]],
            untimed: dict[str, list[Proof]]) -> Burst:
    kinds = table.kinds_of(b.lead.code, b.lead.api)
    if not kinds:
        return b
    heals = {p.id: p.heals for p in table.proofs}

    def fits(p: Proof) -> bool:
        return bool(heals.get(p.proof, frozenset()) & kinds) and same_link(p, b)

    found: Proof | None = None
    end = order_time(b.last_seen)
    if end != math.inf:  # the first fitting proof strictly after the burst's last finding
        items = timed.get(b.node, [])
        for _, p in items[bisect.bisect_right([t for t, _ in items], end):]:
            if fits(p):
                found = p
                break
    if found is None:  # without times: a later line of the same log
        found = next((p for p in sorted(untimed.get(b.source, []), key=lambda p: p.line)
                      if p.line > b.last_line and fits(p)), None)
        if found is None and end == math.inf:
            found = next((p for _, p in timed.get(b.node, []) if p.source == b.source and p.line > b.last_line
                          and fits(p)), None)
    if found is None:
        return b
    start, at = seconds(b.first_seen), seconds(found.timestamp)
    took = at - start if start is not None and at is not None else None
    return replace(b, state=RECOVERED, recovery=Recovery(found.source, found.line, found.timestamp, found.node,
                                                         found.proof, found.text, took))


def same_link(p: Proof, b: Burst) -> bool:
    """Whether a proof names the link a burst failed on."""
    clusters = {c for c, _ in b.peers if c}
    addrs = {a for _, a in b.peers if a}
    if not clusters and not addrs:  # a peerless failure: its own process must prove it
        return b.pid is None or p.pid == b.pid
    if clusters & set(p.clusters):
        return True
    return any(a == x or ((":" not in a or ":" not in x) and addr_ip(a) == addr_ip(x)) for a in p.addrs for x in addrs)


def incident_state(incident: Incident, bursts: Sequence[Burst]) -> Incident:
    """An incident is recovered when all its bursts are; its recovery is the last of theirs."""
    mine = [bursts[i] for i in incident.bursts]
    if not mine or any(b.state != RECOVERED or b.recovery is None for b in mine):
        return replace(incident, state=ONGOING)
    last = max((b.recovery for b in mine if b.recovery), key=lambda r: (order_time(r.timestamp), r.source, r.line))
    start, at = seconds(incident.start), seconds(last.timestamp)
    return replace(incident, state=RECOVERED,
                   recovery=replace(last, seconds=at - start if start is not None and at is not None else None))


def recovered_after(recovery: Recovery) -> str:
    """`2.1 s`, `90 ms`, `3 min 5 s`: the time to recover, for the reports ("" untimed)."""
    if recovery.seconds is None:
        return ""
    s = max(recovery.seconds, 0.0)
    if s < 1:
        return f"{s * 1000:.0f} ms"
    if s < 60:
        return f"{s:.1f} s"
    return f"{int(s // 60)} min {int(s % 60)} s"
