//! The API context of a hit (`detect.context.ApiResolver`) on lines of printable ASCII: the same
//! line's Func field, a tag naming an API, the API spelling nearest the hit, the innermost frame
//! of the traceback that ends right before the line, or a line of the same thread just before.
//!
//! Python hands over the API table (spellings, tags, the spellings in the order its alternation
//! tries them) and the patterns of tags, frames and LLM-DataDist's own names. Its spelling
//! pattern, `(?i)(?<![A-Za-z0-9_])_*(alternation)(?![A-Za-z0-9_])`, has look-arounds Rust's
//! regex lacks: `Spellings::find_all` walks it as Python's backtracking matcher does (each start
//! where the look-behind holds, the most underscores first, then each spelling in order, the
//! look-ahead last), on ASCII text, where `(?i)` and `\s` mean what they mean here.

use foldhash::{HashMap, HashSet};

use regex::bytes::Regex;

use crate::headers::{Grammar, Header, YearHint, header_for};

/// How far back "the nearest earlier line" may be (`context.API_LOOKBACK_LINES`).
pub const API_LOOKBACK_LINES: usize = 12;
const TRACEBACK_START: &str = "Traceback (most recent call last)";

/// `ApiContext`: (api, evidence, line of the evidence).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    pub api: Option<String>,
    pub evidence: Option<&'static str>,
    pub line: Option<i64>,
}

/// A spelling as the alternation tries it: its words (lower case), matched with `\s+` between.
struct Spelling {
    words: Vec<Vec<u8>>,
    key: String, // the lower-case spelling, words joined by one space
}

pub struct ApiTable {
    spellings: HashMap<String, String>, // lower-case spelling -> canonical
    tags: HashMap<String, String>,      // lower-case tag spelling -> canonical
    shared: HashSet<String>,
    ordered: Vec<Spelling>,      // in the alternation's order
    by_first: [Vec<usize>; 256], // spellings by their first byte (lower case), in order
    tag: Regex,
    frame: Regex,
    marker: Regex,
}

/// What Python hands over: spellings (lower case -> canonical), tags, shared names, the spellings
/// in the alternation's order, and the tag, frame and LLM-DataDist marker patterns.
pub struct ApiSpec {
    pub spellings: Vec<(String, String)>,
    pub tags: Vec<(String, String)>,
    pub shared: Vec<String>,
    pub ordered: Vec<String>,
    pub tag: String,
    pub frame: String,
    pub marker: String,
}

fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn compiled(pattern: &str) -> Result<Regex, String> {
    if let Some(why) = crate::facts::unportable(pattern) {
        return Err(format!("pattern {pattern:?}: {why}"));
    }
    Regex::new(&format!("(?-u){pattern}")).map_err(|e| e.to_string())
}

impl ApiTable {
    pub fn new(spec: ApiSpec) -> Result<ApiTable, String> {
        let mut ordered = Vec::new();
        let mut by_first: [Vec<usize>; 256] = std::array::from_fn(|_| Vec::new());
        for s in &spec.ordered {
            if !s.is_ascii() || s.is_empty() || s.starts_with(' ') || s.ends_with(' ') {
                return Err(format!("spelling {s:?}: not one the core reads"));
            }
            let lower = s.to_ascii_lowercase();
            let words: Vec<Vec<u8>> = lower.split(' ').map(|w| w.as_bytes().to_vec()).collect();
            if words.iter().any(Vec::is_empty) {
                return Err(format!("spelling {s:?}: two spaces"));
            }
            by_first[usize::from(lower.as_bytes()[0])].push(ordered.len());
            ordered.push(Spelling { words, key: lower });
        }
        Ok(ApiTable {
            spellings: spec.spellings.into_iter().collect(),
            tags: spec.tags.into_iter().collect(),
            shared: spec.shared.into_iter().collect(),
            ordered,
            by_first,
            tag: compiled(&spec.tag)?,
            frame: compiled(&format!("^(?:{})", spec.frame))?,
            marker: compiled(&spec.marker)?,
        })
    }

    /// `ApiTable.resolve_token`: a func field, tag or frame name (`A.b`, `A::b` reduced to `b`,
    /// `_` stripped), looked up among spellings, then tags.
    pub fn resolve_token(&self, token: &str) -> Option<&str> {
        let token = py_strip(token);
        let mut candidates = vec![token];
        for sep in ["::", "."] {
            if let Some(i) = token.rfind(sep) {
                candidates.push(&token[i + sep.len()..]);
            }
        }
        for cand in candidates {
            let key = cand.trim_matches('_').to_ascii_lowercase();
            if let Some(api) = self.spellings.get(&key) {
                return Some(api);
            }
            if let Some(api) = self.tags.get(&key) {
                return Some(api);
            }
        }
        None
    }

    /// Whether the API is one other CANN components use too (`ApiTable.shared`).
    pub fn shared(&self, api: &str) -> bool {
        self.shared.contains(api)
    }

    /// `ApiResolver.mentions_llm`: the line names LLM-DataDist itself.
    pub fn mentions_llm(&self, line: &str) -> bool {
        self.marker.is_match(line.as_bytes())
    }

    /// `_searched`: (the first tag naming an API), else the starts of API spellings and their APIs.
    fn searched(&self, msg: &str) -> (Option<&str>, Vec<(usize, &str)>) {
        for c in self.tag.captures_iter(msg.as_bytes()) {
            let name = c
                .get(1)
                .and_then(|m| std::str::from_utf8(m.as_bytes()).ok())
                .unwrap_or("");
            if let Some(api) = self.resolve_token(name) {
                return (Some(api), Vec::new());
            }
        }
        (None, self.find_all(msg.as_bytes()))
    }

    /// Every match of the spelling pattern in `msg`, left to right, as (start, canonical API).
    fn find_all(&self, msg: &[u8]) -> Vec<(usize, &str)> {
        let mut out = Vec::new();
        let mut p = 0;
        while p < msg.len() {
            if p > 0 && is_word(msg[p - 1]) {
                p += 1;
                continue;
            }
            let underscores = msg[p..].iter().take_while(|&&b| b == b'_').count();
            let mut found = None;
            'under: for u in (0..=underscores).rev() {
                let q = p + u;
                let Some(&first) = msg.get(q) else { continue };
                for &k in &self.by_first[usize::from(first.to_ascii_lowercase())] {
                    if let Some(end) = self.ordered[k].match_at(msg, q)
                        && (end == msg.len() || !is_word(msg[end]))
                    {
                        found = Some((end, k));
                        break 'under;
                    }
                }
            }
            match found {
                Some((end, k)) => {
                    let key = &self.ordered[k].key;
                    if let Some(api) = self.spellings.get(key) {
                        out.push((p, api.as_str()));
                    }
                    p = end;
                }
                None => p += 1,
            }
        }
        out
    }

    /// `ApiResolver.on_line`: (api, evidence) from the line itself; `offset`: the hit's position
    /// (the spelling nearest it is taken), None: the first spelling.
    pub fn on_line(&self, line: &str, header: &Header, offset: Option<usize>) -> Option<(String, &'static str)> {
        if let Some(func) = &header.func
            && let Some(api) = self.resolve_token(func)
        {
            return Some((api.to_string(), "func"));
        }
        let (tagged, starts) = self.searched(&line[header.msg_start.min(line.len())..]);
        if let Some(api) = tagged {
            return Some((api.to_string(), "tag"));
        }
        if starts.is_empty() {
            return None;
        }
        let Some(offset) = offset else {
            return Some((starts[0].1.to_string(), "message"));
        };
        // the spelling nearest the hit; of two as near, the first
        let rel = offset as i64 - header.msg_start as i64;
        let mut i = starts.partition_point(|&(s, _)| (s as i64) < rel);
        if i == starts.len() || (i > 0 && rel - starts[i - 1].0 as i64 <= starts[i].0 as i64 - rel) {
            i -= 1;
        }
        Some((starts[i].1.to_string(), "message"))
    }

    /// `ApiResolver.resolve`: the line, then the traceback just before it, then the nearest
    /// earlier line of the same thread. `earlier`: the lines before it, oldest first.
    pub fn resolve(
        &self,
        grammar: &Grammar,
        line: &str,
        header: &Header,
        offset: usize,
        earlier: &[(i64, &str)],
        year: Option<&YearHint>,
    ) -> Context {
        if let Some((api, evidence)) = self.on_line(line, header, Some(offset)) {
            return Context {
                api: Some(api),
                evidence: Some(evidence),
                line: None,
            };
        }
        if let Some((api, n)) = self.traceback_api(grammar, header, earlier, year) {
            return Context {
                api: Some(api),
                evidence: Some("traceback"),
                line: Some(n),
            };
        }
        let from = earlier.len().saturating_sub(API_LOOKBACK_LINES);
        for &(n, text) in earlier[from..].iter().rev() {
            let records = grammar.records(text, year);
            let other = header_for(&records, text.len());
            if !same_thread(header, other) {
                continue;
            }
            if let Some((api, _)) = self.on_line(text, other, None) {
                return Context {
                    api: Some(api),
                    evidence: Some("nearby"),
                    line: Some(n),
                };
            }
        }
        Context::default()
    }

    /// `_traceback_api`: the innermost recognisable frame of the traceback that ends right
    /// before the line.
    fn traceback_api(
        &self,
        grammar: &Grammar,
        header: &Header,
        earlier: &[(i64, &str)],
        year: Option<&YearHint>,
    ) -> Option<(String, i64)> {
        let mut frames: Vec<(i64, String)> = Vec::new();
        let mut saw_start = false;
        for &(n, text) in earlier.iter().rev() {
            let other = grammar.parse(text, year);
            if let (Some(a), Some(b)) = (&header.pid, &other.pid)
                && !a.is_empty()
                && !b.is_empty()
                && a != b
            {
                continue; // another worker's line interleaved into ours
            }
            let body = if other.fmt == Some("vllm") {
                &text[other.msg_start.min(text.len())..]
            } else {
                text
            };
            if let Some(c) = self.frame.captures(body.as_bytes()) {
                let name = c.get(1).map(|m| String::from_utf8_lossy(m.as_bytes()).into_owned());
                frames.push((n, name.unwrap_or_default()));
                continue;
            }
            if body.contains(TRACEBACK_START) {
                saw_start = true;
                break;
            }
            let stripped = py_strip(body);
            if body.starts_with([' ', '\t']) || stripped.is_empty() || stripped.starts_with(['^', '~']) {
                continue; // source line under a frame, caret markers, blank
            }
            break;
        }
        if frames.is_empty() && !saw_start {
            return None;
        }
        frames
            .into_iter()
            .find_map(|(n, name)| self.resolve_token(&name).map(|api| (api.to_string(), n)))
    }
}

impl Spelling {
    /// Where this spelling ends when it matches at `at` (case-insensitively, `\s+` between words).
    fn match_at(&self, msg: &[u8], at: usize) -> Option<usize> {
        let mut pos = at;
        for (i, word) in self.words.iter().enumerate() {
            if i > 0 {
                let blanks = msg[pos..]
                    .iter()
                    .take_while(|b| b.is_ascii_whitespace() || **b == 0x0B)
                    .count();
                if blanks == 0 {
                    return None;
                }
                pos += blanks;
            }
            let got = msg.get(pos..pos + word.len())?;
            if !got.eq_ignore_ascii_case(word) {
                return None;
            }
            pos += word.len();
        }
        Some(pos)
    }
}

/// `str.strip()` on ASCII text: the blanks Python strips (the line holds no other control bytes).
fn py_strip(s: &str) -> &str {
    s.trim_matches(|c: char| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c' | '\x1c'..='\x1f'))
}

fn truthy(s: &Option<String>) -> Option<&str> {
    s.as_deref().filter(|v| !v.is_empty())
}

/// `same_thread`: whether two records may come from one process and thread (unknown matches
/// anything); two pods never share one.
pub fn same_thread(a: &Header, b: &Header) -> bool {
    for (x, y) in [(&a.pod, &b.pod), (&a.pid, &b.pid), (&a.tid, &b.tid)] {
        if let (Some(x), Some(y)) = (truthy(x), truthy(y))
            && x != y
        {
            return false;
        }
    }
    true
}
