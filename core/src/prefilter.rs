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
    simd: bool,                 // whether the trigram search may use SIMD (where the CPU has it)
}

/// The literal search when every literal has at least 3 bytes: each literal is anchored on its
/// rarest 3-byte window (rarest in the first region searched, by `Sample`), a 2^24-bit set says
/// which windows anchor a literal, and a hit is verified exactly against the literals anchored
/// there. Where the CPU has AVX2, `Nibbles` first skips most windows that anchor nothing.
struct Trigrams {
    bits: Vec<u64>,
    rank: Vec<u16>,           // set bits before each word of `bits`
    groups: Vec<(u32, u32)>,  // per anchored window (by rank): its range in `anchors`
    anchors: Vec<(u32, u32)>, // (literal id, offset of the window in the literal)
    #[cfg(target_arch = "x86_64")]
    nibbles: Option<Nibbles>, // a first filter of 32 windows at a time, where the CPU has AVX2
}

#[inline(always)]
fn window(buf: &[u8], i: usize) -> usize {
    buf[i] as usize | (buf[i + 1] as usize) << 8 | (buf[i + 2] as usize) << 16
}

/// How often windows occur in a sample: counted (hashed into 2^16 counters), and estimated from
/// the counts of byte pairs, as if each byte hung on the one before only. A small sample (a
/// bundle's first little file) leaves most windows uncounted; the pairs still rank them.
struct Sample {
    windows: Vec<u32>, // by hash of the window
    pairs: Vec<u32>,   // by first byte | second byte << 8, each plus one (what is unseen still counts)
    second: Vec<u64>,  // by byte: the pairs it ends
}

impl Sample {
    fn new(sample: &[u8]) -> Sample {
        let mut windows = vec![0u32; 1 << 16];
        for w in sample.windows(3) {
            windows[Self::hash(window(w, 0))] += 1;
        }
        let mut pairs = vec![1u32; 1 << 16];
        for p in sample.windows(2) {
            pairs[p[0] as usize | (p[1] as usize) << 8] += 1;
        }
        let mut second = vec![0u64; 256];
        for (j, &c) in pairs.iter().enumerate() {
            second[j >> 8] += c as u64;
        }
        Sample { windows, pairs, second }
    }

    fn hash(w: usize) -> usize {
        (w.wrapping_mul(0x9E37_79B1) >> 8) & 0xFFFF
    }

    /// How often a window of bytes x0, x1, x2 with x0 among `first`, x1 among `middle` and x2
    /// among `last` occurs, by the pairs.
    fn by_pairs(&self, first: &[usize], middle: &[usize], last: &[usize]) -> f64 {
        middle
            .iter()
            .map(|&x1| {
                let before: u64 = first.iter().map(|&x0| self.pairs[x0 | x1 << 8] as u64).sum();
                let after: u64 = last.iter().map(|&x2| self.pairs[x1 | x2 << 8] as u64).sum();
                before as f64 * after as f64 / self.second[x1] as f64
            })
            .sum()
    }

    /// How often window w occurs: its count and its estimate by the pairs.
    fn estimate(&self, w: usize) -> f64 {
        let x = |k: usize| [w >> (8 * k) & 0xFF];
        self.windows[Self::hash(w)] as f64 + self.by_pairs(&x(0), &x(1), &x(2))
    }
}

impl Trigrams {
    fn new(literals: &[Vec<u8>], sample: &[u8], simd: bool) -> Option<Trigrams> {
        if literals.is_empty() || literals.iter().any(|l| l.len() < 3) || literals.len() > u16::MAX as usize {
            return None;
        }
        let stats = Sample::new(&sample[..sample.len().min(4 << 20)]);
        let mut chosen: Vec<(usize, u32, u32)> = literals
            .iter()
            .enumerate()
            .map(|(id, lit)| {
                let k = (0..=lit.len() - 3)
                    .min_by(|&a, &b| {
                        (stats
                            .estimate(window(lit, a))
                            .total_cmp(&stats.estimate(window(lit, b))))
                        .then(a.cmp(&b))
                    })
                    .expect("a literal of 3 bytes or more");
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
        #[cfg(target_arch = "x86_64")]
        let nibbles = simd
            .then(|| {
                let mut windows: Vec<usize> = chosen.iter().map(|&(w, _, _)| w).collect();
                windows.dedup();
                windows.sort_by(|&a, &b| stats.estimate(b).total_cmp(&stats.estimate(a)).then(a.cmp(&b)));
                Nibbles::new(&windows, &stats)
            })
            .flatten();
        Some(Trigrams {
            bits,
            rank,
            groups,
            anchors,
            #[cfg(target_arch = "x86_64")]
            nibbles,
        })
    }

    /// Whether window `w` anchors a literal.
    #[inline(always)]
    fn has(&self, w: usize) -> bool {
        self.bits[w >> 6] >> (w & 63) & 1 == 1
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

/// A first filter of windows, Teddy-like (as in Hyperscan and aho-corasick's `packed`): the
/// anchor windows are cut into up to 32 buckets, one bit each; for each of a window's three bytes,
/// a 16-entry table of its low nibble and one of its high nibble give the buckets that allow it,
/// and a window passes if some bucket allows all six nibbles. Every anchor window passes (its
/// bucket allows its own nibbles), so the filter only skips windows that anchor nothing; with
/// AVX2 it tests 32 windows in a few shuffles. Buckets are filled greedily so that each lets
/// through as few of the sample's windows as it can (this only decides speed).
#[cfg(target_arch = "x86_64")]
struct Nibbles {
    sets: usize,            // sets of 8 buckets (1 to 4), one byte of bucket bits each
    lo: [[[u8; 16]; 3]; 4], // [set][byte of the window][low nibble] -> buckets
    hi: [[[u8; 16]; 3]; 4], // [set][byte of the window][high nibble] -> buckets
}

#[cfg(target_arch = "x86_64")]
impl Nibbles {
    /// The filter of `windows` (most frequent first), buckets fitted to `sample`; None without AVX2.
    fn new(windows: &[usize], stats: &Sample) -> Option<Nibbles> {
        if !std::arch::is_x86_feature_detected!("avx2") || windows.is_empty() {
            return None;
        }
        let n_buckets = windows.len().min(32);
        // A bucket: per byte of the window, the low and the high nibbles it allows; what it
        // lets through of the sample, estimated by the pairs.
        let allowed = |[lo, hi]: [u16; 2]| -> Vec<usize> {
            let nibbles = |set: u16| (0..16usize).filter(move |&v| set >> v & 1 == 1);
            nibbles(hi).flat_map(|h| nibbles(lo).map(move |l| h << 4 | l)).collect()
        };
        let cost = |b: &[[u16; 2]; 3]| stats.by_pairs(&allowed(b[0]), &allowed(b[1]), &allowed(b[2]));
        let with = |b: &[[u16; 2]; 3], w: usize| -> [[u16; 2]; 3] {
            let mut b = *b;
            for (k, nibs) in b.iter_mut().enumerate() {
                let x = w >> (8 * k) & 0xFF;
                nibs[0] |= 1 << (x & 15);
                nibs[1] |= 1 << (x >> 4);
            }
            b
        };
        let mut buckets = vec![[[0u16; 2]; 3]; n_buckets];
        let mut costs = vec![0.0f64; n_buckets];
        for &w in windows {
            // The bucket that lets through the least more (an empty bucket: the window alone).
            let (best, _, c) = buckets
                .iter()
                .zip(&costs)
                .enumerate()
                .map(|(j, (b, &c))| {
                    let c2 = cost(&with(b, w));
                    (j, c2 - c, c2)
                })
                .min_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)))
                .expect("a bucket");
            buckets[best] = with(&buckets[best], w);
            costs[best] = c;
        }
        let mut nib = Nibbles {
            sets: n_buckets.div_ceil(8),
            lo: [[[0; 16]; 3]; 4],
            hi: [[[0; 16]; 3]; 4],
        };
        for (j, b) in buckets.iter().enumerate() {
            for (k, &[lo, hi]) in b.iter().enumerate() {
                for v in 0..16 {
                    nib.lo[j / 8][k][v] |= ((lo >> v & 1) as u8) << (j % 8);
                    nib.hi[j / 8][k][v] |= ((hi >> v & 1) as u8) << (j % 8);
                }
            }
        }
        Some(nib)
    }

    /// The tables in AVX2 registers, for `S` sets.
    #[target_feature(enable = "avx2")]
    fn load<const S: usize>(&self) -> NibbleRegs<S> {
        use std::arch::x86_64::*;
        // SAFETY: each table is 16 bytes, the size of the unaligned load.
        let reg = |t: &[u8; 16]| _mm256_broadcastsi128_si256(unsafe { _mm_loadu_si128(t.as_ptr() as *const __m128i) });
        NibbleRegs {
            lo: std::array::from_fn(|s| std::array::from_fn(|k| reg(&self.lo[s][k]))),
            hi: std::array::from_fn(|s| std::array::from_fn(|k| reg(&self.hi[s][k]))),
        }
    }
}

#[cfg(target_arch = "x86_64")]
struct NibbleRegs<const S: usize> {
    lo: [[std::arch::x86_64::__m256i; 3]; S],
    hi: [[std::arch::x86_64::__m256i; 3]; S],
}

#[cfg(target_arch = "x86_64")]
impl<const S: usize> NibbleRegs<S> {
    /// Bit j: the window at p + j may anchor a literal (j < 32).
    ///
    /// # Safety
    /// p..p + 34 must be readable.
    #[target_feature(enable = "avx2")]
    #[inline]
    unsafe fn candidates(&self, p: *const u8) -> u32 {
        use std::arch::x86_64::*;
        let low = _mm256_set1_epi8(0x0F);
        // SAFETY: p + k + 32 <= p + 34 for k < 3 (the caller's promise).
        let bytes: [__m256i; 3] = std::array::from_fn(|k| unsafe { _mm256_loadu_si256(p.add(k) as *const __m256i) });
        let lo = bytes.map(|b| _mm256_and_si256(b, low));
        let hi = bytes.map(|b| _mm256_and_si256(_mm256_srli_epi16(b, 4), low));
        let mut any = _mm256_setzero_si256();
        for s in 0..S {
            let mut m = _mm256_and_si256(
                _mm256_shuffle_epi8(self.lo[s][0], lo[0]),
                _mm256_shuffle_epi8(self.hi[s][0], hi[0]),
            );
            for k in 1..3 {
                m = _mm256_and_si256(m, _mm256_shuffle_epi8(self.lo[s][k], lo[k]));
                m = _mm256_and_si256(m, _mm256_shuffle_epi8(self.hi[s][k], hi[k]));
            }
            any = _mm256_or_si256(any, m);
        }
        !(_mm256_movemask_epi8(_mm256_cmpeq_epi8(any, _mm256_setzero_si256())) as u32)
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
            simd: true,
        }
    }

    /// The same core without SIMD: the property tests check both searches.
    #[allow(dead_code)] // used by tests/props.rs
    pub fn without_simd(mut self) -> Core {
        self.simd = false;
        self
    }

    /// `Prefilter.tiers` of buf[begin..end], as sorted lines.
    pub fn tiers(&self, buf: &[u8], begin: usize, end: usize) -> Vec<Line> {
        let hay = &buf[..end];
        let mut out: Vec<Line> = Vec::new();
        let tri = self
            .trigrams
            .get_or_init(|| Trigrams::new(&self.literals, &hay[begin..], self.simd));
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
        if memchr(0, &hay[begin..]).is_some() {
            self.nul_lines(hay, begin, &mut out);
        }
        out
    }

    /// `Prefilter._nul_lines`: the lines of hay[begin..] that hold a NUL, searched again without
    /// their NULs (a line's text drops them; UTF-16 or UTF-32 text after UTF-8 is ASCII with NULs
    /// between its letters). Each becomes a candidate, or a full one, where its NUL-less bytes say.
    fn nul_lines(&self, hay: &[u8], begin: usize, out: &mut Vec<Line>) {
        let end = hay.len();
        let mut pos = begin;
        while let Some(i) = memchr(0, &hay[pos..end]) {
            let at = pos + i;
            let start = memrchr(b'\n', &hay[begin..at]).map_or(begin, |j| begin + j + 1);
            let stop = memchr(b'\n', &hay[at..end]).map_or(end, |j| at + j);
            pos = stop;
            let found = out.binary_search_by(|l| l.start.cmp(&start));
            if matches!(found, Ok(k) if !out[k].facts_only) {
                continue;
            }
            let line: Vec<u8> = hay[start..stop].iter().copied().filter(|&b| b != 0).collect();
            let (mut any, mut full) = (false, self.regexes.iter().any(|re| re.is_match(&line)));
            if let Some(ac) = &self.ac {
                let mut from = 0;
                while !full && from < line.len() {
                    match ac.find(Input::new(&line).span(from..line.len())) {
                        Some(m) => {
                            any = true;
                            full = m.pattern().as_usize() < self.n_full;
                            from = m.start() + 1;
                        }
                        None => break,
                    }
                }
            }
            match found {
                Ok(k) => out[k].facts_only &= !full,
                Err(k) if any || full => out.insert(
                    k,
                    Line {
                        start,
                        stop,
                        facts_only: !full,
                    },
                ),
                Err(_) => {}
            }
        }
    }

    /// The candidate lines of hay[begin..] by the trigram index: the same as the Aho-Corasick loop.
    fn trigram_lines(&self, tri: &Trigrams, hay: &[u8], begin: usize, out: &mut Vec<Line>) {
        let mut fact: Option<Line> = None; // the current line, when it holds fact literals only so far
        #[cfg(target_arch = "x86_64")]
        let i = match &tri.nibbles {
            // SAFETY: `nibbles` is only built where the CPU has AVX2 (`Nibbles::new`).
            Some(nib) => unsafe { self.nibble_scan(tri, nib, hay, begin, &mut fact, out) },
            None => begin,
        };
        #[cfg(not(target_arch = "x86_64"))]
        let i = begin;
        self.window_scan(tri, hay, begin, i, &mut fact, out);
        if let Some(f) = fact {
            out.push(f);
        }
    }

    /// The trigram search of hay[from..] (a region that starts at `begin`), sixteen windows a step.
    fn window_scan(
        &self,
        tri: &Trigrams,
        hay: &[u8],
        begin: usize,
        from: usize,
        fact: &mut Option<Line>,
        out: &mut Vec<Line>,
    ) {
        let end = hay.len();
        let mut i = from;
        let bits = tri.bits.as_ptr();
        while i + 3 <= end {
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
            i = if tri.has(window(hay, i)) {
                self.anchor_at(tri, hay, begin, i, fact, out)
            } else {
                i + 1
            };
        }
    }

    /// The trigram search of hay[begin..], 32 windows a step filtered by `nib` (AVX2), up to where
    /// fewer than 34 bytes are left; returns where `window_scan` goes on.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn nibble_scan(
        &self,
        tri: &Trigrams,
        nib: &Nibbles,
        hay: &[u8],
        begin: usize,
        fact: &mut Option<Line>,
        out: &mut Vec<Line>,
    ) -> usize {
        match nib.sets {
            1 => self.nibble_scan_n::<1>(tri, nib, hay, begin, fact, out),
            2 => self.nibble_scan_n::<2>(tri, nib, hay, begin, fact, out),
            3 => self.nibble_scan_n::<3>(tri, nib, hay, begin, fact, out),
            _ => self.nibble_scan_n::<4>(tri, nib, hay, begin, fact, out),
        }
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn nibble_scan_n<const S: usize>(
        &self,
        tri: &Trigrams,
        nib: &Nibbles,
        hay: &[u8],
        begin: usize,
        fact: &mut Option<Line>,
        out: &mut Vec<Line>,
    ) -> usize {
        let filter = nib.load::<S>();
        let mut i = begin;
        while i + 34 <= hay.len() {
            let base = i;
            // SAFETY: base + 2 + 32 <= hay.len(): the three 32-byte loads lie inside hay.
            let mut maybe = unsafe { filter.candidates(hay.as_ptr().add(base)) };
            while maybe != 0 {
                let at = base + maybe.trailing_zeros() as usize;
                maybe &= maybe - 1;
                // Past a full line's end, or a window the filter let through but the set has not.
                if at >= i && tri.has(window(hay, at)) {
                    i = self.anchor_at(tri, hay, begin, at, fact, out);
                }
            }
            i = i.max(base + 32);
        }
        i
    }

    /// The literals anchored at window i of hay (in the set), verified: the line of a code literal
    /// is pushed (and the search goes on after it), a fact literal's line kept in `fact`.
    /// Returns where the search goes on.
    #[inline]
    fn anchor_at(
        &self,
        tri: &Trigrams,
        hay: &[u8],
        begin: usize,
        i: usize,
        fact: &mut Option<Line>,
        out: &mut Vec<Line>,
    ) -> usize {
        let end = hay.len();
        for &(id, k) in tri.anchored(window(hay, i)) {
            let (id, k) = (id as usize, k as usize);
            if i < begin + k {
                continue;
            }
            let s = i - k;
            let lit = &self.literals[id];
            if s + lit.len() > end || &hay[s..s + lit.len()] != lit.as_slice() {
                continue;
            }
            if let Some(f) = *fact
                && s > f.stop
            {
                out.push(f);
                *fact = None;
            }
            let line = match *fact {
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
                *fact = None;
                return line.stop + 1;
            }
            *fact = Some(line);
        }
        i + 1
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
