//! Properties of the core's line parser on arbitrary bytes: the prefilter's candidate lines are
//! exactly the lines that hold a literal (every search: the trigram index with and without its
//! SIMD filter, or Aho-Corasick when a literal is shorter than 3 bytes), the link-fact table
//! answers any line without a panic and as a plain reference does (each kind whose literal is
//! there: its patterns in order), the neighbour families answer any line, the proofs' screen says "maybe" whenever a plain reference does,
//! the plog pid read by hand is the one `Regex::captures` reads, and so is a plog header's stamp, and the walk back over the lines
//! before a candidate stays in its buffer and its floor on any bytes and bounds (and finds the lines a
//! search per line finds, with `OddBytes` telling printable lines as `printable` does), and the reader of
//! the store's spilled chunks (`marshal.rs`) answers any bytes.
//! `tests/scan/test_core_props.py` runs a short run of it (`cargo test --release --test props`).

#[path = "../src/codes.rs"]
#[allow(dead_code)]
mod codes;
#[path = "../src/facts.rs"]
#[allow(dead_code)]
mod facts;
#[path = "../src/families.rs"]
#[allow(dead_code)]
mod families;
#[path = "../src/headers.rs"]
#[allow(dead_code)]
mod headers;
#[path = "../src/lines.rs"]
mod lines;
#[path = "../src/marshal.rs"]
mod marshal;
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

/// The lines of buf[begin..] that hold a literal, by brute force: (start, stop, facts only). A
/// line is searched without its NULs (what a line's text is; no literal holds a NUL).
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
        let line: Vec<u8> = buf[start..stop].iter().copied().filter(|&b| b != 0).collect();
        let holds = |l: &&[u8]| memmem::find(&line, l).is_some();
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

/// Bytes at the edges of printable ASCII (tab, CR, DEL, 0x80, 0x1F, space, tilde) among letters
/// and newlines, and runs longer than a chunk of `OddBytes`.
fn bytes_at_the_edges() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        4 => prop::collection::vec(prop::sample::select(&b"ab \t\r\n\x7f\x80\x1f~"[..]), 0..24),
        1 => (prop::sample::select(&b"a\t\x7f"[..]), 0usize..150).prop_map(|(b, n)| vec![b; n]),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|ps| ps.concat())
}

/// `lines::spans_back` as it was first written: one backward search for each line.
fn spans_back_by_line(buf: &[u8], start: usize, floor: usize, limit: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let Some(mut end) = start.min(buf.len()).checked_sub(1) else {
        return out;
    };
    while end >= floor && out.len() < limit {
        let begin = memchr::memrchr(b'\n', &buf[..end]).map_or(0, |i| i + 1);
        if begin < floor {
            break;
        }
        out.push((begin, end));
        let Some(next) = begin.checked_sub(1) else { break };
        end = next;
    }
    out
}

/// The plog grammar as Python hands it over (`facts::PLOG_PATTERN`: the pid is read by hand).
fn plog() -> facts::PidHeader {
    let h = facts::PidHeader::new(facts::PLOG_PATTERN).unwrap();
    assert!(h.by_hand());
    h
}

/// Lines shaped like plog headers, whole or damaged: the pieces of the grammar and odd bytes.
fn header_like() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::collection::vec(any::<u8>(), 0..4),
        prop::collection::vec(
            prop::sample::select(b"[]() ,:-.0123456789aZ\t\x0b\x0c\r\n".to_vec()),
            0..4
        ),
        prop::sample::select(vec![
            &b"["[..],
            b"]",
            b"ERROR",
            b"ERR0R",
            b"WARN",
            b"WARNING",
            b"INFO",
            b"EVENT",
            b"GE",
            b"HCCL",
            b"LLM_DATADIST",
            b"-",
            b"_",
            b"(",
            b")",
            b"6120",
            b"0",
            b",",
            b"python3",
            b"  ",
            b" ",
            b"\t",
            b"\x0b",
            b":",
            b" :",
            b"2025-11-12",
            b"-03:41:30",
            b" 03:41:30",
            b"T03:41:30",
            b".001.118",
            b",001",
            b"[llm_datadist.cc:300]",
            b"6190 Func: ",
            b"\r",
            b"\xc3\xa9",
            b"\x00",
        ])
        .prop_map(|p| p.to_vec()),
    ];
    prop::collection::vec(piece, 0..24).prop_map(|ps| ps.concat())
}

/// What may follow a plog head: tids, blanks, funcs with their `:.~<>` and colons, in pieces.
fn plog_tail() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            &b"4812"[..],
            b"tid-1",
            b" ",
            b"\t",
            b"\x0b",
            b"\r",
            b":",
            b"::",
            b" :",
            b"LinkClusters",
            b"~Obj",
            b"f<T>.g",
            b"_x",
            b"a:b",
            b"[4467]",
            b"[Send]",
            b"x",
            b"9",
            b"-",
            b".",
            b"4812 a: : x",
            b"4812 a:b: c",
            b"4812 a:b c: d",
            b"6190 ~Obj::f<T>.g :",
            b"4812 f:: x",
        ])
        .prop_map(|p: &[u8]| p.to_vec()),
        prop::collection::vec(any::<u8>(), 0..3),
    ];
    prop::collection::vec(piece, 0..10).prop_map(|parts| parts.concat())
}

/// A well-formed plog header with generated fields, then arbitrary bytes.
fn plog_line() -> impl Strategy<Value = Vec<u8>> {
    let blanks = || prop::collection::vec(prop::sample::select(b" \t\x0b\x0c\r\n".to_vec()), 0..3);
    (
        prop::collection::vec(prop::sample::select(b" \t".to_vec()), 0..3),
        prop::sample::select(vec!["[INFO]", "ERR0R]", "[WARNING]", "[WARN]", "[EVENT]"]),
        blanks(),
        "[A-Za-z_][A-Za-z0-9_-]{0,8}",
        (blanks(), "[0-9]{1,7}", blanks()),
        prop::collection::vec(any::<u8>().prop_filter("not )", |b| *b != b')'), 0..=256),
        (
            blanks(),
            blanks(),
            "[0-9]{4}-[0-9]{2}-[0-9]{2}[- T][0-9]{2}:[0-9]{2}:[0-9]{2}",
        ),
        prop::collection::vec(any::<u8>(), 0..40),
    )
        .prop_map(
            |(lead, level, b0, module, (b1, pid, b2), pname, (b3, b4, stamp), tail)| {
                [
                    &lead[..],
                    level.as_bytes(),
                    &b0,
                    module.as_bytes(),
                    b"(",
                    &b1,
                    pid.as_bytes(),
                    &b2,
                    b",",
                    &pname,
                    b")",
                    &b3,
                    b":",
                    &b4,
                    stamp.as_bytes(),
                    &tail,
                ]
                .concat()
            },
        )
}

const KINDS: [(&str, &[&str], &[&str]); 5] = [
    (
        "role",
        &["ole", "kv_producer"],
        &[
            r"(?i)\brole\s*(?:=|:)\s*(?P<value>prompt|decode)\b",
            r"(?P<value>kv_producer|kv_consumer)",
        ],
    ),
    (
        "remote_addr",
        &["remote", "emo"],
        &[
            r"(?i)\bremote\s*(?:=|:)?\s*(?P<value>\d{1,3}(?:\.\d{1,3}){3}:\d{2,5})",
            r"remote (?P<ip>[\d.]*):(?P<port>\d*)",
        ],
    ),
    (
        "local_cluster",
        &["cluster_id", "cluster id"],
        &[
            r"(?i)\bcluster[ _]id\s*=\s*(?P<value>\d*)",
            r#""cluster_id"\s*:\s*(?P<value>\d+)"#,
        ],
    ),
    // `ster_id` lies inside another kind's `cluster_id`: a literal seen only where matches overlap
    (
        "req_id",
        &["req_id", "req_id=", "ster_id"],
        &[r"(?i)\b(?:req|cluster)_id=(?P<value>[A-Za-z0-9]+)"],
    ),
    // `[^ =]*` has no finite prefixes: searched whole; the first pattern's value is always empty
    (
        "port",
        &["port", "PORT"],
        &[
            r"(?i)port(?P<value>)=",
            r"\b[^ =]*port\s*=\s*(?P<value>\d+)",
            r"(?i)remote (?P<value>port)",
        ],
    ),
];

fn fact_table() -> facts::FactTable {
    facts::FactTable::new(
        KINDS
            .iter()
            .map(|(id, lits, pats)| {
                let values = vec![("prompt".to_string(), "Prompt".to_string())];
                (
                    id.to_string(),
                    lits.iter().map(|l| l.to_string()).collect(),
                    pats.iter().map(|p| p.to_string()).collect(),
                    values,
                )
            })
            .collect(),
    )
    .unwrap()
}

/// `find_plainly` on a line of printable ASCII: each kind one of whose literals is in the line,
/// its patterns in order, the first with a non-empty value (else `ip`:`port`).
fn facts_plainly(line: &[u8]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (k, (_, lits, pats)) in KINDS.iter().enumerate() {
        if !lits.iter().any(|l| memmem::find(line, l.as_bytes()).is_some()) {
            continue;
        }
        for p in pats.iter() {
            let re = regex::bytes::Regex::new(&format!("(?-u){p}")).unwrap();
            let Some(c) = re.captures(line) else { continue };
            let value = match (c.name("value"), c.name("ip"), c.name("port")) {
                (Some(v), _, _) => v.as_bytes().to_vec(),
                (None, Some(ip), Some(port)) if !ip.is_empty() && !port.is_empty() => {
                    [ip.as_bytes(), b":", port.as_bytes()].concat()
                }
                _ => continue,
            };
            if !value.is_empty() {
                let value = String::from_utf8(value).unwrap();
                out.push((
                    k,
                    if value.eq_ignore_ascii_case("prompt") {
                        "Prompt".into()
                    } else {
                        value
                    },
                ));
                break;
            }
        }
    }
    out
}

const PROOFS: [(&str, &[&str], &[&str]); 2] = [
    // `he success` lies inside the other proof's `cache success`
    (
        "link",
        &["link cluster", "link", "link success", "he success"],
        &[r"(?i)\b(?:link(?: clusters?)?|cache) success\b"],
    ),
    (
        "transfer",
        &["cache success", "ss"],
        &[r"(?i)\bpull cache success\b", r"push_cache success"],
    ),
];

fn fact_bytes() -> impl Strategy<Value = Vec<u8>> {
    fact_pieces(0..24)
}

/// `n` pieces of fact lines.
fn fact_pieces(n: std::ops::Range<usize>) -> impl Strategy<Value = Vec<u8>> {
    // a name, a separator and a value, as facts are printed (in any case, some values empty)
    let phrase = (
        prop::sample::select(vec![
            &b"role"[..],
            b"remote",
            b"cluster_id",
            b"cluster id",
            b"\"cluster_id\"",
            b"req_id",
            b"port",
            b"remote port",
        ]),
        any::<bool>(),
        prop::sample::select(vec![&b""[..], b" ", b"=", b" = ", b":", b": ", b"_"]),
        prop::sample::select(vec![
            &b""[..],
            b"7",
            b"42",
            b"x",
            b"prompt",
            b"Decode",
            b"10.1.2.3:20405",
            b"10.1.2.3",
        ]),
    )
        .prop_map(|(name, upper, sep, value)| {
            let name = if upper {
                name.to_ascii_uppercase()
            } else {
                name.to_vec()
            };
            [&b" "[..], &name, sep, value].concat()
        });
    let piece = prop_oneof![
        phrase,
        prop::collection::vec(prop::sample::select(b" =:.,_\"0123456789aZ".to_vec()), 0..6),
        prop::collection::vec(any::<u8>(), 0..3),
        prop::sample::select(vec![
            &b"role"[..],
            b"Role",
            b"ole",
            b"prompt",
            b"kv_producer",
            b"remote",
            b"REMOTE",
            b"emo",
            b"10.1.2.3:20405",
            b"cluster_id",
            b"cluster_id=",
            b"cluster id",
            b"\"cluster_id\"",
            b"req_id=",
            b"req_id",
            b"link",
            b"link cluster",
            b"link clusters",
            b" success",
            b"cache success",
            b"Pull ",
            b"push_cache",
            b"success",
            b"port",
            b"PORT",
            b"_port=",
            b"\r",
        ])
        .prop_map(|p| p.to_vec()),
    ];
    prop::collection::vec(piece, n).prop_map(|ps| ps.concat())
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
    fn the_neighbour_families_answer_any_line(data in bytes_like_logs()) {
        let table = families::FamilyTable::new(vec![
            (vec!["errno".into(), "rrno".into()], Some(r"(?i)errno\s*=?\s*(?P<code>104|110)\b".into())),
            (vec!["E1".into()], Some(r"\b(?P<code>E1[0-9]{4})\b".into())),
            (vec!["ret".into()], None),
        ]).unwrap();
        // every line is answered (plain ASCII, no family of Python's present) or left to Python;
        // a family is reported only where its literal is, with a code taken from the line
        let line: Vec<u8> = data.iter().copied().filter(|&b| b != b'\n').collect();
        let present = table.present(&line);
        if let Some(found) = table.find(&line) {
            prop_assert!(present & 0b100 == 0);
            for (k, code) in found {
                prop_assert!(present >> k & 1 == 1);
                prop_assert!(!code.is_empty() && memmem::find(&line, code.as_bytes()).is_some());
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

    #[test]
    fn the_fact_table_answers_as_find_plainly(data in fact_bytes()) {
        fact_table_answers_plainly(&data)?;
    }

    /// Lines with more places a pattern may start than the table keeps: searched whole.
    #[test]
    fn the_fact_table_answers_long_lines_as_find_plainly(data in fact_pieces(60..200)) {
        fact_table_answers_plainly(&data)?;
    }
}

/// Both searches of a pattern are proved: from the places it may start, and over the whole line.
#[test]
fn the_test_table_has_patterns_of_both_searches() {
    let anchored = fact_table().anchored();
    assert!(anchored.contains(&true) && anchored.contains(&false), "{anchored:?}");
}

/// Lines whose answers are written by hand: a match at the line's start, a leftmost match whose
/// value is empty (the next pattern is asked, not the next match), a name in capitals, a pattern
/// searched whole.
#[test]
fn the_fact_table_reads_these_lines() {
    let table = fact_table();
    type Case<'a> = (&'a [u8], &'a [(usize, &'a str)]);
    let cases: [Case; 4] = [
        (b"role = prompt, x", &[(0, "Prompt")]),
        (b" cluster_id= x cluster_id=7", &[(3, "7")]),
        (b"emo: REMOTE 10.1.2.3:20405", &[(1, "10.1.2.3:20405")]),
        (b"x port=5 remote port", &[(4, "5")]),
    ];
    for (line, want) in cases {
        let want: Vec<(usize, String)> = want.iter().map(|(k, v)| (*k, v.to_string())).collect();
        assert_eq!(
            facts_plainly(line),
            want,
            "the reference, {:?}",
            String::from_utf8_lossy(line)
        );
        match table.find(line) {
            facts::Answer::Facts(found) => assert_eq!(found, want, "{:?}", String::from_utf8_lossy(line)),
            facts::Answer::Python => panic!("a plain line handed to Python"),
        }
    }
}

fn fact_table_answers_plainly(data: &[u8]) -> Result<(), TestCaseError> {
    {
        let table = fact_table();
        let line = facts::without_cr(data);
        let plain = line.iter().all(|&b| (0x20..0x7F).contains(&b) || b == b'\t');
        match table.find(data) {
            facts::Answer::Facts(found) => {
                prop_assert!(plain);
                prop_assert_eq!(found, facts_plainly(line));
            }
            facts::Answer::Python => prop_assert!(!plain),
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn the_proof_screen_says_maybe_where_a_proof_may_be(data in fact_bytes()) {
        let rows = PROOFS.iter().map(|(id, lits, pats)| (id.to_string(), lits.iter().map(|l| l.to_string()).collect(), pats.iter().map(|p| p.to_string()).collect())).collect();
        let table = facts::ProofTable::new(rows).unwrap();
        let line = facts::without_cr(&data);
        let reference = PROOFS.iter().any(|(_, lits, pats)| {
            lits.iter().any(|l| memmem::find(line, l.as_bytes()).is_some())
                && pats.iter().any(|p| regex::bytes::Regex::new(&format!("(?-u){p}")).unwrap().is_match(line))
        });
        prop_assert_eq!(table.maybe(line), reference);
    }

    #[test]
    fn the_plog_pid_by_hand_is_the_regex_pid(data in any::<Vec<u8>>(), like in header_like(), line in plog_line()) {
        let h = plog();
        for l in [&data, &like, &line] {
            prop_assert_eq!(h.pid(l), h.pid_by_regex(l));
            // and not by falling back: on every match the hand reads the regex's pid
            if let Some(pid) = h.pid_by_regex(l) {
                prop_assert_eq!(facts::plog_pid(l), Some(pid));
            }
        }
        // a generated header always matches: the hand-read path is the one taken
        prop_assert!(h.pid(&line).is_some());
    }

    #[test]
    fn the_plog_stamp_is_read_where_the_pid_is_and_has_its_shape(data in any::<Vec<u8>>(), like in header_like(),
                                                                 line in plog_line()) {
        let h = plog();
        for l in [&data, &like, &line] {
            let stamp = h.stamp(l);
            prop_assert_eq!(stamp.is_some(), h.pid_by_regex(l).is_some());
            if let Some(s) = stamp {
                // DATE T TIME, then `.` and six digits when a fraction was printed (`_plog_header`)
                let b = s.as_bytes();
                prop_assert!(b.len() == 19 || (b.len() == 26 && b[19] == b'.'), "{:?}", s);
                prop_assert_eq!(b[10], b'T');
                prop_assert!(b.get(20..).unwrap_or_default().iter().all(u8::is_ascii_digit), "{:?}", s);
            }
        }
    }

    #[test]
    fn the_plog_header_read_by_hand_is_the_one_captures_reads(data in any::<Vec<u8>>(), like in header_like(),
                                                              line in plog_line()) {
        let h = headers::PlogHeaders::new(facts::PLOG_PATTERN, &[r"(?P<tid>\d+)\s(?P<end>)".to_string()]).unwrap();
        for l in [&data, &like, &line] {
            let got = h.read_by(l, true);
            prop_assert_eq!(&got, &h.read_by(l, false), "{:?}", String::from_utf8_lossy(l));
            if let Some((stamp, pid, ..)) = &got {
                prop_assert_eq!(Some(pid.as_bytes()), plog().pid(facts::without_cr(l)));
                prop_assert_eq!(Some(stamp.clone()), plog().stamp(l));
            }
        }
    }

    #[test]
    fn the_plog_tail_read_by_hand_is_the_one_captures_reads(head in prop::sample::select(vec![
        "[ERROR] GE(4811,python3):2025-11-10-15:36:33.002.301 [llm_link_manager.cc:100]",
        "[INFO] HCCL(1,p):2025-11-10-15:36:33 ",
        "[WARNING] RUNTIME(7,python3):2025-11-10-15:36:33.1.2 [a.cc:1] ",
    ]), tail in plog_tail()) {
        let tails = [headers::PLOG_TAIL.to_string(), r"\[(?P<tid>\d+)\](?:\[(?P<func>[^\]]*)\])?".to_string()];
        let h = headers::PlogHeaders::new(facts::PLOG_PATTERN, &tails).unwrap();
        // a header then a tail: the head read, then the tail by hand or by the regex
        let l = [head.as_bytes(), &tail[..]].concat();
        let got = h.read_by(&l, true);
        prop_assert!(got.is_some() || !facts::printable(&l), "{:?}", String::from_utf8_lossy(&l));
        prop_assert_eq!(got, h.read_by(&l, false), "{:?}", String::from_utf8_lossy(&l));
    }

    #[test]
    fn the_walk_back_is_the_line_by_line_walk(data in bytes_like_logs(), start in 0usize..400,
                                             back in 0usize..400, limit in 0usize..50) {
        let floor = start.min(data.len()).saturating_sub(back);
        prop_assert_eq!(lines::spans_back(&data, start, floor, limit), spans_back_by_line(&data, start, floor, limit));
    }

    #[test]
    fn the_walks_back_of_candidates_met_in_order_are_the_walks_of_each(
        data in bytes_like_logs(),
        steps in proptest::collection::vec((0usize..300, any::<bool>(), 0usize..600, 0usize..50), 1..16),
    ) {
        // starts met in order, as a block's candidates are (at line starts mostly, a fragment's
        // start at times), with the floors and limits the caller gives, or others
        let mut walk = lines::WalkBack::default();
        let mut start = 0;
        for (step, at_line, back, limit) in steps {
            start = (start + step).min(data.len());
            if at_line {
                start = memchr::memchr(b'\n', &data[start..]).map_or(data.len(), |i| start + i + 1);
            }
            let floor = start.saturating_sub(back);
            prop_assert_eq!(walk.spans(&data, start, floor, limit).to_vec(), lines::spans_back(&data, start, floor, limit),
                            "start {} floor {} limit {}", start, floor, limit);
        }
    }

    #[test]
    fn odd_bytes_tell_printable_lines(data in bytes_at_the_edges(), cuts in proptest::collection::vec((0usize..400, 0usize..400), 1..8)) {
        // lookbacks over the buffer, forward, backward and apart: each line inside a covered
        // range is printable exactly when `any_in` finds no odd byte in it
        let mut odd = lines::OddBytes::default();
        for (a, b) in cuts {
            let (lo, hi) = (a.min(b).min(data.len()), a.max(b).min(data.len()));
            odd.cover(&data, lo, hi);
            let mut begin = lo;
            for (i, &byte) in data[lo..hi].iter().enumerate() {
                if byte == b'\n' {
                    prop_assert_eq!(odd.any_in(begin, lo + i), !facts::printable(&data[begin..lo + i]));
                    begin = lo + i + 1;
                }
            }
            prop_assert_eq!(odd.any_in(begin, hi), !facts::printable(&data[begin..hi]));
        }
    }

    #[test]
    fn the_walk_back_stays_inside_the_buffer_and_the_floor(data in bytes_like_logs(), start in 0usize..400,
                                                          back in 0usize..400, limit in 0usize..50) {
        let floor = start.min(data.len()).saturating_sub(back);
        let begin = lines::begin_back(&data, start, floor, limit);
        prop_assert!(floor.min(start) <= begin && begin <= start.min(data.len()).max(floor.min(start)));
        let spans = lines::spans_back(&data, start, floor, limit);
        prop_assert!(spans.len() <= limit);
        for (b, e) in spans {
            prop_assert!(floor <= b && b <= e && e < data.len() && !data[b..e].contains(&b'\n'));
            prop_assert!(lines::ascii_text(&data[b..e], 16).is_none_or(|t| t.len() <= 16 && !t.contains('\0')));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]

    /// The reader of the store's spilled chunks answers any bytes without a panic: the marshal type
    /// codes it knows, with and without the reference flag, cut anywhere, lengths of any size.
    #[test]
    fn marshal_reader_answers_any_bytes(data in proptest::collection::vec(
        prop_oneof![any::<u8>(), proptest::sample::select(b"NFTilutaAzZ()[r\xa9\xda\xe9\xfa".to_vec())], 0..64)) {
        if let Some(p) = marshal::parse(&data) {
            visit(&p, p.root, 0); // every object it read can be read back
        }
    }
}

fn visit(p: &marshal::Parsed<'_>, node: u32, depth: usize) {
    assert!(depth < 72); // MAX_DEPTH nested, and again through a reference
    if let marshal::Item::Tuple(items) | marshal::Item::List(items) = p.get(node) {
        for &item in items {
            visit(p, item, depth + 1);
        }
    }
}

#[test]
fn marshal_reader_refuses_cut_and_trailing_bytes() {
    assert!(marshal::parse(b"N").is_some());
    assert!(marshal::parse(b"NN").is_none());
    assert!(marshal::parse(b"i\x01\x00").is_none());
    assert!(marshal::parse(b"").is_none());
}

#[test]
fn marshal_reader_reads_longs_and_refs() {
    // 2**31 = digits [0, 0, 2] of 15 bits
    let p = marshal::parse(b"l\x03\x00\x00\x00\x00\x00\x00\x00\x02\x00").unwrap();
    assert_eq!(p.get(p.root), marshal::Item::Int(1 << 31));
    // [s, s] with s marshalled once (flagged) and referred back to, as marshal.dumps writes it
    let p = marshal::parse(b"[\x02\x00\x00\x00\xda\x01br\x00\x00\x00\x00").unwrap();
    let marshal::Item::List(items) = p.get(p.root) else {
        panic!()
    };
    assert_eq!(p.get(items[0]), marshal::Item::Str("b"));
    assert_eq!(items[0], items[1]);
}
