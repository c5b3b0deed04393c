//! Throughput of literal searches alone, for choosing the core's (not part of the wheel):
//!     cargo run --release --example acbench LITERALS FILE
//! LITERALS: one literal a line, the code/neighbour literals, a line `--`, then the fact literals.
use aho_corasick::{AhoCorasick, MatchKind, packed};
use std::time::Instant;

fn rate(bytes: usize, t: Instant) -> f64 {
    bytes as f64 / t.elapsed().as_secs_f64() / 1e6
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let lits = std::fs::read(&args[1]).expect("literals");
    let data = std::fs::read(&args[2]).expect("file");
    let lines: Vec<&[u8]> = lits.split(|&b| b == b'\n').collect();
    let sep = lines.iter().position(|l| *l == b"--").unwrap_or(lines.len());
    let all: Vec<&[u8]> = lines.iter().copied().filter(|l| !l.is_empty() && *l != b"--").collect();
    let ac = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .build(&all)
        .unwrap();
    let t = Instant::now();
    let n = ac.find_iter(&data[..]).count();
    println!(
        "aho-corasick {:?}, {} literals: {n} matches, {:.0} MB/s",
        ac.kind(),
        all.len(),
        rate(data.len(), t)
    );
    for (name, group) in [("code", &lines[..sep]), ("fact", &lines[(sep + 1).min(lines.len())..])] {
        let group: Vec<&[u8]> = group.iter().copied().filter(|l| !l.is_empty()).collect();
        let mut b = packed::Config::new()
            .match_kind(packed::MatchKind::LeftmostFirst)
            .builder();
        b.extend(&group);
        match b.build() {
            Some(s) => {
                let t = Instant::now();
                let n = s.find_iter(&data[..]).count();
                println!(
                    "teddy, {} {name} literals: {n} matches, {:.0} MB/s",
                    group.len(),
                    rate(data.len(), t)
                );
            }
            None => println!("teddy: not available for the {} {name} literals", group.len()),
        }
    }
    let t = Instant::now();
    let n = bytecount::count(&data, b'\n');
    println!("newlines: {n}, {:.0} MB/s", rate(data.len(), t));
}
