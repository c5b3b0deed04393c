//! The prefilter: which lines of a buffer hold a literal (the two tiers of `scan.blocks.Prefilter`).
//! Free of PyO3, so that the property tests (`tests/props.rs`) run it on arbitrary bytes.

use std::sync::OnceLock;

use aho_corasick::{AhoCorasick, Input};
use memchr::{memchr, memrchr};
use regex::bytes::Regex;

pub const FRAGMENT_TAIL: usize = 256; // scanner.FRAGMENT_TAIL
pub const CODE_CONTEXT: usize = 128; // scanner.CODE_CONTEXT

// The prefilter: one leftmost-first Aho-Corasick pass over every literal (code and neighbour
// literals first, then fact literals), plus the few extra regexes (full tier).

pub struct Core {
    pub ac: Option<AhoCorasick>,
    pub n_full: usize,
    pub regexes: Vec<Regex>,
    pub literals: Vec<Vec<u8>>, // code and neighbour literals first (ids < n_full), then fact literals
    trigrams: OnceLock<Option<Trigrams>>, // built from the first region searched (only speed depends on it)
}

/// The literal search when every literal has at least 3 bytes: each literal is anchored on its
/// rarest 3-byte window (rarest in the first region searched), a 2^24-bit set says which windows
/// anchor a literal, and a hit is verified exactly against the literals anchored there.
struct Trigrams {
    bits: Vec<u64>,
    rank: Vec<u16>,           // set bits before each word of `bits`
    groups: Vec<(u32, u32)>,  // per anchored window (by rank): its range in `anchors`
    anchors: Vec<(u32, u32)>, // (literal id, offset of the window in the literal)
}

#[inline(always)]
fn window(buf: &[u8], i: usize) -> usize {
    buf[i] as usize | (buf[i + 1] as usize) << 8 | (buf[i + 2] as usize) << 16
}

impl Trigrams {
    fn new(literals: &[Vec<u8>], sample: &[u8]) -> Option<Trigrams> {
        if literals.is_empty() || literals.iter().any(|l| l.len() < 3) || literals.len() > u16::MAX as usize {
            return None;
        }
        // How often each (hashed) window occurs in the sample.
        let hash = |w: usize| (w.wrapping_mul(0x9E37_79B1) >> 8) & 0xFFFF;
        let mut freq = vec![0u32; 1 << 16];
        let sample = &sample[..sample.len().min(4 << 20)];
        if sample.len() >= 3 {
            for i in 0..sample.len() - 2 {
                freq[hash(window(sample, i))] += 1;
            }
        }
        let mut chosen: Vec<(usize, u32, u32)> = literals
            .iter()
            .enumerate()
            .map(|(id, lit)| {
                let k = (0..=lit.len() - 3)
                    .min_by_key(|&k| (freq[hash(window(lit, k))], k))
                    .unwrap();
                (window(lit, k), id as u32, k as u32)
            })
            .collect();
        chosen.sort();
        let mut bits = vec![0u64; 1 << 18];
        for &(w, _, _) in &chosen {
            bits[w >> 6] |= 1 << (w & 63);
        }
        let mut rank = Vec::with_capacity(bits.len());
        let mut total = 0u16;
        for word in &bits {
            rank.push(total);
            total += word.count_ones() as u16;
        }
        let mut groups = Vec::new();
        let mut anchors = Vec::with_capacity(chosen.len());
        let mut i = 0;
        while i < chosen.len() {
            let from = anchors.len() as u32;
            let w = chosen[i].0;
            while i < chosen.len() && chosen[i].0 == w {
                anchors.push((chosen[i].1, chosen[i].2));
                i += 1;
            }
            groups.push((from, anchors.len() as u32));
        }
        Some(Trigrams {
            bits,
            rank,
            groups,
            anchors,
        })
    }

    /// The literals anchored at window `w` (set in `bits`).
    #[inline]
    fn anchored(&self, w: usize) -> &[(u32, u32)] {
        let word = self.bits[w >> 6];
        let r = self.rank[w >> 6] as usize + (word & ((1u64 << (w & 63)) - 1)).count_ones() as usize;
        let (a, b) = self.groups[r];
        &self.anchors[a as usize..b as usize]
    }
}

/// A candidate line of a region: where it starts and ends (its newline, or the region's end).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Line {
    pub start: usize,
    pub stop: usize,
    pub facts_only: bool,
}

impl Core {
    pub fn new(ac: Option<AhoCorasick>, n_full: usize, regexes: Vec<Regex>, literals: Vec<Vec<u8>>) -> Core {
        Core {
            ac,
            n_full,
            regexes,
            literals,
            trigrams: OnceLock::new(),
        }
    }

    /// `Prefilter.tiers` of buf[begin..end], as sorted lines.
    pub fn tiers(&self, buf: &[u8], begin: usize, end: usize) -> Vec<Line> {
        let hay = &buf[..end];
        let mut out: Vec<Line> = Vec::new();
        let tri = self
            .trigrams
            .get_or_init(|| Trigrams::new(&self.literals, &hay[begin..]));
        if let Some(tri) = tri {
            self.trigram_lines(tri, hay, begin, &mut out);
        } else if let Some(ac) = &self.ac {
            let mut pos = begin;
            while pos < end {
                let Some(m) = ac.find(Input::new(hay).span(pos..end)) else {
                    break;
                };
                let at = m.start();
                let start = memrchr(b'\n', &hay[begin..at]).map_or(begin, |i| begin + i + 1);
                let stop = memchr(b'\n', &hay[at..end]).map_or(end, |i| at + i);
                let mut full = m.pattern().as_usize() < self.n_full;
                // A fact literal came first: the line is full if a code literal starts later in it
                // (leftmost-first prefers code literals at the same start).
                let mut from = at + 1;
                while !full && from < stop {
                    match ac.find(Input::new(hay).span(from..stop)) {
                        Some(m2) if m2.pattern().as_usize() < self.n_full => full = true,
                        Some(m2) => from = m2.start() + 1,
                        None => break,
                    }
                }
                out.push(Line {
                    start,
                    stop,
                    facts_only: !full,
                });
                pos = stop + 1;
            }
        }
        if !self.regexes.is_empty() {
            let mut extra: Vec<usize> = Vec::new();
            for re in &self.regexes {
                let mut at = begin;
                while at <= end {
                    let Some(m) = re.find_at(hay, at) else { break };
                    extra.push(memrchr(b'\n', &hay[begin..m.start()]).map_or(begin, |i| begin + i + 1));
                    at = if m.end() > m.start() { m.end() } else { m.end() + 1 };
                }
            }
            if !extra.is_empty() {
                for start in extra {
                    match out.binary_search_by(|l| l.start.cmp(&start)) {
                        Ok(i) => out[i].facts_only = false,
                        Err(i) => {
                            let stop = memchr(b'\n', &hay[start..end]).map_or(end, |j| start + j);
                            out.insert(
                                i,
                                Line {
                                    start,
                                    stop,
                                    facts_only: false,
                                },
                            );
                        }
                    }
                }
            }
        }
        out
    }

    /// The candidate lines of hay[begin..] by the trigram index: the same as the Aho-Corasick loop.
    fn trigram_lines(&self, tri: &Trigrams, hay: &[u8], begin: usize, out: &mut Vec<Line>) {
        let end = hay.len();
        let mut fact: Option<Line> = None; // the current line, when it holds fact literals only so far
        let mut i = begin;
        let bits = tri.bits.as_ptr();
        'scan: while i + 3 <= end {
            if i + 19 <= end {
                // Sixteen windows at a time, branch-free: on to the first that anchors a literal.
                let mut any = 0u32;
                for j in 0..16 {
                    // SAFETY: i + j + 4 <= i + 19 <= end <= hay.len(); w < 2^24 indexes bits (2^18 words).
                    let w = unsafe { (hay.as_ptr().add(i + j) as *const u32).read_unaligned() }.to_le() as usize
                        & 0xFF_FFFF;
                    any |= ((unsafe { *bits.add(w >> 6) } >> (w & 63)) as u32 & 1) << j;
                }
                if any == 0 {
                    i += 16;
                    continue;
                }
                i += any.trailing_zeros() as usize;
            }
            let w = window(hay, i);
            if tri.bits[w >> 6] >> (w & 63) & 1 == 0 {
                i += 1;
                continue;
            }
            for &(id, k) in tri.anchored(w) {
                let (id, k) = (id as usize, k as usize);
                if i < begin + k {
                    continue;
                }
                let s = i - k;
                let lit = &self.literals[id];
                if s + lit.len() > end || &hay[s..s + lit.len()] != lit.as_slice() {
                    continue;
                }
                if let Some(f) = fact
                    && s > f.stop
                {
                    out.push(f);
                    fact = None;
                }
                let line = match fact {
                    Some(f) => f,
                    None => {
                        let start = memrchr(b'\n', &hay[begin..s]).map_or(begin, |j| begin + j + 1);
                        let stop = memchr(b'\n', &hay[s..end]).map_or(end, |j| s + j);
                        Line {
                            start,
                            stop,
                            facts_only: true,
                        }
                    }
                };
                if id < self.n_full {
                    out.push(Line {
                        facts_only: false,
                        ..line
                    });
                    fact = None;
                    i = line.stop + 1;
                    continue 'scan;
                }
                fact = Some(line);
            }
            i += 1;
        }
        if let Some(f) = fact {
            out.push(f);
        }
    }

    /// `_fragment_cut`: where to cut a fragment off a line too long to keep.
    pub fn fragment_cut(&self, buf: &[u8], begin: usize) -> usize {
        let mut cut = buf.len() as isize - FRAGMENT_TAIL as isize;
        let window = std::cmp::max(begin as isize, cut - FRAGMENT_TAIL as isize) as usize;
        if let Some(ac) = &self.ac
            && window <= buf.len()
            && let Some(m) = ac.find(Input::new(buf).span(window..buf.len()))
        {
            cut = cut.min(m.start() as isize - CODE_CONTEXT as isize);
        }
        std::cmp::max(cut, begin as isize + 1) as usize
    }
}
