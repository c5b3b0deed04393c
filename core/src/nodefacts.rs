//! A node's link facts gathered in the core: `core.observations.NodeFacts.note` for the fact-only
//! lines the core answers whole (rows), so Python never touches each one. At the end of a stream
//! Python takes the whole (`Scan.node_facts`) and merges it into the unit's `NodeFacts`.
//!
//! Exact because `NodeFacts` is a pure function of the lines noted: sets of values, each trimmed
//! to the smallest in one total order (`_num_key`, `req_id_key`, text), and counts of roles. So it
//! does not matter that the core notes a block's rows before Python notes the block's other
//! lines, nor when either trims. What a kind means is read from its name, as `NodeFacts.note` does.

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};
use std::collections::BTreeMap;

const MAX_VALUES: usize = 64; // observations.MAX_VALUES
const KEEP: usize = MAX_VALUES + MAX_VALUES / 2; // what a periodic trim keeps
const MAX_REQ_IDS: usize = 2000; // observations.MAX_REQ_IDS
const TRIM_EVERY: u64 = 256; // lines noted between periodic trims

/// What a kind of the fact table is to a node.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Role,
    LocalCluster,
    LocalIp,
    Listen,
    RemoteCluster,
    RemoteIp,
    RemoteAddr,
    ReqId,
    Device,
    Version,
    Other,
}

type Cluster = (String, Option<String>, Option<String>); // (cluster, device, pid)
type Remote = (Option<String>, Option<String>); // (cluster, addr)

/// One node's facts, as `NodeFacts` holds them.
pub struct NodeAgg {
    parts: Vec<Part>, // per kind index of the fact table
    pub roles: HashMap<String, u64>,
    pub clusters: HashSet<Cluster>,
    pub local_ips: HashSet<String>,
    pub listen: HashSet<String>,
    pub remote: HashSet<Remote>,
    pub remote_clusters: HashSet<String>,
    pub remote_ips: HashSet<String>,
    pub req_ids: HashSet<String>,
    pub devices: HashSet<String>,
    pub pids: HashSet<String>,
    pub versions: BTreeMap<String, HashSet<String>>,
    pub noted: u64,
    ids: Vec<String>,
}

impl NodeAgg {
    /// For the kinds `ids` of a fact table; `version_kinds`: those that name a version.
    pub fn new(ids: &[String], version_kinds: &[String]) -> NodeAgg {
        let parts = ids
            .iter()
            .map(|id| match id.as_str() {
                "role" => Part::Role,
                "local_cluster" => Part::LocalCluster,
                "local_ip" => Part::LocalIp,
                "listen" => Part::Listen,
                "remote_cluster" => Part::RemoteCluster,
                "remote_ip" => Part::RemoteIp,
                "remote_addr" => Part::RemoteAddr,
                "req_id" => Part::ReqId,
                "device" => Part::Device,
                v if version_kinds.iter().any(|k| k == v) => Part::Version,
                _ => Part::Other,
            })
            .collect();
        NodeAgg {
            parts,
            roles: HashMap::new(),
            clusters: HashSet::new(),
            local_ips: HashSet::new(),
            listen: HashSet::new(),
            remote: HashSet::new(),
            remote_clusters: HashSet::new(),
            remote_ips: HashSet::new(),
            req_ids: HashSet::new(),
            devices: HashSet::new(),
            pids: HashSet::new(),
            versions: BTreeMap::new(),
            noted: 0,
            ids: ids.to_vec(),
        }
    }

    /// An empty one for the same table.
    pub fn fresh(&self) -> NodeAgg {
        NodeAgg {
            parts: self.parts.clone(),
            ids: self.ids.clone(),
            ..NodeAgg::new(&[], &[])
        }
    }

    /// The value `dict(facts)` holds for a part: the last one listed.
    fn got<'a>(&self, facts: &'a [(usize, String)], part: Part) -> Option<&'a String> {
        facts.iter().rev().find(|(k, _)| self.parts[*k] == part).map(|(_, v)| v)
    }

    /// The set of plain values a part adds to (none for roles, clusters, versions, addresses).
    fn values_of(&mut self, part: Part) -> Option<&mut HashSet<String>> {
        Some(match part {
            Part::LocalIp => &mut self.local_ips,
            Part::Listen => &mut self.listen,
            Part::RemoteCluster => &mut self.remote_clusters,
            Part::RemoteIp => &mut self.remote_ips,
            Part::ReqId => &mut self.req_ids,
            Part::Device => &mut self.devices,
            _ => return None,
        })
    }

    /// `NodeFacts.note(facts, pid)`.
    pub fn note(&mut self, facts: &[(usize, String)], pid: Option<&str>) {
        // Most fact lines repeat values already noted: look before copying a string to insert.
        if let Some(p) = pid.filter(|p| !p.is_empty())
            && !self.pids.contains(p)
        {
            self.pids.insert(p.to_string());
        }
        for (k, value) in facts {
            match self.parts[*k] {
                Part::Role => match self.roles.get_mut(value.as_str()) {
                    Some(n) => *n += 1,
                    None => {
                        self.roles.insert(value.clone(), 1);
                    }
                },
                Part::LocalCluster => {
                    let device = self.got(facts, Part::Device).cloned();
                    self.clusters.insert((value.clone(), device, pid.map(str::to_string)));
                }
                Part::Version => {
                    self.versions
                        .entry(self.ids[*k].clone())
                        .or_default()
                        .insert(value.clone());
                }
                part => {
                    if let Some(set) = self.values_of(part)
                        && !set.contains(value.as_str())
                    {
                        set.insert(value.clone());
                    }
                }
            }
        }
        let addr = self.got(facts, Part::RemoteAddr);
        let cluster = self.got(facts, Part::RemoteCluster);
        let local = self.got(facts, Part::LocalCluster).is_some() || self.got(facts, Part::LocalIp).is_some();
        if addr.is_some() || (cluster.is_some() && local) {
            // A link line: what this node links to (cluster and address when the line names both).
            self.remote.insert((cluster.cloned(), addr.cloned()));
        }
        self.noted += 1;
        if self.noted.is_multiple_of(TRIM_EVERY) {
            self.trim();
        }
    }

    /// Keep the smallest KEEP of each set (memory only: Python trims to what is reported).
    fn trim(&mut self) {
        fn cluster(c: &Cluster) -> ClusterKey<'_> {
            (num_key(Some(&c.0)), num_key(c.1.as_deref()), num_key(c.2.as_deref()))
        }
        keep_smallest(&mut self.clusters, KEEP, |a, b| cluster(a).cmp(&cluster(b)));
        fn remote(r: &Remote) -> (NumKey<'_>, NumKey<'_>) {
            (num_key(r.0.as_deref()), num_key(r.1.as_deref()))
        }
        keep_smallest(&mut self.remote, KEEP, |a, b| remote(a).cmp(&remote(b)));
        for set in [
            &mut self.local_ips,
            &mut self.listen,
            &mut self.remote_clusters,
            &mut self.remote_ips,
            &mut self.devices,
            &mut self.pids,
        ] {
            keep_smallest(set, KEEP, |a, b| num_key(Some(a)).cmp(&num_key(Some(b))));
        }
        for values in self.versions.values_mut() {
            keep_smallest(values, KEEP, |a, b| a.cmp(b));
        }
        if self.req_ids.len() > MAX_REQ_IDS + MAX_REQ_IDS / 2 {
            keep_smallest(&mut self.req_ids, MAX_REQ_IDS, |a, b| (a.len(), a).cmp(&(b.len(), b)));
        }
    }
}

/// `_num_key`: None first, then numbers by value, then other text; ties (`07`, `7`) by the text.
/// Values here are printable ASCII, where `str.isdecimal` means ASCII digits. Borrowed, so that
/// a trim compares without allocating (it ran every 256 fact lines, a sixteenth of a sparse scan).
fn num_key(value: Option<&str>) -> NumKey<'_> {
    match value {
        None => (0, 0, "", ""),
        Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
            let digits = v.trim_start_matches('0');
            (1, digits.len(), digits, v)
        }
        Some(v) => (2, 0, "", v),
    }
}

type NumKey<'a> = (u8, usize, &'a str, &'a str);
type ClusterKey<'a> = (NumKey<'a>, NumKey<'a>, NumKey<'a>);

/// The `limit` smallest values of `set` in the order `cmp` (a total order on distinct values:
/// each key holds the value's own text), chosen in linear time; which ones does not depend on
/// the set's iteration order.
fn keep_smallest<T>(set: &mut HashSet<T>, limit: usize, cmp: impl Fn(&T, &T) -> std::cmp::Ordering)
where
    T: Eq + std::hash::Hash,
{
    if set.len() <= limit {
        return;
    }
    let mut all: Vec<T> = set.drain().collect();
    all.select_nth_unstable_by(limit, cmp);
    all.truncate(limit);
    set.extend(all);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_order_by_value_then_text() {
        let mut v = ["10", "9", "07", "7", "a", "0"].map(|s| num_key(Some(s)));
        v.sort();
        let order: Vec<&str> = v.iter().map(|k| k.3).collect();
        assert_eq!(order, ["0", "07", "7", "9", "10", "a"]);
        assert!(num_key(None) < num_key(Some("")));
    }

    #[test]
    fn keeping_the_smallest_chooses_what_a_full_sort_chooses() {
        // values like a log's: numbers with and without leading zeros, addresses, words
        let mut seed: u64 = 7;
        let mut next = || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize
        };
        for round in 0..200 {
            let n = next() % 400;
            let values: HashSet<String> = (0..n)
                .map(|_| match next() % 4 {
                    0 => format!("{}", next() % 1000),
                    1 => format!("{:0w$}", next() % 100, w = next() % 4),
                    2 => format!("10.0.{}.{}:{}", next() % 9, next() % 9, next() % 3),
                    _ => format!("w{}", next() % 50),
                })
                .collect();
            let limit = next() % 120 + round % 2;
            let mut sorted: Vec<&String> = values.iter().collect();
            sorted.sort_by(|a, b| num_key(Some(a)).cmp(&num_key(Some(b))));
            let expected: HashSet<String> = sorted.into_iter().take(limit).cloned().collect();
            let mut kept = values.clone();
            keep_smallest(&mut kept, limit, |a, b| num_key(Some(a)).cmp(&num_key(Some(b))));
            assert_eq!(kept, expected, "round {round}");
        }
    }

    #[test]
    fn a_trim_keeps_the_smallest() {
        let ids: Vec<String> = ["listen", "req_id"].map(String::from).to_vec();
        let mut agg = NodeAgg::new(&ids, &[]);
        for i in (0..4000).rev() {
            agg.note(&[(0, format!("{i}")), (1, format!("r{i}"))], Some("1"));
        }
        assert!(agg.listen.len() <= KEEP + TRIM_EVERY as usize);
        assert!((0..KEEP).all(|i| agg.listen.contains(&i.to_string())));
        assert!(agg.req_ids.len() <= MAX_REQ_IDS + MAX_REQ_IDS / 2 + TRIM_EVERY as usize);
        assert!(agg.req_ids.contains("r0") && agg.req_ids.contains("r999"));
    }
}
