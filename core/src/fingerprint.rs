//! Fingerprints of findings (`detect.fingerprint`): the line's message template (every mask Python
//! hands over, applied in order, on text cut to `TEMPLATE_LIMIT` characters) and a BLAKE2b of
//! code, API, rule and template, 8 bytes in hex, as `hashlib.blake2b(digest_size=8)` writes it.
//!
//! The masks run as Rust's regex on bytes with ASCII classes: the text is printable ASCII, apart
//! from the `…` a clipped line may start or end with, which no mask's class matches and which is
//! no word character for `\b` in either engine.

use foldhash::{HashMap, HashMapExt};

use blake2::Blake2bVar;
use blake2::digest::{Update, VariableOutput};
use regex::bytes::Regex;

pub const TEMPLATE_LIMIT: usize = 400;
const MEMO_SIZE: usize = 20000;

pub struct Masks {
    masks: Vec<(Regex, Vec<u8>)>,
    memo: HashMap<Vec<u8>, String>,
    prints: HashMap<Vec<u8>, String>, // `fingerprint`'s input -> its answer
}

/// The first `n` characters of `s`.
pub fn chars(s: &str, n: usize) -> &str {
    match s.char_indices().nth(n) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

impl Masks {
    /// `masks`: (pattern, replacement in Rust's syntax: `${1}` for a group), in order.
    pub fn new(masks: Vec<(String, String)>) -> Result<Masks, String> {
        let mut out = Vec::new();
        for (pattern, replacement) in masks {
            if let Some(why) = crate::facts::unportable(&pattern) {
                return Err(format!("mask {pattern:?}: {why}"));
            }
            let re = Regex::new(&format!("(?-u){pattern}")).map_err(|e| e.to_string())?;
            out.push((re, replacement.into_bytes()));
        }
        Ok(Masks {
            masks: out,
            memo: HashMap::new(),
            prints: HashMap::new(),
        })
    }

    /// `mask`: every mask applied in order, the result cut to TEMPLATE_LIMIT characters.
    pub fn mask(&self, text: &str) -> String {
        let mut cur: Vec<u8> = chars(text, TEMPLATE_LIMIT * 2).as_bytes().to_vec();
        for (re, replacement) in &self.masks {
            if let std::borrow::Cow::Owned(next) = re.replace_all(&cur, replacement.as_slice()) {
                cur = next;
            }
        }
        // the masks replace ASCII with ASCII: still valid UTF-8
        let s = String::from_utf8(cur).unwrap_or_default();
        chars(&s, TEMPLATE_LIMIT).to_string()
    }

    /// `message_template`, remembered on the text with every ASCII digit made `1` and each `0x`
    /// marked (a storm's lines differ in their digits; see `fingerprint._memo_key`).
    pub fn template(&mut self, text: &str) -> String {
        let text = chars(text, TEMPLATE_LIMIT * 2);
        let mut key = text.as_bytes().to_vec();
        for i in 0..key.len() {
            if key[i] == b'0' && matches!(key.get(i + 1), Some(b'x' | b'X')) {
                key[i] = 0xFF;
            } else if key[i].is_ascii_digit() {
                key[i] = b'1';
            }
        }
        if let Some(found) = self.memo.get(&key) {
            return found.clone();
        }
        let found = self.mask(text);
        if self.memo.len() >= MEMO_SIZE {
            self.memo.clear();
        }
        self.memo.insert(key, found.clone());
        found
    }
}

impl Masks {
    /// `fingerprint`, remembered on what it hashes: a storm's findings repeat their code, API,
    /// rule and template, and the hash was a tenth of a finding's work in the core.
    pub fn fingerprint(&mut self, code: &str, api: Option<&str>, rule: &str, template: &str) -> String {
        let key = hashed(code, api, rule, template);
        if let Some(found) = self.prints.get(&key) {
            return found.clone();
        }
        let found = digest(&key);
        if self.prints.len() >= MEMO_SIZE {
            self.prints.clear();
        }
        self.prints.insert(key, found.clone());
        found
    }
}

/// What `fingerprint` hashes: code, API, rule and template joined by 0x1F.
fn hashed(code: &str, api: Option<&str>, rule: &str, template: &str) -> Vec<u8> {
    let api = api.unwrap_or("");
    let mut out = Vec::with_capacity(code.len() + api.len() + rule.len() + template.len() + 3);
    for (i, part) in [code, api, rule, template].into_iter().enumerate() {
        if i > 0 {
            out.push(0x1F);
        }
        out.extend_from_slice(part.as_bytes());
    }
    out
}

/// 16 hex digits of BLAKE2b-64 over `data`, as `hashlib.blake2b(digest_size=8).hexdigest()`.
fn digest(data: &[u8]) -> String {
    let mut h = Blake2bVar::new(8).expect("8 is a valid BLAKE2b size");
    h.update(data);
    let mut out = [0u8; 8];
    h.finalize_variable(&mut out).expect("an 8-byte buffer");
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let hex: Vec<u8> = out
        .iter()
        .flat_map(|b| [HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]])
        .collect();
    String::from_utf8(hex).unwrap_or_default() // hex digits: valid UTF-8
}

/// `fingerprint`: 16 hex digits of BLAKE2b-64 over code, API, rule and template joined by 0x1F.
pub fn fingerprint(code: &str, api: Option<&str>, rule: &str, template: &str) -> String {
    digest(&hashed(code, api, rule, template))
}
