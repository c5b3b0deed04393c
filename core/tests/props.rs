//! Properties of the core's line parser on arbitrary bytes: the prefilter's candidate lines are
//! exactly the lines that hold a literal (either search: the trigram index, or Aho-Corasick when
//! a literal is shorter than 3 bytes), and the link-fact table answers any line without a panic.
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
    let literals: Vec<Vec<u8>> = CODES
        .iter()
        .chain(extra)
        .chain(FACTS.iter())
        .map(|l| l.to_vec())
        .collect();
    let ac = AhoCorasickBuilder::new()
        .match_kind(MatchKind::LeftmostFirst)
        .build(&literals)
        .unwrap();
    prefilter::Core::new(Some(ac), CODES.len() + extra.len(), Vec::new(), literals)
}

/// The lines of buf[begin..] that hold a literal, by brute force: (start, stop, facts only).
fn reference(buf: &[u8], begin: usize, extra: &[&[u8]]) -> Vec<(usize, usize, bool)> {
    let mut out = Vec::new();
    let mut start = begin;
    while start < buf.len() || (start == begin && begin < buf.len()) {
        let stop = memchr::memchr(b'\n', &buf[start..]).map_or(buf.len(), |i| start + i);
        let line = &buf[start..stop];
        let holds = |l: &&[u8]| memmem::find(line, l).is_some();
        let full = CODES.iter().chain(extra).any(holds);
        if full || FACTS.iter().any(holds) {
            out.push((start, stop, !full));
        }
        start = stop + 1;
    }
    out
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
            let got: Vec<_> = core(extra).tiers(&data, begin, data.len()).iter().map(|l| (l.start, l.stop, l.facts_only)).collect();
            prop_assert_eq!(got, reference(&data, begin, extra));
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
