//! Code forms in the core: `detect.patterns.CodeMatcher.find` on a line of printable ASCII, with
//! the same hits (value, start, end, form, inside a result list). Python's patterns use
//! look-around, which Rust's `regex` does not have: each boundary is an explicit check here, in the
//! order Python's backtracking tries it. What is data comes from Python (the catalog's names, the
//! code family, the plog texts, the context patterns); the forms themselves are the code of
//! `patterns.py`, held equal to it by the twin tests on generated lines.

use foldhash::HashMap;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use memchr::memmem;
use std::sync::LazyLock;

/// A literal's searcher, built once (`memmem::find` builds one per call: ten a candidate line).
macro_rules! finder {
    ($lit:expr) => {{
        static FINDER: LazyLock<memmem::Finder<'static>> = LazyLock::new(|| memmem::Finder::new($lit));
        &*FINDER
    }};
}
use regex::bytes::Regex;

pub const GENERIC_FAILED: u32 = 0xFFFF_FFFF;

/// The forms, as indices into `patterns.FORMS`.
pub const HEX: u8 = 0;
pub const DECIMAL: u8 = 1;
pub const NAME: u8 = 2;
pub const REPR: u8 = 3;
pub const TEXT: u8 = 4;
pub const GENERIC: u8 = 5;

/// One hit: (value, start, end, form, inside a result list).
pub type Hit = (u32, usize, usize, u8, bool);

/// What Python hands over (all from the catalog and `patterns.py`).
pub struct Spec {
    pub names: Vec<(String, u32)>,
    pub family: (u32, u32), // base, size
    pub errno_pattern: Option<String>,
    pub errno_values: Vec<(String, u32)>,
    pub standalone: Vec<(String, u32)>,
    pub context: String,     // _DECIMAL_CONTEXT, `$`-anchored
    pub result_list: String, // _IN_RESULT_LIST, `$`-anchored
}

pub struct Codes {
    names: HashMap<Vec<u8>, u32>,
    family: (u32, u32),
    errno: Option<Regex>,
    errno_values: HashMap<Vec<u8>, u32>,
    standalone: Option<AhoCorasick>,
    standalone_values: Vec<u32>,
    context: Regex,
    result_list: Regex,
    list_opener: Regex,
}

fn word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn compile(pattern: &str) -> Result<Regex, String> {
    Regex::new(&format!("(?-u){pattern}")).map_err(|e| e.to_string().lines().last().unwrap_or("").trim().to_string())
}

impl Codes {
    pub fn new(spec: Spec) -> Result<Codes, String> {
        let errno = match &spec.errno_pattern {
            Some(p) => Some(compile(p)?),
            None => None,
        };
        let standalone = if spec.standalone.is_empty() {
            None
        } else {
            // a regex alternation of literals, leftmost-first: the same match at each position
            let texts: Vec<&str> = spec.standalone.iter().map(|(t, _)| t.as_str()).collect();
            Some(
                AhoCorasickBuilder::new()
                    .match_kind(MatchKind::LeftmostFirst)
                    .build(texts)
                    .map_err(|e| e.to_string())?,
            )
        };
        Ok(Codes {
            names: spec.names.into_iter().map(|(n, v)| (n.into_bytes(), v)).collect(),
            family: spec.family,
            errno,
            errno_values: spec
                .errno_values
                .into_iter()
                .map(|(t, v)| (t.into_bytes(), v))
                .collect(),
            standalone_values: spec.standalone.iter().map(|(_, v)| *v).collect(),
            standalone,
            context: compile(&spec.context)?,
            result_list: compile(&spec.result_list)?,
            list_opener: compile(r"[=:] ?[\[(]")?,
        })
    }

    /// Every hit on the line, one per value (the first in the order of the forms), by start; None
    /// when the line is not printable ASCII and tabs (Python's then).
    pub fn find(&self, line: &[u8]) -> Option<Vec<Hit>> {
        let odd = line.iter().fold(0u8, |acc, &b| {
            acc | ((b.wrapping_sub(0x20) >= 0x5F) & (b != b'\t')) as u8
        });
        if odd != 0 {
            return None;
        }
        let mut hits: Vec<Hit> = Vec::new();
        let lists = self.list_opener.is_match(line);
        let mut add = |value: u32, start: usize, end: usize, form: u8| {
            if !hits.iter().any(|h| h.0 == value) {
                let inside = lists && self.result_list.is_match(&line[start.saturating_sub(400)..start]);
                hits.push((value, start, end, form, inside));
            }
        };
        self.hex(line, &mut add);
        self.bare_hex(line, &mut add);
        if finder!(b"134327").find(line).is_some() {
            self.decimals(line, &mut add);
        }
        if finder!(b"LLM_").find(line).is_some() {
            self.names(line, &mut add);
        }
        self.texts(line, &mut add);
        let bare = finder!(b"ffffffff").find(line).is_some() || finder!(b"FFFFFFFF").find(line).is_some();
        if finder!(b"4294967295").find(line).is_some() || finder!(b"-1").find(line).is_some() || bare {
            self.generic_failed(line, bare, &mut add);
        }
        hits.sort_by_key(|h| h.1); // stable: starts are unique anyway
        Some(hits)
    }

    fn has_context(&self, line: &[u8], start: usize) -> bool {
        self.context.is_match(&line[start.saturating_sub(64)..start])
    }

    /// `_HEX`: (?<![0-9A-Za-z_])0[xX]5010[bB]0(hh)(?:[uU][lL]{0,2}|[lL]{1,2}[uU]?)?(?![0-9A-Za-z_])
    fn hex(&self, line: &[u8], add: &mut impl FnMut(u32, usize, usize, u8)) {
        if finder!(b"0x5010").find(line).is_none() && finder!(b"0X5010").find(line).is_none() {
            return;
        }
        let mut i = 0;
        while i + 10 <= line.len() {
            let at = &line[i..];
            if at[0] == b'0'
                && matches!(at[1], b'x' | b'X')
                && &at[2..6] == b"5010"
                && matches!(at[6], b'b' | b'B')
                && at[7] == b'0'
                && at[8].is_ascii_hexdigit()
                && at[9].is_ascii_hexdigit()
                && (i == 0 || !word(line[i - 1]))
                && let Some(end) = hex_end(line, i + 10)
            {
                add(0x5010_B000 + hex2(at[8], at[9]), i, end, HEX);
                i = end;
                continue;
            }
            i += 1;
        }
    }

    /// `_BARE_HEX` in a code context, when some `5010b0` is not the tail of a `0x5010b0`.
    fn bare_hex(&self, line: &[u8], add: &mut impl FnMut(u32, usize, usize, u8)) {
        let count = |f: &memmem::Finder| f.find_iter(line).count();
        if count(finder!(b"5010b0")) + count(finder!(b"5010B0")) <= count(finder!(b"x5010")) + count(finder!(b"X5010"))
        {
            return;
        }
        let mut i = 0;
        while i + 8 <= line.len() {
            let at = &line[i..];
            if &at[..4] == b"5010"
                && matches!(at[4], b'b' | b'B')
                && at[5] == b'0'
                && at[6].is_ascii_hexdigit()
                && at[7].is_ascii_hexdigit()
                && (i == 0 || !word(line[i - 1]))
                && (i + 8 == line.len() || !word(line[i + 8]))
            {
                if self.has_context(line, i) {
                    add(0x5010_B000 + hex2(at[6], at[7]), i, i + 8, HEX);
                }
                i += 8;
                continue;
            }
            i += 1;
        }
    }

    /// `_DECIMAL`: (?<![0-9A-Za-z_.\-])(134327\d{4})(?![0-9]|\.\d), in the family, in a code context.
    fn decimals(&self, line: &[u8], add: &mut impl FnMut(u32, usize, usize, u8)) {
        for i in finder!(b"134327").find_iter(line) {
            let end = i + 10;
            if end > line.len() || !line[i + 6..end].iter().all(u8::is_ascii_digit) {
                continue;
            }
            if !number_bounds(line, i, end) {
                continue;
            }
            let value: u32 = std::str::from_utf8(&line[i..end])
                .ok()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            let (base, size) = self.family;
            let in_family = base <= value && (value as u64) < base as u64 + size as u64;
            if !in_family || !self.has_context(line, i) {
                continue;
            }
            let repr = finder!(b"<LLMStatusCode.")
                .find(&line[i.saturating_sub(64)..i])
                .is_some();
            add(value, i, end, if repr { REPR } else { DECIMAL });
        }
    }

    /// `_NAME`: (?<![0-9A-Za-z_])LLM_[A-Z0-9_]+(?![0-9A-Za-z_]), a name of the catalog.
    fn names(&self, line: &[u8], add: &mut impl FnMut(u32, usize, usize, u8)) {
        let mut resume = 0;
        for i in finder!(b"LLM_").find_iter(line) {
            if i < resume || (i > 0 && word(line[i - 1])) {
                continue;
            }
            let mut end = i + 4;
            while end < line.len()
                && (line[end].is_ascii_uppercase() || line[end].is_ascii_digit() || line[end] == b'_')
            {
                end += 1;
            }
            if end == i + 4 || (end < line.len() && word(line[end])) {
                continue;
            }
            resume = end;
            if let Some(&value) = self.names.get(&line[i..end]) {
                let repr = i >= 15 && &line[i - 15..i] == b"<LLMStatusCode.";
                add(value, i, end, if repr { REPR } else { NAME });
            }
        }
    }

    fn texts(&self, line: &[u8], add: &mut impl FnMut(u32, usize, usize, u8)) {
        if let Some(re) = &self.errno
            && finder!(b"ErrorNo").find(line).is_some()
        {
            for c in re.captures_iter(line) {
                if let Some(g) = c.get(1)
                    && let Some(&value) = self.errno_values.get(g.as_bytes())
                {
                    add(value, g.start(), g.end(), TEXT);
                }
            }
        }
        if let Some(ac) = &self.standalone {
            for m in ac.find_iter(line) {
                add(self.standalone_values[m.pattern().as_usize()], m.start(), m.end(), TEXT);
            }
        }
    }

    /// `_generic_failed`: the first 4294967295 or -1 (then, when `bare`, ffffffff) after a code word.
    fn generic_failed(&self, line: &[u8], bare: bool, add: &mut impl FnMut(u32, usize, usize, u8)) {
        // _FAILED_DECIMAL: (?<![0-9A-Za-z_.\-])(?:4294967295|-1)(?![0-9]|\.\d)
        let mut starts: Vec<(usize, usize)> = finder!(b"4294967295").find_iter(line).map(|i| (i, i + 10)).collect();
        starts.extend(finder!(b"-1").find_iter(line).map(|i| (i, i + 2)));
        starts.sort_unstable();
        for (i, end) in starts {
            if !number_bounds(line, i, end) {
                continue;
            }
            if self.has_context(line, i) {
                add(GENERIC_FAILED, i, end, GENERIC);
                return;
            }
        }
        if !bare {
            return;
        }
        // _BARE_FAILED: (?<![0-9A-Za-z_])(?:ffffffff|FFFFFFFF)(?![0-9A-Za-z_])
        let mut starts: Vec<usize> = finder!(b"ffffffff").find_iter(line).collect();
        starts.extend(finder!(b"FFFFFFFF").find_iter(line));
        starts.sort_unstable();
        let mut resume = 0;
        for i in starts {
            let end = i + 8;
            if i < resume || (i > 0 && word(line[i - 1])) || (end < line.len() && word(line[end])) {
                continue;
            }
            resume = end;
            if self.has_context(line, i) {
                add(GENERIC_FAILED, i, end, GENERIC);
                return;
            }
        }
    }
}

/// The bounds of `_DECIMAL` and `_FAILED_DECIMAL` around line[start..end]:
/// (?<![0-9A-Za-z_.\-]) before, (?![0-9]|\.\d) after.
fn number_bounds(line: &[u8], start: usize, end: usize) -> bool {
    let before = start == 0 || !(word(line[start - 1]) || matches!(line[start - 1], b'.' | b'-'));
    let after = match line.get(end) {
        None => true,
        Some(b) if b.is_ascii_digit() => false,
        Some(b'.') => !line.get(end + 1).is_some_and(u8::is_ascii_digit),
        Some(_) => true,
    };
    before && after
}

fn hex2(a: u8, b: u8) -> u32 {
    let d = |c: u8| (c as char).to_digit(16).unwrap_or(0);
    d(a) * 16 + d(b)
}

/// Where `_HEX` ends after its two hex digits at `j`: the suffixes in the order the backtracking
/// regex tries them ([uU][lL]{0,2} longest first, then [lL]{1,2}[uU]?, then none), the first
/// followed by no word character.
fn hex_end(line: &[u8], j: usize) -> Option<usize> {
    let at = |k: usize| line.get(k).copied();
    let free = |e: usize| at(e).is_none_or(|b| !word(b));
    let is_l = |k: usize| matches!(at(k), Some(b'l' | b'L'));
    let is_u = |k: usize| matches!(at(k), Some(b'u' | b'U'));
    let mut tries: Vec<usize> = Vec::with_capacity(6);
    if is_u(j) {
        let ls = if is_l(j + 1) {
            if is_l(j + 2) { 2 } else { 1 }
        } else {
            0
        };
        for k in (0..=ls).rev() {
            tries.push(j + 1 + k);
        }
    }
    if is_l(j) {
        let ls = if is_l(j + 1) { 2 } else { 1 };
        for k in (1..=ls).rev() {
            if is_u(j + k) {
                tries.push(j + k + 1);
            }
            tries.push(j + k);
        }
    }
    tries.push(j);
    tries.into_iter().find(|&e| free(e))
}
