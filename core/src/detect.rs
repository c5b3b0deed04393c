//! The engine of one plain stream in the core (issue #17): `detect.engine.Engine.scan_stream` for
//! a stream without an envelope, with `LineObserver`, `CauseFinder`, `GenericPolicy` and
//! `StreamClock`, whose Python code is the reference this must equal to the byte.
//!
//! A block's candidates come from the prefilter (`Scan`), fact-only lines already answered by the
//! fact table. Each line is read here when it is printable ASCII and so are the 40 lines before it
//! (everything the Python path may look back at): then nothing on it can need Python's decoding
//! or Unicode classes, and it is read whole, with no way to stop half-way. Any other line is
//! handed to Python (`Host::decline`) with this stream's state, and the state Python leaves is
//! taken back: one state, two homes, never both at once.
//!
//! What stays in Python, asked through `Host`: which remedy rule applies (`RuleSet.match`,
//! remembered per code, API, list and versions when it did not read the nearby text), whether a
//! line is a proof of recovery (`RecoveryTable.find`), and noting that proof. Rare or remembered.

use foldhash::{HashMap, HashMapExt};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use crate::apis::{API_LOOKBACK_LINES, ApiTable, Context, same_thread};
use crate::codes::{self, Codes, GENERIC_FAILED};
use crate::facts::{Answer, FactTable, ProofTable, printable, without_cr};
use crate::families::FamilyTable;
use crate::fingerprint::{Masks, chars, fingerprint};
use crate::headers::{Grammar, Header, YearHint, header_for};
use crate::lines::{OddBytes, WalkBack, begin_back};
use crate::nodefacts::NodeAgg;
use crate::stamps::parse_ts;

pub const HISTORY_BYTES: usize = 64 << 10; // scan.blocks.HISTORY_BYTES
pub const LOOKBACK_LINES: usize = 40; // scan.blocks.LOOKBACK_LINES
const TEXT_CUT: usize = 4000; // scan.blocks.TEXT_LIMIT * 2: a line looked back at, cut
const TEXT_WIDTH: usize = 600; // engine.TEXT_WIDTH
const CAUSE_LINES: i64 = 15; // causes.CAUSE_LINES
const CAUSE_MICROS: i64 = 30_000_000; // causes.CAUSE_SECONDS
const NEAR_BYTES: i64 = 4096; // causes.NEAR_BYTES
const ECHO_MICROS: i64 = 2_000_000; // context.ECHO_SECONDS
const ECHO_MEMORY: usize = 64; // context.ECHO_MEMORY
const LINK_LINES: i64 = 12; // observer.LINK_LINES
const RELATED_TEXT: usize = 600; // what a related error or proof keeps of its line
const FORMS: [&str; 6] = ["hex", "decimal", "name", "repr", "text", "generic"];
const RULE_MEMO: usize = 1 << 16;

/// A neighbour family as `NeighbourMatcher._found` reads its codes.
pub struct FamilyInfo {
    pub id: String,
    pub name: String,
    pub aliases: HashMap<String, String>, // printed text (lower case) -> code
    pub meanings: HashMap<String, String>,
}

/// Everything compiled once per engine.
pub struct Tables {
    pub codes: Arc<Codes>,
    pub families: Arc<FamilyTable>,
    pub family_info: Vec<FamilyInfo>,
    pub facts: Arc<FactTable>,
    pub proofs: Arc<ProofTable>,
    pub grammar: Grammar,
    pub apis: ApiTable,
    pub link_kind: Vec<bool>, // per fact kind: one a finding's link carries (FINDING_LINK_KINDS)
    pub version_kind: Vec<bool>, // per fact kind: a version (VERSION_KINDS)
    pub version_kinds: Vec<String>,
    pub uses_versions: bool,
    pub masks: Mutex<Masks>,
    pub rules: Mutex<HashMap<(u32, bool), Vec<Remembered>>>, // (code, in a result list) -> ...
}

/// A rule remembered for (API, versions) of a code (`Engine._rule_for`'s memo).
pub type Remembered = (Option<String>, Vec<(String, String)>, Arc<RuleOut>);

/// What `RuleSet.match` said: rule id, action, recoverable, the code's name, known, generic.
#[derive(Clone, Debug)]
pub struct RuleOut {
    pub rule: String,
    pub action: String,
    pub recoverable: Option<bool>,
    pub name: Option<String>,
    pub known: bool,
    pub generic: bool,
}

/// Where a log came from (`inputs.Layout`).
#[derive(Clone, Debug, Default)]
pub struct Layout {
    pub node: Option<String>,
    pub kind: String,
    pub device: Option<String>,
    pub pid: Option<String>,
    pub anchored: bool,
    pub pod: Option<String>,
    pub container: Option<String>,
}

/// One stream, as `Engine.scan_stream` sets it up.
pub struct StreamCfg {
    pub name: String,
    pub layout: Layout,
    pub bundle: Option<String>,
    pub default_node: Option<String>,
    pub year: Option<YearHint>,
    pub year_guessed: bool,
    pub max_related: i64, // observations.MAX_RELATED: related errors built per stream, the rest counted
}

fn truthy(s: &Option<String>) -> bool {
    s.as_deref().is_some_and(|v| !v.is_empty())
}

/// Python's `a or b` on optional strings.
fn or(a: &Option<String>, b: &Option<String>) -> Option<String> {
    if truthy(a) { a.clone() } else { b.clone() }
}

impl StreamCfg {
    /// `observer.node_of(layout, None, pod, default)`.
    pub fn node(&self) -> Option<String> {
        let l = &self.layout;
        let pod = &l.pod;
        if truthy(&self.default_node) {
            return self.default_node.clone();
        }
        if truthy(pod) {
            let anchored = if l.anchored { l.node.clone() } else { None };
            or(&anchored, pod)
        } else {
            l.node.clone()
        }
    }

    /// `observer.process_of(layout, None, pid)`: `records.process_key`.
    pub fn process(&self, pid: &Option<String>) -> Option<String> {
        let l = &self.layout;
        if truthy(&l.pod) || truthy(&l.container) {
            let show = |v: &Option<String>| v.clone().unwrap_or_else(|| "None".to_string());
            Some(format!("{}\x00{}\x00{}", show(&l.pod), show(&l.container), show(pid)))
        } else {
            pid.clone()
        }
    }
}

/// `Rollover`: year crossings of a log whose year-less stamps run forward.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Roll {
    pub month: Option<i64>,
    pub years: i64,
}

impl Roll {
    fn adjust(&mut self, stamp: &str) -> String {
        let month: i64 = stamp.get(5..7).and_then(|m| m.parse().ok()).unwrap_or(0);
        if let Some(m) = self.month
            && m - month >= 6
        {
            self.years += 1;
        }
        self.month = Some(month);
        if self.years == 0 {
            return stamp.to_string();
        }
        let year: i64 = stamp.get(..4).and_then(|y| y.parse().ok()).unwrap_or(0);
        format!("{:04}{}", year + self.years, &stamp[4..])
    }
}

/// A related error noted on a line (`RelatedEvent`).
#[derive(Clone, Debug)]
pub struct Related {
    pub line: i64,
    pub timestamp: Option<String>,
    pub family: String,
    pub code: String,
    pub meaning: String,
    pub pid: Option<String>,
    pub text: String,
    pub link: Vec<(String, String)>,
    pub year_guessed: bool,
}

/// A proof of recovery, for Python to note (`Proof`).
pub struct ProofRec {
    pub line: i64,
    pub timestamp: Option<String>,
    pub node: Option<String>,
    pub proof: String,
    pub pid: Option<String>,
    pub clusters: Vec<String>,
    pub addrs: Vec<String>,
    pub text: String,
    pub year_guessed: bool,
}

/// The state of one stream that its lines read and write: `_StreamState`'s, plus what the core
/// gathers for the unit (node facts, related errors) until the stream ends.
pub struct State {
    pub generic: VecDeque<(i64, i64, Header)>,          // GenericPolicy.recent
    pub last_seen: HashMap<Option<String>, (i64, i64)>, // CauseFinder.last_seen
    pub roll: Option<Roll>,
    pub recent: HashMap<Option<String>, Vec<(usize, String, i64)>>, // process -> (kind, value, line)
    pub related_noted: i64,
    pub related_line: i64,
    pub line_no: i64, // the line whose codes `reported` holds (fragments of one long line)
    pub reported: Vec<u32>,
    pub related: Vec<Related>,
    pub related_dropped: u64,
    pub agg: NodeAgg,
    // Each full candidate line of the stream that holds a family literal, from stream offset 0
    // on (none before: a byte range's history): (start, end offset, its families), the last
    // HISTORY_BYTES of them. Every line holding one is a full candidate (the prefilter searches
    // the families' literals), so the bytes since a process's previous finding need no second
    // search (`Engine::families_between`).
    pub family_lines: VecDeque<(i64, i64, u128)>,
}

impl State {
    pub fn new(tables: &Tables, cfg: &StreamCfg) -> State {
        State {
            generic: VecDeque::new(),
            last_seen: HashMap::new(),
            roll: cfg.year.as_ref().filter(|y| y.rolls()).map(|_| Roll::default()),
            recent: HashMap::new(),
            related_noted: 0,
            related_line: 0,
            line_no: 0,
            reported: Vec::new(),
            related: Vec::new(),
            related_dropped: 0,
            agg: NodeAgg::new(&tables.facts.ids, &tables.version_kinds),
            family_lines: VecDeque::new(),
        }
    }

    /// `_remember`: the facts later lines of `process` look back at.
    fn remember(&mut self, process: &Option<String>, facts: &[(usize, String)], line: i64) {
        // the process is nearly always one already seen: no copy of its name to look it up
        let mine = match self.recent.get_mut(process) {
            Some(mine) => mine,
            None => self.recent.entry(process.clone()).or_default(),
        };
        for (k, v) in facts {
            match mine.iter_mut().find(|(kind, _, _)| kind == k) {
                Some(slot) => {
                    slot.1.clone_from(v);
                    slot.2 = line;
                }
                None => mine.push((*k, v.clone(), line)),
            }
        }
    }
}

/// A finding as the engine builds it (`records.Finding`, the fields a plain stream sets).
#[derive(Clone, Debug)]
pub struct FindingRec {
    pub line: i64,
    pub timestamp: Option<String>,
    pub code: String,
    pub api: Option<String>,
    pub api_evidence: Option<&'static str>,
    pub api_line: Option<i64>,
    pub rule: Arc<RuleOut>,
    pub text: String,
    pub form: &'static str,
    pub pid: Option<String>,
    pub tid: Option<String>,
    pub in_cluster_results: bool,
    pub year_guessed: bool,
    pub causes: Vec<(i64, String, String, String)>,
    pub time_hint: Option<String>,
    pub fingerprint: String,
    pub time_source: Option<&'static str>,
    pub link: Vec<(String, String)>,
}

/// A candidate line of a block: (line number, stream offset, start, stop in the buffer, facts only).
pub type Cand = (i64, i64, usize, usize, bool);

/// What the fact table made of a candidate (`Scan.answer`).
pub enum Tier {
    Plain,
    Facts(Vec<(usize, String)>),
    Row(Vec<u8>, Vec<(usize, String)>),
}

/// A block: the buffer the candidates lie in and the number of its first complete line.
pub struct BlockView<'a> {
    pub buf: &'a [u8],
    pub first_line_no: i64,
}

/// An error from Python (kept by the host; the engine only stops).
#[derive(Debug)]
pub struct HostError;

/// What the engine asks of Python.
pub trait Host {
    type Declined;
    /// `RuleSet.match` of a code in its context: the rule, and whether it read the nearby text.
    fn rule(
        &mut self,
        value: u32,
        api: Option<&str>,
        in_cluster: bool,
        nearby: &str,
        versions: &[(String, String)],
    ) -> Result<(RuleOut, bool), HostError>;
    /// `RecoveryTable.find(text)` on a line whose bytes hold a proof literal.
    fn find_proof(&mut self, text: &str) -> Result<Option<String>, HostError>;
    /// `Observed.note_proof`.
    fn note_proof(&mut self, proof: ProofRec) -> Result<(), HostError>;
    /// Python reads the candidate `i` of the block with the stream's state (handed over when
    /// Python's is older).
    fn decline(&mut self, state: &mut State, i: usize) -> Result<Self::Declined, HostError>;
    /// Before the core reads a line: the state Python left, taken back when it is newer.
    fn sync(&mut self, state: &mut State) -> Result<(), HostError>;
    /// The core read a line: its state is now newer than Python's.
    fn touched(&mut self);
    /// Whether Python holds the newer state (it read the last line): then it also reads what
    /// only updates the state (a fact-only line), until a line only the core reads comes.
    fn python_owns(&self) -> bool;
    /// `StreamClock._zoned` of a stamp or hint the clock gives: under --tz, the stamp in UTC
    /// (Python's zone rules decide); without it, the stamp as printed.
    fn zoned(&mut self, stamp: String) -> Result<String, HostError> {
        Ok(stamp)
    }
}

/// What a block gave, in order.
pub enum Item<D> {
    Found(Box<FindingRec>),
    Python(D),
}

/// `FindingTime` (the time fields of a finding).
struct When {
    timestamp: Option<String>,
    hint: Option<String>,
    guessed: bool,
    source: Option<&'static str>,
}

impl When {
    /// The stamp and hint as `StreamClock.time_of` gives them: through `_zoned` (`Host::zoned`).
    fn zoned<H: Host>(self, host: &mut H) -> Result<When, HostError> {
        Ok(When {
            timestamp: self.timestamp.map(|s| host.zoned(s)).transpose()?,
            hint: self.hint.map(|s| host.zoned(s)).transpose()?,
            ..self
        })
    }
}

/// The lines before a candidate, oldest first, each printable ASCII.
type Earlier<'a> = Vec<(i64, &'a str)>;

fn as_text(b: &[u8]) -> &str {
    // printable ASCII only ever reaches here: valid UTF-8
    std::str::from_utf8(b).unwrap_or("")
}

/// The engine of one stream.
pub struct Engine<'t> {
    pub tables: &'t Tables,
    pub cfg: &'t StreamCfg,
    node: Option<String>,
}

impl<'t> Engine<'t> {
    pub fn new(tables: &'t Tables, cfg: &'t StreamCfg) -> Engine<'t> {
        Engine {
            tables,
            cfg,
            node: cfg.node(),
        }
    }

    /// Every candidate of a block, in order.
    pub fn block<H: Host>(
        &self,
        state: &mut State,
        host: &mut H,
        blk: &BlockView,
        cands: &[Cand],
        tiers: &[Tier],
    ) -> Result<Vec<Item<H::Declined>>, HostError> {
        let mut out = Vec::new();
        let mut odd = OddBytes::default();
        let mut walk = WalkBack::default();
        for (i, c) in cands.iter().enumerate() {
            if !c.4 {
                self.note_families(state, blk, c);
            }
            let tier = tiers.get(i).unwrap_or(&Tier::Plain);
            // Whether the core reads the line: told before anything is read, so that a run of
            // lines Python reads hands the state over once, not twice a line.
            let line = without_cr(&blk.buf[c.2..c.3]);
            let (ours, earlier) = match (c.4, tier) {
                (_, Tier::Row(..)) => (!host.python_owns(), None),
                (true, Tier::Facts(_)) => (printable(line) && !host.python_owns(), None),
                (true, Tier::Plain) => (false, None),
                (false, _) => match printable(line)
                    .then(|| self.earlier(blk, c, &mut odd, &mut walk))
                    .flatten()
                {
                    Some(e) => (true, Some(e)),
                    None => (false, None),
                },
            };
            if !ours {
                out.push(Item::Python(host.decline(state, i)?));
                continue;
            }
            host.sync(state)?;
            let read = match (tier, earlier) {
                (Tier::Row(pid, found), _) => {
                    // fact_rows: what later lines of its process look back at (its node's facts
                    // were noted where the row was made)
                    let pid = Some(String::from_utf8_lossy(pid).into_owned());
                    state.remember(&self.cfg.process(&pid), found, c.0);
                    Some(Vec::new())
                }
                (Tier::Facts(found), _) if c.4 => self.facts_only(state, host, blk, c, found)?,
                (_, Some(earlier)) => self.full(state, host, blk, c, earlier)?,
                _ => None,
            };
            match read {
                Some(found) => {
                    host.touched();
                    out.extend(found.into_iter().map(|f| Item::Found(Box::new(f))));
                }
                None => out.push(Item::Python(host.decline(state, i)?)),
            }
        }
        Ok(out)
    }

    /// Note candidate `c` in `State::family_lines` when it holds a family literal; forget the
    /// lines no region can reach any more (a region starts at most HISTORY_BYTES before a line).
    fn note_families(&self, state: &mut State, blk: &BlockView, c: &Cand) {
        let families = self.tables.families.present(&blk.buf[c.2..c.3]);
        let lines = &mut state.family_lines;
        if families != 0 {
            lines.push_back((c.1, c.1 + (c.3 - c.2) as i64, families));
        }
        while lines
            .front()
            .is_some_and(|&(_, end, _)| end < c.1 - HISTORY_BYTES as i64)
        {
            lines.pop_front();
        }
    }

    /// `present(&buf[from..stop])` for candidate `c`'s region (`stop`: the end of its line):
    /// read off `State::family_lines` where the region starts at or after stream offset 0 (a
    /// line cut by the region's start is searched for its part inside), else searched.
    fn families_between(&self, state: &State, blk: &BlockView, c: &Cand, from: usize, stop: usize) -> u128 {
        let offset_of = |pos: usize| c.1 + pos as i64 - c.2 as i64;
        let (lo, hi) = (offset_of(from), offset_of(stop));
        let families = &self.tables.families;
        if lo < 0 {
            return families.present(&blk.buf[from..stop]);
        }
        let lines = &state.family_lines;
        let first = lines.partition_point(|&(_, end, _)| end <= lo); // lines do not overlap: ends rise too
        let mut bits = 0u128;
        for &(start, end, found) in lines.range(first..) {
            if start >= hi {
                break;
            }
            bits |= if start >= lo && end <= hi {
                found
            } else {
                let (a, b) = (start.max(lo) - lo, end.min(hi) - lo);
                families.present(&blk.buf[from + a as usize..from + b as usize])
            };
        }
        bits
    }

    /// `LineObserver.facts_only`: a line of fact literals only (no code, no neighbour error).
    fn facts_only<H: Host>(
        &self,
        state: &mut State,
        host: &mut H,
        blk: &BlockView,
        c: &Cand,
        found: &[(usize, String)],
    ) -> Result<Option<Vec<FindingRec>>, HostError> {
        let raw = &blk.buf[c.2..c.3];
        let line = without_cr(raw);
        if !printable(line) {
            return Ok(None);
        }
        let text = as_text(line);
        let proof = self.tables.proofs.any_literal(raw);
        if found.is_empty() && !proof {
            return Ok(Some(Vec::new()));
        }
        let year = self.cfg.year.as_ref();
        let pid = or(&self.tables.grammar.pid(text, year), &self.cfg.layout.pid);
        let process = self.cfg.process(&pid);
        if !found.is_empty() {
            state.agg.note(found, pid.as_deref());
            state.remember(&process, found, c.0);
        }
        if proof {
            self.proof(state, host, c.0, text, raw, &process, None)?;
        }
        Ok(Some(Vec::new()))
    }

    /// `LineObserver._proof`: note the line as a proof of recovery when it is one.
    #[allow(clippy::too_many_arguments)]
    fn proof<H: Host>(
        &self,
        state: &mut State,
        host: &mut H,
        line_no: i64,
        text: &str,
        raw: &[u8],
        process: &Option<String>,
        header: Option<&Header>,
    ) -> Result<(), HostError> {
        if !self.tables.proofs.any_literal(raw) {
            return Ok(());
        }
        let Some(proof) = host.find_proof(text)? else {
            return Ok(());
        };
        let owned;
        let header = match header {
            Some(h) => h,
            None => {
                owned = self.tables.grammar.records(text, self.cfg.year.as_ref()).swap_remove(0);
                &owned
            }
        };
        let link = self.link(state, process, &[], line_no);
        let when = self.time_of(state, header, &Vec::new()).zoned(host)?;
        let get = |kind: &str| link.iter().find(|(k, _)| k == kind).map(|(_, v)| v.clone());
        let clusters = get("remote_cluster").into_iter().collect();
        let addrs = get("remote_addr").or_else(|| get("remote_ip")).into_iter().collect();
        host.note_proof(ProofRec {
            line: line_no,
            timestamp: when.timestamp.or(when.hint),
            node: self.node.clone(),
            proof,
            pid: or(&header.pid, &self.cfg.layout.pid),
            clusters,
            addrs,
            text: chars(text, RELATED_TEXT).to_string(),
            year_guessed: when.guessed,
        })
    }

    /// `finding_link`: what a line's facts and its process's last few lines say of its link.
    fn link(
        &self,
        state: &State,
        process: &Option<String>,
        facts: &[(usize, String)],
        line_no: i64,
    ) -> Vec<(String, String)> {
        let ids = &self.tables.facts.ids;
        let mut link: Vec<(String, String)> = Vec::new();
        let mut set = |k: usize, v: &String| {
            let kind = &ids[k];
            match link.iter_mut().find(|(x, _)| x == kind) {
                Some(slot) => slot.1.clone_from(v),
                None => link.push((kind.clone(), v.clone())),
            }
        };
        if let Some(mine) = state.recent.get(process) {
            for (k, v, n) in mine {
                if self.tables.link_kind[*k] && line_no - n <= LINK_LINES {
                    set(*k, v);
                }
            }
        }
        for (k, v) in facts {
            if self.tables.link_kind[*k] {
                set(*k, v);
            }
        }
        link.sort();
        link
    }

    /// The lines before a candidate as `Candidate.lookback` gives them, when each is printable
    /// ASCII (else None: the candidate is Python's).
    /// `odd` remembers where the block's bytes that are not printable ASCII lie (the candidates'
    /// lookbacks overlap: each byte is checked once, not once per candidate that looks back at it),
    /// and `walk` the last walk back (each walk stops where the one before began).
    fn earlier<'b>(
        &self,
        blk: &BlockView<'b>,
        c: &Cand,
        odd: &mut OddBytes,
        walk: &mut WalkBack,
    ) -> Option<Earlier<'b>> {
        let start = c.2;
        let floor = start.saturating_sub(HISTORY_BYTES);
        let limit = (c.0 - blk.first_line_no).clamp(0, LOOKBACK_LINES as i64) as usize;
        let spans = walk.spans(blk.buf, start, floor, limit);
        if let Some(&(oldest, _)) = spans.last() {
            odd.cover(blk.buf, oldest, start);
        }
        let mut out = Vec::with_capacity(spans.len());
        for (k, &(b, e)) in spans.iter().enumerate().rev() {
            let raw = &blk.buf[b..e];
            let line = without_cr(&raw[..raw.len().min(TEXT_CUT)]);
            if odd.any_in(b, b + line.len()) {
                return None;
            }
            // SAFETY: printable ASCII (no odd byte in it), so valid UTF-8
            out.push((c.0 - 1 - k as i64, unsafe { std::str::from_utf8_unchecked(line) }));
        }
        Some(out)
    }

    /// `record_headers(text)`, read once a line (`record_headers` remembers its last answer too).
    fn records<'c>(&self, cache: &'c mut Option<Vec<Header>>, text: &str) -> &'c [Header] {
        cache.get_or_insert_with(|| self.tables.grammar.records(text, self.cfg.year.as_ref()))
    }

    /// A full candidate: `scan_stream`'s loop body for a line without an envelope.
    fn full<'b, H: Host>(
        &self,
        state: &mut State,
        host: &mut H,
        blk: &BlockView<'b>,
        c: &Cand,
        earlier: Earlier<'b>,
    ) -> Result<Option<Vec<FindingRec>>, HostError> {
        let raw = &blk.buf[c.2..c.3];
        let line = without_cr(raw);
        let text = as_text(line);
        let Answer::Facts(facts) = self.tables.facts.find(raw) else {
            return Ok(None);
        };
        let Some(hits) = self.tables.codes.find(line) else {
            return Ok(None);
        };
        let mut recs = None;
        let link = self.observe(state, host, c, text, raw, &earlier, facts, &mut recs)?;
        // A line longer than MAX_LINE comes in fragments of one line number: one finding per code
        // per line, the first fragment's.
        if c.0 != state.line_no {
            state.line_no = c.0;
            state.reported.clear();
        }
        let hits: Vec<codes::Hit> = if state.reported.is_empty() {
            hits
        } else {
            hits.into_iter().filter(|h| !state.reported.contains(&h.0)).collect()
        };
        state.reported.extend(hits.iter().map(|h| h.0));
        let mut found = self.findings(state, host, blk, c, text, raw, &earlier, link, &hits, &mut recs)?;
        if found.len() > 1 {
            found.sort_by(|a, b| a.code.cmp(&b.code)); // report order within a line: by code
        }
        Ok(Some(found))
    }

    /// `LineObserver.line`: note the line's facts and related errors; the link facts a finding on
    /// it carries.
    #[allow(clippy::too_many_arguments)]
    fn observe<H: Host>(
        &self,
        state: &mut State,
        host: &mut H,
        c: &Cand,
        text: &str,
        raw: &[u8],
        earlier: &Earlier,
        facts: Vec<(usize, String)>,
        recs: &mut Option<Vec<Header>>,
    ) -> Result<Vec<(String, String)>, HostError> {
        let t = self.tables;
        // the line's families, noted as the block began it (`note_families`: noted when any)
        let families = match state.family_lines.back() {
            Some(&(at, _, found)) if at == c.1 => found,
            _ => 0,
        };
        if t.proofs.maybe(without_cr(raw)) {
            let header = self.records(recs, text)[0].clone();
            let pid = or(&header.pid, &self.cfg.layout.pid);
            let process = self.cfg.process(&pid);
            if !facts.is_empty() {
                state.remember(&process, &facts, c.0); // the proof names what its own line names
            }
            self.proof(state, host, c.0, text, raw, &process, Some(&header))?;
        }
        if facts.is_empty() && families == 0 {
            if state.recent.is_empty() {
                return Ok(Vec::new());
            }
            let pid = or(&self.records(recs, text)[0].pid, &self.cfg.layout.pid);
            return Ok(self.link(state, &self.cfg.process(&pid), &[], c.0));
        }
        let header = self.records(recs, text)[0].clone();
        let pid = or(&header.pid, &self.cfg.layout.pid);
        let process = self.cfg.process(&pid);
        let link = self.link(state, &process, &facts, c.0);
        if !facts.is_empty() {
            state.agg.note(&facts, pid.as_deref());
            state.remember(&process, &facts, c.0);
        }
        if families != 0 {
            let found = self.neighbours(text.as_bytes(), families);
            if !found.is_empty() {
                self.related(state, host, c.0, text, &header, earlier, &facts, found)?;
            }
        }
        Ok(link)
    }

    /// `NeighbourMatcher.find(text, families)`: (family, code, meaning) of each family present.
    fn neighbours(&self, line: &[u8], families: u128) -> Vec<(usize, String, String)> {
        let Some(hits) = self.tables.families.find(line) else {
            return Vec::new(); // never: every family's pattern is the core's (checked when built)
        };
        hits.into_iter()
            .filter(|(k, _)| families >> k & 1 == 1)
            .map(|(k, code)| {
                let f = &self.tables.family_info[k];
                let code = f.aliases.get(&code.to_lowercase()).cloned().unwrap_or(code);
                let meaning = [f.meanings.get(&code), f.meanings.get(&code.to_uppercase())]
                    .into_iter()
                    .flatten()
                    .find(|m| !m.is_empty())
                    .cloned()
                    .unwrap_or_else(|| f.name.clone());
                (k, code, meaning)
            })
            .collect()
    }

    /// `LineObserver._related`: note (or only count, past the stream's cap) the related errors.
    #[allow(clippy::too_many_arguments)]
    fn related<H: Host>(
        &self,
        state: &mut State,
        host: &mut H,
        line_no: i64,
        text: &str,
        header: &Header,
        earlier: &Earlier,
        facts: &[(usize, String)],
        found: Vec<(usize, String, String)>,
    ) -> Result<(), HostError> {
        if state.related_noted >= self.cfg.max_related && line_no > state.related_line {
            // counted, not built; the clock still reads a stamp that moves it
            if header.timestamp.is_none() || header.yearless {
                self.time_of(state, header, earlier);
            }
            state.related_dropped += found.len() as u64;
            return Ok(());
        }
        let when = self.time_of(state, header, earlier).zoned(host)?;
        let ids = &self.tables.facts.ids;
        let kept: Vec<(String, String)> = facts
            .iter()
            .filter(|(k, _)| self.tables.link_kind[*k])
            .map(|(k, v)| (ids[*k].clone(), v.clone()))
            .collect();
        let n = found.len() as i64;
        for (k, code, meaning) in found {
            state.related.push(Related {
                line: line_no,
                timestamp: when.timestamp.clone().or_else(|| when.hint.clone()),
                family: self.tables.family_info[k].id.clone(),
                code,
                meaning,
                pid: header.pid.clone(),
                text: chars(text, RELATED_TEXT).to_string(),
                link: kept.clone(),
                year_guessed: when.guessed,
            });
        }
        state.related_noted += n;
        state.related_line = line_no;
        Ok(())
    }

    /// `StreamClock.time_of` for a record without an envelope, before `_zoned` (`When::zoned`).
    fn time_of(&self, state: &mut State, header: &Header, earlier: &Earlier) -> When {
        let mut stamp = header.timestamp.clone();
        let (mut hint, hint_guessed) = if stamp.is_some() {
            (None, false)
        } else {
            self.time_before(earlier, header)
        };
        if let Some(roll) = state.roll.as_mut() {
            if header.yearless && stamp.is_some() {
                stamp = stamp.map(|s| roll.adjust(&s));
            } else if hint_guessed && hint.is_some() {
                hint = hint.map(|h| roll.adjust(&h));
            }
        }
        let guessed =
            self.cfg.year_guessed && ((header.yearless && stamp.is_some()) || (hint.is_some() && hint_guessed));
        match stamp {
            Some(s) => When {
                timestamp: Some(s),
                hint: None,
                guessed,
                source: Some("line"),
            },
            None => When {
                timestamp: None,
                hint,
                guessed,
                source: None,
            },
        }
    }

    /// `time_before`: the stamp of the nearest earlier record of the same process.
    fn time_before(&self, earlier: &Earlier, header: &Header) -> (Option<String>, bool) {
        for &(_, text) in earlier.iter().rev() {
            let other = self.tables.grammar.parse(text, self.cfg.year.as_ref());
            let same = !truthy(&header.pid) || !truthy(&other.pid) || other.pid == header.pid;
            if other.timestamp.is_some() && same {
                return (other.timestamp, other.yearless);
            }
        }
        (None, false)
    }

    /// `CauseFinder.events`: neighbour errors on this line and the lines before it since its
    /// process's previous finding: (line, family, code, meaning, pid, timestamp).
    fn events(
        &self,
        state: &State,
        blk: &BlockView,
        c: &Cand,
        text: &str,
        earlier: &Earlier,
        process: &Option<String>,
    ) -> Vec<Event> {
        let never = -(1i64 << 62);
        let (after_line, after_offset) = state.last_seen.get(process).copied().unwrap_or((never, never));
        let (start, stop) = (c.2, c.3);
        let span = CAUSE_LINES.min(c.0 - after_line - 1);
        // the bytes since the previous finding when that is close, else a few lines back
        let near = c.1 - after_offset;
        let from =
            if (0..=NEAR_BYTES).contains(&near) && start as i64 - near >= start.saturating_sub(HISTORY_BYTES) as i64 {
                (start as i64 - near) as usize
            } else {
                let floor = start.saturating_sub(HISTORY_BYTES);
                let limit = span.min(c.0 - blk.first_line_no);
                if limit > 0 {
                    begin_back(blk.buf, start, floor, limit as usize)
                } else {
                    start
                }
            };
        let families = self.families_between(state, blk, c, from, stop);
        if families == 0 {
            return Vec::new();
        }
        let back = earlier.len().saturating_sub(CAUSE_LINES as usize);
        let mut lines: Vec<(i64, &str)> = earlier[back..]
            .iter()
            .filter(|(n, _)| *n > after_line)
            .copied()
            .collect();
        lines.push((c.0, text));
        let mut out = Vec::new();
        for (n, t) in lines {
            let found = self.neighbours(t.as_bytes(), families);
            if !found.is_empty() {
                let other = self.tables.grammar.parse(t, self.cfg.year.as_ref());
                for (k, code, meaning) in found {
                    out.push((n, k, code, meaning, other.pid.clone(), other.timestamp.clone()));
                }
            }
        }
        out
    }

    /// `Engine._line`: a finding per hit, each in its own context.
    #[allow(clippy::too_many_arguments)]
    fn findings<H: Host>(
        &self,
        state: &mut State,
        host: &mut H,
        blk: &BlockView,
        c: &Cand,
        text: &str,
        raw: &[u8],
        earlier: &Earlier,
        link: Vec<(String, String)>,
        hits: &[codes::Hit],
        recs: &mut Option<Vec<Header>>,
    ) -> Result<Vec<FindingRec>, HostError> {
        if hits.is_empty() {
            return Ok(Vec::new());
        }
        let t = self.tables;
        let cfg = self.cfg;
        let year = cfg.year.as_ref();
        let mut headers = self.records(recs, text).to_vec();
        let pod = cfg.layout.pod.clone();
        if truthy(&pod) {
            for h in &mut headers {
                h.pod.clone_from(&pod);
            }
        }
        let process = cfg.process(&or(&headers[0].pid, &cfg.layout.pid));
        let events = self.events(state, blk, c, text, earlier, &process);
        let versions: Vec<(String, String)> = if t.uses_versions {
            let mut v: Vec<(String, String)> = state
                .recent
                .get(&process)
                .map(|mine| {
                    mine.iter()
                        .filter(|(k, _, _)| t.version_kind[*k])
                        .map(|(k, v, _)| (t.facts.ids[*k].clone(), v.clone()))
                        .collect()
                })
                .unwrap_or_default();
            v.sort();
            v
        } else {
            Vec::new()
        };
        let mut out = Vec::new();
        for &(value, start, _end, form, in_cluster) in hits {
            let header = header_for(&headers, start);
            let ctx = t.apis.resolve(&t.grammar, text, header, start, earlier, year);
            if form == codes::GENERIC && !self.keeps(state, &ctx, text, c, header) {
                continue; // the graph engine's own failure, not LLM-DataDist's
            }
            if value != GENERIC_FAILED {
                if state.generic.len() == ECHO_MEMORY {
                    state.generic.pop_front();
                }
                state.generic.push_back((c.0, c.1, header.clone()));
                state.last_seen.insert(process.clone(), (c.0, c.1 + raw.len() as i64));
            }
            let rule = self.rule(host, value, ctx.api.as_deref(), in_cluster, earlier, text, &versions)?;
            let causes = causes(&events, header, c.0, value, &t.family_info);
            let when = self.time_of(state, header, earlier).zoned(host)?;
            let code = format!("0x{value:08X}");
            let clipped = clip(text, start);
            let print = match t.masks.lock() {
                Ok(mut m) => {
                    let template = m.template(&clipped);
                    m.fingerprint(&code, ctx.api.as_deref(), &rule.rule, &template)
                }
                // a panic while another thread held them (as before: an empty template)
                Err(_) => fingerprint(&code, ctx.api.as_deref(), &rule.rule, ""),
            };
            out.push(FindingRec {
                line: c.0,
                timestamp: when.timestamp,
                code,
                api: ctx.api,
                api_evidence: ctx.evidence,
                api_line: ctx.line,
                rule,
                text: clipped,
                form: FORMS[usize::from(form)],
                pid: or(&header.pid, &cfg.layout.pid),
                tid: header.tid.clone(),
                in_cluster_results: in_cluster,
                year_guessed: when.guessed,
                causes,
                time_hint: when.hint,
                fingerprint: print,
                time_source: when.source,
                link: link.clone(),
            });
        }
        Ok(out)
    }

    /// `GenericPolicy.keeps`: whether a generic hit is LLM-DataDist's failure.
    fn keeps(&self, state: &State, ctx: &Context, text: &str, c: &Cand, header: &Header) -> bool {
        let t = self.tables;
        if let Some(api) = ctx.api.as_deref().filter(|a| !a.is_empty())
            && ctx.evidence != Some("nearby")
            && !t.apis.shared(api)
        {
            return true;
        }
        if t.apis.mentions_llm(text) {
            return true;
        }
        // an echo: a specific code just before, in the same thread, a moment earlier
        for (seen_line, seen_offset, seen) in state.generic.iter().rev() {
            if c.0 - seen_line > API_LOOKBACK_LINES as i64 || c.1 - seen_offset > HISTORY_BYTES as i64 {
                return false;
            }
            if same_thread(header, seen) {
                let t0 = seen.timestamp.as_deref().and_then(parse_ts);
                let t1 = header.timestamp.as_deref().and_then(parse_ts);
                return !matches!((t0, t1), (Some(a), Some(b)) if (b - a).abs() > ECHO_MICROS);
            }
        }
        false
    }

    /// `Engine._rule_for`: the rule of a code in its context, remembered where it read no nearby text.
    #[allow(clippy::too_many_arguments)]
    fn rule<H: Host>(
        &self,
        host: &mut H,
        value: u32,
        api: Option<&str>,
        in_cluster: bool,
        earlier: &Earlier,
        text: &str,
        versions: &[(String, String)],
    ) -> Result<Arc<RuleOut>, HostError> {
        let found = self.tables.rules.lock().ok().and_then(|m| {
            m.get(&(value, in_cluster))?
                .iter()
                .find(|(a, v, _)| a.as_deref() == api && v.as_slice() == versions)
                .map(|(_, _, r)| r.clone())
        });
        if let Some(found) = found {
            return Ok(found);
        }
        // the burst a `nearby:` rule looks at
        let back = earlier.len().saturating_sub(API_LOOKBACK_LINES);
        let mut nearby = String::new();
        for (_, t) in &earlier[back..] {
            if !nearby.is_empty() {
                nearby.push('\n');
            }
            nearby.push_str(t);
        }
        nearby.push('\n');
        nearby.push_str(text);
        let (out, asked) = host.rule(value, api, in_cluster, &nearby, versions)?;
        let out = Arc::new(out);
        if !asked && let Ok(mut memo) = self.tables.rules.lock() {
            if memo.len() >= RULE_MEMO {
                memo.clear();
            }
            let remembered = memo.entry((value, in_cluster)).or_default();
            if remembered.len() < 64 {
                remembered.push((api.map(str::to_string), versions.to_vec(), out.clone()));
            }
        }
        Ok(out)
    }
}

/// A neighbour error before a finding: (line, family index, code, meaning, pid, timestamp).
type Event = (i64, usize, String, String, Option<String>, Option<String>);

/// `causes.causes`: the events that may have caused a finding.
fn causes(
    events: &[Event],
    header: &Header,
    line_no: i64,
    value: u32,
    families: &[FamilyInfo],
) -> Vec<(i64, String, String, String)> {
    let mut out = Vec::new();
    let own = value.to_string();
    for (n, k, code, meaning, pid, stamp) in events {
        if truthy(&header.pid) && truthy(pid) && pid != &header.pid {
            continue;
        }
        if *n == line_no && *code == own {
            continue;
        }
        if let (Some(ts), Some(st)) = (header.timestamp.as_deref(), stamp.as_deref())
            && let (Some(t0), Some(t1)) = (parse_ts(st), parse_ts(ts))
            && !(0..=CAUSE_MICROS).contains(&(t1 - t0))
        {
            continue;
        }
        out.push((*n, families[*k].id.clone(), code.clone(), meaning.clone()));
    }
    out
}

/// `_clip`: a long line cut to TEXT_WIDTH characters around the hit.
fn clip(text: &str, at: usize) -> String {
    let n = text.len(); // printable ASCII: characters are bytes
    if n <= TEXT_WIDTH {
        return text.to_string();
    }
    let begin = (at as i64 - (TEXT_WIDTH / 3) as i64)
        .min((n - TEXT_WIDTH) as i64)
        .max(0) as usize;
    let mut out = String::with_capacity(TEXT_WIDTH + 6);
    if begin > 0 {
        out.push('…');
    }
    out.push_str(&text[begin..begin + TEXT_WIDTH]);
    if begin + TEXT_WIDTH < n {
        out.push('…');
    }
    out
}
