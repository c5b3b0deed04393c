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

/// A plog record read at a head's match: (stamp, pid, tid, func, where its message starts).
pub type Record = (String, String, Option<String>, Option<String>, usize);

pub struct PlogHeaders {
    head: Regex,
    tails: Vec<Regex>,
    by_hand: bool,      // the head is `facts::PLOG_PATTERN`, whose stamp `stamp_by_hand` reads
    tail_by_hand: bool, // ... and the first tail is `PLOG_TAIL`, which `tail_by_hand` reads
}

/// The first tail Python hands over (`headers.CORE_TAILS[0]`: `tid func:`), the one nearly every
/// plog line has. Its captures were ~6,000 instructions a header; `tail_by_hand` reads it in ~200.
pub const PLOG_TAIL: &str = r"(?P<tid>[\w-]+)\s+(?P<func>[A-Za-z_~][\w:.~<>]*)\s?:(?P<end>)(?:\s|$)";

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
        let tail_by_hand = by_hand
            && tails
                .first()
                .is_some_and(|t| t.as_str() == format!("(?-u)^(?:{PLOG_TAIL})"));
        Ok(PlogHeaders {
            head,
            tails,
            by_hand,
            tail_by_hand,
        })
    }

    /// The plog header of `line` as `parse_header` reads it; None when the line is not printable
    /// ASCII or has no plog header (Python then answers).
    pub fn read(&self, line: &[u8]) -> Option<Plog> {
        self.read_by(line, self.by_hand)
    }

    /// The plog record whose head `self.head` matched at `line[at..at + len]` (a flattened block's
    /// later record): (stamp, pid, tid, func, where its message starts), as `_plog_header` reads it.
    pub fn record_at(&self, line: &[u8], at: usize, len: usize) -> Option<Record> {
        let head = &line[at..at + len];
        let (stamp, pid) = if self.by_hand {
            stamp_by_hand(head)?
        } else {
            let c = self.head.captures(head)?;
            let text = |name: &str| c.name(name).map(|m| ascii(m.as_bytes()));
            let (date, time) = (text("date")?, text("time")?);
            (stamp_of(&date, &time, text("ms"), text("us")), text("pid")?)
        };
        let (tid, func, end) = self.tail(line, at + len, self.by_hand);
        Some((stamp, pid, tid, func, end))
    }

    /// tid, func and where the message starts, after a head that ends at `end`; the first tail
    /// read by hand where `by_hand` (and it is `PLOG_TAIL`), else by its regex.
    fn tail(&self, line: &[u8], mut end: usize, by_hand: bool) -> (Option<String>, Option<String>, usize) {
        let (mut tid, mut func) = (None, None);
        let mut tails = &self.tails[..];
        if by_hand && self.tail_by_hand {
            let rest = &line[end..];
            if let Some((tid_end, func_start, func_end, stop)) = tail_by_hand(rest) {
                let func = ascii(&rest[func_start..func_end]);
                return (
                    Some(ascii(&rest[..tid_end])),
                    Some(func).filter(|f| !f.is_empty()),
                    end + stop,
                );
            }
            tails = &tails[1..];
        }
        for tail in tails {
            if let Some(t) = tail.captures(&line[end..]) {
                tid = t.name("tid").map(|m| ascii(m.as_bytes()));
                func = t.name("func").map(|m| ascii(m.as_bytes()));
                end += t.name("end").or_else(|| t.get(0)).map_or(0, |m| m.end());
                break;
            }
        }
        // `func or None`: an empty func is none
        (tid, func.filter(|f| !f.is_empty()), end)
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
        let (tid, func, end) = self.tail(line, start + whole.end(), by_hand);
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

/// `PLOG_TAIL` matched at the start of `rest` as the regex matches it: (where the tid ends, where
/// the func starts and ends, where the match ends). The tid and the blanks after it are maximal
/// runs (the next class excludes their bytes); the func is the longest run of its class after
/// which one optional blank, a colon, then a blank or the end follow, the blank tried first.
fn tail_by_hand(rest: &[u8]) -> Option<(usize, usize, usize, usize)> {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let blank = |b: u8| matches!(b, b'\t' | b'\n' | 0x0B | 0x0C | b'\r' | b' ');
    let tid_end = rest.iter().take_while(|&&b| word(b) || b == b'-').count();
    if tid_end == 0 {
        return None;
    }
    let func_start = tid_end + rest[tid_end..].iter().take_while(|&&b| blank(b)).count();
    let first = *rest.get(func_start)?;
    if func_start == tid_end || !(first.is_ascii_alphabetic() || first == b'_' || first == b'~') {
        return None;
    }
    let longest = func_start
        + 1
        + rest[func_start + 1..]
            .iter()
            .take_while(|&&b| word(b) || matches!(b, b':' | b'.' | b'~' | b'<' | b'>'))
            .count();
    let ends_here = |at: usize| at == rest.len() || rest.get(at).is_some_and(|&b| blank(b));
    for func_end in (func_start + 1..=longest).rev() {
        if rest.get(func_end).is_some_and(|&b| blank(b))
            && rest.get(func_end + 1) == Some(&b':')
            && ends_here(func_end + 2)
        {
            return Some((tid_end, func_start, func_end, func_end + 2));
        }
        if rest.get(func_end) == Some(&b':') && ends_here(func_end + 1) {
            return Some((tid_end, func_start, func_end, func_end + 1));
        }
    }
    None
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

// ---------------------------------------------------------------------------------------------
// Every record header `parse_header` knows, for the engine in the core (`detect.rs`).

/// Where a year-less stamp gets its year (`inputs.YearHint`), or a fixed year (an int `Year`).
#[derive(Clone, Debug, Default)]
pub struct YearHint {
    pub year: Option<i64>,
    pub guessed: bool,
    pub written_by: Option<String>, // "MM-DD" of the mtime (a guess)
    pub near: Option<String>,       // "MM-DD" of the date in the name
    pub fixed: bool,                // an int, not a YearHint: always `year`
}

impl YearHint {
    /// Whether the pipeline counts New Year crossings (a bare --year).
    pub fn rolls(&self) -> bool {
        self.year.is_some() && !self.guessed && self.near.is_none()
    }

    /// The year of a stamp printed as `MM-DD …` (`YearHint.for_stamp`).
    pub fn for_stamp(&self, month_day: &str) -> Option<i64> {
        if self.fixed {
            return self.year;
        }
        let year = self.year.filter(|&y| y != 0);
        if let (Some(y), Some(near)) = (year, &self.near) {
            let months = two(month_day) - two(near);
            return Some(if months > 6 {
                y - 1
            } else if months < -6 {
                y + 1
            } else {
                y
            });
        }
        if let (Some(y), Some(written)) = (year, &self.written_by)
            && month_day > written.as_str()
        {
            return Some(y - 1);
        }
        self.year
    }
}

fn two(s: &str) -> i64 {
    s.get(..2).and_then(|d| d.parse().ok()).unwrap_or(0)
}

/// `core.headers.Header`: what the header of one record says (offsets are byte offsets: the core
/// reads printable ASCII only, where they are character offsets too).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Header {
    pub fmt: Option<&'static str>,
    pub timestamp: Option<String>,
    pub pid: Option<String>,
    pub tid: Option<String>,
    pub func: Option<String>,
    pub msg_start: usize,
    pub start: usize,
    pub yearless: bool,
    pub pod: Option<String>,
}

/// The header patterns Python hands over (`core.headers.core_grammar()`), each in Rust's syntax.
pub struct GrammarSpec {
    pub plog: String,
    pub tails: Vec<String>,
    pub vllm: String,
    pub vllm_pid: String,
    pub vllm_relay: String,
    pub glog: String,
    pub torch: String,
    pub mindie: String,
    pub pylog: String,
}

/// Every header format of `parse_header`, compiled for lines of printable ASCII.
pub struct Grammar {
    plog: PlogHeaders,
    plog_anywhere: Regex,
    vllm: Regex,
    vllm_pid: Regex,
    vllm_relay: Regex,
    glog: Regex,
    torch: Regex,
    mindie: Regex,
    pylog: Regex,
}

fn compiled(pattern: &str, anchored: bool) -> Result<Regex, String> {
    if let Some(why) = crate::facts::unportable(pattern) {
        return Err(format!("pattern {pattern:?}: {why}"));
    }
    let text = if anchored {
        format!("(?-u)^(?:{pattern})")
    } else {
        format!("(?-u){pattern}")
    };
    Regex::new(&text).map_err(|e| e.to_string().lines().last().unwrap_or("").trim().to_string())
}

fn group<'a>(c: &regex::bytes::Captures<'a>, name: &str) -> Option<&'a str> {
    // printable ASCII: valid UTF-8
    c.name(name).and_then(|m| std::str::from_utf8(m.as_bytes()).ok())
}

/// `_iso`: `DATE` `T` `TIME`, and `.` with the fraction cut or padded to six digits.
fn iso(date: &str, time: &str, frac: Option<&str>) -> String {
    match frac {
        Some(f) if !f.is_empty() => {
            let f = &f[..f.len().min(6)];
            format!("{date}T{time}.{f:0<6}")
        }
        _ => format!("{date}T{time}"),
    }
}

/// `_yearless`: the stamp with its year supplied, None without one.
fn yearless(month_day: &str, time: &str, frac: Option<&str>, year: Option<&YearHint>) -> Option<String> {
    let y = year.and_then(|y| y.for_stamp(month_day)).filter(|&y| y != 0)?;
    Some(iso(&format!("{y:04}-{month_day}"), time, frac))
}

impl Grammar {
    pub fn new(spec: &GrammarSpec) -> Result<Grammar, String> {
        Ok(Grammar {
            plog: PlogHeaders::new(&spec.plog, &spec.tails)?,
            plog_anywhere: compiled(&spec.plog, false)?,
            vllm: compiled(&spec.vllm, true)?,
            vllm_pid: compiled(&spec.vllm_pid, false)?,
            vllm_relay: compiled(&spec.vllm_relay, true)?,
            glog: compiled(&spec.glog, true)?,
            torch: compiled(&spec.torch, true)?,
            mindie: compiled(&spec.mindie, true)?,
            pylog: compiled(&spec.pylog, true)?,
        })
    }

    /// `parse_header` of a line of printable ASCII (tabs allowed): the first record's header.
    pub fn parse(&self, line: &str, year: Option<&YearHint>) -> Header {
        let b = line.as_bytes();
        let pos = b.iter().take_while(|&&c| c == b' ' || c == b'\t').count();
        let hay = &b[pos..];
        if let Some(whole) = self.plog.head.find(hay)
            && let Some((stamp, pid, tid, func, end)) = self.plog.record_at(b, pos, whole.end())
        {
            return Header {
                fmt: Some("plog"),
                timestamp: Some(stamp),
                pid: Some(pid),
                tid,
                func,
                msg_start: end,
                start: pos,
                ..Header::default()
            };
        }
        if let Some(c) = self.vllm.captures(hay) {
            let mut pid = None;
            if c.name("worker").is_some() {
                let level = pos + c.name("level").map_or(0, |m| m.start());
                pid = self
                    .vllm_pid
                    .captures_iter(&b[pos..level])
                    .last()
                    .and_then(|p| p.get(1))
                    .map(|m| ascii(m.as_bytes()));
            }
            let ts = yearless(
                group(&c, "md").unwrap_or(""),
                group(&c, "time").unwrap_or(""),
                group(&c, "frac"),
                year,
            );
            let end = pos + c.get(0).map_or(0, |m| m.end());
            return Header {
                fmt: Some("vllm"),
                timestamp: ts,
                pid,
                msg_start: end,
                start: pos,
                yearless: true,
                ..Header::default()
            };
        }
        if let Some(m) = self.vllm_relay.find(hay) {
            let end = pos + m.end();
            let pid = self
                .vllm_pid
                .captures_iter(&b[pos..end])
                .last()
                .and_then(|p| p.get(1))
                .map(|m| ascii(m.as_bytes()));
            return Header {
                fmt: Some("vllm"),
                pid,
                msg_start: end,
                start: pos,
                ..Header::default()
            };
        }
        if let Some(c) = self.glog.captures(hay) {
            let d = group(&c, "date").unwrap_or("");
            let (time, frac) = (group(&c, "time").unwrap_or(""), group(&c, "frac"));
            let end = pos + c.get(0).map_or(0, |m| m.end());
            let tid = group(&c, "tid").map(str::to_string);
            let (ts, yearless_) = if d.len() == 4 {
                (yearless(&format!("{}-{}", &d[..2], &d[2..]), time, frac, year), true)
            } else {
                (
                    Some(iso(&format!("{}-{}-{}", &d[..4], &d[4..6], &d[6..]), time, frac)),
                    false,
                )
            };
            return Header {
                fmt: Some("glog"),
                timestamp: ts,
                tid,
                msg_start: end,
                start: pos,
                yearless: yearless_,
                ..Header::default()
            };
        }
        for (re, fmt) in [(&self.torch, "torch_npu"), (&self.mindie, "mindie")] {
            if let Some(c) = re.captures(hay) {
                let ts = iso(
                    group(&c, "date").unwrap_or(""),
                    group(&c, "time").unwrap_or(""),
                    group(&c, "frac"),
                );
                return Header {
                    fmt: Some(fmt),
                    timestamp: Some(ts),
                    pid: group(&c, "pid").map(str::to_string),
                    tid: group(&c, "tid").map(str::to_string),
                    msg_start: pos + c.get(0).map_or(0, |m| m.end()),
                    start: pos,
                    ..Header::default()
                };
            }
        }
        if let Some(c) = self.pylog.captures(hay) {
            let ts = iso(
                group(&c, "date").unwrap_or(""),
                group(&c, "time").unwrap_or(""),
                group(&c, "frac"),
            );
            return Header {
                fmt: Some("pylog"),
                timestamp: Some(ts),
                msg_start: pos,
                start: pos,
                ..Header::default()
            };
        }
        Header {
            msg_start: pos,
            start: pos,
            ..Header::default()
        }
    }

    /// `record_headers`: the headers of every record on the line (a flattened plog block holds
    /// several: each later one found after the first's message start, once its date shows again).
    pub fn records(&self, line: &str, year: Option<&YearHint>) -> Vec<Header> {
        let first = self.parse(line, year);
        let again = match (&first.fmt, &first.timestamp) {
            (Some("plog"), Some(ts)) => line[first.msg_start..].contains(&ts[..10]),
            _ => false,
        };
        if !again {
            return vec![first];
        }
        let b = line.as_bytes();
        let mut out = vec![first];
        let from = out[0].msg_start;
        for m in self.plog_anywhere.find_iter(&b[from..]) {
            let at = from + m.start();
            if let Some((stamp, pid, tid, func, end)) = self.plog.record_at(b, at, m.len()) {
                out.push(Header {
                    fmt: Some("plog"),
                    timestamp: Some(stamp),
                    pid: Some(pid),
                    tid,
                    func,
                    msg_start: end,
                    start: at,
                    ..Header::default()
                });
            }
        }
        out
    }

    /// `header_pid`: the pid of the line's plog header, else of `parse_header`'s.
    pub fn pid(&self, line: &str, year: Option<&YearHint>) -> Option<String> {
        self.parse(line, year).pid
    }
}

/// `header_for`: the record a byte offset belongs to.
pub fn header_for(headers: &[Header], offset: usize) -> &Header {
    let mut chosen = &headers[0];
    for h in &headers[1..] {
        if h.start <= offset {
            chosen = h;
        }
    }
    chosen
}
