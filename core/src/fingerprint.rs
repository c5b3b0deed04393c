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

/// `fingerprint`: 16 hex digits of BLAKE2b-64 over code, API, rule and template joined by 0x1F.
pub fn fingerprint(code: &str, api: Option<&str>, rule: &str, template: &str) -> String {
    let mut h = Blake2bVar::new(8).expect("8 is a valid BLAKE2b size");
    h.update(code.as_bytes());
    h.update(b"\x1f");
    h.update(api.unwrap_or("").as_bytes());
    h.update(b"\x1f");
    h.update(rule.as_bytes());
    h.update(b"\x1f");
    h.update(template.as_bytes());
    let mut out = [0u8; 8];
    h.finalize_variable(&mut out).expect("an 8-byte buffer");
    let mut hex = String::with_capacity(16);
    for b in out {
        hex.push_str(&format!("{b:02x}"));
    }
    hex
}
