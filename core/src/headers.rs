//! The plog record header of a line (`core.headers.parse_header`'s `_PLOG` and `_PLOG_TAIL`), read
//! in the core with the grammar Python hands over.
//!
//! Only lines of printable ASCII (and tabs) are answered here: on those, Python's `\s`, `\w` and
//! `\d` and Rust's ASCII classes agree, a character offset is a byte offset, and nothing that
//! `parse_header` skips before a header (NULs, a BOM) is there but blanks. Python's tail patterns
//! end in a look-ahead (`(?=\s|$)`), which Rust's regex has not: Python rewrites it as an empty
//! `end` group followed by the same test, consuming (`core.headers.CORE_TAILS`). At the end of a
//! pattern that is the same test in the same place, so the same alternative wins, with the same
//! groups; the match ends where the `end` group is.

use regex::bytes::Regex;

use crate::facts::printable;

/// What `parse_header` says of a plog header: (timestamp, pid, tid, func, message start, start),
/// and whether the header's date shows again after it (a flattened block: `record_headers` then
/// reads the rest of the line in Python).
pub type Plog = (String, String, Option<String>, Option<String>, usize, usize, bool);

pub struct PlogHeaders {
    head: Regex,
    tails: Vec<Regex>,
    by_hand: bool, // the head is `facts::PLOG_PATTERN`, whose stamp `stamp_by_hand` reads
}

fn anchored(pattern: &str) -> Result<Regex, String> {
    Regex::new(&format!("(?-u)^(?:{pattern})"))
        .map_err(|e| e.to_string().lines().last().unwrap_or("").trim().to_string())
}

impl PlogHeaders {
    pub fn new(head: &str, tails: &[String]) -> Result<PlogHeaders, String> {
        for p in std::iter::once(head).chain(tails.iter().map(String::as_str)) {
            if let Some(why) = crate::facts::unportable(p) {
                return Err(format!("pattern {p:?}: {why}"));
            }
        }
        let head = anchored(head)?;
        for name in ["pid", "date", "time", "ms", "us"] {
            if !head.capture_names().any(|n| n == Some(name)) {
                return Err(format!("the header pattern has no `{name}` group"));
            }
        }
        let tails = tails.iter().map(|p| anchored(p)).collect::<Result<Vec<_>, _>>()?;
        for t in &tails {
            if !t.capture_names().any(|n| n == Some("tid")) {
                return Err("a tail pattern has no `tid` group".into());
            }
        }
        let by_hand = head.as_str() == format!("(?-u)^(?:{})", crate::facts::PLOG_PATTERN);
        Ok(PlogHeaders { head, tails, by_hand })
    }

    /// The plog header of `line` as `parse_header` reads it; None when the line is not printable
    /// ASCII or has no plog header (Python then answers).
    pub fn read(&self, line: &[u8]) -> Option<Plog> {
        self.read_by(line, self.by_hand)
    }

    /// `read`, the stamp and pid read by hand (only for `PLOG_PATTERN`) or with `captures` (the
    /// twin the tests hold the other to).
    pub fn read_by(&self, line: &[u8], by_hand: bool) -> Option<Plog> {
        if !printable(line) {
            return None;
        }
        let start = line.iter().take_while(|&&b| b == b' ' || b == b'\t').count();
        let hay = &line[start..];
        // the lazy DFA finds the header and where it ends; the groups are read in that span only
        let whole = self.head.find(hay)?;
        let head = &hay[..whole.end()];
        let (stamp, pid) = if by_hand {
            stamp_by_hand(head)?
        } else {
            let c = self.head.captures(head)?;
            let text = |name: &str| c.name(name).map(|m| ascii(m.as_bytes()));
            let (date, time) = (text("date")?, text("time")?);
            (stamp_of(&date, &time, text("ms"), text("us")), text("pid")?)
        };
        let mut end = start + whole.end();
        let (mut tid, mut func) = (None, None);
        for tail in &self.tails {
            if let Some(t) = tail.captures(&line[end..]) {
                tid = t.name("tid").map(|m| ascii(m.as_bytes()));
                func = t.name("func").map(|m| ascii(m.as_bytes()));
                end += t.name("end").or_else(|| t.get(0)).map_or(0, |m| m.end());
                break;
            }
        }
        // `func or None`: an empty func is none
        let func = func.filter(|f| !f.is_empty());
        let again = memchr::memmem::find(&line[end..], &stamp.as_bytes()[..10]).is_some();
        Some((stamp, pid, tid, func, end, start, again))
    }
}

fn ascii(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `_plog_header`'s stamp: `DATE` `T` `TIME`, then `.` and six digits (milliseconds, then
/// microseconds, each padded with zeros) when the stamp prints a fraction.
fn stamp_of(date: &str, time: &str, ms: Option<String>, us: Option<String>) -> String {
    match ms {
        Some(ms) => format!("{date}T{time}.{ms:0<3}{:0<3}", us.unwrap_or_default()),
        None => format!("{date}T{time}"),
    }
}

/// The stamp and pid of a header `PLOG_PATTERN` matched whole (`head`: that match, no more).
///
/// Its pid is `plog_pid`'s (see `PLOG_PATTERN`). Its `\)` is the first `)` after the first `(`
/// (the pid, blanks and a comma, then `[^)]` only), and `\s*:\s*` then takes every blank before
/// and after the colon (a digit follows), so the date is the 10 bytes after them, one separator,
/// and the time the next 8. Everything after the time is optional, so the match takes each
/// option greedily: a `.`/`,` and up to three digits for the milliseconds, then the same for the
/// microseconds; what follows them cannot change the groups. None where a step does not hold
/// (never on a match; the regex then answers).
fn stamp_by_hand(head: &[u8]) -> Option<(String, String)> {
    let pid = ascii(crate::facts::plog_pid(head)?);
    let open = memchr::memchr(b'(', head)?;
    let close = open + memchr::memchr(b')', &head[open..])?;
    let blank = |b: u8| matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ');
    let mut at = close + 1;
    while at < head.len() && blank(head[at]) {
        at += 1;
    }
    if head.get(at) != Some(&b':') {
        return None;
    }
    at += 1;
    while at < head.len() && blank(head[at]) {
        at += 1;
    }
    let date = head.get(at..at + 10)?;
    let time = head.get(at + 11..at + 19)?;
    let mut pos = at + 19;
    let digits_after = |pos: &mut usize| -> Option<String> {
        if matches!(head.get(*pos), Some(b'.' | b',')) && head.get(*pos + 1).is_some_and(u8::is_ascii_digit) {
            let n = head[*pos + 1..]
                .iter()
                .take(3)
                .take_while(|b| b.is_ascii_digit())
                .count();
            let out = ascii(&head[*pos + 1..*pos + 1 + n]);
            *pos += 1 + n;
            Some(out)
        } else {
            None
        }
    };
    let ms = digits_after(&mut pos);
    let us = if ms.is_some() { digits_after(&mut pos) } else { None };
    Some((stamp_of(&ascii(date), &ascii(time), ms, us), pid))
}
