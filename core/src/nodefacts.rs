//! A node's link facts gathered in the core: `core.observations.NodeFacts.note` for the fact-only
//! lines the core answers whole (rows), so Python never touches each one. At the end of a stream
//! Python takes the whole (`Scan.node_facts`) and merges it into the unit's `NodeFacts`.
//!
//! Exact because `NodeFacts` is a pure function of the lines noted: sets of values, each trimmed
//! to the smallest in one total order (`_num_key`, `req_id_key`, text), and counts of roles. So it
//! does not matter that the core notes a block's rows before Python notes the block's other
//! lines, nor when either trims. What a kind means is read from its name, as `NodeFacts.note` does.

use std::collections::{BTreeMap, HashMap, HashSet};

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
        if let Some(p) = pid.filter(|p| !p.is_empty()) {
            self.pids.insert(p.to_string());
        }
        for (k, value) in facts {
            let v = value.clone();
            match self.parts[*k] {
                Part::Role => *self.roles.entry(v).or_insert(0) += 1,
                Part::LocalCluster => {
                    let device = self.got(facts, Part::Device).cloned();
                    self.clusters.insert((v, device, pid.map(str::to_string)));
                }
                Part::Version => {
                    self.versions.entry(self.ids[*k].clone()).or_default().insert(v);
                }
                part => {
                    if let Some(set) = self.values_of(part) {
                        set.insert(v);
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
        keep_smallest(&mut self.clusters, KEEP, |c| {
            (num_key(Some(&c.0)), num_key(c.1.as_deref()), num_key(c.2.as_deref()))
        });
        keep_smallest(&mut self.remote, KEEP, |r| {
            (num_key(r.0.as_deref()), num_key(r.1.as_deref()))
        });
        for set in [
            &mut self.local_ips,
            &mut self.listen,
            &mut self.remote_clusters,
            &mut self.remote_ips,
            &mut self.devices,
            &mut self.pids,
        ] {
            keep_smallest(set, KEEP, |s| num_key(Some(s)));
        }
        for values in self.versions.values_mut() {
            keep_smallest(values, KEEP, |s| s.clone());
        }
        if self.req_ids.len() > MAX_REQ_IDS + MAX_REQ_IDS / 2 {
            keep_smallest(&mut self.req_ids, MAX_REQ_IDS, |s| (s.len(), s.clone()));
        }
    }
}

/// `_num_key`: None first, then numbers by value, then other text; ties (`07`, `7`) by the text.
/// Values here are printable ASCII, where `str.isdecimal` means ASCII digits.
fn num_key(value: Option<&str>) -> (u8, usize, String, String) {
    match value {
        None => (0, 0, String::new(), String::new()),
        Some(v) if !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()) => {
            let digits = v.trim_start_matches('0');
            (1, digits.len(), digits.to_string(), v.to_string())
        }
        Some(v) => (2, 0, String::new(), v.to_string()),
    }
}

fn keep_smallest<T, K: Ord>(set: &mut HashSet<T>, limit: usize, key: impl Fn(&T) -> K)
where
    T: Eq + std::hash::Hash,
{
    if set.len() <= limit {
        return;
    }
    let mut all: Vec<(K, T)> = set.drain().map(|v| (key(&v), v)).collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all.truncate(limit);
    set.extend(all.into_iter().map(|(_, v)| v));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_order_by_value_then_text() {
        let mut v = ["10", "9", "07", "7", "a", "0"].map(|s| num_key(Some(s)));
        v.sort();
        let order: Vec<&str> = v.iter().map(|k| k.3.as_str()).collect();
        assert_eq!(order, ["0", "07", "7", "9", "10", "a"]);
        assert!(num_key(None) < num_key(Some("")));
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
