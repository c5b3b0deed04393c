//! The lines before a candidate, walked back from its start: `scan.blocks.Candidate.raw_before`
//! and `Candidate.lookback`, whose Python loops are the reference (`tests/scan/test_lines_back.py`).

use memchr::memrchr;

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
    let mut out = Vec::new();
    let Some(mut end) = start.min(buf.len()).checked_sub(1) else {
        return out;
    };
    while end >= floor && out.len() < limit {
        let begin = memrchr(b'\n', &buf[..end]).map_or(0, |i| i + 1);
        if begin < floor {
            break;
        }
        out.push((begin, end));
        let Some(next) = begin.checked_sub(1) else { break };
        end = next;
    }
    out
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
