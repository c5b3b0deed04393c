//! Time of the fact path per fact-only line (not part of the wheel):
//!     cargo run --release --example factbench TABLES.json LINES
//! TABLES: `LinkFactMatcher.core_table()`, `RecoveryTable.core_table()` and PLOG_PID_PATTERN, a
//! field a line (tab-separated): `R kind`, `Q proof`, then its `L literal`, `P pattern`,
//! `V printed normal`; `H header`. LINES: fact-only lines, one a line.
#[path = "../src/facts.rs"]
#[allow(dead_code)]
mod facts;

use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let text = std::fs::read_to_string(&args[1]).expect("tables");
    let data = std::fs::read(&args[2]).expect("lines");
    let (mut rows, mut proofs, mut header): (Vec<facts::Row>, Vec<facts::ProofRow>, String) =
        (vec![], vec![], String::new());
    let mut in_proofs = false;
    for line in text.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        match (f[0], in_proofs) {
            ("R", _) => rows.push((f[1].into(), vec![], vec![], vec![])),
            ("Q", _) => {
                in_proofs = true;
                proofs.push((f[1].into(), vec![], vec![]))
            }
            ("L", false) => rows.last_mut().unwrap().1.push(f[1].into()),
            ("P", false) => rows.last_mut().unwrap().2.push(f[1].into()),
            ("V", _) => rows.last_mut().unwrap().3.push((f[1].into(), f[2].into())),
            ("L", true) => proofs.last_mut().unwrap().1.push(f[1].into()),
            ("P", true) => proofs.last_mut().unwrap().2.push(f[1].into()),
            ("H", _) => header = f[1].into(),
            _ => {}
        }
    }
    let table = facts::FactTable::new(rows).unwrap();
    let proofs = facts::ProofTable::new(proofs).unwrap();
    let header = facts::PidHeader::new(&header).unwrap();
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').filter(|l| !l.is_empty()).collect();
    let n = lines.len() as f64;
    for _ in 0..2 {
        let t = Instant::now();
        let mut found = 0;
        for l in &lines {
            if let facts::Answer::Facts(f) = table.find(l) {
                found += f.len();
            }
        }
        let find = t.elapsed().as_secs_f64() / n * 1e9;
        let t = Instant::now();
        let maybe = lines.iter().filter(|l| proofs.maybe(l)).count();
        let proof = t.elapsed().as_secs_f64() / n * 1e9;
        let t = Instant::now();
        let pids = lines.iter().filter(|l| header.pid(l).is_some()).count();
        let pid = t.elapsed().as_secs_f64() / n * 1e9;
        println!(
            "{} lines: find {find:.0} ns ({found} facts), maybe_proof {proof:.0} ns ({maybe}), pid {pid:.0} ns ({pids})",
            lines.len()
        );
    }
}
