//! Time of `PlogHeaders::read` per line (not part of the wheel):
//!     cargo run --release --example headbench GRAMMAR LINES
//! GRAMMAR: `PLOG_PID_PATTERN`, then `CORE_TAILS`, one a line. LINES: log lines.
#[path = "../src/facts.rs"]
#[allow(dead_code)]
mod facts;
#[path = "../src/headers.rs"]
#[allow(dead_code)]
mod headers;
use std::time::Instant;
fn main() {
    let args: Vec<String> = std::env::args().collect();
    let grammar: Vec<String> = std::fs::read_to_string(&args[1])
        .unwrap()
        .lines()
        .map(String::from)
        .collect();
    let data = std::fs::read(&args[2]).unwrap();
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    parts(&grammar, &lines);
    let h = headers::PlogHeaders::new(&grammar[0], &grammar[1..]).unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let n = lines.iter().filter(|l| h.read(l).is_some()).count();
        println!(
            "{} lines, {n} headers: {:.0} ns/line",
            lines.len(),
            t.elapsed().as_secs_f64() / lines.len() as f64 * 1e9
        );
    }
}
#[allow(dead_code)]
fn parts(grammar: &[String], lines: &[&[u8]]) {
    let head = regex::bytes::Regex::new(&format!("(?-u)^(?:{})", grammar[0])).unwrap();
    let tail = regex::bytes::Regex::new(&format!("(?-u)^(?:{})", grammar[1])).unwrap();
    let t = Instant::now();
    let mut ends = vec![];
    for l in lines {
        if let Some(m) = head.find(l) {
            ends.push(m.end());
        }
    }
    println!(
        "head find {:.0} ns",
        t.elapsed().as_secs_f64() / lines.len() as f64 * 1e9
    );
    let t = Instant::now();
    for (l, e) in lines.iter().zip(&ends) {
        let _ = head.captures(&l[..*e]);
    }
    println!(
        "head captures on span {:.0} ns",
        t.elapsed().as_secs_f64() / lines.len() as f64 * 1e9
    );
    let t = Instant::now();
    for (l, e) in lines.iter().zip(&ends) {
        let _ = tail.captures(&l[*e..]);
    }
    println!(
        "tail0 captures {:.0} ns",
        t.elapsed().as_secs_f64() / lines.len() as f64 * 1e9
    );
}
