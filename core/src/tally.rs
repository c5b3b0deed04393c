//! The tally of one source's findings in the core (issue #17): `diagnose.tally.Tally.add` with its
//! `Bursts`, `_OpenBurst`, `BurstLinks` and `FleetTally`, whose Python code is the reference. A
//! stream's engine feeds it each finding in report order (its own and those Python read); at the
//! stream's end it becomes a Python `Tally` (`Tally.from_core`), which `merge` and `extend` combine
//! with the unit's, so no finding of a storm is counted one by one in Python.
//!
//! Everything here is of one source: a row's sources are that one name. `O` is the handle of the
//! finding itself (the Python `Finding`), kept where the tally keeps a whole finding (a fold's first
//! and last, a fingerprint's example, an open burst's first, lead and others).

use foldhash::{HashMap, HashMapExt, HashSet, HashSetExt};

use crate::stamps::parse_ts;

pub const BURST_LINES: i64 = 50; // bursts.BURST_LINES
const BURST_SECONDS: f64 = 2.0; // bursts.BURST_SECONDS
pub const MAX_BURSTS: usize = 1000; // summary.MAX_BURSTS
const MAX_BURST_IDS: usize = 64; // incidents.MAX_BURST_IDS
const EPOCH_MICROS: i64 = 719_162 * 86_400_000_000; // 1970-01-01 on `parse_ts`'s scale

/// A finding as the tally reads it.
pub struct View<'a> {
    pub source: &'a str,
    pub line: i64,
    pub code: &'a str,
    pub name: Option<&'a str>,
    pub api: Option<&'a str>,
    pub rule: &'a str,
    pub action: &'a str,
    pub recoverable: Option<bool>,
    pub timestamp: Option<&'a str>,
    pub time_hint: Option<&'a str>,
    pub year_guessed: bool,
    pub node: Option<&'a str>,
    pub kind: &'a str,
    pub pid: Option<&'a str>,
    pub tid: Option<&'a str>,
    pub pod: Option<&'a str>,
    pub container: Option<&'a str>,
    pub fingerprint: &'a str,
    pub bundle: Option<&'a str>,
    pub generic: bool,
    pub link: &'a [(String, String)],
}

fn own(s: Option<&str>) -> Option<String> {
    s.map(str::to_string)
}

fn nonempty(s: Option<&str>) -> Option<&str> {
    s.filter(|v| !v.is_empty())
}

/// `times.seconds`: a naive stamp as float seconds since the epoch, as CPython computes it.
pub fn seconds(ts: Option<&str>) -> Option<f64> {
    let micros = parse_ts(ts?)? - EPOCH_MICROS;
    Some(micros as f64 / 1e6)
}

/// (source, line, code): `records.report_key`.
pub type Key = (String, i64, String);

fn key_of(f: &View) -> Key {
    (f.source.to_string(), f.line, f.code.to_string())
}

/// What a burst keeps of one of its findings: the finding itself (what `Burst` names of it is
/// read from it when the tally crosses to Python), and what the tally compares.
#[derive(Clone)]
pub struct Kept<O> {
    pub obj: O,
    pub line: i64,
    pub code: String,
    pub api: Option<String>,
    pub rule: String,
    pub generic: bool,
    pub node: Option<String>,
}

impl<O: Clone> Kept<O> {
    fn of(f: &View, obj: &O) -> Kept<O> {
        Kept {
            obj: obj.clone(),
            line: f.line,
            code: f.code.to_string(),
            api: own(f.api),
            rule: f.rule.to_string(),
            generic: f.generic,
            node: own(f.node),
        }
    }
}

/// `BurstLinks`: what incidents need of a burst.
#[derive(Clone, Default)]
pub struct Links {
    pub prints: Vec<String>,
    pub req_ids: Vec<String>,
    pub peers: Vec<(Option<String>, Option<String>)>,
    pub by_code: Vec<((String, Option<String>), u64)>,
}

impl Links {
    fn add(&mut self, f: &View) {
        let name = f.name.unwrap_or(f.code);
        match self
            .by_code
            .iter_mut()
            .find(|((n, a), _)| n == name && a.as_deref() == f.api)
        {
            Some(slot) => slot.1 += 1,
            None => self.by_code.push(((name.to_string(), own(f.api)), 1)),
        }
        if !f.fingerprint.is_empty()
            && self.prints.len() < MAX_BURST_IDS
            && !self.prints.iter().any(|p| p == f.fingerprint)
        {
            self.prints.push(f.fingerprint.to_string());
        }
        if !f.link.is_empty() {
            // `dict(f.link)`: the last value of a kind
            let get = |kind: &str| f.link.iter().rev().find(|(k, _)| k == kind).map(|(_, v)| v.clone());
            if let Some(req) = get("req_id")
                && self.req_ids.len() < MAX_BURST_IDS
                && !self.req_ids.contains(&req)
            {
                self.req_ids.push(req);
            }
            let (cluster, addr) = (get("remote_cluster"), get("remote_addr"));
            if (cluster.is_some() || addr.is_some()) && self.peers.len() < MAX_BURST_IDS {
                let peer = (cluster, addr);
                if !self.peers.contains(&peer) {
                    self.peers.push(peer);
                }
            }
        }
    }
}

/// (code, API or "", action): one "also" code of a burst.
pub type AlsoKey = (String, String, String);
/// (fingerprint, node): one folded row.
pub type FoldKey = (String, Option<String>);

/// `_OpenBurst`: a burst being built.
#[derive(Clone)]
pub struct OpenBurst<O> {
    pub first: Kept<O>,
    pub last_line: i64,
    pub last_code: String,
    pub last_seconds: Option<f64>,
    pub lead: Kept<O>,
    pub lead_is_first: bool,
    pub count: u64,
    pub echoes: u64,
    pub repeats: u64,
    pub others: Vec<(AlsoKey, Kept<O>)>, // (code, api or "", action) -> first such finding
    pub min_stamp: Option<String>,
    pub max_stamp: Option<String>,
    pub severe_specific: bool,
    pub severe_any: bool,
    pub lead_is_specific: bool,
    pub links: Links,
}

impl<O: Clone> OpenBurst<O> {
    fn new(f: &View, obj: &O, when: Option<f64>) -> OpenBurst<O> {
        let first = Kept::of(f, obj);
        let mut b = OpenBurst {
            lead: first.clone(),
            first,
            lead_is_first: true,
            last_line: f.line,
            last_code: f.code.to_string(),
            last_seconds: when,
            lead_is_specific: !f.generic,
            count: 0,
            echoes: 0,
            repeats: 0,
            others: Vec::new(),
            min_stamp: None,
            max_stamp: None,
            severe_specific: false,
            severe_any: false,
            links: Links::default(),
        };
        b.add(f, obj, when, true);
        b
    }

    /// `_OpenBurst.add`; `is_first`: `f` is the burst's first finding (`f is self.lead`).
    fn add(&mut self, f: &View, obj: &O, when: Option<f64>, is_first: bool) {
        self.count += 1;
        self.last_line = f.line;
        if self.last_code != f.code {
            f.code.clone_into(&mut self.last_code);
        }
        self.last_seconds = when;
        self.links.add(f);
        let bad = f.recoverable != Some(true);
        self.severe_any |= bad;
        // `f is self.lead`: the lead is this very finding only while it is the first one
        let is_lead = is_first && self.lead_is_first;
        if f.generic {
            if !is_lead {
                self.echoes += 1;
            }
        } else {
            self.severe_specific |= bad;
            if !self.lead_is_specific {
                // the first specific code becomes the lead
                if !is_lead && self.lead.generic {
                    self.echoes += 1; // the generic first finding is now an echo
                }
                self.lead = Kept::of(f, obj);
                self.lead_is_first = is_first;
                self.lead_is_specific = true;
            } else if !is_lead {
                let lead = &self.lead;
                if (f.code, f.api, f.rule) == (lead.code.as_str(), lead.api.as_deref(), lead.rule.as_str()) {
                    self.repeats += 1;
                } else {
                    let key = (
                        f.code.to_string(),
                        f.api.unwrap_or("").to_string(),
                        f.action.to_string(),
                    );
                    if !self.others.iter().any(|(k, _)| *k == key) {
                        self.others.push((key, Kept::of(f, obj)));
                    }
                }
            }
        }
        // a traceback's last line has no stamp of its own: it takes its record's time
        if let Some(stamp) = nonempty(f.timestamp).or(nonempty(f.time_hint)) {
            if self.min_stamp.as_deref().is_none_or(|m| stamp < m) {
                self.min_stamp = Some(stamp.to_string());
            }
            if self.max_stamp.as_deref().is_none_or(|m| stamp > m) {
                self.max_stamp = Some(stamp.to_string());
            }
        }
    }

    fn close(&self) -> Burst<O> {
        let mut others: Vec<&(AlsoKey, Kept<O>)> = self.others.iter().collect();
        others.sort_by(|a, b| a.0.cmp(&b.0));
        Burst {
            lead: self.lead.clone(),
            first_line: self.first.line,
            last_line: self.last_line,
            first_seen: self.min_stamp.clone(),
            last_seen: self.max_stamp.clone(),
            findings: self.count,
            severe: if self.lead_is_specific {
                self.severe_specific
            } else {
                self.severe_any
            },
            echoes: self.echoes,
            repeats: self.repeats,
            also: others.into_iter().map(|(_, k)| k.clone()).collect(),
            links: self.links.clone(),
        }
    }
}

/// A closed burst (`summary.Burst`, before Python builds it).
#[derive(Clone)]
pub struct Burst<O> {
    pub lead: Kept<O>,
    pub first_line: i64,
    pub last_line: i64,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
    pub findings: u64,
    pub severe: bool,
    pub echoes: u64,
    pub repeats: u64,
    pub also: Vec<Kept<O>>,
    pub links: Links,
}

/// `BurstKey`: (not severe, untimed, first seen or "", source, first line, thread's first key, number).
pub type BurstKey = (bool, bool, String, String, i64, Key, u64);
/// `GroupKey`: (severe, lead code, API, rule, node).
pub type GroupKey = (bool, String, Option<String>, String, Option<String>);
/// `Thread`: (source, process, tid).
pub type Thread = (String, Option<String>, Option<String>);

pub struct Group<O> {
    pub key: BurstKey,
    pub first: Burst<O>,
    pub bursts: u64,
    pub findings: u64,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
}

fn burst_key<O>(b: &Burst<O>, first: &Key, n: u64, source: &str) -> BurstKey {
    (
        !b.severe,
        b.first_seen.is_none(),
        b.first_seen.clone().unwrap_or_default(),
        source.to_string(),
        b.first_line,
        first.clone(),
        n,
    )
}

/// `Bursts` of one source.
pub struct Bursts<O> {
    // Found by key, never searched: a storm of findings from as many threads (a pid a line)
    // once made every finding walk every thread's open burst.
    pub open: OpenBursts<O>,
    pub bursts: Vec<(BurstKey, Burst<O>)>,
    pub count: u64,
    pub groups: Ordered<GroupKey, Group<O>>,
    pub thread_start: Ordered<Thread, (Key, u64)>,
    pub range_part: bool,
    pub first_ends: Ordered<Thread, Option<(i64, String)>>,
    pub ambiguous: bool,
    pub started: (i64, Option<Thread>),
}

impl<O: Clone> Bursts<O> {
    fn new(range_part: bool) -> Bursts<O> {
        Bursts {
            open: OpenBursts::default(),
            bursts: Vec::new(),
            count: 0,
            groups: Ordered::default(),
            thread_start: Ordered::default(),
            range_part,
            first_ends: Ordered::default(),
            ambiguous: false,
            started: (0, None),
        }
    }

    fn add(&mut self, f: &View, obj: &O) {
        // `records.process_key`
        let keyed;
        let process = if nonempty(f.pod).is_some() || nonempty(f.container).is_some() {
            let show = |v: Option<&str>| v.map_or_else(|| "None".to_string(), str::to_string);
            keyed = format!("{}\x00{}\x00{}", show(f.pod), show(f.container), show(f.pid));
            Some(keyed.as_str())
        } else {
            f.pid
        };
        let thread: Thread = (f.source.to_string(), process.map(str::to_string), own(f.tid));
        let when = seconds(f.timestamp);
        let mut open = false;
        if let Some(current) = self.open.get_mut(&thread) {
            let gap_time =
                matches!((current.last_seconds, when), (Some(t0), Some(t1)) if (t1 - t0).abs() > BURST_SECONDS);
            if f.line - current.last_line > BURST_LINES || gap_time {
                self.close(&thread, f.source);
            } else {
                current.add(f, obj, when, false);
                open = true;
            }
        }
        if !open {
            self.open.insert(thread.clone(), OpenBurst::new(f, obj, when));
            let known = self.thread_start.get(&thread).is_some();
            if !known {
                self.thread_start.insert(thread.clone(), (key_of(f), 0));
            }
            if self.range_part {
                if !known {
                    self.first_ends.insert(thread.clone(), None);
                }
                let (line, other) = &self.started;
                self.ambiguous |= *line == f.line && other.as_ref() != Some(&thread);
                self.started = (f.line, Some(thread));
            }
        }
    }

    fn close(&mut self, thread: &Thread, source: &str) {
        let b = self.open.remove(thread).expect("an open burst");
        let s = self.thread_start.get_mut(thread).expect("a thread's start");
        let (first, n) = s.clone();
        s.1 = n + 1;
        if self.range_part && n == 0 {
            // may go on from the range before: `extend` feeds it again
            let e = self.first_ends.get_mut(thread).expect("a first burst");
            *e = Some((b.last_line, b.last_code));
        } else {
            let burst = b.close();
            let key = burst_key(&burst, &first, n, source);
            self.keep(key, burst);
        }
    }

    fn keep(&mut self, key: BurstKey, burst: Burst<O>) {
        self.count += 1;
        let lead = &burst.lead;
        let gkey: GroupKey = (
            burst.severe,
            lead.code.clone(),
            lead.api.clone(),
            lead.rule.clone(),
            lead.node.clone(),
        );
        match self.groups.get_mut(&gkey) {
            Some(g) => {
                if key < g.key {
                    g.key = key.clone();
                    g.first = burst.clone();
                }
                g.bursts += 1;
                g.findings += burst.findings;
                if let Some(t) = &burst.first_seen
                    && g.first_seen.as_ref().is_none_or(|m| t < m)
                {
                    g.first_seen = Some(t.clone());
                }
                if let Some(t) = &burst.last_seen
                    && g.last_seen.as_ref().is_none_or(|m| t > m)
                {
                    g.last_seen = Some(t.clone());
                }
            }
            None => self.groups.insert(
                gkey,
                Group {
                    key: key.clone(),
                    first: burst.clone(),
                    bursts: 1,
                    findings: burst.findings,
                    first_seen: burst.first_seen.clone(),
                    last_seen: burst.last_seen.clone(),
                },
            ),
        }
        self.bursts.push((key, burst));
        if self.bursts.len() >= 2 * MAX_BURSTS {
            self.trim();
        }
    }

    fn trim(&mut self) {
        self.bursts.sort_by(|a, b| a.0.cmp(&b.0));
        self.bursts.truncate(MAX_BURSTS);
    }

    /// `close_all`: every open burst closed (a whole source's end).
    pub fn close_all(&mut self, source: &str) {
        for t in self.open.threads() {
            self.close(&t, source);
        }
        self.thread_start.clear();
    }
}

/// `_CodeAgg` of one source.
pub struct CodeAgg {
    pub first: Key,
    pub action: String,
    pub recoverable: Option<bool>,
    pub count: u64,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
}

/// `_NodeAgg` of one source.
#[derive(Default)]
pub struct NodeAgg {
    pub findings: u64,
    pub unrecoverable: u64,
    pub kinds: Vec<(String, u64)>,
}

/// `_FoldAgg`: a (fingerprint, node)'s first and last finding, count and times.
pub struct Fold<O> {
    pub first: O,
    pub last: O,
    pub first_at: Key, // their report keys, which a merge of sources compares
    pub last_at: (i64, String),
    pub count: u64,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
}

/// `fleet._Bundle` of one source.
pub struct Bundle {
    pub findings: u64,
    pub unrecoverable: u64,
    pub first: Option<String>,
    pub last: Option<String>,
    pub nodes: Vec<String>,
    pub prints: HashSet<String>,
    pub more_prints: bool, // more than `cap` distinct (`prints` then empty): `_Bundle.prints` None
}

/// `fleet._Print`.
pub struct Print<O> {
    pub example: O,
    pub example_at: Key,
    pub findings: u64,
    pub first: Option<String>,
    pub last: Option<String>,
    pub bundles: Vec<Option<String>>,
    pub nodes: Vec<String>,
}

fn earlier(a: &mut Option<String>, b: Option<&str>) {
    if let Some(b) = b
        && a.as_deref().is_none_or(|x| b < x)
    {
        *a = Some(b.to_string());
    }
}

fn later(a: &mut Option<String>, b: Option<&str>) {
    if let Some(b) = b
        && a.as_deref().is_none_or(|x| b > x)
    {
        *a = Some(b.to_string());
    }
}

fn add_unique<T: PartialEq>(v: &mut Vec<T>, x: T) {
    if !v.contains(&x) {
        v.push(x);
    }
}

/// `Tally` of one source.
pub struct Tally<O> {
    pub source: Option<String>,
    pub count: u64,
    pub unrecoverable: u64,
    pub unknown: u64,
    pub codes: Vec<((String, String, String, String), CodeAgg)>,
    code_at: HashMap<String, Vec<usize>>, // code -> its rows (by name, API, rule)
    pub actions: Vec<(String, u64)>,
    pub nodes: Vec<(String, NodeAgg)>,
    pub folds: Vec<(FoldKey, Fold<O>)>,
    fold_at: HashMap<String, Vec<usize>>, // fingerprint -> its rows (by node)
    pub bursts: Bursts<O>,
    pub bundles: Vec<(Option<String>, Bundle)>,
    pub prints: Vec<(String, Print<O>)>,
    print_at: HashMap<String, usize>,
    pub whole: bool,
    pub at: (i64, String),
    pub sure: Vec<(Option<String>, (Key, String))>,
    pub guessed: u64,
    // `Tally.largest`: rows (folds, prints) are kept for the `cap` smallest fingerprints once
    // more were seen; the largest of those (None: never capped).
    pub cap: usize,
    pub largest: Option<String>,
}

/// Rows kept before they are cut back to `cap` (`tally._rows_before_cut`: a cut costs a sort).
fn lazy_cap(cap: usize) -> usize {
    cap.saturating_add(cap / 4)
}

/// `Tally.cap_rows`: when there are more than `cap` fingerprints, or more than twice as many folded
/// rows, `largest` becomes the last of the smallest fingerprints that keep within both, and true.
fn capped<'a>(
    prints: impl Iterator<Item = &'a String>,
    folds: impl Iterator<Item = &'a String>,
    cap: usize,
    largest: &mut Option<String>,
) -> bool {
    let mut rows: std::collections::BTreeMap<&String, usize> = prints.map(|k| (k, 0)).collect();
    let mut folded = 0usize;
    for k in folds {
        *rows.entry(k).or_insert(0) += 1;
        folded += 1;
    }
    let most = cap.saturating_mul(2);
    if rows.len() <= cap && folded <= most {
        return false;
    }
    let (mut kept, mut sum, mut last) = (0usize, 0usize, String::new());
    for (k, n) in rows {
        if kept + 1 > cap || sum + n > most {
            break;
        }
        kept += 1;
        sum += n;
        last = k.clone();
    }
    *largest = Some(last);
    true
}

/// `summary.bundle_failures_cap`: a bundle's distinct fingerprints counted up to this many.
fn bundle_cap(cap: usize) -> usize {
    (cap / 10).max(1)
}

/// The smaller of two bounds (None: no bound).
fn tighter(a: Option<String>, b: Option<String>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

impl<O: Clone> Tally<O> {
    pub fn new(range_part: bool, cap: usize) -> Tally<O> {
        Tally {
            source: None,
            count: 0,
            unrecoverable: 0,
            unknown: 0,
            codes: Vec::new(),
            code_at: HashMap::new(),
            actions: Vec::new(),
            nodes: Vec::new(),
            folds: Vec::new(),
            fold_at: HashMap::new(),
            bursts: Bursts::new(range_part),
            bundles: Vec::new(),
            prints: Vec::new(),
            print_at: HashMap::new(),
            whole: true,
            at: (0, String::new()),
            sure: Vec::new(),
            guessed: 0,
            cap,
            largest: None,
        }
    }

    /// `Tally.cap_rows`: keep the rows of the smallest fingerprints.
    pub fn cap_rows(&mut self) {
        let (prints, folds) = (
            self.prints.iter().map(|(k, _)| k),
            self.folds.iter().map(|((k, _), _)| k),
        );
        if capped(prints, folds, self.cap, &mut self.largest) {
            self.keep_rows();
        }
    }

    /// `Tally._over`: the rows kept passed what is kept before a cut.
    fn over(&self) -> bool {
        let lazy = lazy_cap(self.cap);
        self.prints.len() > lazy || self.folds.len() > lazy.saturating_mul(2)
    }

    /// Drop the rows of the fingerprints after `largest`, and index the rest again.
    fn keep_rows(&mut self) {
        let Some(largest) = self.largest.clone() else { return };
        self.prints.retain(|(k, _)| *k <= largest);
        self.print_at = self
            .prints
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i))
            .collect();
        self.folds.retain(|((k, _), _)| *k <= largest);
        self.fold_at.clear();
        for (i, ((k, _), _)) in self.folds.iter().enumerate() {
            self.fold_at.entry(k.clone()).or_default().push(i);
        }
    }

    /// `Tally.add`: count one finding (of this tally's one source, in report order).
    pub fn add(&mut self, f: &View, obj: &O) {
        match &self.source {
            Some(s) if s == f.source => {
                if (f.line, f.code) < (self.at.0, self.at.1.as_str()) {
                    self.whole = false; // back to an earlier line: two inputs of one name
                }
            }
            Some(_) => self.whole = false, // a second source: not this tally's to count
            None => self.source = Some(f.source.to_string()),
        }
        self.at.0 = f.line;
        if self.at.1 != f.code {
            f.code.clone_into(&mut self.at.1);
        }
        self.guessed += u64::from(f.year_guessed);
        if let Some(ts) = nonempty(f.timestamp)
            && !f.year_guessed
        {
            let node = own(f.node);
            if !self.sure.iter().any(|(n, _)| *n == node) {
                self.sure.push((node, (key_of(f), ts.to_string())));
            }
        }
        self.count += 1;
        let bad = f.recoverable != Some(true);
        self.unrecoverable += u64::from(bad);
        self.unknown += u64::from(f.name.is_none());
        let (name, api) = (f.name.unwrap_or(""), f.api.unwrap_or(""));
        let found = self.code_at.get(f.code).and_then(|at| {
            at.iter().copied().find(|&i| {
                let k = &self.codes[i].0;
                (k.1.as_str(), k.2.as_str(), k.3.as_str()) == (name, api, f.rule)
            })
        });
        let i = match found {
            Some(i) => i,
            None => {
                let key = (
                    f.code.to_string(),
                    name.to_string(),
                    api.to_string(),
                    f.rule.to_string(),
                );
                self.codes.push((
                    key,
                    CodeAgg {
                        first: key_of(f),
                        action: f.action.to_string(),
                        recoverable: f.recoverable,
                        count: 0,
                        first_seen: None,
                        last_seen: None,
                    },
                ));
                self.code_at
                    .entry(f.code.to_string())
                    .or_default()
                    .push(self.codes.len() - 1);
                self.codes.len() - 1
            }
        };
        let agg = &mut self.codes[i].1;
        agg.count += 1;
        earlier(&mut agg.first_seen, nonempty(f.timestamp));
        later(&mut agg.last_seen, nonempty(f.timestamp));
        match self.actions.iter_mut().find(|(a, _)| a == f.action) {
            Some(slot) => slot.1 += 1,
            None => self.actions.push((f.action.to_string(), 1)),
        }
        let node_key = f.node.unwrap_or("");
        let node = match self.nodes.iter().position(|(n, _)| n == node_key) {
            Some(i) => &mut self.nodes[i].1,
            None => {
                self.nodes.push((node_key.to_string(), NodeAgg::default()));
                &mut self.nodes.last_mut().expect("just pushed").1
            }
        };
        node.findings += 1;
        node.unrecoverable += u64::from(bad);
        match node.kinds.iter_mut().find(|(k, _)| k == f.kind) {
            Some(slot) => slot.1 += 1,
            None => node.kinds.push((f.kind.to_string(), 1)),
        }
        let row = self.largest.as_deref().is_none_or(|l| f.fingerprint <= l);
        if row {
            self.fold(f, obj);
        }
        self.fleet(f, obj, bad, row);
        if row && self.over() {
            self.cap_rows();
        }
        self.bursts.add(f, obj);
    }

    /// The finding's (fingerprint, node) row.
    fn fold(&mut self, f: &View, obj: &O) {
        let found = self
            .fold_at
            .get(f.fingerprint)
            .and_then(|at| at.iter().copied().find(|&i| self.folds[i].0.1.as_deref() == f.node));
        let i = match found {
            Some(i) => i,
            None => {
                self.folds.push((
                    (f.fingerprint.to_string(), own(f.node)),
                    Fold {
                        first: obj.clone(),
                        last: obj.clone(),
                        first_at: key_of(f),
                        last_at: (f.line, f.code.to_string()),
                        count: 0,
                        first_seen: None,
                        last_seen: None,
                    },
                ));
                self.fold_at
                    .entry(f.fingerprint.to_string())
                    .or_default()
                    .push(self.folds.len() - 1);
                self.folds.len() - 1
            }
        };
        let fold = &mut self.folds[i].1;
        fold.count += 1;
        fold.last = obj.clone(); // within a source, in report order
        fold.last_at.0 = f.line;
        if fold.last_at.1 != f.code {
            f.code.clone_into(&mut fold.last_at.1);
        }
        let stamp = nonempty(f.timestamp).or(nonempty(f.time_hint));
        earlier(&mut fold.first_seen, stamp);
        later(&mut fold.last_seen, stamp);
    }

    /// `FleetTally.add` (`row`: in its fingerprint's row too).
    fn fleet(&mut self, f: &View, obj: &O, bad: bool, row: bool) {
        let b = match self.bundles.iter().position(|(k, _)| k.as_deref() == f.bundle) {
            Some(i) => &mut self.bundles[i].1,
            None => {
                self.bundles.push((
                    own(f.bundle),
                    Bundle {
                        findings: 0,
                        unrecoverable: 0,
                        first: None,
                        last: None,
                        nodes: Vec::new(),
                        prints: HashSet::new(),
                        more_prints: false,
                    },
                ));
                &mut self.bundles.last_mut().expect("just pushed").1
            }
        };
        b.findings += 1;
        b.unrecoverable += u64::from(bad);
        earlier(&mut b.first, nonempty(f.timestamp));
        later(&mut b.last, nonempty(f.timestamp));
        if !b.more_prints && !b.prints.contains(f.fingerprint) {
            b.prints.insert(f.fingerprint.to_string());
            if b.prints.len() > bundle_cap(self.cap) {
                b.prints = HashSet::new();
                b.more_prints = true;
            }
        }
        if let Some(node) = nonempty(f.node) {
            add_unique(&mut b.nodes, node.to_string());
        }
        if !row {
            return;
        }
        let i = match self.print_at.get(f.fingerprint) {
            Some(&i) => i,
            None => {
                self.prints.push((
                    f.fingerprint.to_string(),
                    Print {
                        example: obj.clone(),
                        example_at: key_of(f),
                        findings: 0,
                        first: None,
                        last: None,
                        bundles: Vec::new(),
                        nodes: Vec::new(),
                    },
                ));
                self.print_at.insert(f.fingerprint.to_string(), self.prints.len() - 1);
                self.prints.len() - 1
            }
        };
        let p = &mut self.prints[i].1;
        p.findings += 1;
        earlier(&mut p.first, nonempty(f.timestamp));
        later(&mut p.last, nonempty(f.timestamp));
        if !p.bundles.iter().any(|b| b.as_deref() == f.bundle) {
            p.bundles.push(own(f.bundle));
        }
        if let Some(node) = nonempty(f.node) {
            add_unique(&mut p.nodes, node.to_string());
        }
    }

    /// A whole source ends: its bursts closed (`run_unit`'s `close_all`).
    pub fn close(&mut self) {
        if let Some(source) = self.source.clone() {
            self.bursts.close_all(&source);
        }
    }
}

const LIST_LIMIT: usize = 10; // summary.LIST_LIMIT

/// `tally._Names`: a row's distinct sources, counted, with the LIST_LIMIT smallest.
#[derive(Clone, Default)]
pub struct Names {
    pub first: Vec<String>,
    pub count: u64,
}

impl Names {
    fn one(source: &str) -> Names {
        Names {
            first: vec![source.to_string()],
            count: 1,
        }
    }

    /// `_Names.merge`: the other's names (of other sources) added.
    fn merge(&mut self, other: &Names) {
        self.first.extend(other.first.iter().cloned());
        self.first.sort_unstable();
        self.first.dedup();
        self.first.truncate(LIST_LIMIT);
        self.count += other.count;
    }
}

/// A fold of several sources: `Fold` with its first and last findings' whole keys.
pub struct UnitFold<O> {
    pub first: O,
    pub first_at: Key,
    pub last: O,
    pub last_at: Key,
    pub count: u64,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
}

/// `fleet._Bundle` of several sources.
#[derive(Default)]
pub struct UnitBundle {
    pub findings: u64,
    pub unrecoverable: u64,
    pub first: Option<String>,
    pub last: Option<String>,
    pub nodes: std::collections::BTreeSet<String>,
    pub prints: std::collections::BTreeSet<String>,
    pub more_prints: bool, // more than `cap` distinct (`prints` then empty): `_Bundle.prints` None
}

/// `fleet._Print` of several sources.
pub struct UnitPrint<O> {
    pub example: O,
    pub example_at: Key,
    pub findings: u64,
    pub first: Option<String>,
    pub last: Option<String>,
    pub bundles: std::collections::BTreeSet<Option<String>>,
    pub nodes: std::collections::BTreeSet<String>,
}

/// A map that keeps its keys in the order they came, as a Python dict does: a merged tally's rows
/// cross to Python in the order Python's merges would have made them, so ties sort alike.
pub struct Ordered<K, V> {
    pub items: Vec<(K, V)>,
    at: HashMap<K, usize>,
}

impl<K, V> Default for Ordered<K, V> {
    fn default() -> Self {
        Ordered {
            items: Vec::new(),
            at: HashMap::new(),
        }
    }
}

impl<K: std::hash::Hash + Eq + Clone, V> Ordered<K, V> {
    pub fn get(&self, key: &K) -> Option<&V> {
        let i = *self.at.get(key)?;
        Some(&self.items[i].1)
    }

    pub fn get_mut(&mut self, key: &K) -> Option<&mut V> {
        let i = *self.at.get(key)?;
        Some(&mut self.items[i].1)
    }

    pub fn iter(&self) -> impl Iterator<Item = &(K, V)> {
        self.items.iter()
    }

    pub fn clear(&mut self) {
        self.items.clear();
        self.at.clear();
    }

    /// Keeps the items whose key passes, in order.
    pub fn retain(&mut self, keep: impl Fn(&K) -> bool) {
        self.items.retain(|(k, _)| keep(k));
        self.at = self
            .items
            .iter()
            .enumerate()
            .map(|(i, (k, _))| (k.clone(), i))
            .collect();
    }

    /// Adds `key` (at the end), or replaces its value where it is.
    pub fn insert(&mut self, key: K, value: V) {
        match self.at.get(&key) {
            Some(&i) => self.items[i].1 = value,
            None => {
                self.at.insert(key.clone(), self.items.len());
                self.items.push((key, value));
            }
        }
    }

    pub fn entry_or(&mut self, key: K, make: impl FnOnce() -> V) -> &mut V {
        let i = match self.at.get(&key) {
            Some(&i) => i,
            None => {
                self.at.insert(key.clone(), self.items.len());
                self.items.push((key, make()));
                self.items.len() - 1
            }
        };
        &mut self.items[i].1
    }
}

/// The open bursts by thread, in the order they opened (a Python dict's, whose `pop` and insert
/// move a thread that opens again to the end).
pub struct OpenBursts<O> {
    by_thread: HashMap<Thread, (u64, OpenBurst<O>)>,
    opened: u64,
}

impl<O> Default for OpenBursts<O> {
    fn default() -> Self {
        OpenBursts {
            by_thread: HashMap::new(),
            opened: 0,
        }
    }
}

impl<O> OpenBursts<O> {
    pub fn get_mut(&mut self, thread: &Thread) -> Option<&mut OpenBurst<O>> {
        self.by_thread.get_mut(thread).map(|(_, b)| b)
    }

    pub fn insert(&mut self, thread: Thread, burst: OpenBurst<O>) {
        self.opened += 1;
        self.by_thread.insert(thread, (self.opened, burst));
    }

    pub fn remove(&mut self, thread: &Thread) -> Option<OpenBurst<O>> {
        self.by_thread.remove(thread).map(|(_, b)| b)
    }

    /// The open bursts in the order they opened.
    pub fn ordered(&self) -> Vec<(&Thread, &OpenBurst<O>)> {
        let mut all: Vec<_> = self.by_thread.iter().map(|(t, (n, b))| (*n, t, b)).collect();
        all.sort_unstable_by_key(|(n, _, _)| *n);
        all.into_iter().map(|(_, t, b)| (t, b)).collect()
    }

    pub fn threads(&self) -> Vec<Thread> {
        self.ordered().into_iter().map(|(t, _)| t.clone()).collect()
    }
}

/// The tally of a work unit's whole sources the core read: each stream's `Tally`, once it ends,
/// merged here as `diagnose.tally.Tally.merge` merges them (or left out, as `Tally.leave_out`,
/// where a year was guessed), so only the unit's tally crosses to Python, once.
pub struct Unit<O> {
    pub sources: std::collections::BTreeSet<String>,
    pub untallied: std::collections::BTreeSet<String>,
    pub whole: bool,
    pub guessed: u64,
    pub count: u64,
    pub unrecoverable: u64,
    pub unknown: u64,
    pub sure: Ordered<Option<String>, (Key, String)>,
    pub codes: Ordered<(String, String, String, String), (CodeAgg, Names)>,
    pub actions: Ordered<String, u64>,
    pub nodes: Ordered<String, (NodeAgg, Names)>,
    pub folds: Ordered<FoldKey, UnitFold<O>>,
    pub bundles: Ordered<Option<String>, UnitBundle>,
    pub prints: Ordered<String, UnitPrint<O>>,
    pub bursts: Vec<(BurstKey, Burst<O>)>, // trimmed lazily, as `Bursts.merge` does
    // Once trimmed, the largest key kept: a burst past it is never among the first MAX_BURSTS
    // (`Bursts._cutoff`), so it is not kept.
    cutoff: Option<BurstKey>,
    pub burst_count: u64,
    pub groups: Ordered<GroupKey, Group<O>>,
    pub cap: usize,              // rows kept for at most this many fingerprints (`Tally.largest`)
    pub largest: Option<String>, // the largest fingerprint whose rows are kept (None: never capped)
}

impl<O: Clone> Default for Unit<O> {
    fn default() -> Self {
        Unit {
            sources: Default::default(),
            untallied: Default::default(),
            whole: true,
            guessed: 0,
            count: 0,
            unrecoverable: 0,
            unknown: 0,
            sure: Ordered::default(),
            codes: Ordered::default(),
            actions: Ordered::default(),
            nodes: Ordered::default(),
            folds: Ordered::default(),
            bundles: Ordered::default(),
            prints: Ordered::default(),
            bursts: Vec::new(),
            cutoff: None,
            burst_count: 0,
            groups: Ordered::default(),
            cap: usize::MAX,
            largest: None,
        }
    }
}

impl<O: Clone> Unit<O> {
    pub fn new(cap: usize) -> Unit<O> {
        Unit { cap, ..Unit::default() }
    }

    /// `Tally.cap_rows`: keep the rows of the smallest fingerprints.
    pub fn cap_rows(&mut self) {
        let (prints, folds) = (
            self.prints.iter().map(|(k, _)| k),
            self.folds.iter().map(|((k, _), _)| k),
        );
        if capped(prints, folds, self.cap, &mut self.largest) {
            self.keep_rows();
        }
    }

    fn keep_rows(&mut self) {
        let Some(largest) = self.largest.clone() else { return };
        self.prints.retain(|k| *k <= largest);
        self.folds.retain(|(k, _)| *k <= largest);
    }

    /// `_Batched.tallied` of a whole source's tally (its bursts closed): left out where one of
    /// its findings' years was guessed (`Tally.leave_out`), else merged (`Tally.merge`). A tally
    /// of no finding changes nothing.
    pub fn absorb(&mut self, t: Tally<O>) {
        let Some(source) = t.source.clone().filter(|_| t.count > 0) else {
            return;
        };
        if t.guessed > 0 {
            self.whole &= !self.sources.contains(&source);
            self.untallied.insert(source);
            return;
        }
        self.whole &= t.whole && !self.sources.contains(&source) && !self.untallied.contains(&source);
        self.sources.insert(source.clone());
        self.guessed += t.guessed;
        for (node, sure) in t.sure {
            match self.sure.get_mut(&node) {
                Some(mine) if mine.0 <= sure.0 => {}
                _ => self.sure.insert(node, sure),
            }
        }
        self.count += t.count;
        self.unrecoverable += t.unrecoverable;
        self.unknown += t.unknown;
        for (key, agg) in t.codes {
            match self.codes.get_mut(&key) {
                None => {
                    self.codes.insert(key, (agg, Names::one(&source)));
                }
                Some((mine, names)) => {
                    if agg.first < mine.first {
                        mine.first = agg.first;
                        mine.action = agg.action;
                        mine.recoverable = agg.recoverable;
                    }
                    mine.count += agg.count;
                    earlier(&mut mine.first_seen, agg.first_seen.as_deref());
                    later(&mut mine.last_seen, agg.last_seen.as_deref());
                    names.merge(&Names::one(&source));
                }
            }
        }
        for (action, n) in t.actions {
            *self.actions.entry_or(action, || 0) += n;
        }
        for (name, node) in t.nodes {
            match self.nodes.get_mut(&name) {
                None => {
                    self.nodes.insert(name, (node, Names::one(&source)));
                }
                Some((mine, names)) => {
                    mine.findings += node.findings;
                    mine.unrecoverable += node.unrecoverable;
                    for (kind, n) in node.kinds {
                        match mine.kinds.iter_mut().find(|(k, _)| *k == kind) {
                            Some(slot) => slot.1 += n,
                            None => mine.kinds.push((kind, n)),
                        }
                    }
                    names.merge(&Names::one(&source));
                }
            }
        }
        // `Tally._merged_cap`: capped if either was; no row past the smaller bound is kept
        let bound = tighter(self.largest.clone(), t.largest.clone());
        if bound != self.largest {
            self.largest = bound;
            self.keep_rows();
        }
        let row = |k: &String| self.largest.as_ref().is_none_or(|l| k <= l);
        let folds: Vec<_> = t.folds.into_iter().filter(|((k, _), _)| row(k)).collect();
        let prints: Vec<_> = t.prints.into_iter().filter(|(k, _)| row(k)).collect();
        for (key, fold) in folds {
            let last_at = (source.clone(), fold.last_at.0, fold.last_at.1);
            match self.folds.get_mut(&key) {
                None => {
                    self.folds.insert(
                        key,
                        UnitFold {
                            first: fold.first,
                            first_at: fold.first_at,
                            last: fold.last,
                            last_at,
                            count: fold.count,
                            first_seen: fold.first_seen,
                            last_seen: fold.last_seen,
                        },
                    );
                }
                Some(mine) => {
                    if fold.first_at < mine.first_at {
                        mine.first = fold.first;
                        mine.first_at = fold.first_at;
                    }
                    if last_at > mine.last_at {
                        mine.last = fold.last;
                        mine.last_at = last_at;
                    }
                    mine.count += fold.count;
                    earlier(&mut mine.first_seen, fold.first_seen.as_deref());
                    later(&mut mine.last_seen, fold.last_seen.as_deref());
                }
            }
        }
        for (key, b) in t.bundles {
            let mine = self.bundles.entry_or(key, UnitBundle::default);
            mine.findings += b.findings;
            mine.unrecoverable += b.unrecoverable;
            earlier(&mut mine.first, b.first.as_deref());
            later(&mut mine.last, b.last.as_deref());
            mine.nodes.extend(b.nodes);
            mine.more_prints |= b.more_prints;
            if !mine.more_prints {
                mine.prints.extend(b.prints);
            }
            if mine.more_prints || mine.prints.len() > bundle_cap(self.cap) {
                mine.prints.clear();
                mine.more_prints = true;
            }
        }
        for (key, p) in prints {
            match self.prints.get_mut(&key) {
                None => {
                    self.prints.insert(
                        key,
                        UnitPrint {
                            example: p.example,
                            example_at: p.example_at,
                            findings: p.findings,
                            first: p.first,
                            last: p.last,
                            bundles: p.bundles.into_iter().collect(),
                            nodes: p.nodes.into_iter().collect(),
                        },
                    );
                }
                Some(mine) => {
                    if p.example_at < mine.example_at {
                        mine.example = p.example;
                        mine.example_at = p.example_at;
                    }
                    mine.findings += p.findings;
                    earlier(&mut mine.first, p.first.as_deref());
                    later(&mut mine.last, p.last.as_deref());
                    mine.bundles.extend(p.bundles);
                    mine.nodes.extend(p.nodes);
                }
            }
        }
        let lazy = lazy_cap(self.cap);
        if self.prints.items.len() > lazy || self.folds.items.len() > lazy.saturating_mul(2) {
            self.cap_rows();
        }
        let b = t.bursts;
        for (key, burst) in b.bursts {
            if self.cutoff.as_ref().is_none_or(|c| key <= *c) {
                self.bursts.push((key, burst));
            }
        }
        if self.bursts.len() >= 2 * MAX_BURSTS {
            self.trim();
        }
        self.burst_count += b.count;
        for (gkey, g) in b.groups.items {
            match self.groups.get_mut(&gkey) {
                None => {
                    self.groups.insert(gkey, g);
                }
                Some(mine) => {
                    if g.key < mine.key {
                        mine.key = g.key;
                        mine.first = g.first;
                    }
                    mine.bursts += g.bursts;
                    mine.findings += g.findings;
                    earlier(&mut mine.first_seen, g.first_seen.as_deref());
                    later(&mut mine.last_seen, g.last_seen.as_deref());
                }
            }
        }
    }

    /// The first MAX_BURSTS bursts kept, in report order, the rest dropped (`Bursts.trim`): only
    /// these can be among the first MAX_BURSTS of whatever this unit's tally is merged with.
    pub fn trim(&mut self) {
        self.bursts.sort_by(|x, y| x.0.cmp(&y.0));
        self.bursts.truncate(MAX_BURSTS);
        if self.bursts.len() == MAX_BURSTS {
            self.cutoff = self.bursts.last().map(|(k, _)| k.clone());
        }
    }
}
