"""Incidents across nodes, through the real CLI: the fleet corpus and its hand-written keys
(tests/data/fleets/), sample_logs/, and fleets generated here for the rules one by one.

The pulls that fail after a link failed belong to the link's incident (review D23) (folded from test_incident_storm_follows.py, issue #10 (a storm that follows an incident)).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from analyzer import analyze
from analyzer.cli import cli
from click.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]

FLEETS = ROOT / "tests" / "data" / "fleets"
NOT_LOGS = ["--exclude", "expected.yaml", "--exclude", "README.md"]


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def scan_json(path: Path | str, *extra: str) -> dict:
    code, out, _ = run("scan", str(path), "--format", "json", "--quiet", "--jobs", "1", *NOT_LOGS, *extra)
    assert code in (0, 1)
    return json.loads(out)


def key(name: str) -> dict:
    return yaml.safe_load((FLEETS / name / "expected.yaml").read_text(encoding="utf-8"))


def rel(source: str, fleet: str) -> str:
    return source.split(f"fleets/{fleet}/", 1)[1]


# -- the OOM fleet: two unrelated incidents at the same moment ---------------------------------

@pytest.fixture(scope="module")
def oom() -> dict:
    return scan_json(FLEETS / "oom-fleet")


def test_oom_fleet_gives_the_two_incidents_of_the_key(oom):
    expected = key("oom-fleet")["incidents"]
    got = oom["summary"]["incidents"]
    assert len(got) == len(expected) == 2
    for inc, want in zip(got, expected, strict=True):
        assert inc["id"] == want["id"]
        assert inc["nodes"] == want["nodes"]
        lead = inc["lead"]
        assert (rel(lead["source"], "oom-fleet"), lead["line"], lead["family"], lead["code"]) == \
            (want["lead"]["file"], want["lead"]["line"], want["lead"]["family"], want["lead"]["code"])
        assert lead["node"] == want["lead"]["file"].split("/")[0]
        # Every LLM-DataDist line the key puts in this incident is one of its findings, and no other.
        assert inc["findings"] == sum(1 for r in want["related"] if r["family"] == "llm-datadist")
        assert list(inc) == ["id", "start", "end", "nodes", "lead", "action", "story", "findings", "fingerprints",
                             "state", "recovery"]
        assert list(lead) == ["source", "line", "node", "family", "code", "text"]
        assert inc["fingerprints"] == sorted(set(inc["fingerprints"]))
        assert inc["start"] <= want["lead"]["time"] <= inc["end"]


def test_oom_fleet_story_and_action_name_both_sides(oom):
    first = oom["summary"]["incidents"][0]
    story = first["story"]
    assert "prompt-node-1" in story and "decode-node-2" in story
    assert "out of memory" in story and "207001" in story and "LLM_LINK_FAILED" in story
    assert "10.1.0.1:26000" in story
    assert first["action"].startswith("The device ran out of HBM")
    second = oom["summary"]["incidents"][1]
    assert "connection reset" in second["story"] and "LLM_WAIT_PROC_TIMEOUT" in second["story"]


def test_oom_fleet_text_report_tells_the_story_on_the_first_screen():
    code, out, _ = run("scan", str(FLEETS / "oom-fleet"), "--quiet", *NOT_LOGS)
    assert code == 1
    head = "\n".join(out.splitlines()[:25])
    assert "prompt-node-1" in head and "decode-node-2" in head and "out of memory" in head
    assert "Incidents: 2" in head


def test_oom_fleet_related_errors_are_listed_with_their_family(oom):
    related = {(rel(e["source"], "oom-fleet"), e["line"], e["family"], e["code"]) for e in oom["related"]}
    for entry in key("oom-fleet")["incidents"][0]["related"] + key("oom-fleet")["incidents"][1]["related"]:
        if entry["family"] != "llm-datadist":
            assert (entry["file"], entry["line"], entry["family"], entry["code"]) in related
    assert list(oom["related"][0]) == ["source", "line", "timestamp", "node", "family", "code", "meaning", "text",
                                       "link"]
    assert "ErrCode=207001" in oom["related"][0]["text"] or oom["related"][0]["family"] != "runtime"
    negatives = {(n["file"], n["line"]) for n in key("oom-fleet")["negatives"]}
    assert not {(f, n) for f, n, _, _ in related} & negatives


def test_oom_fleet_link_facts_match_the_key(oom):
    links = {entry["node"]: entry for entry in oom["links"]}
    for node, want in key("oom-fleet")["link_facts"].items():
        got = links[node]
        assert got["role"] == want["role"]
        assert [(c["cluster_id"], c["device_id"], c["pid"]) for c in got["clusters"]] == \
            [(str(c["cluster_id"]), str(c["device_id"]), str(c["pid"])) for c in want["clusters"]]
        assert want["local_ip"] in got["local_ips"] + [a.split(":")[0] for a in got["listen"]]
        assert got["listen"] == want.get("listen", [])
        for remote in want.get("remote", []):
            assert {"cluster_id": str(remote["cluster_id"]), "addr": remote["addr"]} in got["remote"]
        assert got["remote_clusters"] == [str(c) for c in want.get("remote_clusters", [])] or "remote" in want
        assert set(want.get("remote_ips", [])) <= set(got["remote_ips"])
        assert got["versions"]["cann"] == [want["cann"]]
        assert got["versions"].get("vllm", [None]) == [want["vllm"]]
        assert got["versions"].get("vllm_ascend", [None]) == [want["vllm_ascend"]]


def test_findings_carry_their_link_facts(oom):
    by_place = {(rel(f["source"], "oom-fleet"), f["line"]): f for f in oom["findings"]}
    pull = by_place[("decode-node-2/ascend/log/debug/plog/plog-5566_20251112033955004.log", 4)]
    assert pull["link"]["req_id"] == "1043" and pull["link"]["remote_cluster"] == "2"
    per_cluster = by_place[("decode-node-2/vllm_decode.log", 12)]
    assert per_cluster["link"]["remote_addr"] == "10.1.0.1:26000"  # from the link_clusters line before it


# -- HIXL, runtime and MindIE errors only -------------------------------------------------------

def test_hixl_only_node_shows_its_errors_and_no_incident():
    report = scan_json(FLEETS / "hixl-only")
    want = key("hixl-only")
    assert report["findings"] == want["findings"] == []
    assert report["summary"]["incidents"] == want["incidents"] == []
    got = [(rel(e["source"], "hixl-only"), e["line"], e["family"], e["code"]) for e in report["related"]]
    assert sorted(got) == sorted((e["file"], e["line"], e["family"], e["code"]) for e in want["neighbour_errors"])
    assert all(e["node"] == "decode-node-7" and e["timestamp"] for e in report["related"])
    facts = {entry["node"]: entry for entry in report["links"]}["decode-node-7"]
    assert facts["role"] == "Decoder" and facts["listen"] == ["10.3.0.7:27000"]
    assert {"cluster_id": None, "addr": "10.3.0.5:27000"} in facts["remote"]


@pytest.mark.parametrize("fmt", ["text", "markdown", "html", "json"])
def test_hixl_only_errors_show_in_every_format(fmt):
    code, out, _ = run("scan", str(FLEETS / "hixl-only"), "--format", fmt, "--quiet", *NOT_LOGS)
    assert code == 0  # the default exit code does not change
    for shown in ("507046", "103901", "503900", "MIE05E010019"):
        assert shown in out
    if fmt != "json":
        assert "No LLM-DataDist status codes found." in out


def test_fail_on_related_counts_neighbour_errors():
    path = str(FLEETS / "hixl-only")
    assert run("scan", path, "--quiet", *NOT_LOGS)[0] == 0
    assert run("scan", path, "--quiet", "--fail-on", "related", *NOT_LOGS)[0] == 1
    assert run("scan", path, "--quiet", "--fail-on", "any", *NOT_LOGS)[0] == 0


# -- sample_logs/ ----------------------------------------------------------------------------------

def test_sample_logs_lead_with_the_refused_connection(in_root):
    report = scan_json("sample_logs")
    first = report["summary"]["incidents"][0]
    assert first["nodes"] == ["decode-node-2", "prompt-node-1"]
    lead = first["lead"]
    assert lead["source"].endswith("decode-node-2/ascend/log/debug/plog/plog-5569_20251112034002789.log")
    assert (lead["line"], lead["family"], lead["code"]) == (28, "socket", "111")
    assert "26006" in lead["text"] and "10.0.1.11:26006" in first["story"]
    assert "2051" in first["story"]  # req_id 2051 failed on both sides


def test_sample_logs_ties_req_2051_on_both_sides(in_root):
    from analyzer import analyze

    analysis = analyze(["sample_logs"])
    first = analysis.summary.incidents[0]
    places = {(analysis.summary.bursts[i].node, line) for i in first.bursts
              for line in range(analysis.summary.bursts[i].first_line, analysis.summary.bursts[i].last_line + 1)}
    assert ("prompt-node-1", 58) in places  # FindCacheEntry: cache entry not found, req_id = 2051
    assert ("decode-node-2", 45) in places  # the decoder's pull of req 2051: kv cache not exist
    c, out, _ = run("scan", "sample_logs", "--quiet")
    assert "Incidents:" in "\n".join(out.splitlines()[:5]) and "26006" in "\n".join(out.splitlines()[:25])


FLEET = Path(__file__).parents[1] / "data" / "fleets" / "oom-storm"


def test_not_yet_link_storm_after_a_failed_link_joins_its_incident():
    result = analyze([str(FLEET)])
    incidents = result.summary.incidents
    assert [i.nodes for i in incidents] == [("decode-node-2", "prompt-node-1"), ("decode-node-9",)]
    first = incidents[0]
    assert first.lead.code == "207001" and first.lead.node == "prompt-node-1"
    assert first.findings == 42
    assert "LLM_NOT_YET_LINK" in first.story
    assert incidents[1].lead.code == "EI0006"


def _plainly_linked(links, a: str, b: str) -> bool:
    """`Links.linked` as first written, each pair asked afresh: the reference its caches must equal."""
    from analyzer.core.observations import addr_ip

    def one_way(a: str, b: str) -> bool:
        fa, fb = links.facts.get(a), links.facts.get(b)
        if fa is None or fb is None:
            return False
        by_ip: dict[str, set] = {}
        for cluster, addr in fa.remote:
            if addr:
                by_ip.setdefault(addr_ip(addr), set()).add(cluster)
        for ip in by_ip.keys() & fb.ips:
            if any(c is None or not fb.cluster_ids or c in fb.cluster_ids for c in by_ip[ip]):
                return True
        if fa.remote_ips & fb.ips:
            return True
        paired = {c for c, a2 in fa.remote if c and a2}
        differ = fa.role is None or fb.role is None or fa.role != fb.role
        if differ and (fa.remote_clusters - paired) & fb.cluster_ids:
            return True
        return bool(differ and links.req_ids.get(a, set()) & (fb.req_ids | links.req_ids.get(b, set())))
    has = {n: bool(f.clusters or f.ips or f.remote or f.remote_clusters or f.remote_ips) for n, f in links.facts.items()}
    return a == b or one_way(a, b) or one_way(b, a) or (not has.get(a) and not has.get(b))


def test_links_answer_every_pair_as_the_plain_rule_does_in_any_order():
    """The per-node caches of `Links` (a fleet asks ~250,000 pairs) change no answer."""
    import random
    from collections import Counter
    from types import SimpleNamespace

    from analyzer.core.observations import NodeFacts
    from analyzer.diagnose.incidents import Links

    rnd = random.Random(17)
    for _ in range(30):
        facts, bursts = {}, []
        names = [f"n{i}" for i in range(8)]
        for name in names:
            pick = lambda pool, k=2: set(rnd.sample(pool, rnd.randrange(k + 1)))  # noqa: E731
            f = NodeFacts()
            f.roles = Counter({r: rnd.randrange(1, 3) for r in pick(["Prompt", "Decoder"], 1)})
            f.clusters = {(c, None, "7") for c in pick(["1", "2", "3", "4"])}
            f.local_ips = pick(["10.0.0.1", "10.0.0.2", "10.0.0.3"], 1)
            f.listen = {f"{ip}:26000" for ip in pick(["10.0.0.4", "10.0.0.5"], 1)}
            f.remote = {(rnd.choice([None, "1", "2", "5"]), rnd.choice([None, "10.0.0.1:26000", "10.0.0.4:1"]))
                        for _ in range(rnd.randrange(3))}
            f.remote_clusters = pick(["1", "2", "3", "5"])
            f.remote_ips = pick(["10.0.0.2", "10.0.0.5", "10.9.9.9"], 1)
            f.req_ids = pick(["r1", "r2", "r3"], 1)
            facts[name] = f
            bursts.append(SimpleNamespace(node=name, req_ids=tuple(pick(["r1", "r2", "r4"], 1))))
        links = Links(facts, bursts)
        pairs = [(a, b) for a in names for b in names]
        rnd.shuffle(pairs)
        assert [links.linked(a, b) for a, b in pairs] == [_plainly_linked(links, a, b) for a, b in pairs]


# -- Links.neighbours: the linked nodes of one node, found by index, are those every pair says --------

def test_the_indexed_neighbours_are_the_nodes_linked_pairwise() -> None:
    """Random fleets of small pools of addresses, clusters, roles and request ids (many nodes share
    some, some have no facts or no links): `Links.neighbours(a)` is exactly {b: linked(a, b)}."""
    from types import SimpleNamespace

    from analyzer.core.observations import NodeFacts
    from analyzer.diagnose.incidents import NO_NODE, Links
    from hypothesis import given, settings
    from hypothesis import strategies as st

    ips, ports, clusters, reqs = ["10.0.0.1", "10.0.0.2", "10.0.0.3"], ["", ":26000"], ["1", "2", "3"], ["7", "8"]
    some = lambda pool: st.sets(st.sampled_from(pool), max_size=2)  # noqa: E731
    facts = st.builds(
        lambda roles, mine, listen, remote, rc, rips, rq, pool_c: NodeFacts(
            roles=__import__("collections").Counter(roles), clusters={(c, None, None) for c in mine},
            local_ips=set(), listen={ip + ":1" for ip in listen},
            remote={(c, (ip + port) if ip else None) for c, ip, port in remote}, remote_clusters=rc,
            remote_ips=rips, req_ids=rq),
        st.lists(st.sampled_from(["Prompt", "Decoder"]), max_size=2), some(clusters), some(ips),
        st.sets(st.tuples(st.one_of(st.none(), st.sampled_from(clusters)), st.one_of(st.just(""), st.sampled_from(ips)),
                          st.sampled_from(ports)), max_size=2),
        some(clusters), some(ips), some(reqs), st.none())
    names = [f"n{i}" for i in range(6)] + [NO_NODE]

    @settings(max_examples=300, deadline=None)
    @given(st.dictionaries(st.sampled_from(names), st.one_of(st.none(), facts), max_size=7),
           st.dictionaries(st.sampled_from(names), some(reqs), max_size=4))
    def check(by_node, failing) -> None:
        known = {(None if n == NO_NODE else n): f for n, f in by_node.items() if f is not None}
        bursts = [SimpleNamespace(node=None if n == NO_NODE else n, req_ids=tuple(r)) for n, r in failing.items()]
        universe = set(names)
        indexed, pairwise = Links(known, bursts), Links(known, bursts)
        for a in names:
            assert indexed.neighbours(a, universe) == tuple(sorted(b for b in names if pairwise.linked(a, b)))
    check()


# -- attach_related: the groups within reach of each event, by start ---------------------------------

def _attach_plainly(groups, bursts, related, links) -> None:
    """attach_related as it was: every event asks every group (the twin of the indexed walk)."""
    import math

    from analyzer.core.times import seconds
    from analyzer.diagnose.incidents import GAP_SECONDS, LEAD_BEFORE, _node

    taken = {k for g in groups for k in g.related}
    node_sets = [{_node(bursts[i].node) for i in g.bursts} for g in groups]
    for k, event in enumerate(related):
        t = seconds(event.timestamp)
        if t is None or k in taken:
            continue
        node, best, best_gap = _node(event.node), None, math.inf
        for gi, g in enumerate(groups):
            if not g.t0 - LEAD_BEFORE <= t <= g.t1 + GAP_SECONDS:
                continue
            if not any(links.linked(node, n) for n in node_sets[gi]):
                continue
            gap = 0.0 if g.t0 <= t <= g.t1 else min(abs(t - g.t0), abs(t - g.t1))
            if gap < best_gap:
                best, best_gap = gi, gap
        if best is not None:
            groups[best].related.append(k)


def test_related_errors_join_the_groups_the_plain_walk_joins():
    """On random groups (long and short, untimed, sharing starts) and events (untimed, at the edges
    of reach, already taken), the indexed walk attaches each event where asking every group does."""
    import math
    import random
    from datetime import datetime, timedelta
    from types import SimpleNamespace

    from analyzer.core.times import seconds
    from analyzer.diagnose.incidents import Links, _Group, attach_related

    base = datetime(2025, 11, 12, 3, 40)
    for seed in range(300):
        rnd = random.Random(seed)
        nodes = ["n1", "n2", None][: rnd.randint(1, 3)]
        bursts = [SimpleNamespace(node=rnd.choice(nodes)) for _ in range(12)]

        def stamp(ms: int) -> str:
            return (base + timedelta(milliseconds=ms)).isoformat(timespec="milliseconds")

        groups = []
        for _ in range(rnd.randint(0, 10)):
            g = _Group(bursts=rnd.sample(range(12), rnd.randint(1, 3)))
            if rnd.random() < 0.85:
                start = rnd.choice([0, 500, 1000, rnd.randint(0, 20_000)])
                g.t0 = seconds(stamp(start))
                g.t1 = seconds(stamp(start + rnd.choice([0, 400, rnd.randint(0, 60_000)])))
            groups.append(g)
        related = []
        for _ in range(rnd.randint(0, 25)):
            at = rnd.randint(-3_000, 85_000)
            if groups and rnd.random() < 0.4:  # at an edge of some group's reach, to the millisecond
                g = rnd.choice(groups)
                if math.isfinite(g.t0):
                    at = int(round((g.t0 - seconds(stamp(0))) * 1000)) + rnd.choice([-1000, -1001, 0, 500, 501])
            related.append(SimpleNamespace(timestamp=None if rnd.random() < 0.1 else stamp(at),
                                           node=rnd.choice(nodes)))
        if groups and related:
            groups[0].related.append(0)  # taken already: left alone
        plain = [_Group(list(g.bursts), list(g.related), g.t0, g.t1) for g in groups]
        links = Links({}, [])
        attach_related(groups, bursts, related, links)
        _attach_plainly(plain, bursts, related, links)
        assert [g.related for g in groups] == [g.related for g in plain], seed


def test_a_story_whose_lead_line_has_no_time_does_not_start_with_a_question_mark(tmp_path):
    from analyzer import analyze, load_rules

    log = tmp_path / "untimed.log"
    log.write_text("LinkClusters: failed, ret = 0x5010B009\n")
    for lang, start in (("en", "First, "), ("zh", "首先，")):
        (incident,) = analyze([str(log)], rules=load_rules(lang=lang)).summary.incidents
        assert incident.story.startswith(start) and "?" not in incident.story, incident.story
