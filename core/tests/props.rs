//! Properties of the core's line parser on arbitrary bytes: the prefilter's candidate lines are
//! exactly the lines that hold a literal (every search: the trigram index with and without its
//! SIMD filter, or Aho-Corasick when a literal is shorter than 3 bytes), and the link-fact table
//! answers any line without a panic.
//! `tests/scan/test_core_props.py` runs a short run of it (`cargo test --release --test props`).

#[path = "../src/codes.rs"]
#[allow(dead_code)]
mod codes;
#[path = "../src/facts.rs"]
#[allow(dead_code)]
mod facts;
#[path = "../src/prefilter.rs"]
#[allow(dead_code)]
mod prefilter;

use aho_corasick::{AhoCorasickBuilder, MatchKind};
use memchr::memmem;
use proptest::prelude::*;

const CODES: [&[u8]; 3] = [b"0x5010", b"LLM_", b"134327"];
const FACTS: [&[u8]; 3] = [b"ole", b"remote", b"cluster_id"];

fn core(extra: &[&[u8]]) -> prefilter::Core {
    core_of(&CODES.iter().chain(extra).copied().collect::<Vec<_>>(), &FACTS)
}

/// A core of code literals `codes` and fact literals `facts`, as `Matcher` builds it.
fn core_of(codes: &[&[u8]], facts: &[&[u8]]) -> prefilter::Core {
    let facts = facts.iter().filter(|f| !codes.contains(f));
    let literals: Vec<Vec<u8>> = codes.iter().chain(facts).map(|l| l.to_vec()).collect();
    let ac = AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostFirst)
        .build(&literals)
        .unwrap();
    prefilter::Core::new(Some(ac), codes.len(), Vec::new(), literals)
}

/// The lines of buf[begin..] that hold a literal, by brute force: (start, stop, facts only).
fn reference(buf: &[u8], begin: usize, extra: &[&[u8]]) -> Vec<(usize, usize, bool)> {
    reference_of(
        buf,
        begin,
        &CODES.iter().chain(extra).copied().collect::<Vec<_>>(),
        &FACTS,
    )
}

fn reference_of(buf: &[u8], begin: usize, codes: &[&[u8]], facts: &[&[u8]]) -> Vec<(usize, usize, bool)> {
    let mut out = Vec::new();
    let mut start = begin;
    while start < buf.len() || (start == begin && begin < buf.len()) {
        let stop = memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i);
        let line = &buf[start..stop];
        let holds = |l: &&[u8]| memmem::find(line, l).is_some();
        let full = codes.iter().any(holds);
        if full || facts.iter().any(holds) {
            out.push((start, stop, !full));
        }
        start = stop + 1;
    }
    out
}

fn lines(got: Vec<prefilter::Line>) -> Vec<(usize, usize, bool)> {
    got.iter().map(|l| (l.start, l.stop, l.facts_only)).collect()
}

/// Literals of 3 to 6 bytes over a few letters: they share windows, overlap and hold one another.
fn small_literals(n: usize) -> impl Strategy<Value = Vec<Vec<u8>>> {
    prop::collection::vec(
        prop::collection::vec(prop::sample::select(&b"abo l\xff"[..]), 3..7),
        1..n,
    )
}

/// Text of those letters (a newline now and then), long runs of one byte, and arbitrary bytes.
fn text_of_few_letters() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => prop::collection::vec(prop::sample::select(&b"abo l\xff\n"[..]), 0..24),
        1 => (any::<u8>(), 0usize..200).prop_map(|(b, n)| vec![b; n]),
        1 => prop::collection::vec(any::<u8>(), 0..8),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|ps| ps.concat())
}

fn bytes_like_logs() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..8),
        prop::sample::select(vec![
            &b"0x5010"[..],
            b"0x501",
            b"LLM_",
            b"LL",
            b"134327",
            b"ole",
            b"remote",
            b"cluster_id",
            b"Qz",
            b"\n",
            b"\r\n",
            b"\x00",
            b" "
        ])
        .prop_map(|p| p.to_vec()),
    ];
    prop::collection::vec(piece, 0..48).prop_map(|ps| ps.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn candidate_lines_are_the_lines_holding_a_literal(data in bytes_like_logs(), skip in 0usize..16) {
        let begin = skip.min(data.len());
        for extra in [&[][..], &[&b"Qz"[..]][..]] {
            prop_assert_eq!(lines(core(extra).tiers(&data, begin, data.len())), reference(&data, begin, extra));
        }
        prop_assert_eq!(lines(core(&[]).without_simd().tiers(&data, begin, data.len())), reference(&data, begin, &[]));
    }

    /// Many literals of few letters (windows shared, literals of exactly 3 bytes, one inside
    /// another), long lines and long runs, a region that ends before the buffer does, and a core
    /// whose anchors and filter were fitted to another buffer first.
    #[test]
    fn candidate_lines_of_many_literals(
        lits in small_literals(48),
        split in 0usize..48,
        train in text_of_few_letters(),
        data in text_of_few_letters(),
        skip in 0usize..40,
        cut in 0usize..40,
    ) {
        let (codes, facts) = lits.split_at(split.min(lits.len()));
        let codes: Vec<&[u8]> = codes.iter().map(|l| l.as_slice()).collect();
        let facts: Vec<&[u8]> = facts.iter().map(|l| l.as_slice()).collect();
        let end = data.len() - cut.min(data.len());
        let begin = skip.min(end);
        let want = reference_of(&data[..end], begin, &codes, &facts);
        for simd in [true, false] {
            let core = core_of(&codes, &facts);
            let core = if simd { core } else { core.without_simd() };
            if !train.is_empty() {
                prop_assert_eq!(lines(core.tiers(&train, 0, train.len())), reference_of(&train, 0, &codes, &facts));
            }
            prop_assert_eq!(lines(core.tiers(&data, begin, end)), want.clone());
        }
    }

    #[test]
    fn a_fragment_cut_stays_inside(data in bytes_like_logs(), skip in 0usize..16) {
        let begin = skip.min(data.len());
        let cut = core(&[]).fragment_cut(&data, begin);
        prop_assert!(cut > begin || data.len() == begin);
    }

    #[test]
    fn the_fact_table_answers_any_line(data in bytes_like_logs()) {
        let table = facts::FactTable::new(vec![
            ("role".into(), vec!["ole".into()], vec![r"(?i)\brole\s*=\s*(?P<value>\w+)".into()], vec![("prompt".into(), "Prompt".into())]),
            ("remote_addr".into(), vec!["remote".into()], vec![r"remote\s*(?P<ip>[\d.]+):(?P<port>\d+)".into()], vec![]),
        ]).unwrap();
        if let facts::Answer::Facts(found) = table.find(&data) {
            for (_, value) in found {
                prop_assert!(!value.is_empty() && value.is_ascii());
            }
        }
    }

    #[test]
    fn the_code_forms_answer_any_line(data in bytes_like_logs()) {
        let forms = codes::Codes::new(codes::Spec {
            names: vec![("LLM_LINK_FAILED".into(), 0x5010_B009)],
            family: (0x5010_B000, 256),
            errno_pattern: Some(r"ErrorNo\s*:\s*-?\d*\s*\((link failed!)\)".into()),
            errno_values: vec![("link failed!".into(), 0x5010_B009)],
            standalone: vec![("link failed!".into(), 0x5010_B009)],
            context: r"(?i)(?:ret\s*=?\s*|code)$".into(),
            result_list: r"(?i)rets\s*=\s*\[[^\])]*$".into(),
        }).unwrap();
        // every line is answered (plain ASCII) or left to Python, and hits lie inside the line
        let line: Vec<u8> = data.iter().copied().filter(|&b| b != b'\n').collect();
        if let Some(hits) = forms.find(&line) {
            for (_, start, end, form, _) in hits {
                prop_assert!(start < end && end <= line.len() && form <= codes::GENERIC);
            }
        }
    }
}
