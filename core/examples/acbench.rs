// Throughput of the literal search alone (not part of the wheel): cargo run --release --example acbench LITS FILE
use aho_corasick::{AhoCorasick, MatchKind, packed};
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let lits = std::fs::read(&args[1]).unwrap();
    let data = std::fs::read(&args[2]).unwrap();
    let pats: Vec<&[u8]> = lits.split(|&b| b == b'\n').filter(|l| !l.is_empty() && *l != b"--").collect();
    for kind in [MatchKind::LeftmostFirst, MatchKind::Standard] {
        let ac = AhoCorasick::builder().match_kind(kind).build(&pats).unwrap();
        let t = Instant::now();
        let n = ac.find_iter(&data[..]).count();
        let dt = t.elapsed().as_secs_f64();
        println!("{kind:?} {:?} matches {n} {:.0} MB/s", ac.kind(), data.len() as f64 / dt / 1e6);
    }
    let sep = lits.split(|&b| b == b'\n').position(|l| l == b"--").unwrap();
    let all: Vec<&[u8]> = lits.split(|&b| b == b'\n').collect();
    for group in [&all[..sep], &all[sep + 1..]] {
    let group: Vec<&[u8]> = group.iter().copied().filter(|l| !l.is_empty()).collect();
    let mut b = packed::Config::new().match_kind(packed::MatchKind::LeftmostFirst).builder();
    b.extend(&group);
    if let Some(s) = b.build() {
        let t = Instant::now();
        let n = s.find_iter(&data[..]).count();
        println!("packed {n} {:.0} MB/s", data.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
    } else { println!("no packed"); }
    let ac = AhoCorasick::builder().match_kind(MatchKind::LeftmostFirst).build(&group).unwrap();
    let t = Instant::now();
    let n = ac.find_iter(&data[..]).count();
    println!("  AC {:?} {n} {:.0} MB/s", ac.kind(), data.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    for group in [&pats[..], &all[..sep]] {
        let alt: Vec<String> = group.iter().filter(|l| !l.is_empty()).map(|l| regex::escape(std::str::from_utf8(l).unwrap())).collect();
        let re = regex::bytes::Regex::new(&format!("(?-u){}", alt.join("|"))).unwrap();
        let t = Instant::now();
        let n = re.find_iter(&data[..]).count();
        println!("regex {} lits: {n} {:.0} MB/s", alt.len(), data.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
    }
    let t = Instant::now();
    let n = trigram_scan(&data, &pats);
    println!("trigram hits {n} {:.0} MB/s", data.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
    let t = Instant::now();
    let n = trigram_scan2(&data, &pats);
    println!("trigram2 hits {n} {:.0} MB/s", data.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
    let t = Instant::now();
    let n = bytecount::count(&data, b'\n');
    println!("lines {n} {:.0} MB/s", data.len() as f64 / t.elapsed().as_secs_f64() / 1e6);
}

#[allow(dead_code)]
pub fn trigram_scan(data: &[u8], pats: &[&[u8]]) -> usize {
    let mut bits = vec![0u64; 1 << 18];
    for p in pats {
        let w = p[0] as usize | (p[1] as usize) << 8 | (p[2] as usize) << 16;
        bits[w >> 6] |= 1 << (w & 63);
    }
    let mut hits = 0;
    let n = data.len();
    let mut i = 0;
    while i + 4 <= n {
        let w = u32::from_le_bytes([data[i], data[i + 1], data[i + 2], data[i + 3]]) as usize & 0xFF_FFFF;
        if bits[w >> 6] >> (w & 63) & 1 != 0 {
            hits += 1;
        }
        i += 1;
    }
    hits
}

#[allow(dead_code)]
pub fn trigram_scan2(data: &[u8], pats: &[&[u8]]) -> usize {
    let mut bits = vec![0u64; 1 << 18];
    for p in pats {
        let w = p[0] as usize | (p[1] as usize) << 8 | (p[2] as usize) << 16;
        bits[w >> 6] |= 1 << (w & 63);
    }
    let mut hits = 0;
    let n = data.len();
    let mut i = 0;
    let test = |w: u64| -> u64 {
        let w = (w & 0xFF_FFFF) as usize;
        unsafe { *bits.get_unchecked(w >> 6) >> (w & 63) & 1 }
    };
    while i + 8 <= n {
        let w = u64::from_le_bytes(data[i..i + 8].try_into().unwrap());
        let t = test(w) | test(w >> 8) << 1 | test(w >> 16) << 2 | test(w >> 24) << 3 | test(w >> 32) << 4 | test(w >> 40) << 5;
        if t != 0 {
            hits += t.count_ones() as usize;
        }
        i += 6;
    }
    hits
}
