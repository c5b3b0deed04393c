//! Neighbour families in the core: `knowledge.families.NeighbourMatcher.find` on the bytes of a
//! line of printable ASCII, from the families Python hands over (literals, and a pattern Rust's
//! regex reads as Python's `re` reads the family's own, or none: then that family is Python's).
//!
//! Python derives those patterns (`families.core_pattern`); here a family is only literals and a
//! regex. What a code means, its aliases and remedies stay in Python: the core says which family
//! matched and the text of its code.

use aho_corasick::AhoCorasick;
use regex::bytes::Regex;

use crate::facts::{add_literals, for_each_start, leftmost_longest, printable, unportable, with_prefixes, without_cr};

/// One family as Python hands it over: its literals and its pattern for the core (None: Python's).
pub type Row = (Vec<String>, Option<String>);

pub struct FamilyTable {
    regexes: Vec<Option<Regex>>,   // per family; None: Python reads its lines
    ac: Option<AhoCorasick>,       // every literal of every family
    lit_families: Vec<Vec<usize>>, // per literal: the families that list it
}

impl FamilyTable {
    pub fn new(rows: Vec<Row>) -> Result<FamilyTable, String> {
        if rows.len() > 128 {
            return Err("more than 128 neighbour families".into());
        }
        let mut literals = Vec::new();
        let mut lit_families = Vec::new();
        let mut regexes = Vec::new();
        for (k, (lits, pattern)) in rows.into_iter().enumerate() {
            add_literals(&mut literals, &mut lit_families, lits, k)
                .map_err(|()| format!("family {k}: an empty literal"))?;
            // a pattern the core cannot read alike is Python's, not an error
            regexes.push(
                pattern
                    .filter(|p| unportable(p).is_none())
                    .and_then(|p| Regex::new(&format!("(?-u){p}")).ok()),
            );
        }
        let lit_families = with_prefixes(&literals, &lit_families);
        let ac = leftmost_longest(&literals)?;
        Ok(FamilyTable {
            regexes,
            ac,
            lit_families,
        })
    }

    /// Whether every family's pattern is read here (none is left to Python).
    pub fn all_portable(&self) -> bool {
        self.regexes.iter().all(Option::is_some)
    }

    /// Bit k: family k has a literal in `raw` (any bytes: `NeighbourMatcher.families_in`).
    pub fn present(&self, raw: &[u8]) -> u128 {
        let mut present = 0u128;
        if let Some(ac) = &self.ac {
            for_each_start(ac, raw, |m| {
                for &k in &self.lit_families[m] {
                    present |= 1 << k;
                }
                true
            });
        }
        present
    }

    /// (family, code text) of each family present whose pattern matches, in family order: the
    /// first non-empty group of its first match, else the whole match. None when Python must
    /// answer: a line that is not printable ASCII (tabs allowed, trailing CRs dropped), or a family
    /// present whose pattern is Python's.
    pub fn find(&self, raw: &[u8]) -> Option<Vec<(usize, String)>> {
        let line = without_cr(raw);
        if !printable(line) {
            return None;
        }
        let mut present = self.present(line);
        let mut out = Vec::new();
        while present != 0 {
            let k = present.trailing_zeros() as usize;
            present &= present - 1;
            let re = self.regexes[k].as_ref()?;
            let Some(c) = re.captures(line) else { continue };
            let code = c
                .iter()
                .skip(1)
                .flatten()
                .find(|g| !g.is_empty())
                .unwrap_or_else(|| c.get(0).expect("group 0"));
            // printable ASCII: valid UTF-8
            out.push((k, String::from_utf8_lossy(code.as_bytes()).into_owned()));
        }
        Some(out)
    }
}
