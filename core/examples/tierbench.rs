//! Throughput of `Core::tiers` itself, the core's literal prefilter (not part of the wheel):
//!     cargo run --release --example tierbench LITERALS FACT_LITERALS PATH [ROUNDS]
//! LITERALS, FACT_LITERALS: one literal a line (code and neighbour literals; link-fact literals).
//! PATH: a log, or a folder whose files are each searched as one buffer (a bundle). Prints the
//! best rate of ROUNDS (3) and a digest of the answers, to compare two builds.
#[path = "../src/prefilter.rs"]
#[allow(dead_code)]
mod prefilter;

use aho_corasick::{AhoCorasickBuilder, MatchKind};
use std::path::Path;
use std::time::Instant;

fn literals(path: &str) -> Vec<Vec<u8>> {
    let text = std::fs::read(path).expect("a literal list");
    text.split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .map(|l| l.to_vec())
        .collect()
}

fn files(path: &Path, out: &mut Vec<Vec<u8>>) {
    if path.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)
            .expect("a folder")
            .map(|e| e.expect("an entry").path())
            .collect();
        entries.sort();
        for e in entries {
            files(&e, out);
        }
    } else {
        out.push(std::fs::read(path).expect("a file"));
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = literals(&args[1]);
    let facts: Vec<Vec<u8>> = literals(&args[2]).into_iter().filter(|l| !full.contains(l)).collect();
    let mut bufs = Vec::new();
    files(Path::new(&args[3]), &mut bufs);
    let rounds: usize = args.get(4).map_or(3, |r| r.parse().expect("ROUNDS"));
    let n_full = full.len();
    let all: Vec<Vec<u8>> = full.into_iter().chain(facts).collect();
    let ac = AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostFirst)
        .build(&all)
        .unwrap();
    let core = prefilter::Core::new(Some(ac), n_full, Vec::new(), all);
    // The first call builds the trigram index from its region (the first 8 MiB or file).
    let first = &bufs[0][..bufs[0].len().min(8 << 20)];
    let t = Instant::now();
    core.tiers(first, 0, first.len());
    println!(
        "first call ({:.1} MB): {:.1} ms",
        first.len() as f64 / 1e6,
        t.elapsed().as_secs_f64() * 1e3
    );
    let bytes: usize = bufs.iter().map(|b| b.len()).sum();
    let mut best = f64::MAX;
    let (mut lines, mut facts_only, mut digest) = (0usize, 0usize, 0u64);
    for _ in 0..rounds {
        let t = Instant::now();
        let (mut n, mut f, mut h) = (0usize, 0usize, 0xcbf2_9ce4_8422_2325u64);
        for buf in &bufs {
            // Each buffer searched in 8 MiB regions cut after a newline, as the scanner's blocks are.
            let mut begin = 0;
            while begin < buf.len() {
                let end = (begin + (8 << 20)).min(buf.len());
                let end = if end == buf.len() {
                    end
                } else {
                    memchr::memrchr(b'\n', &buf[begin..end]).map_or(end, |i| begin + i + 1)
                };
                for l in core.tiers(buf, begin, end) {
                    n += 1;
                    f += l.facts_only as usize;
                    for v in [l.start as u64, l.stop as u64, l.facts_only as u64] {
                        h = (h ^ v).wrapping_mul(0x100_0000_01b3);
                    }
                }
                begin = end;
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
        (lines, facts_only, digest) = (n, f, h);
    }
    println!(
        "{}: {} buffers, {:.1} MB, {lines} lines ({facts_only} facts only), digest {digest:016x}: {:.0} MB/s",
        args[3],
        bufs.len(),
        bytes as f64 / 1e6,
        bytes as f64 / best / 1e6
    );
}
