"""The words of an incident: its action (the lead's remedy and what follows from it) and its story,
one short paragraph that says what happened, in order, naming both sides and the evidence.

Stage: diagnose (wording). `incidents` decides what belongs together; this module tells it
(`build_incidents`).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.observations import NodeFacts, RelatedEvent
from ..core.times import seconds, stamp_seconds
from ..knowledge.messages import action_label, current, language, t
from ..knowledge.rules import RuleSet
from .incidents import GAP_SECONDS, NO_NODE, Links, attach_related, group_units, lead_of, order_time
from .summary import ONGOING, Burst, Incident, IncidentLead

MAX_FOLLOW = 2  # LLM-DataDist remedies named after the lead's


def clock(ts: str | None) -> str:
    """`03:40:01.290` (or `03:40:01` for a whole-second stamp); `?` without a time."""
    if not ts or len(ts) < 19:
        return "?"
    return ts[11:23] if "." in ts[19:] else ts[11:19]


def delta(a: str | None, b: str | None) -> str:
    """How long after `a` came `b`: `90 ms`, `1.5 s`; empty when unknown."""
    ta, tb = seconds(a), seconds(b)
    if ta is None or tb is None or not ("." in (a or "")[19:] and "." in (b or "")[19:]):
        return ""
    d = abs(tb - ta)
    if d < 0.001:
        return t("under_1ms")
    return f"{d * 1000:.0f} ms" if d < 1 else f"{d:.1f} s"


def log_name(source: str) -> str:
    """The file (or archive member) name of a source: `plog-1.log` of `b.tar.gz!x/plog-1.log`."""
    return source.replace("!", "/").rstrip("/").rsplit("/", 1)[-1] or source


def who(node: str | None, source: str, lead_source: str | None = None) -> str:
    """What a sentence calls the side of a failure: its node, else its log (`the log plog-1.log`,
    or `the same log` when the lead's log is that one), never a placeholder."""
    if node:
        return node
    return t("the_same_log") if source == lead_source else t("the_log", name=log_name(source))


def describe_node(node: str | None, facts: dict[str | None, NodeFacts], source: str = "") -> str:
    """`prompt-node-1 (Prompt, cluster 2, 10.1.0.1:26000)`: the node and what names it on the link
    (a log without a node name: `the log plog-1.log`)."""
    name = who(node, source)
    f = facts.get(node)
    if f is None:
        return name
    bits = [f.role] if f.role else []
    clusters = sorted(f.cluster_ids, key=lambda c: (len(c), c))
    if clusters:
        bits.append(t("cluster_one" if len(clusters) == 1 else "cluster_many", ids=_ranges(clusters)))
    if len(f.listen) == 1:
        bits.append(next(iter(f.listen)))
    elif f.ips:
        bits.append(_short_list(sorted(f.ips)))
    return f"{name} ({', '.join(bits)})" if bits else name  # ids and addresses: the same in every language


def _ranges(ids: list[str]) -> str:
    """`15-18` for consecutive numbers, else the first few."""
    if len(ids) > 2 and all(i.isdigit() for i in ids):
        nums = sorted(int(i) for i in ids)
        if nums[-1] - nums[0] == len(nums) - 1:
            return f"{nums[0]}-{nums[-1]}"
    return _short_list(ids)


def _short_list(items: list[str], most: int = 3) -> str:
    shown = t("list_join").join(items[:most])
    return t("list_more", items=shown, n=len(items) - most) if len(items) > most else shown


def _what(lead: IncidentLead) -> str:
    if lead.family == "llm-datadist":
        if lead.api:
            return t("story_got_from", meaning=lead.meaning, api=lead.api)
        return t("story_got", meaning=lead.meaning)
    return t("story_logged", meaning=lead.meaning, family=lead.family, code=lead.code)


def _peer(burst: Burst) -> str:
    for cluster, addr in burst.peers:
        if cluster and addr:
            return t("story_peer_both", cluster=cluster, addr=addr)
    for cluster, addr in burst.peers:
        return t("story_peer_cluster", cluster=cluster) if cluster else t("story_peer_addr", addr=addr)
    return ""


def _follow_ups(burst_ids: Sequence[int], bursts: Sequence[Burst], lead_action: str, after: float) -> list[Burst]:
    """The bursts whose leads carry the LLM-DataDist remedies that follow the lead's (time `after`),
    first seen first."""
    seen, out = {lead_action}, []
    # What cannot recover by itself first (a relink), then in time order.
    for i in sorted(burst_ids, key=lambda i: (bursts[i].lead.recoverable is True,
                                              order_time(bursts[i].lead.timestamp or bursts[i].first_seen),
                                              bursts[i].source)):
        b = bursts[i]
        if (b.lead.name == "LLM_FAILED" or b.lead.action in seen
                or order_time(b.lead.timestamp or b.first_seen) < after):
            continue
        seen.add(b.lead.action)
        out.append(b)
    return out[:MAX_FOLLOW]


def shared_req_ids(burst_ids: Sequence[int], bursts: Sequence[Burst], related_ids: Sequence[int],
                   related: Sequence[RelatedEvent], facts: dict[str | None, NodeFacts]) -> list[str]:
    """req_ids that a failure on one node names and another node of the incident names too."""
    by_node: dict[str | None, set[str]] = {}
    for i in burst_ids:
        by_node.setdefault(bursts[i].node, set()).update(bursts[i].req_ids)
    for k in related_ids:
        by_node.setdefault(related[k].node, set()).update(v for kind, v in related[k].link if kind == "req_id")
    shared = set()
    for node, ids in by_node.items():
        for other in by_node:
            if other != node:
                f = facts.get(other)
                shared |= ids & (by_node[other] | (f.req_ids if f else set()))
    return sorted(shared, key=lambda r: (len(r), r))


def incident_of(burst_ids: Sequence[int], related_ids: Sequence[int], bursts: Sequence[Burst],
                related: Sequence[RelatedEvent], facts: dict[str | None, NodeFacts], rules: RuleSet) -> Incident:
    """One incident (numbered later) from its bursts and related errors."""
    with language(rules.lang):
        return _incident_of(burst_ids, related_ids, bursts, related, facts, rules)


def _incident_of(burst_ids: Sequence[int], related_ids: Sequence[int], bursts: Sequence[Burst],
                 related: Sequence[RelatedEvent], facts: dict[str | None, NodeFacts], rules: RuleSet) -> Incident:
    lead, action_word, remedy = lead_of(burst_ids, related_ids, bursts, related, rules)
    mine = [bursts[i] for i in burst_ids]
    nodes = sorted({b.node or NO_NODE for b in mine} | {related[k].node or NO_NODE for k in related_ids})
    stamps = [t for b in mine for t in (b.first_seen, b.last_seen) if t]
    stamps += [t for t in (related[k].timestamp for k in related_ids) if t]
    follow = _follow_ups(burst_ids, bursts, action_word, order_time(lead.timestamp) - 1e-6)
    action = remedy.strip()
    if follow:
        action += t("story_then", items=t("story_follow_join").join(
            t("story_follow", action=shown_action(b.lead.action), name=b.lead.name or b.lead.code,
              api=t("story_follow_api", api=b.lead.api) if b.lead.api else "", remedy=first_sentence(b.lead.remedy))
            for b in follow))
    findings = sum(b.findings for b in mine)
    story = tell(lead, action_word, mine, findings, facts,
                 shared_req_ids(burst_ids, bursts, related_ids, related, facts))
    return Incident(
        id=0, start=min(stamps, key=order_time) if stamps else None,
        end=max(stamps, key=lambda t: stamp_seconds(t) or 0.0) if stamps else None,
        nodes=tuple(nodes), lead=lead, action=action, story=story, findings=findings,
        fingerprints=tuple(sorted({fp for b in mine for fp in b.fingerprints})), action_word=action_word,
        severe=any(b.severe for b in mine), bursts=tuple(sorted(burst_ids)), related=tuple(sorted(related_ids)))


def first_sentence(text: str) -> str:
    """The first sentence of a remedy, without its full stop."""
    text = text.strip()
    ends = [i for i in (text.find(". "), text.find("。")) if i != -1]
    end = min(ends) if ends else -1
    return (text if end == -1 else text[:end]).rstrip(".。")


def first_set_off(lead: IncidentLead, mine: list[Burst]) -> Burst:
    """The failure the lead set off that tells most: the first one after it that names its peer's
    address, else the first on the other side, else the first one."""
    start = order_time(lead.timestamp) - 1e-6
    ordered = sorted(mine, key=lambda b: (order_time(b.lead.timestamp or b.first_seen), b.source, b.first_line))
    after = [b for b in ordered if b.lead.name != "LLM_FAILED" and not (b.source == lead.source and
             b.lead.line == lead.line) and order_time(b.lead.timestamp or b.first_seen) >= start] or ordered
    soon = [b for b in after if order_time(b.lead.timestamp or b.first_seen) <= start + 2 * GAP_SECONDS]
    for b in soon:
        if any(addr for _, addr in b.peers):
            return b
    return next((b for b in soon if b.node != lead.node), after[0])


def precise_time(burst: Burst, mine: list[Burst]) -> str | None:
    """A burst's time; for a whole-second stamp, the precise stamp of the same code on the same node
    within that second when another log (the plog) has one."""
    when = burst.lead.timestamp or burst.first_seen
    if not when or "." in when[19:]:
        return when
    same = [b.lead.timestamp for b in mine if b.node == burst.node and b.lead.code == burst.lead.code
            and b.lead.timestamp and b.lead.timestamp[:19] == when[:19] and "." in b.lead.timestamp[19:]]
    return min(same) if same else when


def tell(lead: IncidentLead, action_word: str, mine: list[Burst], findings: int,
         facts: dict[str | None, NodeFacts], shared: list[str]) -> str:
    """The story: the lead, the first failure it set off (on the other side when there is one),
    what followed, the req_ids both sides name, and what to do."""
    first = first_set_off(lead, mine)
    side = describe_node(lead.node, facts, lead.source)
    # a lead line without a time starts the story without one (not "At ?")
    parts = [t("story_at", time=clock(lead.timestamp), side=side, what=_what(lead)) if lead.timestamp
             else t("story_untimed", side=side, what=_what(lead))]
    first_when = precise_time(first, mine)
    if not (first.source == lead.source and first.lead.line == lead.line):
        gap = delta(lead.timestamp, first_when)
        if first.node != lead.node or (first.node is None and first.source != lead.source):
            side = describe_node(first.node, facts, first.source)
        else:
            side = who(first.node, first.source, lead.source)
        parts.append(t("story_side_got", when=t("story_later", gap=gap) if gap else t("story_then_at",
                                                                                      time=clock(first_when)),
                       side=side, name=first.lead.name or first.lead.code,
                       api=t("story_api", api=first.lead.api) if first.lead.api else "", peer=_peer(first)))
    rest = findings - 1
    counts: dict[tuple[str, str | None], int] = {}
    for b in mine:
        for name, api, n in b.counts:
            if name != "LLM_FAILED":  # the generic echo says nothing of its own
                counts[(name, api)] = counts.get((name, api), 0) + n
    top = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1] or ""))
    text = t("story_join").join(parts) + t("story_end")
    if rest > 0 and top:
        (name, api), n = top[0]
        sides = sorted({b.node or NO_NODE for b in mine})
        logs = sorted({log_name(b.source) for b in mine if not b.node})
        if sides == [NO_NODE]:
            where = t("story_in_this_log") if logs == [log_name(lead.source)] else t("story_in_logs",
                                                                                     logs=_short_list(logs))
        elif NO_NODE in sides:
            where = t("story_on", names=_short_list([s for s in sides if s != NO_NODE] + logs))
        else:
            where = t("story_on_both") if len(sides) == 2 else t("story_on", names=_short_list(sides))
        text += t("story_all", findings=findings, where=where, name=name,
                  api=t("story_all_api", api=api) if api else "", n=n)
    if shared:
        text += t("story_req", ids=_short_list(shared))
    text += mismatch_sentence(mine, facts)
    return text + t("story_so", action=shown_action(action_word))


def shown_action(action: str) -> str:
    """An action id in prose: the id in English; its words and the id in another language."""
    return action if current() == "en" else f"{action_label(action)}（{action}）"


MISMATCH_KINDS = ("cann", "hixl", "llm_datadist", "driver")  # versions the two sides of a link must share


def version_mismatch(nodes: Sequence[str | None], facts: dict[str | None, NodeFacts],
                     kinds: Sequence[str] = MISMATCH_KINDS) -> tuple[str, list[tuple[str, str]]] | None:
    """(kind, [(node, version)]) when the nodes of an incident each name one version of a kind and
    they differ (the first such kind), else None: the two sides of a link on different releases."""
    for kind in kinds:
        seen = []
        for node in sorted({n for n in nodes if n is not None}):
            versions = facts[node].versions.get(kind) if node in facts else None
            if versions and len(versions) == 1:
                seen.append((node, next(iter(versions))))
        if len({v for _, v in seen}) > 1:
            return kind, seen
    return None


def mismatch_sentence(mine: Sequence[Burst], facts: dict[str | None, NodeFacts]) -> str:
    """` The two sides run different cann versions (a 8.2.RC1, b 8.3.RC1): a likely cause.` or ``."""
    found = version_mismatch([b.node for b in mine], facts)
    if found is None:
        return ""
    kind, seen = found
    return t("story_mismatch", kind=kind, sides=t("list_join").join(
        t("story_mismatch_side", node=node, version=version) for node, version in seen))


def build_incidents(bursts: Sequence[Burst], related: Sequence[RelatedEvent], facts: dict[str | None, NodeFacts],
                    rules: RuleSet) -> tuple[Incident, ...]:
    """The incidents of a run, ongoing first, then most severe first (more nodes, more findings, then
    earlier). `bursts` carry their states (`recovery.mark_bursts`)."""
    if not bursts:
        return ()
    links = Links(facts, bursts)
    groups = group_units(bursts, related, links)
    attach_related(groups, bursts, related, links)
    from .recovery import incident_state  # the state of each incident: its bursts' (set before)

    made = [incident_state(incident_of(g.bursts, g.related, bursts, related, facts, rules), bursts) for g in groups]
    # What is still broken first, then the most severe.
    made.sort(key=lambda inc: (inc.state != ONGOING, -len(inc.nodes), -inc.findings, not inc.severe,
                               order_time(inc.start), inc.lead.source, inc.lead.line))
    return tuple(_renumber(inc, n) for n, inc in enumerate(made, 1))


def _renumber(incident: Incident, n: int) -> Incident:
    from dataclasses import replace

    return replace(incident, id=n)
