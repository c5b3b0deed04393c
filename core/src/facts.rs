//! Link facts in the core: `knowledge.linkfacts.LinkFactMatcher.find_plainly` on the bytes of a
//! line, compiled from the same table (`analyzer/data/linkfacts.yaml`) that Python hands over.
//!
//! Generic over the table: one row is (kind, literals, patterns, values), nothing here knows a
//! kind. A pattern is compiled to Rust's `regex` on bytes with ASCII classes, and only lines of
//! printable ASCII (and tabs) are answered here: on those, `\d`, `\w`, `\s`, `\b` and `(?i)` mean
//! the same in Python's `regex` and in Rust's. A pattern Rust cannot compile or might read
//! otherwise (look-around, possessive repeats, verbose mode, class set operations, ...) makes its
//! kind Python's: a line holding one of that kind's literals is then handed back whole, so the
//! answers never differ, only the speed.

use foldhash::HashMap;
use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, Input, MatchKind};
use regex::bytes::Regex;
use regex_automata::{Anchored, Input as At, meta};
use regex_syntax::hir::literal::{ExtractKind, Extractor};
use regex_syntax::hir::{Hir, HirKind};

/// One row of the table, as Python hands it over.
pub type Row = (String, Vec<String>, Vec<String>, Vec<(String, String)>);

struct Kind {
    patterns: Vec<Pattern>,
    values: HashMap<Vec<u8>, String>, // lower-cased printed value -> the normal one
    portable: bool,
}

/// One pattern of a kind: its search, and where its matches may start. Its regexes are compiled
/// when first searched (a table's ~40 take ~20 ms to build, the cost of a one-line scan's whole
/// start-up share; most runs search few of them). Its text was parsed when the table was built,
/// so only a regex past the engine's size limit can still fail: that pattern's lines are then
/// Python's, as a kind Rust cannot read is (answers alike, only not named in `not_portable`).
struct Pattern {
    text: String,
    re: OnceLock<Option<Regex>>, // the search of a whole line (no `Start`, or a line of many starts)
}

/// The anchored searches of every pattern (`Start`), with the table of where they may start:
/// built on the first line that holds a kind's literal (finding a pattern's prefixes takes
/// longer than parsing it, and a scan whose lines hold no fact never needs them).
struct Anchors {
    of: Vec<Vec<Option<Start>>>, // per kind, per pattern
    kind_bits: Vec<u64>,         // per kind: the bits of its patterns' `Start`s
    starts: Box<Starts>,
}

impl Anchors {
    fn new(kinds: &[Kind]) -> Anchors {
        let mut n_starts = 0u32;
        let mut kind_bits = Vec::with_capacity(kinds.len());
        let of: Vec<Vec<Option<Start>>> = kinds
            .iter()
            .map(|kind| {
                let mut bits = 0u64;
                let starts = kind
                    .patterns
                    .iter()
                    .map(|pattern| {
                        // the first 64 patterns with prefixes have a bit each; the others search whole lines
                        let bit = 1u64.checked_shl(n_starts).unwrap_or(0);
                        let start = (bit != 0).then(|| Start::new(&pattern.text, bit)).flatten();
                        if start.is_some() {
                            n_starts += 1;
                            bits |= bit;
                        }
                        start
                    })
                    .collect();
                kind_bits.push(bits);
                starts
            })
            .collect();
        let starts = Box::new(Starts::new(of.iter().flatten().flatten()));
        Anchors { of, kind_bits, starts }
    }
}

impl Pattern {
    fn re(&self) -> Option<&Regex> {
        self.re.get_or_init(|| Regex::new(&self.text).ok()).as_ref()
    }
}

/// An anchored search of a pattern from the places its matches may start. regex-syntax says
/// which literals every match of the pattern begins with (its prefixes: finite, none empty).
/// Case-folded and cut to `START_BYTES`, they still begin every match; so the pattern's leftmost
/// match, the one `search` (Python) and `captures` (Rust) find, is the anchored match at the
/// first place one of them begins where there is a match at all. Cheaper than searching the
/// whole line: most lines have a few such places, and an anchored search that fails stops within
/// a few bytes.
struct Start {
    text: String,
    re: OnceLock<Option<meta::Regex>>, // compiled on first search, as `Pattern::re`
    bit: u64,                          // its bit in `Starts`
    prefixes: Vec<Vec<u8>>,            // lower-cased
    slots: usize,                      // the slots to ask for: up to the last group read
    value: Option<usize>,              // the index of each group read
    ip: Option<usize>,
    port: Option<usize>,
}

/// Up to this many bytes of a pattern's prefix literals are looked for.
const START_BYTES: usize = 8;
/// Up to this many places a line's patterns may start; a line with more is searched whole.
const MAX_STARTS: usize = 64;

impl Start {
    /// The anchored search of `pattern` (with its `(?-u)`), its bit `bit`; None when its prefixes
    /// are not a finite set of non-empty literals, or it reads many groups.
    fn new(pattern: &str, bit: u64) -> Option<Start> {
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(pattern)
            .ok()?;
        let seq = Extractor::new()
            .kind(ExtractKind::Prefix)
            .limit_class(64)
            // a case-free word of 12 letters is 4,096 literals; past 256 the extractor keeps
            // their first bytes (still prefixes of every match), which builds the table ~7x faster
            .limit_total(256)
            .extract(&hir);
        let mut prefixes: Vec<Vec<u8>> = seq
            .literals()?
            .iter()
            .map(|l| l.as_bytes()[..l.len().min(START_BYTES)].to_ascii_lowercase())
            .collect();
        if prefixes.is_empty() || prefixes.iter().any(|l| l.is_empty()) {
            return None;
        }
        prefixes.sort();
        prefixes.dedup();
        // the compiled regex numbers its groups as the parsed one does
        let group = |name: &str| group_index(&hir, name);
        let (value, ip, port) = (group("value"), group("ip"), group("port"));
        let slots = 2 * (1 + [value, ip, port].into_iter().flatten().max().unwrap_or(0));
        (slots <= SLOTS).then_some(Start {
            text: pattern.to_string(),
            re: OnceLock::new(),
            bit,
            prefixes,
            slots,
            value,
            ip,
            port,
        })
    }

    fn re(&self) -> Option<&meta::Regex> {
        self.re
            .get_or_init(|| {
                // as `regex::bytes::Regex` builds it
                meta::Regex::builder()
                    .syntax(regex_automata::util::syntax::Config::new().utf8(false))
                    .configure(meta::Config::new().utf8_empty(false))
                    .build(&self.text)
                    .ok()
            })
            .as_ref()
    }

    /// The value of the leftmost match (None: no match), given the places `starts` where the
    /// pattern's prefixes may begin, in order; Err when the regex did not compile.
    fn first(&self, line: &[u8], starts: &[(u32, u64)]) -> Result<Option<Vec<u8>>, ()> {
        for &(at, bits) in starts {
            if bits & self.bit == 0 || !self.begins(&line[at as usize..]) {
                continue;
            }
            let mut slots = [None; SLOTS];
            let slots = &mut slots[..self.slots];
            let input = At::new(line).span(at as usize..line.len()).anchored(Anchored::Yes);
            if self.re().ok_or(())?.search_slots(&input, slots).is_none() {
                continue;
            }
            let span = |group: Option<usize>| match group.map(|g| (slots[2 * g], slots[2 * g + 1])) {
                Some((Some(a), Some(b))) => Some(&line[a.get()..b.get()]),
                _ => None,
            };
            return Ok(Some(value_of(span(self.value), span(self.ip), span(self.port))));
        }
        Ok(None)
    }
}

impl Start {
    /// Whether `rest` begins with one of the prefixes (in either case): `Starts` only looked at
    /// three bytes of any of them, and an anchored search costs far more than this test (every
    /// match begins with a prefix, so a place without one has no match).
    #[inline]
    fn begins(&self, rest: &[u8]) -> bool {
        self.prefixes
            .iter()
            .any(|p| rest.len() >= p.len() && rest[..p.len()].eq_ignore_ascii_case(p))
    }
}

const SLOTS: usize = 16;

/// The index of the group named `name` in a parsed pattern, as the compiled regex numbers it.
fn group_index(hir: &Hir, name: &str) -> Option<usize> {
    match hir.kind() {
        HirKind::Capture(c) if c.name.as_deref() == Some(name) => Some(c.index as usize),
        HirKind::Capture(c) => group_index(&c.sub, name),
        HirKind::Repetition(r) => group_index(&r.sub, name),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs.iter().find_map(|h| group_index(h, name)),
        _ => None,
    }
}

/// Whether `pattern` parses as `regex::bytes::Regex` parses it, or the last line of why not.
fn parse_error(pattern: &str) -> Option<String> {
    let parsed = regex_syntax::ParserBuilder::new().utf8(false).build().parse(pattern);
    parsed
        .err()
        .map(|e| e.to_string().lines().last().unwrap_or("").trim().to_string())
}

/// `FactPattern.find`'s value of a match: its `value` group, else `ip`:`port` when both are
/// there and not empty, else nothing (empty).
fn value_of(value: Option<&[u8]>, ip: Option<&[u8]>, port: Option<&[u8]>) -> Vec<u8> {
    match (value, ip, port) {
        (Some(v), _, _) => v.to_vec(),
        (None, Some(ip), Some(port)) if !ip.is_empty() && !port.is_empty() => [ip, b":", port].concat(),
        _ => Vec::new(),
    }
}

/// Where the anchored patterns' matches may start: per byte of a 3-byte window (257: past the
/// line's end), the patterns one of whose prefixes allows it, in either case. A window allowed
/// by all three is a place to try (a loose test: the anchored search decides).
struct Starts {
    table: [[u64; 257]; 3],
}

impl Starts {
    fn new<'a>(all: impl Iterator<Item = &'a Start>) -> Starts {
        let mut table = [[0u64; 257]; 3];
        for start in all {
            for prefix in &start.prefixes {
                for (k, row) in table.iter_mut().enumerate() {
                    match prefix.get(k) {
                        Some(&c) => {
                            row[c.to_ascii_lowercase() as usize] |= start.bit;
                            row[c.to_ascii_uppercase() as usize] |= start.bit;
                        }
                        None => row.iter_mut().for_each(|bits| *bits |= start.bit),
                    }
                }
            }
        }
        Starts { table }
    }

    /// The places in `line` where a pattern of `want` may start, with the bits of those
    /// patterns, in order; None when there are more than `MAX_STARTS`.
    fn find(&self, line: &[u8], want: u64, out: &mut [(u32, u64); MAX_STARTS]) -> Option<usize> {
        let [t0, t1, t2] = &self.table;
        let mut n = 0;
        let mut place = |i: usize, bits: u64| -> Option<()> {
            if bits != 0 {
                *out.get_mut(n)? = (i as u32, bits);
                n += 1;
            }
            Some(())
        };
        // the windows wholly inside the line, without a bounds test a byte; then the last two,
        // whose missing bytes read as 256 (past the end)
        for (i, w) in line.windows(3).enumerate() {
            place(i, t0[w[0] as usize] & t1[w[1] as usize] & t2[w[2] as usize] & want)?;
        }
        let tail = line.len().saturating_sub(2);
        for (i, &b) in line.iter().enumerate().skip(tail) {
            let next = line.get(i + 1).map_or(256, |&b| b as usize);
            place(i, t0[b as usize] & t1[next] & t2[256] & want)?;
        }
        Some(n)
    }
}

/// The compiled table.
pub struct FactTable {
    pub ids: Vec<String>,
    kinds: Vec<Kind>,
    ac: Option<AhoCorasick>,
    lit_kinds: Vec<Vec<usize>>, // per literal (AC pattern id): the kinds that list it
    anchors: OnceLock<Anchors>,
    pub not_portable: Vec<(String, String)>, // (kind, why)
}

/// What the core says of one line.
pub enum Answer {
    /// Python decides (a line that is not plain ASCII, or a literal of a kind the core cannot run).
    Python,
    /// The facts, in the order of the kinds: (kind index, value).
    Facts(Vec<(usize, String)>),
}

/// Why Rust's reading of `pattern` might differ from Python's `regex`, or None when it is the same
/// on a line of printable ASCII.
pub fn unportable(pattern: &str) -> Option<&'static str> {
    // Python folds these to ASCII letters under (?i); on ASCII classes Rust does not.
    if pattern.contains(['\u{17F}', '\u{212A}', '\u{130}', '\u{131}']) {
        return Some("a letter that case-folds to ASCII");
    }
    for (token, why) in [
        ("(?=", "look-ahead"),
        ("(?!", "look-ahead"),
        ("(?<=", "look-behind"),
        ("(?<!", "look-behind"),
        ("(?>", "an atomic group"),
        ("*+", "a possessive repeat"),
        ("++", "a possessive repeat"),
        ("?+", "a possessive repeat"),
        ("}+", "a possessive repeat"),
        ("&&", "a class set operation"),
        ("--", "a class set operation"),
        ("~~", "a class set operation"),
        ("(?#", "a comment group"),
    ] {
        if pattern.contains(token) {
            return Some(why);
        }
    }
    // A `[` inside a class: Python reads a bracket (and warns), Rust opens a nested class
    let mut chars = pattern.chars();
    let mut in_class = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '[' if in_class => return Some("a nested class"),
            '[' => {
                in_class = true;
                // a `]` or `^]` right after the opening bracket is a member, not the end
                let rest = chars.as_str();
                let skip = if rest.starts_with("^]") {
                    2
                } else {
                    usize::from(rest.starts_with(']'))
                };
                for _ in 0..skip {
                    chars.next();
                }
            }
            ']' if in_class => in_class = false,
            _ => {}
        }
    }
    // Inline flags: Rust's `x` ignores spaces inside classes, `U` swaps greediness; `u` would
    // bring back Unicode classes.
    let bytes = pattern.as_bytes();
    let mut i = 0;
    while let Some(at) = pattern[i..].find("(?") {
        let mut j = i + at + 2;
        while j < bytes.len() && (bytes[j].is_ascii_alphabetic() || bytes[j] == b'-') {
            if matches!(bytes[j], b'x' | b'U' | b'u' | b'R') {
                return Some("an inline flag the core reads otherwise");
            }
            j += 1;
        }
        i = j;
    }
    None
}

impl FactTable {
    pub fn new(rows: Vec<Row>) -> Result<FactTable, String> {
        let mut ids = Vec::new();
        let mut kinds = Vec::new();
        let mut not_portable = Vec::new();
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut lit_kinds: Vec<Vec<usize>> = Vec::new();
        for (k, (id, lits, patterns, values)) in rows.into_iter().enumerate() {
            let mut texts: Vec<String> = Vec::new();
            let mut portable = true;
            for p in &patterns {
                if let Some(why) = unportable(p) {
                    not_portable.push((id.clone(), format!("pattern {p:?}: {why}")));
                    portable = false;
                    break;
                }
                let text = format!("(?-u){p}");
                match parse_error(&text) {
                    None => texts.push(text),
                    Some(first) => {
                        not_portable.push((id.clone(), format!("pattern {p:?}: {first}")));
                        portable = false;
                        break;
                    }
                }
            }
            add_literals(&mut literals, &mut lit_kinds, lits, k)
                .map_err(|()| format!("fact {id}: an empty literal"))?;
            if !portable {
                texts.clear();
            }
            let values = values.into_iter().map(|(a, b)| (a.into_bytes(), b)).collect();
            let patterns = texts
                .into_iter()
                .map(|text| Pattern {
                    text,
                    re: OnceLock::new(),
                })
                .collect();
            ids.push(id);
            kinds.push(Kind {
                patterns,
                values,
                portable,
            });
        }
        let lit_kinds = with_prefixes(&literals, &lit_kinds);
        let ac = leftmost_longest(&literals)?;
        Ok(FactTable {
            ids,
            kinds,
            ac,
            lit_kinds,
            anchors: OnceLock::new(),
            not_portable,
        })
    }

    /// Per pattern, in order: whether it is searched from the places it may start (for the tests).
    #[allow(dead_code)] // used by tests/props.rs
    pub fn anchored(&self) -> Vec<bool> {
        self.anchors().of.iter().flatten().map(Option::is_some).collect()
    }

    fn anchors(&self) -> &Anchors {
        self.anchors.get_or_init(|| Anchors::new(&self.kinds))
    }

    /// The facts of one raw line (no newline), as `find_plainly(decode(raw))` gives them.
    pub fn find(&self, raw: &[u8]) -> Answer {
        // decode() drops trailing CRs; anything else but printable ASCII and tabs goes to Python
        // (NUL padding, colour escapes, other controls, UTF-8 and invalid bytes).
        let line = without_cr(raw);
        if !printable(line) {
            return Answer::Python;
        }
        let Some(ac) = &self.ac else {
            return Answer::Facts(Vec::new());
        };
        let (mut small, mut large) = ([false; 64], Vec::new());
        let present = flags(&mut small, &mut large, self.kinds.len()); // the kinds with a literal here
        let mut python = false;
        for_each_start(ac, line, |m| {
            for &k in &self.lit_kinds[m] {
                if !self.kinds[k].portable {
                    python = true;
                    return false;
                }
                present[k] = true;
            }
            true
        });
        if python {
            return Answer::Python;
        }
        let mut out = Vec::new();
        if !present.contains(&true) {
            return Answer::Facts(out);
        }
        // where the present kinds' patterns may start (None: too many places, search whole lines)
        let anchors = self.anchors();
        let want = present
            .iter()
            .zip(&anchors.kind_bits)
            .filter(|(here, _)| **here)
            .fold(0, |m, (_, bits)| m | bits);
        let mut places = [(0u32, 0u64); MAX_STARTS];
        let starts = if want == 0 {
            Some(0)
        } else {
            anchors.starts.find(line, want, &mut places)
        };
        for (k, kind) in self.kinds.iter().enumerate() {
            if !present[k] {
                continue;
            }
            // FactPattern.find: the first spelling whose `value` (else `ip`:`port`) is not empty.
            for (pattern, start) in kind.patterns.iter().zip(&anchors.of[k]) {
                let value = match (start, starts) {
                    (Some(start), Some(n)) => match start.first(line, &places[..n]) {
                        Ok(value) => value,
                        Err(()) => return Answer::Python,
                    },
                    _ => match pattern.re() {
                        Some(re) => re.captures(line).map(|c| {
                            let group = |name: &str| c.name(name).map(|m| m.as_bytes());
                            value_of(group("value"), group("ip"), group("port"))
                        }),
                        None => return Answer::Python,
                    },
                };
                let Some(value) = value.filter(|v| !v.is_empty()) else {
                    continue;
                };
                let normal = match kind.values.get(&value.to_ascii_lowercase()) {
                    Some(v) => v.clone(),
                    // printable ASCII: valid UTF-8
                    None => String::from_utf8(value).unwrap_or_default(),
                };
                out.push((k, normal));
                break;
            }
        }
        Answer::Facts(out)
    }
}

/// Row `row`'s literals into one table of unique literals, each with the rows that list it; an
/// empty literal is refused.
pub(crate) fn add_literals(
    literals: &mut Vec<Vec<u8>>,
    rows_of: &mut Vec<Vec<usize>>,
    lits: Vec<String>,
    row: usize,
) -> Result<(), ()> {
    for lit in lits {
        let lit = lit.into_bytes();
        if lit.is_empty() {
            return Err(());
        }
        match literals.iter().position(|l| *l == lit) {
            Some(i) => rows_of[i].push(row),
            None => {
                literals.push(lit);
                rows_of.push(vec![row]);
            }
        }
    }
    Ok(())
}

/// Per literal, the rows of every literal that is a prefix of it (itself too): a leftmost-longest
/// match at a start also says that each of those is there.
pub(crate) fn with_prefixes(literals: &[Vec<u8>], rows_of: &[Vec<usize>]) -> Vec<Vec<usize>> {
    literals
        .iter()
        .map(|l| {
            let mut rows: Vec<usize> = (0..literals.len())
                .filter(|&j| l.starts_with(&literals[j]))
                .flat_map(|j| rows_of[j].iter().copied())
                .collect();
            rows.sort_unstable();
            rows.dedup();
            rows
        })
        .collect()
}

/// A leftmost-longest automaton of the literals (None: there are none). Its prefilter skips to
/// the few places a literal may start, unlike an overlapping search, which steps every byte.
pub(crate) fn leftmost_longest(literals: &[Vec<u8>]) -> Result<Option<AhoCorasick>, String> {
    if literals.is_empty() {
        return Ok(None);
    }
    AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostLongest)
        .build(literals)
        .map(Some)
        .map_err(|e| e.to_string())
}

/// `f(literal)` for the longest literal at every start where one matches, left to right (each
/// search resumes one byte after the last match's start), until `f` says false. With
/// `with_prefixes`, every literal in the line is seen.
pub(crate) fn for_each_start(ac: &AhoCorasick, line: &[u8], mut f: impl FnMut(usize) -> bool) {
    let mut pos = 0;
    while pos < line.len() {
        let Some(m) = ac.find(Input::new(line).span(pos..line.len())) else {
            break;
        };
        if !f(m.pattern().as_usize()) {
            break;
        }
        pos = m.start() + 1;
    }
}

/// Whether every byte is printable ASCII or a tab (the lines the core answers).
pub fn printable(line: &[u8]) -> bool {
    // branch-free, so that it vectorises: a byte outside 0x20..0x7F that is not a tab
    line.iter().fold(0u8, |acc, &b| {
        acc | ((b.wrapping_sub(0x20) >= 0x5F) & (b != b'\t')) as u8
    }) == 0
}

/// `n` flags, all false: in `small` when they fit, else in `large` (a line of a table of up to
/// 64 rows allocates nothing for them; the allocation was ~30 ns of a fact line's ~1.3 us).
fn flags<'a>(small: &'a mut [bool; 64], large: &'a mut Vec<bool>, n: usize) -> &'a mut [bool] {
    if n <= small.len() {
        &mut small[..n]
    } else {
        large.resize(n, false);
        large
    }
}

/// The line as `decode` leaves it when it is plain ASCII: without its trailing CRs.
pub fn without_cr(raw: &[u8]) -> &[u8] {
    let mut end = raw.len();
    while end > 0 && raw[end - 1] == b'\r' {
        end -= 1;
    }
    &raw[..end]
}

/// One proof of recovery, as Python hands it over: (id, literals, patterns).
pub type ProofRow = (String, Vec<String>, Vec<String>);

struct Proof {
    patterns: Vec<String>,
    // compiled on first need (a line holding one of its literals): a bounded repeat such as
    // `{0,1023}` takes Rust's regex tens of milliseconds to build, the cost of a whole short scan
    regexes: OnceLock<Option<Vec<Regex>>>, // None: one of them does not compile (Python's)
    portable: bool,
}

impl Proof {
    fn regexes(&self) -> Option<&Vec<Regex>> {
        self.regexes
            .get_or_init(|| {
                self.patterns
                    .iter()
                    .map(|p| Regex::new(&format!("(?-u){p}")).ok())
                    .collect::<Option<Vec<Regex>>>()
            })
            .as_ref()
    }
}

/// The proofs of `recovery.yaml` (`RecoveryTable.core_table()`): only asked whether a line may be
/// one. A line that holds no proof's literal, or holds some but matches none of those proofs'
/// patterns, is no proof (`RecoveryTable.find` says None); any other line is Python's.
pub struct ProofTable {
    proofs: Vec<Proof>,
    ac: Option<AhoCorasick>,
    lit_proofs: Vec<Vec<usize>>, // per literal: the proofs that list it
}

impl ProofTable {
    pub fn new(rows: Vec<ProofRow>) -> Result<ProofTable, String> {
        let mut proofs = Vec::new();
        let mut literals: Vec<Vec<u8>> = Vec::new();
        let mut lit_proofs: Vec<Vec<usize>> = Vec::new();
        for (k, (id, lits, patterns)) in rows.into_iter().enumerate() {
            let portable = patterns.iter().all(|p| unportable(p).is_none());
            add_literals(&mut literals, &mut lit_proofs, lits, k)
                .map_err(|()| format!("proof {id}: an empty literal"))?;
            proofs.push(Proof {
                patterns,
                regexes: OnceLock::new(),
                portable,
            });
        }
        let lit_proofs = with_prefixes(&literals, &lit_proofs);
        let ac = leftmost_longest(&literals)?;
        Ok(ProofTable { proofs, ac, lit_proofs })
    }

    /// Whether any proof's literal is in `raw` (`RecoveryTable.maybe_in`, on any bytes).
    pub fn any_literal(&self, raw: &[u8]) -> bool {
        self.ac.as_ref().is_some_and(|ac| ac.is_match(raw))
    }

    /// Whether the line (printable ASCII, no CR at the end: what `FactTable::find` answered) may
    /// be a proof: false only when `RecoveryTable.find` would say None.
    pub fn maybe(&self, line: &[u8]) -> bool {
        let Some(ac) = &self.ac else { return false };
        let (mut small, mut large) = ([false; 64], Vec::new());
        let present = flags(&mut small, &mut large, self.proofs.len()); // the proofs with a literal here
        let mut any = false;
        for_each_start(ac, line, |m| {
            for &k in &self.lit_proofs[m] {
                present[k] = true;
                any = true;
            }
            true
        });
        any && self.proofs.iter().zip(present.iter()).any(|(p, &here)| {
            here && (!p.portable || p.regexes().is_none_or(|res| res.iter().any(|re| re.is_match(line))))
        })
    }
}

/// The plog grammar (`core.headers.PLOG_PID_PATTERN`) whose pid `plog_pid` reads by hand.
///
/// In any match of `^[ \t]*(?:` this `)`, nothing before `\(` can match a `(` (blanks, `[`, the
/// level's letters and `0`, `]`, `\s`, `[\w-]`), so `\(` is the line's first `(`; after it `\s*`
/// must take every blank (a digit follows) and `\d+` every digit (a `\s` or `,` follows). So the
/// pid group is the same in every match, whichever the engine picks: it is enough to know that
/// the line matches. Any other pattern is read with `Regex::captures`.
pub const PLOG_PATTERN: &str = concat!(
    r"\[?(?P<level>ERR[O0]R|WARNING|WARN|INFO|DEBUG|EVENT|TRACE|CRITICAL|FATAL)\]\s*",
    r"(?P<module>[A-Za-z_][\w-]*)\s*\(\s*(?P<pid>\d+)\s*,\s*(?P<pname>[^)]{0,256})\)\s*:\s*",
    r"(?P<date>\d{4}-\d\d-\d\d)[- T](?P<time>\d\d:\d\d:\d\d)(?:[.,](?P<ms>\d{1,3})(?:[.,](?P<us>\d{1,3}))?)?\s*",
    r"(?:\[(?P<file>[^\]\s:]+):(?P<fline>\d+)\]\s*)?",
);

/// The process id of a plog header at the start of a line (`core.headers.header_pid` where the
/// plog header matches): the pattern Python hands over, anchored after leading blanks.
pub struct PidHeader {
    pattern: String,
    re: OnceLock<Regex>, // compiled on the first fact line (~12 ms: `{0,256}`)
    // the pattern is `PLOG_PATTERN`: `is_match` (a DFA, ~0.1 us) and `plog_pid`, not `captures`
    // (a backtracker over `{0,256}`, ~0.6 us a line)
    by_hand: bool,
}

impl PidHeader {
    pub fn new(pattern: &str) -> Result<PidHeader, String> {
        if let Some(why) = unportable(pattern) {
            return Err(format!("the header pattern: {why}"));
        }
        let by_hand = pattern == PLOG_PATTERN;
        let pattern = format!("(?-u)^[ \t]*(?:{pattern})");
        // Parsed now, so a bad pattern is refused here; the automaton is built on first use.
        let ast = regex_syntax::ast::parse::Parser::new()
            .parse(&pattern)
            .map_err(|e| e.to_string())?;
        regex_syntax::hir::translate::TranslatorBuilder::new()
            .utf8(false)
            .build()
            .translate(&pattern, &ast)
            .map_err(|e| e.to_string())?;
        if !pattern.contains("(?P<pid>") {
            return Err("the header pattern has no `pid` group".into());
        }
        Ok(PidHeader {
            pattern,
            re: OnceLock::new(),
            by_hand,
        })
    }

    fn re(&self) -> &Regex {
        self.re
            .get_or_init(|| Regex::new(&self.pattern).expect("parsed when the table was built"))
    }

    /// Whether the pid is read by hand (the pattern is `PLOG_PATTERN`), not by `captures`.
    pub fn by_hand(&self) -> bool {
        self.by_hand
    }

    /// The pid, or None when the line has no plog header (Python then tries the other headers).
    pub fn pid<'a>(&self, line: &'a [u8]) -> Option<&'a [u8]> {
        if self.by_hand {
            if !self.re().is_match(line) {
                return None;
            }
            if let Some(pid) = plog_pid(line) {
                return Some(pid);
            }
            // unreachable on a match (see `PLOG_PATTERN`); the regex answers if it ever were
        }
        self.pid_by_regex(line)
    }

    /// The first header's timestamp as `core.headers.parse_header` writes it (`_plog_header`:
    /// `DATE` `T` `TIME`, then `.` and six digits, milliseconds and microseconds each padded
    /// with zeros, when the stamp prints a fraction). Only for `PLOG_PATTERN`, whose groups these
    /// are; None otherwise, or when the line has no plog header.
    pub fn stamp(&self, line: &[u8]) -> Option<String> {
        if !self.by_hand {
            return None;
        }
        let c = self.re().captures(line)?;
        let text = |name: &str| c.name(name).map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned());
        let (date, time) = (text("date")?, text("time")?);
        Some(match text("ms") {
            Some(ms) => {
                let us = text("us").unwrap_or_default();
                format!("{date}T{time}.{ms:0<3}{us:0<3}")
            }
            None => format!("{date}T{time}"),
        })
    }

    /// The pid as `Regex::captures` reads it (the reference `pid` must equal).
    pub fn pid_by_regex<'a>(&self, line: &'a [u8]) -> Option<&'a [u8]> {
        self.re()
            .captures(line)
            .and_then(|c| c.name("pid"))
            .map(|m| m.as_bytes())
    }
}

/// The pid of a line that `PLOG_PATTERN` matches: the digits after its first `(` and the blanks
/// (`\s`: ASCII, with the vertical tab) that follow it; None if there are none.
pub fn plog_pid(line: &[u8]) -> Option<&[u8]> {
    let open = memchr::memchr(b'(', line)?;
    let rest = &line[open + 1..];
    let start = rest
        .iter()
        .position(|&b| !matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' '))?;
    let digits = rest[start..].iter().take_while(|b| b.is_ascii_digit()).count();
    (digits > 0).then(|| &rest[start..start + digits])
}
