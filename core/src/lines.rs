//! The lines before a candidate, walked back from its start: `scan.blocks.Candidate.raw_before`
//! and `Candidate.lookback`, whose Python loops are the reference (`tests/scan/test_lines_back.py`).

use memchr::{memrchr, memrchr_iter};

/// Where `raw_before` starts: up to `limit` lines back from `start`, never before `floor` (a
/// line that began earlier is cut at `floor`), as `Candidate.raw_before`'s loop walks.
pub fn begin_back(buf: &[u8], start: usize, floor: usize, limit: usize) -> usize {
    let start = start.min(buf.len());
    let mut begin = start;
    let mut left = limit;
    while begin > floor && left > 0 {
        // `buf.rfind(b"\n", floor, begin - 1) + 1`, and `floor` when none is found past it
        begin = match memrchr(b'\n', &buf[floor..begin - 1]) {
            Some(i) => floor + i + 1,
            None => floor,
        };
        left -= 1;
    }
    begin
}

/// (begin, end) of up to `limit` lines before `start`, the newest first, each wholly at or after
/// `floor` (`end`: its newline), as `Candidate.lookback`'s loop finds them.
pub fn spans_back(buf: &[u8], start: usize, floor: usize, limit: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(limit.min(64));
    let Some(mut end) = start.min(buf.len()).checked_sub(1) else {
        return out;
    };
    // the newlines before `end`, newest first, from one backward search (each line's begin is
    // after the newline before its end, and that newline is the next line's end)
    let mut newlines = memrchr_iter(b'\n', &buf[..end]);
    while end >= floor && out.len() < limit {
        let begin = newlines.next().map_or(0, |i| i + 1);
        if begin < floor {
            break;
        }
        out.push((begin, end));
        let Some(next) = begin.checked_sub(1) else { break };
        end = next;
    }
    out
}

/// `spans_back` for the candidates of one buffer, met in order: each walk stops where the one
/// before it began and takes the rest from it. A storm's findings are a few lines apart and each
/// looks back 40 lines, so most of each walk was walked already. The answers are `spans_back`'s
/// (a walk is taken again whole where the one before cannot give them: it began later, looked
/// back less far, or was cut by its limit before the lines now wanted).
#[derive(Default)]
pub struct WalkBack {
    last: Option<(usize, usize, usize)>, // the last walk's start, floor and limit
    spans: Vec<(usize, usize)>,          // its spans, the newest first
}

impl WalkBack {
    pub fn spans(&mut self, buf: &[u8], start: usize, floor: usize, limit: usize) -> &[(usize, usize)] {
        let start = start.min(buf.len());
        let reuse = match self.last {
            // the earlier walk began at a line's start at or after `floor` (a fragment's start
            // is no line's start: the walk from it reads a cut line)
            Some((at, at_floor, _)) => {
                at <= start && at_floor <= floor && at >= floor && (at == 0 || buf[at - 1] == b'\n')
            }
            None => false,
        };
        let fresh = if reuse {
            let (at, _, at_limit) = self.last.unwrap_or_default();
            let mut spans = spans_back(buf, start, at, limit);
            let need = limit - spans.len();
            // the earlier walk holds every line at or after its floor, unless its limit cut it
            let whole = self.spans.len() < at_limit || self.spans.len() >= need;
            if !whole {
                spans_back(buf, start, floor, limit)
            } else {
                spans.extend(self.spans.iter().take_while(|&&(begin, _)| begin >= floor).take(need));
                spans
            }
        } else {
            spans_back(buf, start, floor, limit)
        };
        self.spans = fresh;
        self.last = Some((start, floor, limit));
        &self.spans
    }
}

/// `scan.blocks.decode` of a line's bytes cut to `cut`, when they are ASCII (then decoding is
/// dropping NULs and the CRs and newlines at the end); None for any other bytes (Python's).
pub fn ascii_text(raw: &[u8], cut: usize) -> Option<String> {
    let raw = &raw[..raw.len().min(cut)];
    if !raw.is_ascii() {
        return None;
    }
    let mut text: String = if raw.contains(&0) {
        raw.iter().filter(|&&b| b != 0).map(|&b| b as char).collect()
    } else {
        // ASCII: valid UTF-8
        String::from_utf8(raw.to_vec()).ok()?
    };
    let kept = text.trim_end_matches(['\r', '\n']).len();
    text.truncate(kept);
    Some(text)
}

/// Where a buffer's bytes outside printable ASCII, tabs and newlines lie, over the part looked at
/// so far ([from, to)): what `facts::printable` says of each line inside it, for the lookbacks
/// (`detect::Engine::earlier`), with each byte checked once however often lines are looked back at.
#[derive(Default)]
pub struct OddBytes {
    from: usize,
    to: usize,
    at: Vec<usize>, // sorted
}

impl OddBytes {
    /// Make [lo, hi) of `buf` known: extended when it starts inside what is known, else looked at
    /// afresh.
    pub fn cover(&mut self, buf: &[u8], lo: usize, hi: usize) {
        if lo < self.from || lo > self.to {
            (self.from, self.to) = (lo, lo);
            self.at.clear();
        }
        if hi <= self.to {
            return;
        }
        const CHUNK: usize = 64;
        let odd = |b: u8| (b.wrapping_sub(0x20) >= 0x5F) & (b != b'\t') & (b != b'\n');
        let mut at = self.to;
        for chunk in buf[self.to..hi].chunks(CHUNK) {
            // branch-free over a chunk (it vectorises); positions only where the chunk has one
            if chunk.iter().fold(false, |any, &b| any | odd(b)) {
                self.at
                    .extend(chunk.iter().enumerate().filter(|&(_, &b)| odd(b)).map(|(i, _)| at + i));
            }
            at += chunk.len();
        }
        self.to = hi;
    }

    /// Whether [lo, hi) (inside what `cover` made known) holds an odd byte: a line that is not
    /// `printable`.
    pub fn any_in(&self, lo: usize, hi: usize) -> bool {
        debug_assert!(self.from <= lo && hi <= self.to);
        let i = self.at.partition_point(|&p| p < lo);
        self.at.get(i).is_some_and(|&p| p < hi)
    }
}
